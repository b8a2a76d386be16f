"""The newer Pallas TPU API on both backends:
``pltpu.sync_copy``/``async_copy``, ``pl.run_scoped`` and ``pl.loop``.

Each kernel is one ``build(ns)`` run on pallas_sim and on JAX 0.10.2 in both interpreters
(``api_helpers``). Where the interpreters disagree the test says what each does, and
pallas_sim follows TPU interpret mode (docs/fidelity.md, "Behaviours").
"""

from __future__ import annotations

import numpy as np
import pytest
from api_helpers import assert_refused, assert_same_values, outcomes

import pallas_sim

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)


def f32(ns, *shape):
    return ns.jax.ShapeDtypeStruct(shape or (16, 128), ns.jnp.float32)


# -- sync_copy / async_copy ----------------------------------------------------------------


def hbm_call(ns, kernel, scratch=(), out_space=None):
    pl, pltpu = ns.pl, ns.pltpu
    return pl.pallas_call(kernel, out_shape=f32(ns),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_specs=pl.BlockSpec(memory_space=out_space or pltpu.VMEM),
                          scratch_shapes=scratch)(X)


def sync_into_vmem(ns):
    return hbm_call(ns, lambda x, o: ns.pltpu.sync_copy(x, o))


def sync_hbm_to_hbm(ns):
    return hbm_call(ns, lambda x, o: ns.pltpu.sync_copy(x, o), out_space=ns.pl.ANY)


def sync_trees_of_views(ns):
    pl, pltpu, jnp = ns.pl, ns.pltpu, ns.jnp

    def kernel(x, o, top, bottom, s):
        pltpu.sync_copy((x.at[pl.ds(0, 8)], x.at[pl.ds(8, 8)]), (top, bottom))
        pltpu.sync_copy(x.at[0, pl.ds(0, 8)], s)
        o[pl.ds(0, 8), :] = bottom[...] + s[3]
        o[pl.ds(8, 8), :] = top[...]

    return hbm_call(ns, kernel, [pltpu.VMEM((8, 128), jnp.float32)] * 2
                    + [pltpu.SMEM((8,), jnp.float32)])


def async_then_wait(ns):
    pltpu, jnp = ns.pltpu, ns.jnp

    def kernel(x, o, buf, sem):
        copy = pltpu.async_copy(x, buf, sem, priority=1)
        copy.wait()
        o[...] = buf[...] * 3

    return hbm_call(ns, kernel, [pltpu.VMEM((16, 128), jnp.float32), pltpu.SemaphoreType.DMA])


@pytest.mark.parametrize("build", [sync_into_vmem, sync_hbm_to_hbm, sync_trees_of_views,
                                   async_then_wait], ids=lambda f: f.__name__)
def test_sync_and_async_copies_give_jaxs_numbers_in_both(build):
    assert_same_values(build)


def test_an_async_copy_lands_at_its_wait_as_in_tpu_interpret_mode():
    def build(ns):
        pltpu, jnp = ns.pltpu, ns.jnp

        def kernel(x, o, buf, sem):
            buf[...] = jnp.zeros_like(buf)
            copy = pltpu.async_copy(x, buf, sem)
            o[...] = buf[...]          # before the wait
            copy.wait()

        return hbm_call(ns, kernel, [pltpu.VMEM((16, 128), jnp.float32),
                                     pltpu.SemaphoreType.DMA])

    assert not assert_same_values(build, modes=("tpu",)).any(), "old contents: zeros"
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert np.array_equal(hlo.value, X), f"the HLO interpreter copies at start: {hlo}"


@pytest.mark.parametrize(("kernel", "message"), [
    (lambda ns: lambda x, o, s: ns.pltpu.async_copy(x, o, s, priority=-1).wait(),
     "DMA start priority must be non-negative: -1"),
    (lambda ns: lambda x, o, s: ns.pltpu.async_copy(x, o, 3).wait(),
     "DMA source/destination/semaphore arguments must be Refs."),
    (lambda ns: lambda x, o, s: ns.pltpu.sync_copy(ns.jnp.zeros((16, 128), ns.jnp.float32), o),
     "DMA source/destination/semaphore arguments must be Refs."),
], ids=["negative priority", "semaphore not a ref", "source not a ref"])
def test_bad_dma_arguments_are_refused_in_both(kernel, message):
    def build(ns):
        return hbm_call(ns, kernel(ns), [ns.pltpu.SemaphoreType.DMA])

    assert_refused(build, ValueError, {"hlo": message, "tpu": message}, match=message)


def test_a_copy_signalling_an_array_of_semaphores_is_refused_in_both():
    message = "Cannot signal on a non-()-shaped semaphore: (2,)"

    def build(ns):
        return hbm_call(ns, lambda x, o, s: ns.pltpu.async_copy(x, o, s).wait(),
                        [ns.pltpu.SemaphoreType.DMA((2,))])

    assert_refused(build, ValueError, {"hlo": message, "tpu": message}, match=message)


def test_an_accumulating_dma_is_refused_because_neither_interpreter_models_it():
    def build(ns):
        def kernel(x, o):
            o[...] = ns.jnp.ones_like(o)
            ns.pltpu.sync_copy(x, o, add=True)
        return hbm_call(ns, kernel)

    assert_refused(build, pallas_sim.UnsupportedJaxUsageError,
                   {"hlo": "NotImplementedError: DMA partial discharge add=True"})
    tpu = outcomes(build, ("tpu",))["tpu"]
    assert np.array_equal(tpu.value, X), f"TPU interpret mode overwrites instead of adding: {tpu}"


# -- run_scoped --------------------------------------------------------------------------------


def scoped_buffers(ns):
    pl, pltpu, jnp = ns.pl, ns.pltpu, ns.jnp

    def kernel(x_hbm, o):
        def body(v, sems, *, count):
            pltpu.async_copy(x_hbm.at[pl.ds(0, 8)], v.at[pl.ds(0, 8)], sems.at[0]).wait()
            pltpu.async_copy(x_hbm.at[pl.ds(8, 8)], v.at[pl.ds(8, 8)], sems.at[1]).wait()
            count[0] = 5

            def inner(w):
                w[...] = v[...] * 2
                return w[...]
            doubled = pl.run_scoped(inner, pltpu.VMEM((16, 128), jnp.float32))
            return doubled + count[0]
        o[...] = pl.run_scoped(body, pltpu.VMEM((16, 128), jnp.float32),
                               pltpu.SemaphoreType.DMA((2,)), count=pltpu.SMEM((1,), jnp.int32))

    return pl.pallas_call(kernel, out_shape=f32(ns),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)])(X)


def scoped_poison(ns):
    def kernel(x, o):
        ns.pl.run_scoped(lambda v: o.__setitem__(Ellipsis, v[...]),
                         ns.pltpu.VMEM((16, 128), ns.jnp.float32))
    return ns.pl.pallas_call(kernel, out_shape=f32(ns))(X)


def test_run_scoped_buffers_and_return_values_match_jax_in_both():
    assert_same_values(scoped_buffers)
    assert np.isnan(assert_same_values(scoped_poison)).all(), "a fresh buffer is poison"


def test_every_run_scoped_entry_is_fresh_as_in_tpu_interpret_mode():
    def build(ns):
        pl, jnp = ns.pl, ns.jnp

        def kernel(x, o):
            def body(v):
                @pl.when(pl.program_id(0) == 0)
                def _():
                    v[...] = x[...]
                o[...] = v[...]
            pl.run_scoped(body, ns.pltpu.VMEM((8, 128), jnp.float32))

        rows = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, out_shape=f32(ns), grid=(2,), in_specs=[rows],
                              out_specs=rows)(X)

    out = assert_same_values(build, modes=("tpu",))
    assert np.isnan(out[8:]).all() and np.array_equal(out[:8], X[:8])
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert isinstance(hlo.error, AssertionError), f"the HLO interpreter fails here: {hlo}"


def test_hbm_in_run_scoped_is_refused_as_in_tpu_interpret_mode():
    def build(ns):
        pltpu = ns.pltpu

        def kernel(x, o):
            def body(h):
                pltpu.sync_copy(x, h)
                pltpu.sync_copy(h, o)
            ns.pl.run_scoped(body, pltpu.HBM((16, 128), ns.jnp.float32))

        return ns.pl.pallas_call(kernel, out_shape=f32(ns),
                                 in_specs=[ns.pl.BlockSpec(memory_space=ns.pl.ANY)])(X)

    message = "Cannot allocate HBM in `run_scoped`."
    assert_refused(build, ValueError, {"tpu": message}, match=message)
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert np.array_equal(hlo.value, X), f"the HLO interpreter allocates it: {hlo}"


def test_returning_a_scoped_ref_is_refused_in_both():
    def build(ns):
        def kernel(x, o):
            r = ns.pl.run_scoped(lambda v: v, ns.pltpu.VMEM((16, 128), ns.jnp.float32))
            o[...] = r[...]
        return ns.pl.pallas_call(kernel, out_shape=f32(ns))(X)

    assert_refused(build, ValueError, {"hlo": "ValueError", "tpu": "ValueError"})


# -- pl.loop -------------------------------------------------------------------------------------


def loop_rows(ns):
    pl, jnp = ns.pl, ns.jnp

    def kernel(x, o):
        o[...] = jnp.zeros_like(o)

        @pl.loop(1, 16, step=3)
        def _(i):
            o[pl.ds(i, 1), :] = x[pl.ds(i, 1), :] * 2

        @pl.loop(0, pl.program_id(0) + 2)
        def _(i):
            o[pl.ds(i, 1), :] = o[pl.ds(i, 1), :] + 1

    return pl.pallas_call(kernel, out_shape=f32(ns), grid=(2,),
                          out_specs=pl.BlockSpec((16, 128), lambda i: (0, 0)))(X)


def loop_carry(ns):
    pl, jnp = ns.pl, ns.jnp

    def kernel(x, o, n):
        @pl.loop(0, 16, init_carry=(jnp.zeros((1, 128), jnp.float32), 0), unroll=4)
        def total(i, carry):
            acc, count = carry
            return acc + x[pl.ds(i, 1), :], count + i

        count = pl.loop(16, 0, step=-2, init_carry=0)(lambda i, c: c + 1)
        o[...] = jnp.broadcast_to(total[0], o.shape) + total[1]
        n[0] = count

    return pl.pallas_call(
        kernel, out_shape=(f32(ns), ns.jax.ShapeDtypeStruct((1,), jnp.int32)),
        out_specs=(pl.BlockSpec(memory_space=ns.pltpu.VMEM),
                   pl.BlockSpec(memory_space=ns.pltpu.SMEM)))(X)


def test_pl_loop_indices_bounds_and_carries_match_jax_in_both():
    assert_same_values(loop_rows)
    _, count = assert_same_values(loop_carry)
    assert count.tolist() == [9], "JAX's cdiv(0 - 16, -2) on Python ints is 9, not 8"


@pytest.mark.parametrize(("body", "error"), [
    (lambda ns: ns.pl.loop(0, 4, step=0)(lambda i: None), ZeroDivisionError),
    (lambda ns: ns.pl.loop(0.0, 4.0)(lambda i: None), TypeError),
    (lambda ns: ns.pl.loop(0, 4)(lambda i: 1), TypeError),
], ids=["step 0", "float bounds", "body returns without a carry"])
def test_pl_loop_refusals_match_jax_in_both(body, error):
    def build(ns):
        def kernel(x, o):
            body(ns)
            o[...] = x[...]
        return ns.pl.pallas_call(kernel, out_shape=f32(ns))(X)

    assert_refused(build, error, {"hlo": error.__name__, "tpu": error.__name__})


# -- pl.multiple_of (an alignment hint manual-DMA kernels use on their pl.ds starts) --------


def aligned_row_copies(ns):
    pl, pltpu, jnp = ns.pl, ns.pltpu, ns.jnp

    def kernel(x, o, buf, sem):
        for block in range(2):
            start = pl.multiple_of(block * 8, 8)
            copy = pltpu.make_async_copy(x.at[pl.ds(start, 8)], buf, sem)
            copy.start()
            copy.wait()
            o[pl.ds(start, 8), :] = buf[...] * 2.0

    return hbm_call(ns, kernel, [pltpu.VMEM((8, 128), jnp.float32),
                                 pltpu.SemaphoreType.DMA])


def test_multiple_of_is_a_hint_that_changes_no_value() -> None:
    np.testing.assert_array_equal(assert_same_values(aligned_row_copies), X * 2.0)


def test_a_false_multiple_of_hint_is_refused_with_its_numbers() -> None:
    with pytest.raises(ValueError, match="12 is not a multiple of 8"):
        pallas_sim.pl.multiple_of(12, 8)
    with pytest.raises(TypeError, match="sequence of ints"):
        pallas_sim.pl.multiple_of(16, 8.0)
    assert pallas_sim.pl.multiple_of(16, 8) == 16
