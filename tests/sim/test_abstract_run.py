"""The abstract run: ``pallas_sim.estimate`` on ShapeDtypeStructs
records the same trace as a real run — grid, block indices per step, DMAs, bytes, VMEM,
op counts — for every kernel in solutions/, at sizes drawn by hypothesis; code that needs
data the abstract run lacks fails with an error naming its line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from tests.helpers.labs import stem_of

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def _load(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"abstract_run_{stem}", SOLUTIONS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


A1, A3, A4, A5 = (_load(stem_of(i)) for i in ("a1", "a3", "a4", "a5"))


def _sds(a: np.ndarray) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def _same_as_real(fn, real_args: tuple, abstract_args: tuple, **kwargs) -> None:
    """Run ``fn`` for real and abstractly; the traces (with op counts) and the result
    shapes must agree."""
    with pallas_sim.trace() as t:
        real_out = fn(*real_args, **kwargs)
    est = pallas_sim.estimate(fn, *abstract_args, **kwargs)
    assert len(est.calls) == len(t.calls) >= 1
    for real, abstract in zip(t.calls, est.calls, strict=True):
        assert abstract == real, f"trace differs:\n{abstract}\n---\n{real}"
        assert abstract.ops == real.ops, f"op counts differ: {abstract.ops} vs {real.ops}"
        assert abstract.ops is not None and abstract.ops.keys(), "ops were counted"
        for a, r in zip(abstract.operands, real.operands, strict=True):
            np.testing.assert_array_equal(a.block_indices, r.block_indices)
            np.testing.assert_array_equal(a.kernel_reads, r.kernel_reads)
    real_leaves = [real_out] if isinstance(real_out, np.ndarray) else list(real_out)
    est_leaves = [est.outputs] if not isinstance(est.outputs, tuple) else list(est.outputs)
    assert [(o.shape, np.dtype(o.dtype)) for o in est_leaves] == \
        [(o.shape, o.dtype) for o in real_leaves]


_rng = np.random.default_rng(0)


def _normal(shape, dtype=np.float32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


@SIM_SETTINGS
@given(st.sampled_from([8, 16, 24]), st.sampled_from([128, 256]),
       st.sampled_from([(8, 128), (16, 128), (8, 256)]))
def test_a1_blocked_add_and_bias_add(m, n, block):
    x, y = _normal((m, n)), _normal((m, n))
    _same_as_real(A1.blocked_add, (x, y), (_sds(x), _sds(y)), block_shape=block)
    x, y = _normal((block[0] * m // 8, n * 2)), _normal((block[0] * m // 8, n * 2))
    bias = _normal((1, n * 2))
    _same_as_real(A1.bias_add, (x, bias), (_sds(x), _sds(bias)), block_shape=block)
    _same_as_real(A1.accumulate_inplace, (x, y), (_sds(x), _sds(y)), block_shape=block)


@SIM_SETTINGS
@given(st.sampled_from([(64, 64, 64), (32, 64, 128), (64, 32, 32)]),
       st.sampled_from([1, 2]), st.sampled_from([1, 2, 3]), st.sampled_from([1, 2]),
       st.sampled_from([np.float32, jnp.bfloat16]), st.sampled_from([None, "relu"]))
def test_a3_matmul(block, gm, gn, gk, dtype, activation):
    bm, bn, bk = block
    x, y = _normal((bm * gm, bk * gk), dtype), _normal((bk * gk, bn * gn), dtype)
    _same_as_real(A3.matmul, (x, y), (_sds(x), _sds(y)), block_shape=block,
                  activation=activation)


@SIM_SETTINGS
@given(st.sampled_from([(2, 2), (4, 2), (2, 1)]), st.sampled_from([32, 64]),
       st.sampled_from([(16, 16), (32, 16), (16, 32)]), st.booleans(),
       st.sampled_from([None, 30.0]), st.sampled_from([None, 20.0]),
       st.sampled_from([np.float32, jnp.bfloat16]))
def test_a4_flash_attention(heads, seq, blocks, causal, soft_cap, mle, dtype):
    h, hkv = heads
    q, k, v = _normal((h, seq, 16), dtype), _normal((hkv, seq, 16), dtype), \
        _normal((hkv, seq, 8), dtype)
    _same_as_real(A4.flash_attention, (q, k, v), (_sds(q), _sds(k), _sds(v)),
                  causal=causal, block_q=blocks[0], block_kv=blocks[1], soft_cap=soft_cap,
                  max_logit_const=mle)


@SIM_SETTINGS
@given(st.sampled_from(["causal", "local", "segments"]), st.sampled_from([64, 128]),
       st.sampled_from([(16, 16), (32, 16), (16, 32)]))
def test_a5_splash_attention(kind, seq, blocks):
    if kind == "causal":
        mask = A5.causal_mask(seq)
    elif kind == "local":
        mask = A5.local_mask(seq, (24, 0))
    else:
        ids = np.repeat(np.arange(3), [seq // 4, seq // 2, seq - seq // 4 - seq // 2])
        mask = A5.segment_mask(ids, ids)
    info = A5.build_mask_info(mask, *blocks)
    q, k, v = _normal((2, seq, 16)), _normal((2, seq, 16)), _normal((2, seq, 8))
    _same_as_real(A5.splash_attention, (q, k, v, info), (_sds(q), _sds(k), _sds(v), info))


def test_lecture_matmul_runs_at_full_size_with_the_lecture_counts():
    x = jax.ShapeDtypeStruct((4096, 7168), jnp.bfloat16)
    y = jax.ShapeDtypeStruct((7168, 18432), jnp.bfloat16)
    est = pallas_sim.estimate(A3.matmul, x, y, block_shape=(1024, 1024, 1024))
    call = est.last
    assert call.num_steps == 4 * 18 * 7
    assert call.ops.total("mxu_flops_bf16") == 2 * 4096 * 7168 * 18432
    assert call.vmem_bytes == 16 * 2 ** 20, "lecture §4.1: 3d grid at 1024 needs 16 MiB"
    assert est.outputs.shape == (4096, 18432)


def test_vmem_oom_is_the_real_runs_error():
    def unblocked_add(x, y):
        return pl.pallas_call(A1.add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(
            x, y)

    spec = jax.ShapeDtypeStruct((2048, 2048), jnp.float32)
    with pytest.raises(pallas_sim.VmemOOMError) as abstract:
        pallas_sim.estimate(unblocked_add, spec, spec)
    x = np.zeros((2048, 2048), np.float32)
    with pytest.raises(pallas_sim.VmemOOMError) as real:
        unblocked_add(x, x)
    assert str(abstract.value) == str(real.value)
    assert "Scoped allocation with size 48.00M and limit 32.00M" in str(abstract.value)


def test_bad_shapes_give_the_real_runs_error():
    x = jax.ShapeDtypeStruct((100, 64), jnp.float32)
    y = jax.ShapeDtypeStruct((64, 64), jnp.float32)
    with pytest.raises(ValueError) as abstract:
        pallas_sim.estimate(A3.matmul, x, y, block_shape=(64, 64, 64))
    with pytest.raises(ValueError) as real:
        A3.matmul(np.zeros((100, 64), np.float32), np.zeros((64, 64), np.float32),
                  block_shape=(64, 64, 64))
    assert str(abstract.value) == str(real.value)


def test_control_flow_on_loaded_data_names_the_line():
    def kernel(x_ref, o_ref):
        @pl.when(x_ref[0, 0] > 0)  # data-dependent: fine for real, impossible on shapes
        def _():
            o_ref[...] = x_ref[...]

    def call(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    x = np.ones((8, 128), np.float32)
    call(x)  # a real run knows the value
    with pytest.raises(pallas_sim.AbstractValueError) as err:
        pallas_sim.estimate(call, _sds(x))
    message = str(err.value)
    assert f"{__file__}:" in message and "x_ref[0, 0] > 0" in message
    assert "needs the value of a bool[] array" in message


def test_data_dependent_ref_index_and_fori_bound_name_their_lines():
    def index_kernel(i_ref, x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(i_ref[0, 0], 8), :]

    def loop_kernel(n_ref, x_ref, o_ref):
        o_ref[...] = jax.lax.fori_loop(0, n_ref[0, 0], lambda i, acc: acc + 1.0, x_ref[:8, :])

    for kernel, marker in ((index_kernel, "pl.ds(i_ref[0, 0], 8)"),
                           (loop_kernel, "jax.lax.fori_loop(0, n_ref[0, 0]")):
        def call(i, x, kernel=kernel):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128),
                                                                         jnp.float32))(i, x)

        i = np.zeros((1, 1), np.int32)
        x = np.zeros((16, 128), np.float32)
        call(i, x)
        with pytest.raises(pallas_sim.AbstractValueError) as err:
            pallas_sim.estimate(call, _sds(i), _sds(x))
        assert marker in str(err.value)


def test_scalar_prefetch_tables_given_as_arrays_steer_the_abstract_run():
    def kernel(idx_ref, x_ref, o_ref):
        @pl.when(idx_ref[pl.program_id(0)] > 0)
        def _():
            o_ref[...] = jnp.exp(x_ref[...])

        @pl.when(idx_ref[pl.program_id(0)] == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

    def call(idx, x):
        spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(4,),
            in_specs=[pl.BlockSpec((8, 128), lambda i, t: (t[i] % 2, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i, t: (i, 0)))
        return pl.pallas_call(kernel, grid_spec=spec,
                              out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32))(idx, x)

    idx = np.array([1, 0, 3, 0], np.int32)
    x = _normal((16, 128))
    _same_as_real(call, (idx, x), (idx, _sds(x)))
    est = pallas_sim.estimate(call, idx, _sds(x))
    np.testing.assert_array_equal(est.last.ops["eup_ops"], [1024, 0, 1024, 0])


def test_unknown_chip_lists_the_known_ones():
    with pytest.raises(pallas_sim.UnknownChipError) as err:
        pallas_sim.estimate(A1.blocked_add, _sds(np.zeros((8, 128), np.float32)),
                            _sds(np.zeros((8, 128), np.float32)), chip="v9")
    for name in ("v5e", "v6e", "v7"):
        assert name in str(err.value)


def _leading_axis_kernel_call(x):
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 1)  # slab 1 differs from slab 0
        def _():
            o_ref[...] = jnp.exp(x_ref[...])

        @pl.when(pl.program_id(0) != 1)
        def _():
            o_ref[...] = x_ref[...] * 2.0

    return pl.pallas_call(
        kernel, grid=(3, 2), in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((8, 128), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def _smem_counter_call(x):
    def kernel(x_ref, o_ref, count_ref):
        @pl.when((pl.program_id(0) == 0) & (pl.program_id(1) == 0))
        def _():
            count_ref[0] = 0

        count_ref[0] = count_ref[0] + 1

        @pl.when(count_ref[0] > 3)  # depends on steps before, not on the grid index
        def _():
            o_ref[...] = jnp.tanh(x_ref[...])

        @pl.when(count_ref[0] <= 3)
        def _():
            o_ref[...] = x_ref[...]

    return pl.pallas_call(
        kernel, grid=(3, 2), in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((8, 128), lambda i, j: (i, j)),
        scratch_shapes=[pltpu.SMEM((1,), jnp.int32)],
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@pytest.mark.parametrize("call", [_leading_axis_kernel_call, _smem_counter_call])
def test_steps_that_differ_between_leading_slabs_are_not_copied(call):
    x = _normal((24, 256))
    _same_as_real(call, (x,), (_sds(x),))
    est = pallas_sim.estimate(call, _sds(x))
    assert len(set(est.last.ops["eup_ops"].tolist())) == 2, "some steps use the EUP, some not"


def test_an_estimate_inside_a_trace_does_not_record_into_it():
    x = _normal((16, 128))
    with pallas_sim.trace() as outer:
        A1.blocked_add(x, x, block_shape=(8, 128))
        est = pallas_sim.estimate(A1.blocked_add, _sds(x), _sds(x), block_shape=(8, 128))
    assert len(outer.calls) == 1 and len(est.calls) == 1
    assert outer.calls[0] == est.calls[0]


def test_run_scoped_buffers_are_shape_only_too():
    def kernel(x_ref, o_ref):
        def body(buf, count):
            buf[...] = x_ref[...] * 2
            count[0] = 3  # SMEM stays concrete
            o_ref[...] = buf[...] + 1

        pl.run_scoped(body, pltpu.VMEM((8, 128), jnp.float32), pltpu.SMEM((1,), jnp.int32))

    def call(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    x = _normal((8, 128))
    _same_as_real(call, (x,), (_sds(x),))


@pytest.mark.parametrize("subscripts,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("bij,bjk", [(5, 2, 3), (5, 3, 4)]), ("...i,i", [(2, 3, 4), (4,)]), ("ij->", [(2, 3)]),
    ("i...->...", [(2, 3, 4)]), ("ii->i", [(3, 3)]), ("ij,kj", [(1, 3), (4, 3)])])
def test_einsum_result_shapes_follow_numpy_with_and_without_an_ellipsis(subscripts, shapes):
    from pallas_sim._src.abstract import _einsum_shape

    expected = np.einsum(subscripts, *[np.ones(s, np.float32) for s in shapes]).shape
    assert _einsum_shape(subscripts, shapes) == expected


def test_an_estimate_prints_one_line_per_call_not_every_steps_op_counts() -> None:
    """``repr(pallas_sim.estimate(...))`` was the dataclass's: every call's per-step op
    count arrays (4 KB here once numpy summarises them; 94 KB in a session a TA reported).
    Now: the chip and total, then one line per call with its grid, time, MFU, HBM
    utilisation and VMEM."""
    x = jax.ShapeDtypeStruct((4096, 4096), jnp.bfloat16)
    found = pallas_sim.estimate(A3.matmul, x, x, chip="v5e")
    text = repr(found)
    assert len(text) < 300, text
    lines = text.splitlines()
    assert lines[0].startswith("Estimate(chip=v5e, calls=1, time=")
    assert f"grid={tuple(found.last.grid)}" in lines[1] and "MFU" in lines[1]
    assert f"{found.time_s * 1e3:.4g} ms" in lines[0]


def test_an_estimates_timeline_prints_a_few_lines_not_its_per_step_arrays() -> None:
    """``est.timelines[0]`` (the predicted timeline of a call, what a student looks at
    next) printed as the dataclass's repr: sixteen per-step arrays, 88 KB for the lecture's
    a3 matmul with 1024³ blocks (504 steps; numpy prints up to 1000 values in full). Now a
    few lines: predicted time, bound, HBM and VMEM, grid steps; every field stays an
    attribute."""
    x = jax.ShapeDtypeStruct((4096, 7168), jnp.bfloat16)
    y = jax.ShapeDtypeStruct((7168, 18432), jnp.bfloat16)
    found = pallas_sim.estimate(A3.matmul, x, y, block_shape=(1024, 1024, 1024))
    timeline = found.timelines[0]
    text = repr(timeline)
    assert len(text) < 600 and len(text.splitlines()) <= 6, f"{len(text)} characters:\n{text}"
    assert "504 grid steps" in text, text
    assert f"{timeline.time_s * 1e3:.4g} ms" in text, text
    assert f"{timeline.dominant_bound}-bound" in text, text
    assert "HBM" in text and "VMEM" in text and "MFU" in text, text
    assert len(repr(found.timelines)) < 700, "a list of timelines prints each in a few lines"
    assert timeline.dma_start.shape == (504,) and timeline.bound.shape == (504,)
    assert str(timeline) == text
    lines = repr(found).splitlines()
    assert "504 steps" in lines[1] and f"{timeline.dominant_bound}-bound" in lines[1], lines
