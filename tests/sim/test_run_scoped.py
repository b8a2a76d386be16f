"""``pl.run_scoped``: fresh poisoned buffers per entry, counted in
the call's VMEM while they live, refused where JAX's TPU interpret mode refuses them."""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)
BLOCK = 16 * 128 * 4  # bytes of one f32[16,128] buffer


def whole(kernel, **kwargs):
    """x -> o, both whole-array VMEM blocks, one step."""
    return pl.pallas_call(kernel, out_shape=F32, **kwargs)


def test_a_scoped_buffer_starts_poisoned_and_returns_the_bodys_value():
    def kernel(x, o):
        def body(v, s):
            o[...] = v[...]            # poison, never written
            v[...] = x[...] * 2
            s[0] = 5
            return v[...] + 1, s[0]
        doubled, five = pl.run_scoped(body, pltpu.VMEM((16, 128), jnp.float32),
                                      s=pltpu.SMEM((4,), jnp.int32))
        o[:8] = doubled[:8] + five

    out = whole(kernel)(X)
    assert np.isnan(out[8:]).all(), "rows never written back are the scoped buffer's poison"
    np.testing.assert_array_equal(out[:8], X[:8] * 2 + 1 + 5)


def test_every_entry_allocates_afresh():
    def kernel(x, o):
        def body(v):
            @pl.when(pl.program_id(0) == 0)
            def _():
                v[...] = x[...]
            o[...] = v[...]
        pl.run_scoped(body, pltpu.VMEM((8, 128), jnp.float32))

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    out = pl.pallas_call(kernel, out_shape=F32, grid=(2,), in_specs=[spec], out_specs=spec)(X)
    np.testing.assert_array_equal(out[:8], X[:8])
    assert np.isnan(out[8:]).all(), (
        "step 1 enters run_scoped again and gets a new poisoned buffer (TPU interpret mode)")


def test_scoped_bytes_count_on_top_of_the_call_and_the_peak_is_recorded():
    def kernel(x, o):
        def outer(a):
            pl.run_scoped(lambda b: None, pltpu.VMEM((16, 128), jnp.float32))
        pl.run_scoped(outer, pltpu.VMEM((16, 128), jnp.float32))
        pl.run_scoped(lambda c, sem: None, pltpu.VMEM((8, 128), jnp.float32),
                      pltpu.SemaphoreType.DMA((2,)))
        pl.run_scoped(lambda s: None, pltpu.SMEM((64,), jnp.int32))
        o[...] = x[...]

    with pallas_sim.trace() as t:
        whole(kernel)(X)
    call = t.last
    assert call.scoped_vmem_bytes == 2 * BLOCK, (
        "the nested a + b (2 x 8 KiB) is the most live at once; c (4 KiB) comes after")
    assert call.vmem_bytes == 2 * BLOCK + 2 * BLOCK, "x and o blocks + the scoped peak"
    assert call.scoped_smem_bytes == 64 * 4 and call.smem_bytes == 64 * 4


def test_a_scoped_buffer_over_the_limit_is_a_vmem_oom_naming_it():
    def kernel(x, o):
        pl.run_scoped(lambda big: None, pltpu.VMEM((4096, 4096), jnp.float32))

    with pytest.raises(pallas_sim.VmemOOMError,
                       match=r"Scoped allocation with size 64\.02M and limit 32\.00M") as info:
        whole(kernel)(X)
    assert "scoped  big" in str(info.value), "the table names the scoped buffer"


def test_hbm_buffers_values_and_returned_refs_are_refused():
    with pytest.raises(ValueError, match="Cannot allocate HBM in `run_scoped`."):
        whole(lambda x, o: pl.run_scoped(lambda h: None, pltpu.HBM((8, 128), jnp.float32)))(X)
    with pytest.raises(ValueError, match="Cannot allocate HBM in `run_scoped`."):
        whole(lambda x, o: pl.run_scoped(lambda h: None, pl.ANY((8, 128), jnp.float32)))(X)
    with pytest.raises(TypeError, match="get_ref_aval"):
        whole(lambda x, o: pl.run_scoped(lambda h: None, F32))(X)
    with pytest.raises(ValueError, match="returned a ref"):
        whole(lambda x, o: pl.run_scoped(lambda v: v, pltpu.VMEM((8, 128), jnp.float32)))(X)


def test_a_copy_on_a_scoped_semaphore_must_be_waited_in_the_scope():
    def kernel(x, o):
        def body(v, sem):
            pltpu.async_copy(x, v, sem)
        pl.run_scoped(body, pltpu.VMEM((16, 128), jnp.float32), pltpu.SemaphoreType.DMA)

    with pytest.raises(pallas_sim.UnwaitedDMAError, match="run_scoped body"):
        pl.pallas_call(kernel, out_shape=F32, in_specs=[pl.BlockSpec(memory_space=pl.ANY)])(X)


def test_run_scoped_outside_a_kernel_is_refused_as_in_jax():
    with pytest.raises(NotImplementedError, match="Evaluation rule for 'run_scoped'"):
        pl.run_scoped(lambda v: None, pltpu.VMEM((8, 128), jnp.float32))
