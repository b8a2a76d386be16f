"""Manual DMA (docs/pallas-sim.md rule 7): ``pl.ANY`` refs, ``ref.at[...]``,
``pltpu.make_async_copy(...).start()/.wait()``, ``pltpu.SemaphoreType.DMA``.

Expected values are what TPU interpret mode (JAX 0.10.x, default
``dma_execution_mode="on_wait"``) gives for the same kernels; the fidelity
suite (tests/fidelity) runs them on real JAX too.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

ANY_SPEC = pl.BlockSpec(memory_space=pl.ANY)


def row_copy_call(rows_per_step: int, steps: int, cols: int, body):
    """A call over ``steps`` row blocks: x in HBM (pl.ANY), a VMEM buffer and one
    DMA semaphore as scratch; ``body(x_hbm, o_ref, buf, sem, i)`` is the kernel."""
    def kernel(x_hbm, o_ref, buf, sem):
        body(x_hbm, o_ref, buf, sem, pl.program_id(0))
    return pl.pallas_call(
        kernel, grid=(steps,), in_specs=[ANY_SPEC],
        out_specs=pl.BlockSpec((rows_per_step, cols), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((rows_per_step, cols), jnp.float32),
                        pltpu.SemaphoreType.DMA],
        out_shape=jax.ShapeDtypeStruct((rows_per_step * steps, cols), jnp.float32))


@SIM_SETTINGS
@given(rows=st.integers(1, 8), steps=st.integers(1, 6), cols=st.integers(1, 16),
       scale=st.floats(-4, 4, allow_nan=False, width=32))
def test_copy_then_wait_delivers_the_rows_and_counts_one_manual_dma_per_step(
        rows, steps, cols, scale):
    x = np.arange(rows * steps * cols, dtype=np.float32).reshape(rows * steps, cols)

    def body(x_hbm, o_ref, buf, sem, i):
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(i * rows, rows)], buf, sem)
        copy.start()
        copy.wait()
        o_ref[...] = buf[...] * np.float32(scale)

    with pallas_sim.trace() as t:
        out = row_copy_call(rows, steps, cols, body)(x)
    np.testing.assert_array_equal(out, x * np.float32(scale))
    call = t.calls[-1]
    assert call.manual_dma_count == steps, (
        f"{steps} grid steps each started one copy; the trace says {call.manual_dma_count}")
    assert call.operand("x_hbm").memory_space == "any" and call.operand("x_hbm").dma_count == 0, (
        "a pl.ANY input is never copied automatically")


def test_reading_the_destination_before_wait_sees_its_old_contents():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)

    def body(x_hbm, o_ref, buf, sem, i):
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(i * 2, 2)], buf, sem)
        copy.start()
        o_ref[...] = buf[...]  # before the wait: what the buffer held until now
        copy.wait()

    out = row_copy_call(2, 2, 8, body)(x)
    assert np.isnan(out[:2]).all(), (
        "at step 0 the scratch buffer is fresh (poison) and the copy has not landed: NaN, as in "
        "TPU interpret mode")
    np.testing.assert_array_equal(out[2:], x[:2], err_msg=(
        "at step 1 the buffer still holds step 0's rows, waited at the end of step 0"))


def test_a_copy_never_waited_raises_at_the_end_of_the_call():
    x = np.ones((4, 8), np.float32)

    def body(x_hbm, o_ref, buf, sem, i):
        pltpu.make_async_copy(x_hbm.at[pl.ds(i * 2, 2)], buf, sem).start()
        o_ref[...] = buf[...]

    with pytest.raises(pallas_sim.UnwaitedDMAError) as info:
        row_copy_call(2, 2, 8, body)(x)
    assert "never waited" in str(info.value) and "x_hbm.at[" in str(info.value)


def test_with_unwaited_dma_warn_the_destination_keeps_its_poison_as_in_tpu_interpret_mode():
    x = np.ones((4, 8), np.float32)

    def body(x_hbm, o_ref, buf, sem, i):
        pltpu.make_async_copy(x_hbm.at[pl.ds(i * 2, 2)], buf, sem).start()
        o_ref[...] = buf[...]

    with pallas_sim.config(unwaited_dma="warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = row_copy_call(2, 2, 8, body)(x)
    assert np.isnan(out).all(), "no copy ever landed, so every output row is poison"
    assert any("never waited" in str(w.message) for w in caught)


def test_a_copy_started_at_one_step_may_be_waited_at_the_next_with_a_new_descriptor():
    """Cross-step prefetch: step i waits for the rows started at step i - 1 and
    starts step i + 1's rows (two buffers, two semaphores)."""
    x = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)

    def kernel(x_hbm, o_ref, bufs, sems):
        i = pl.program_id(0)

        def copy(step, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(step, 1)], bufs.at[slot], sems.at[slot])

        @pl.when(i == 0)
        def _():
            copy(0, 0).start()

        @pl.when(i + 1 < pl.num_programs(0))
        def _():
            copy(i + 1, (i + 1) % 2).start()

        copy(i, i % 2).wait()
        o_ref[...] = bufs[i % 2] + 1

    with pallas_sim.trace() as t:
        out = pl.pallas_call(
            kernel, grid=(6,), in_specs=[ANY_SPEC],
            out_specs=pl.BlockSpec((1, 4), lambda i: (i, 0)),
            scratch_shapes=[pltpu.VMEM((2, 1, 4), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
            out_shape=jax.ShapeDtypeStruct((6, 4), jnp.float32))(x)
    np.testing.assert_array_equal(out, x + 1)
    assert t.calls[-1].manual_dma_count == 6


def test_a_pl_any_output_is_written_only_by_manual_copies():
    x = np.arange(16, dtype=np.float32).reshape(2, 8)

    def kernel(x_ref, o_hbm, sem):
        copy = pltpu.make_async_copy(x_ref, o_hbm.at[pl.ds(pl.program_id(0), 1)], sem)
        copy.start()
        copy.wait()

    out = pl.pallas_call(
        kernel, grid=(2,), in_specs=[pl.BlockSpec((1, 8), lambda i: (i, 0))],
        out_specs=ANY_SPEC, scratch_shapes=[pltpu.SemaphoreType.DMA],
        out_shape=jax.ShapeDtypeStruct((2, 8), jnp.float32))(x)
    np.testing.assert_array_equal(out, x)


def test_wait_without_start_raises_instead_of_hanging():
    def body(x_hbm, o_ref, buf, sem, i):
        pltpu.make_async_copy(x_hbm.at[pl.ds(0, 2)], buf, sem).wait()

    with pytest.raises(pallas_sim.PallasSimError, match="no copy in flight"):
        row_copy_call(2, 1, 8, body)(np.ones((2, 8), np.float32))


@pytest.mark.parametrize("dst_shape, dst_dtype", [((3, 8), np.float32), ((2, 8), np.int32)])
def test_mismatched_copy_is_a_value_error(dst_shape, dst_dtype):
    def kernel(x_hbm, o_ref, buf, sem):
        pltpu.make_async_copy(x_hbm, buf, sem)

    call = pl.pallas_call(
        kernel, in_specs=[ANY_SPEC],
        scratch_shapes=[pltpu.VMEM(dst_shape, dst_dtype), pltpu.SemaphoreType.DMA],
        out_shape=jax.ShapeDtypeStruct((2, 8), jnp.float32))
    with pytest.raises(ValueError, match="same shape and dtype"):
        call(np.ones((2, 8), np.float32))


def test_ref_at_is_a_bounds_checked_view():
    def kernel(x_ref, o_ref):
        o_ref.at[pl.ds(0, 2)][...] = x_ref.at[1:3][...]
        o_ref.at[pl.ds(2, 2)][...] = x_ref.at[pl.ds(0, 2)][...]
        x_ref.at[pl.ds(3, 2)]  # rows 3..4 of a 4-row ref

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4, 8), jnp.float32))
    with pytest.raises(IndexError, match="x_ref"):
        call(x)


def test_semaphores_take_no_vmem():
    def kernel(x_hbm, o_ref, sems):
        o_ref[...] = jnp.zeros_like(o_ref)

    with pallas_sim.trace() as t:
        pl.pallas_call(kernel, in_specs=[ANY_SPEC],
                       scratch_shapes=[pltpu.SemaphoreType.DMA((4,))],
                       out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(
            np.ones((8, 128), np.float32))
    assert t.calls[-1].vmem_bytes == 8 * 128 * 4, "only the output block (one buffer)"
