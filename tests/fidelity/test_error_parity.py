"""Error parity: the rules pallas_sim enforces are the ones JAX 0.10.x's TPU
interpret mode enforces, checked by running the same kernel on both.

Each kernel below is written once against a namespace ``(pl, pltpu, jax,
jnp)`` and run on pallas_sim and on real JAX.  Where TPU interpret mode
raises, pallas_sim raises; where it leaves poison (NaN) in an output,
pallas_sim leaves NaN at the same places.  The HLO interpreter
(``interpret=True``) checks none of these rules; where the test says so it
records what that mode does instead (docs/fidelity.md has the table).
"""

from __future__ import annotations

import itertools
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pallas_sim
from pallas_sim._src.values import concrete
from pallas_sim.backends import real_jax

SIM = types.SimpleNamespace(pl=pallas_sim.pl, pltpu=pallas_sim.pltpu, jax=pallas_sim.jax,
                            jnp=pallas_sim.jnp)
JAX = types.SimpleNamespace(pl=real_jax.pl, pltpu=real_jax.pltpu, jax=real_jax.jax,
                            jnp=real_jax.jnp)
X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
FEW = settings(max_examples=4, deadline=None, derandomize=True, database=None)


def on_jax(build, mode="tpu", **params):
    """Run ``build(JAX)`` in one interpreter; (numpy result, None) or (None, error text)."""
    with real_jax.mode(mode, **params):
        try:
            return np.asarray(build(JAX)), None
        except Exception as exc:  # noqa: BLE001 - the error is what we compare
            real_jax.reset()
            return None, f"{type(exc).__name__}: {exc}"


def copy_call(ns, in_map, out_map, grid, semantics=None, **kwargs):
    """x -> o through a (8, 128)-block copy kernel with these index maps."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    params = None if semantics is None else pltpu.CompilerParams(dimension_semantics=semantics)
    return pl.pallas_call(kernel, grid=grid, in_specs=[pl.BlockSpec((8, 128), in_map)],
                          out_specs=pl.BlockSpec((8, 128), out_map),
                          out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32),
                          compiler_params=params, **kwargs)(X)


# -- rules that raise -------------------------------------------------------------------------


def test_non_consecutive_output_revisit_raises_in_both():
    def build(ns):
        return copy_call(ns, lambda i, j: (j, 0), lambda i, j: (j, 0), (2, 2))

    with pytest.raises(pallas_sim.RevisitedOutputBlockError, match="block index"):
        build(SIM)
    _, error = on_jax(build)
    assert error is not None and "Revisited block" in error, error
    result, error = on_jax(build, "hlo")
    assert error is None and np.array_equal(result, X), "interpret=True does not check this"


def test_parallel_axes_not_a_prefix_raise_in_both_with_jaxs_message():
    def build(ns):
        return copy_call(ns, lambda i, j: (i, 0), lambda i, j: (i, 0), (2, 2),
                         semantics=("arbitrary", "parallel"))

    message = "Dimensions with parallel semantics must form a prefix of the grid."
    with pytest.raises(pallas_sim.GridSemanticsError, match=message):
        build(SIM)
    _, error = on_jax(build)
    assert error is not None and message in error, error


@FEW
@given(role=st.sampled_from(["input", "output"]), shift=st.integers(1, 3))
def test_out_of_bounds_block_index_raises_in_both_naming_the_operand(role, shift):
    in_map = (lambda i: (i + shift, 0)) if role == "input" else (lambda i: (i, 0))
    out_map = (lambda i: (i + shift, 0)) if role == "output" else (lambda i: (i, 0))
    name = "x_ref" if role == "input" else "o_ref"

    def build(ns):
        return copy_call(ns, in_map, out_map, (2,))

    with pytest.raises(pallas_sim.BlockIndexError) as info:
        build(SIM)
    first_bad = 1 if shift == 1 else 0  # index i + shift leaves [0, 2) first at this step
    assert (f"Out-of-bounds block index ({first_bad + shift}, 0) for {role} '{name}' at grid "
            f"step ({first_bad},)") in str(info.value), str(info.value)
    _, error = on_jax(build)
    assert error is not None and "Out-of-bounds block index" in error and name in error, error


# -- rules that poison -------------------------------------------------------------------------


def assert_same_poison(build, *, hlo_too=True):
    sim = np.asarray(build(SIM))
    modes = ("tpu", "hlo") if hlo_too else ("tpu",)
    for mode in modes:
        got, error = on_jax(build, mode)
        assert error is None, f"{mode}: {error}"
        np.testing.assert_array_equal(np.isnan(sim), np.isnan(got), err_msg=(
            f"NaN (poison) positions differ between pallas_sim and JAX {mode} mode"))
        np.testing.assert_allclose(sim, got, rtol=1e-6, equal_nan=True)
    return sim


def test_an_output_block_never_initialized_reads_as_nan_in_both():
    def build(ns):
        pl, jax, jnp = ns.pl, ns.jax, ns.jnp

        def kernel(x_ref, o_ref):
            @pl.when(pl.program_id(1) > 0)  # forgot the init at the first step
            def _():
                o_ref[...] += x_ref[...]

        return pl.pallas_call(kernel, grid=(2, 2),
                              in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, 0))],
                              out_specs=pl.BlockSpec((8, 128), lambda i, j: (i, 0)),
                              out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(X)

    assert np.isnan(assert_same_poison(build)).all()


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "bool", "bfloat16"])
def test_integer_and_bool_poison_is_tpu_interpret_modes(dtype):
    """TPU interpret mode fills fresh integer buffers with the dtype's maximum and bool ones
    with True (interpret=True: the minimum and False); pallas_sim follows the TPU mode."""
    def build(ns):
        pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
        dt = jnp.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)

        def kernel(o_ref, s_ref):
            o_ref[0:4, :] = s_ref[0:4, :]  # rows 4-7 of o stay as they came

        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), dt),
                              scratch_shapes=[pltpu.VMEM((8, 128), dt)])()

    sim = np.asarray(build(SIM))
    tpu, error = on_jax(build)
    assert error is None, error
    if dtype == "bfloat16":
        assert np.isnan(sim.astype(np.float32)).all() and np.isnan(tpu.astype(np.float32)).all()
    else:
        np.testing.assert_array_equal(sim, tpu)
        assert (sim == (True if dtype == "bool" else np.iinfo(dtype).max)).all()


@pytest.mark.parametrize("access", ["read", "store"])
def test_a_pl_any_ref_read_or_stored_directly_raises_in_tpu_interpret_mode(access):
    def build(ns):
        pl, jax, jnp = ns.pl, ns.jax, ns.jnp

        def kernel(x_ref, o_ref):
            if access == "read":
                o_ref[...] = x_ref[0:8, :] + 1
            else:
                o_ref[...] = jnp.zeros((8, 128), jnp.float32) + x_ref.shape[0]

        any_spec = pl.BlockSpec(memory_space=pl.ANY)
        return pl.pallas_call(
            kernel, in_specs=[any_spec if access == "read" else pl.BlockSpec((16, 128),
                                                                            lambda: (0, 0))],
            out_specs=any_spec if access == "store" else pl.BlockSpec((8, 128), lambda: (0, 0)),
            out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(X)

    primitive = "get_p" if access == "read" else "swap_p"
    with pytest.raises(pallas_sim.HBMAccessError, match=f"{primitive}: Buffers with a memory "
                                                        "space of HBM or ANY"):
        build(SIM)
    _, error = on_jax(build)
    assert error is not None and f"{primitive}: Buffers with a memory space of HBM" in error
    result, error = on_jax(build, "hlo")
    assert error is None, "interpret=True does not check this"


def test_scratch_never_initialized_reads_as_nan_in_both():
    def build(ns):
        pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

        def kernel(x_ref, o_ref, acc_ref):
            o_ref[...] = x_ref[...] + acc_ref[...]

        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, grid=(2,), in_specs=[spec], out_specs=spec,
                              scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
                              out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(X)

    assert np.isnan(assert_same_poison(build)).all()


@FEW
@given(rows=st.integers(1, 15))
def test_ragged_padding_is_poison_the_kernel_can_see_in_both(rows):
    """A column sum over a ragged block sums the padding: NaN in the last block."""
    x = X[:rows]

    def build(ns):
        pl, jax, jnp = ns.pl, ns.jax, ns.jnp

        def kernel(x_ref, o_ref):
            o_ref[...] = jnp.broadcast_to(jnp.sum(x_ref[...], axis=0, keepdims=True), (8, 128))

        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, grid=(pl.cdiv(rows, 8),), in_specs=[spec],
                              out_specs=spec,
                              out_shape=jax.ShapeDtypeStruct((8 * pl.cdiv(rows, 8), 128),
                                                             jnp.float32))(x)

    out = assert_same_poison(build)
    assert np.isnan(out).any() == bool(rows % 8)


def dma_call(ns, *, wait: str):
    """Copy row block i of an HBM (pl.ANY) input into VMEM by hand and store it.

    wait: "before_read" (correct), "after_read" (reads the buffer too early),
    "never" (the copy is never waited).
    """
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(x_hbm, o_ref, buf, sem):
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(pl.program_id(0) * 8, 8)], buf, sem)
        copy.start()
        if wait == "before_read":
            copy.wait()
        o_ref[...] = buf[...]
        if wait == "after_read":
            copy.wait()

    return pl.pallas_call(kernel, grid=(2,), in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                          scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32),
                                          pltpu.SemaphoreType.DMA],
                          out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(X)


def test_a_manual_dma_waited_before_use_delivers_in_both():
    out = assert_same_poison(lambda ns: dma_call(ns, wait="before_read"), hlo_too=True)
    np.testing.assert_array_equal(out, X)


def test_reading_a_dma_destination_before_its_wait_sees_old_contents_in_both():
    out = assert_same_poison(lambda ns: dma_call(ns, wait="after_read"), hlo_too=False)
    assert np.isnan(out[:8]).all() and np.array_equal(out[8:], X[:8])
    hlo, error = on_jax(lambda ns: dma_call(ns, wait="after_read"), "hlo")
    assert error is None and np.array_equal(hlo, X), "interpret=True copies at start()"


def test_a_dma_never_waited_raises_in_pallas_sim_and_leaves_poison_in_both():
    with pytest.raises(pallas_sim.UnwaitedDMAError):
        dma_call(SIM, wait="never")
    with pallas_sim.config(unwaited_dma="warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = assert_same_poison(lambda ns: dma_call(ns, wait="never"), hlo_too=False)
    assert np.isnan(out).all(), "TPU interpret mode never executes an unwaited copy"


# -- where the two JAX modes differ and TPU interpret mode wins --------------------------------


def test_an_aliased_output_may_revisit_and_reads_back_its_writes_as_in_tpu_interpret_mode():
    def build(ns):
        pl, jax, jnp = ns.pl, ns.jax, ns.jnp

        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] + 1

        spec = pl.BlockSpec((8, 128), lambda i, j: (j, 0))
        return pl.pallas_call(kernel, grid=(2, 2), in_specs=[spec], out_specs=spec,
                              input_output_aliases={0: 0},
                              out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(X.copy())

    sim = np.asarray(build(SIM))
    tpu, error = on_jax(build)
    assert error is None, error
    np.testing.assert_array_equal(sim, tpu)
    np.testing.assert_array_equal(sim, X + 2)
    hlo, _ = on_jax(build, "hlo")
    np.testing.assert_array_equal(hlo, X + 1)  # the HLO interpreter is functional


@FEW
@given(grid=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       n_par=st.integers(0, 3), seed=st.integers(0, 1000))
def test_parallel_axes_are_visited_through_per_axis_permutations_in_both(grid, n_par, seed):
    """TPU interpret mode's visiting order has the form pallas_sim's
    ``shuffle_parallel`` produces: each parallel axis is mapped through its own
    permutation, the loop nest stays row-major, arbitrary axes keep their
    order.  (The permutations themselves come from different generators.)"""
    n_par = min(n_par, len(grid))
    semantics = ("parallel",) * n_par + ("arbitrary",) * (len(grid) - n_par)
    recorded = []

    def recorder(token, coords, core):
        recorded.append(tuple(int(c) for c in coords))
        return token

    def build(ns, sink=None):
        pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

        def kernel(o_ref):
            if sink is not None:
                sink.append(tuple(int(concrete(pl.program_id(a))) for a in range(len(grid))))
            o_ref[...] = jnp.zeros_like(o_ref)

        return pl.pallas_call(kernel, grid=grid,
                              out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                              compiler_params=pltpu.CompilerParams(
                                  dimension_semantics=semantics))()

    sim_order: list = []
    with pallas_sim.config(shuffle_parallel=True, shuffle_seed=seed):
        build(SIM, sim_order)
    _, error = on_jax(build, "tpu", random_seed=seed, grid_point_recorder=recorder)
    assert error is None, error
    loops = list(itertools.product(*map(range, grid)))
    for order in (sim_order, recorded):
        assert sorted(order) == loops
        for axis in range(len(grid)):
            mapping = {}
            for loop, point in zip(loops, order, strict=True):
                assert mapping.setdefault(loop[axis], point[axis]) == point[axis]
            if axis >= n_par:
                assert all(k == v for k, v in mapping.items())


# -- a JAX limitation the fidelity cases avoid -------------------------------------------------


def test_jax_tpu_interpret_mode_cannot_lower_a_ragged_aliased_output():
    """JAX 0.10.2: a ragged output aliased to its input fails to lower in TPU
    interpret mode (the padded buffer is returned); pallas_sim and
    interpret=True handle it.  When this test fails, JAX fixed it: make the
    a1 accumulate_inplace fidelity case ragged again."""
    x = np.ones((12, 130), np.float32)

    def build(ns):
        pl, jax = ns.pl, ns.jax

        def kernel(a_ref, b_ref, o_ref):
            o_ref[...] = a_ref[...] + b_ref[...]

        spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        return pl.pallas_call(kernel, grid=(2, 2), in_specs=[spec, spec], out_specs=spec,
                              input_output_aliases={0: 0},
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x.copy(), x)

    np.testing.assert_array_equal(build(SIM), 2 * x)
    hlo, error = on_jax(build, "hlo")
    assert error is None and np.array_equal(hlo, 2 * x), error
    _, error = on_jax(build, "tpu")
    assert error is not None and "verifier" in error, error


# -- scalar prefetch ------------------------------------------------------------------------------


def prefetch_written_by_the_kernel(ns):
    """Step 0 overwrites the prefetched block indices; steps 1 and 2 still read their blocks
    through the index map. Both interpreters evaluate every index map on the values the
    call was given, so the kernel's write changes nothing the pipeline fetches."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(idx_ref, x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            idx_ref[1] = jnp.int32(0)
            idx_ref[2] = jnp.int32(0)
        o_ref[...] = x_ref[...] + idx_ref[pl.program_id(0)].astype(jnp.float32) * 1000

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(3,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, idx: (idx[i], 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, idx: (i, 0)))
    x = np.arange(24 * 128, dtype=np.float32).reshape(24, 128)
    return pl.pallas_call(kernel, grid_spec=grid_spec,
                          out_shape=jax.ShapeDtypeStruct((24, 128), jnp.float32))(
        jnp.asarray(np.array([2, 1, 0], np.int32)), x)


def test_a_kernel_writing_its_prefetch_ref_moves_no_block_as_in_tpu_interpret_mode():
    got = np.asarray(concrete(prefetch_written_by_the_kernel(SIM)))
    expected, error = on_jax(prefetch_written_by_the_kernel, "tpu")
    assert error is None, error
    np.testing.assert_array_equal(got, expected)
    x = np.arange(24 * 128, dtype=np.float32).reshape(24, 128)
    # blocks 2, 1, 0 of x, as the given indices say; the kernel's own later reads of its
    # prefetch ref see its writes (0 at steps 1 and 2)
    np.testing.assert_array_equal(got, np.concatenate([x[16:24] + 2000, x[8:16], x[0:8]]))
    # interpret=True fetches the same blocks, but each step's kernel sees the prefetch
    # values the call was given (the write does not persist across steps)
    hlo, error = on_jax(prefetch_written_by_the_kernel, "hlo")
    assert error is None, error
    np.testing.assert_array_equal(hlo, np.concatenate([x[16:24] + 2000, x[8:16] + 1000, x[0:8]]))
