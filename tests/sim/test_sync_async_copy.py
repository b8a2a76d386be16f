"""``pltpu.sync_copy`` and ``pltpu.async_copy``, on the DMA model of
``pallas_sim/dma.py``: copies land at ``.wait()``, as in JAX 0.10.x TPU interpret mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)
ANY = pl.BlockSpec(memory_space=pl.ANY)


def hbm_call(kernel, scratch=(), out_space=None):
    """x in HBM, o in ``out_space`` (VMEM by default), whole arrays, one step."""
    out_spec = pl.BlockSpec(memory_space=out_space) if out_space is not None else \
        pl.BlockSpec(memory_space=pltpu.VMEM)
    return pl.pallas_call(kernel, out_shape=F32, in_specs=[ANY], out_specs=out_spec,
                          scratch_shapes=scratch)


@pytest.mark.parametrize("out_space", [pltpu.VMEM, pl.ANY, pltpu.HBM])
def test_sync_copy_moves_the_whole_ref_at_once(out_space):
    with pallas_sim.trace() as t:
        out = hbm_call(lambda x, o: pltpu.sync_copy(x, o), out_space=out_space)(X)
    np.testing.assert_array_equal(out, X)
    assert t.last.manual_dma_count == 1 and t.last.manual_dma_bytes == X.nbytes, (
        "one DMA of f32[16,128] = 8192 B")


def test_sync_copy_takes_matching_pytrees_of_refs_and_views():
    def kernel(x, o, top, bottom):
        pltpu.sync_copy((x.at[:8], x.at[8:]), (top, bottom))
        o[:8] = bottom[...]
        o[8:] = top[...]

    scratch = [pltpu.VMEM((8, 128), jnp.float32)] * 2
    with pallas_sim.trace() as t:
        out = hbm_call(kernel, scratch)(X)
    np.testing.assert_array_equal(out, np.concatenate([X[8:], X[:8]]))
    assert t.last.manual_dma_count == 2, "one DMA per pair of leaves"


def test_sync_copy_of_differing_trees_shapes_or_a_value_is_a_value_error():
    for kernel, message in [
        (lambda x, o, a: pltpu.sync_copy((x,), (a, a)), "source tree"),
        (lambda x, o, a: pltpu.sync_copy(x, a), "same shape and dtype"),
        (lambda x, o, a: pltpu.sync_copy(jnp.zeros((8, 128), jnp.float32), a),
         "DMA source/destination/semaphore arguments must be Refs"),
    ]:
        with pytest.raises(ValueError, match=message):
            hbm_call(kernel, [pltpu.VMEM((8, 128), jnp.float32)])(X)


def test_sync_copy_needs_a_running_kernel():
    with pytest.raises(pallas_sim.OutsideKernelError, match="run_scoped"):
        pltpu.sync_copy(X, X)


def test_async_copy_starts_at_once_and_lands_at_wait():
    seen = {}

    def kernel(x, o, buf, sem):
        buf[...] = jnp.zeros_like(buf)
        copy = pltpu.async_copy(x, buf, sem)
        seen["before"] = buf[...]
        copy.wait()
        o[...] = buf[...]

    scratch = [pltpu.VMEM((16, 128), jnp.float32), pltpu.SemaphoreType.DMA]
    with pallas_sim.trace() as t:
        out = hbm_call(kernel, scratch)(X)
    np.testing.assert_array_equal(out, X)
    assert not np.any(pallas_sim._src.values.concrete(seen["before"])), (
        "before the wait the buffer holds its old contents (zeros), as in TPU interpret mode")
    assert t.last.manual_dma_count == 1


def test_async_copy_never_waited_raises_at_the_end_of_the_call():
    with pytest.raises(pallas_sim.UnwaitedDMAError, match="never waited"):
        hbm_call(lambda x, o, sem: pltpu.async_copy(x, o, sem) and None,
                 [pltpu.SemaphoreType.DMA])(X)


@pytest.mark.parametrize("start", ["async_copy", "make_async_copy"])
def test_priority_must_be_non_negative_and_add_is_not_modelled(start):
    def kernel(x, o, sem, *, priority=0, add=False):
        if start == "async_copy":
            pltpu.async_copy(x, o, sem, priority=priority, add=add).wait()
        else:
            copy = pltpu.make_async_copy(x, o, sem)
            copy.start(priority=priority, add=add)
            copy.wait()

    out = hbm_call(lambda x, o, s: kernel(x, o, s, priority=1), [pltpu.SemaphoreType.DMA])(X)
    np.testing.assert_array_equal(out, X)
    with pytest.raises(ValueError, match="DMA start priority must be non-negative: -1"):
        hbm_call(lambda x, o, s: kernel(x, o, s, priority=-1), [pltpu.SemaphoreType.DMA])(X)
    with pytest.raises(pallas_sim.UnsupportedJaxUsageError, match="add=True"):
        hbm_call(lambda x, o, s: kernel(x, o, s, add=True), [pltpu.SemaphoreType.DMA])(X)


def test_an_array_of_semaphores_or_a_non_ref_semaphore_is_refused_with_jaxs_message():
    with pytest.raises(ValueError, match=r"Cannot signal on a non-\(\)-shaped semaphore: "
                                         r"\(2,\)"):
        hbm_call(lambda x, o, s: pltpu.async_copy(x, o, s).wait(),
                 [pltpu.SemaphoreType.DMA((2,))])(X)
    with pytest.raises(ValueError, match="DMA source/destination/semaphore arguments must be "
                                         "Refs"):
        hbm_call(lambda x, o, s: pltpu.async_copy(x, o, 3).wait(),
                 [pltpu.SemaphoreType.DMA])(X)


def test_an_hbm_operand_of_pallas_call_refuses_loads_and_stores():
    with pytest.raises(pallas_sim.HBMAccessError, match="get_p: Buffers with a memory space"):
        hbm_call(lambda x, o: o.__setitem__(Ellipsis, x[...]))(X)
    with pytest.raises(pallas_sim.HBMAccessError, match="swap_p: Buffers with a memory space"):
        hbm_call(lambda x, o: x.__setitem__(Ellipsis, o[...]))(X)


def test_sync_copy_reaches_smem_and_a_copy_into_a_view_writes_through():
    def kernel(x, o, s):
        pltpu.sync_copy(x.at[0, pl.ds(0, 8)], s)
        pltpu.sync_copy(x.at[pl.ds(8, 8)], o.at[pl.ds(0, 8)])
        pltpu.sync_copy(x.at[pl.ds(0, 8)], o.at[pl.ds(8, 8)])
        o[0, 0] = s[3]

    out = hbm_call(kernel, [pltpu.SMEM((8,), jnp.float32)])(X)
    expected = np.concatenate([X[8:], X[:8]])
    expected[0, 0] = X[0, 3]
    np.testing.assert_array_equal(out, expected)
