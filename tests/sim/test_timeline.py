"""The TPU timeline model: chips as data, the pipeline rule per
operand buffering, manual DMAs where they are waited, MXU/VPU/EUP time, fixed step cost,
prologue/epilogue, TensorCore split; MFU, HBM utilisation, bound per step, VMEM.

Expected times are computed here by hand from the model's stated rules (docs and
pallas_sim/timeline.py) with simple constants, never read back from the code.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim._src import timeline
from pallas_sim._src.chips import CHIPS, get_chip

_A3 = Path(__file__).resolve().parents[2] / "solutions" / "a3_matmul.py"
_spec = importlib.util.spec_from_file_location("timeline_a3", _A3)
_a3 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_a3)
matmul = _a3.matmul

# Round constants so that hand arithmetic is exact: 1 µs per step, VPU 1e12/s, EUP 1e11/s,
# full bandwidth (a strided copy alone: a quarter of it), no per-copy or per-op cost.
CAL = timeline.Calibration(step_overhead_s=1e-6, dma_efficiency=1.0, strided_efficiency=0.25,
                           dma_issue_s=0.0, op_overhead_s=0.0, vpu_rate=1e12, eup_rate=1e11)
V7 = get_chip("v7")


def _scale_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def _scale(x, block_rows, buffers=None):
    spec = (pl.BlockSpec((block_rows, x.shape[1]), lambda i: (i, 0)) if buffers is None else
            pl.BlockSpec((block_rows, x.shape[1]), lambda i: (i, 0),
                         pipeline_mode=pl.Buffered(buffers)))
    return pl.pallas_call(
        _scale_kernel, grid=(x.shape[0] // block_rows,), in_specs=[spec],
        out_specs=pl.BlockSpec((block_rows, x.shape[1]), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def _predict(fn, *args, **kwargs):
    est = pallas_sim.estimate(fn, *args, **kwargs)
    return est.calls[-1], timeline.predict(est.calls[-1], V7, calibration=CAL)


def test_chips_carry_the_lecture_and_cloud_numbers_and_sources():
    v7 = CHIPS["v7"]
    assert v7.peak_bf16 == 1028.75e12 and v7.hbm_bandwidth == 3685.5e9
    assert round(v7.ridge_point, 2) == 279.13, "lecture §4.2 balance point"
    assert CHIPS["v5e"].peak_bf16 == 197e12 and CHIPS["v6e"].peak_bf16 == 918e12
    assert CHIPS["v7"].tensorcores == 2 and CHIPS["v6e"].tensorcores == 1
    for chip in CHIPS.values():
        assert chip.sources and all("docs" in s or "lecture" in s or "JAX" in s
                                    for s in chip.sources)
    assert get_chip("Ironwood") is v7
    with pytest.raises(pallas_sim.UnknownChipError, match="v5e, v6e, v7"):
        get_chip("h100")


def test_double_buffering_hides_the_shorter_of_copy_and_compute():
    # 4 steps; each copies a 1 MiB f32 block in and writes 1 MiB back; compute is the
    # step cost (1 µs) plus 256Ki multiplies on the VPU (0.262144 µs).
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)
    call, t = _predict(_scale, x, 256)
    dma = (1 << 20) / V7.hbm_bandwidth          # one block, either way
    work = 1e-6 + 256 * 1024 / 1e12
    assert dma < work
    # prologue: the first copy; then steps back to back (copies and write-backs hide
    # behind compute), then the last write-back (epilogue).
    assert math.isclose(t.time_s, dma + 4 * work + dma, rel_tol=1e-9)
    np.testing.assert_allclose(t.compute_start[1:], t.compute_end[:-1])
    assert t.dominant_bound == "overhead"
    assert t.hbm_bytes == call.hbm_bytes_read + call.hbm_bytes_written == 8 << 20


def test_single_buffering_serialises_copy_and_compute():
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)
    _, double = _predict(_scale, x, 256)
    _, single = _predict(_scale, x, 256, buffers=1)
    dma = (1 << 20) / V7.hbm_bandwidth
    work = 1e-6 + 256 * 1024 / 1e12
    # each copy waits for the previous step's compute, and queues behind its write-back
    assert math.isclose(single.time_s, 4 * (dma + work) + 3 * dma + dma, rel_tol=1e-9)
    assert single.time_s > double.time_s


def test_memory_bound_steps_run_at_the_copy_rate():
    x = jax.ShapeDtypeStruct((8192, 1024), jnp.float32)   # 4 MiB blocks, 8 steps
    slow_dma = dataclass_replace(CAL, dma_efficiency=0.25)
    est = pallas_sim.estimate(_scale, x, 1024)
    t = timeline.predict(est.last, V7, calibration=slow_dma)
    dma = (4 << 20) / (V7.hbm_bandwidth * 0.25)
    work = 1e-6 + 1024 * 1024 / 1e12
    assert work < dma
    # one queue: in0, in1, wb0, in2, wb1, ..., in7, wb6, wb7, back to back; the last
    # step's compute hides behind the write-back of step 6
    assert math.isclose(t.time_s, 16 * dma, rel_tol=1e-9)
    assert t.dominant_bound == "memory"
    assert t.hbm_utilisation == pytest.approx(
        t.hbm_bytes / (t.time_s * V7.hbm_bandwidth))


def dataclass_replace(cal, **changes):
    import dataclasses
    return dataclasses.replace(cal, **changes)


def test_mxu_time_mfu_and_compute_bound_steps():
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16)
    est = pallas_sim.estimate(matmul, x, x, block_shape=(512, 512, 512))
    t = timeline.predict(est.last, V7, calibration=CAL)
    mxu = 2 * 512 ** 3 / V7.peak_bf16
    np.testing.assert_allclose(t.mxu, mxu)
    np.testing.assert_allclose(t.vpu, 512 * 512 / 1e12)   # the z += dot accumulate
    assert t.mxu_flops == 2 * 1024 ** 3
    assert t.mfu == pytest.approx(2 * 1024 ** 3 / (t.time_s * V7.peak_bf16))
    assert t.arithmetic_intensity == pytest.approx(t.mxu_flops / t.hbm_bytes)
    assert set(t.bound.tolist()) <= {"compute", "memory", "overhead"}


def test_eup_time_counts_transcendentals():
    def exp_kernel(x_ref, o_ref):
        o_ref[...] = jnp.exp(x_ref[...])

    def call(x):
        return pl.pallas_call(exp_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    _, t = _predict(call, jax.ShapeDtypeStruct((256, 256), jnp.float32))
    np.testing.assert_allclose(t.eup, 256 * 256 / 1e11)
    dma = (256 * 256 * 4) / V7.hbm_bandwidth
    assert math.isclose(t.time_s, dma + 1e-6 + 256 * 256 / 1e11 + dma, rel_tol=1e-9)


def _lone_copy(x, columns):
    """One step: ``x[:, :columns]`` copied with ``start()`` right before ``wait()``."""
    def kernel(x_hbm, o_ref, buf, sem):
        copy = pltpu.make_async_copy(x_hbm.at[:, pl.ds(0, columns)], buf, sem)
        copy.start()
        copy.wait()
        o_ref[...] = buf[...]

    return pl.pallas_call(
        kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_shape=jax.ShapeDtypeStruct((x.shape[0], columns), x.dtype),
        scratch_shapes=[pltpu.VMEM((x.shape[0], columns), x.dtype),
                        pltpu.SemaphoreType.DMA])(x)


def test_exposed_manual_dma_adds_issue_and_transfer_to_the_step():
    cal = dataclass_replace(CAL, dma_issue_s=2e-6)
    est = pallas_sim.estimate(_lone_copy, jax.ShapeDtypeStruct((512, 512), jnp.float32), 512)
    t = timeline.predict(est.last, V7, calibration=cal)
    nbytes = 512 * 512 * 4
    bw = V7.hbm_bandwidth
    np.testing.assert_allclose(t.overhead, 1e-6 + 2e-6 + nbytes / bw)
    # then the output block's write-back: its bytes and its issue cost
    assert math.isclose(t.time_s, t.overhead[0] + nbytes / bw + 2e-6, rel_tol=1e-9)
    # Half of every row: a strided copy, alone at a quarter of the bandwidth.
    est = pallas_sim.estimate(_lone_copy, jax.ShapeDtypeStruct((512, 1024), jnp.float32), 512)
    assert est.last.ops.total("manual_dma_exposed_strided_bytes") == nbytes
    t = timeline.predict(est.last, V7, calibration=cal)
    np.testing.assert_allclose(t.overhead, 1e-6 + 2e-6 + nbytes / (0.25 * bw))


def _add_tiles(x, y, block, transposed_out=False):
    """x + y tile by tile; with ``transposed_out`` tile (i, j) lands at block (j, i) of an
    array of the transposed shape."""
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    shape = x.shape[::-1] if transposed_out else x.shape
    out_map = (lambda i, j: (j, i)) if transposed_out else (lambda i, j: (i, j))
    return pl.pallas_call(
        kernel, grid=(x.shape[0] // block[0], x.shape[1] // block[1]),
        in_specs=[pl.BlockSpec(block, lambda i, j: (i, j))] * 2,
        out_specs=pl.BlockSpec(block, out_map),
        out_shape=jax.ShapeDtypeStruct(shape, x.dtype))(x, y)


def test_strided_blocks_copy_side_by_side_at_the_strided_rate():
    cal = dataclass_replace(CAL, vpu_rate=1e15)
    bw = V7.hbm_bandwidth
    block = 512 * 512 * 4
    work = 1e-6 + 512 * 512 / 1e15
    # [512, 512] tiles of [512, 4096] arrays: strided. The two input tiles of a step move
    # side by side, each at a quarter of the bandwidth: 1 MiB / (bw / 4) per step. The
    # output tiles are whole rows of a [4096, 512] array (contiguous: 1 MiB / bw each).
    wide = jax.ShapeDtypeStruct((512, 4096), jnp.float32)
    est = pallas_sim.estimate(_add_tiles, wide, wide, (512, 512), transposed_out=True)
    t = timeline.predict(est.last, V7, calibration=cal)
    copy, wb = block / (0.25 * bw), block / bw
    assert wb < work < copy
    # One queue: in0, in1, wb0, in2, wb1, ..., wb5, in7 back to back (8 copies, 6
    # write-backs); wb6 follows in7; step 7 computes once in7 has landed, then wb7.
    assert math.isclose(t.time_s, 8 * copy + 6 * wb + work + wb, rel_tol=1e-9)
    assert t.dominant_bound == "memory"
    # The same tiles as whole rows of [4096, 512] arrays: contiguous, both at bw in all.
    tall = jax.ShapeDtypeStruct((4096, 512), jnp.float32)
    est = pallas_sim.estimate(_add_tiles, tall, tall, (512, 512))
    t = timeline.predict(est.last, V7, calibration=cal)
    assert 2 * block / bw + wb < work
    assert math.isclose(t.time_s, 2 * block / bw + 8 * work + wb, rel_tol=1e-9)
    # A strided write-back holds the queue for its bytes at bw only, and ends a strided
    # copy's time after it starts: with [512, 4096] outputs the last one ends at
    # in7's landing + work + copy.
    est = pallas_sim.estimate(_add_tiles, wide, wide, (512, 512))
    t = timeline.predict(est.last, V7, calibration=cal)
    assert math.isclose(t.time_s, 8 * copy + 6 * wb + work + copy, rel_tol=1e-9)


def test_every_vector_op_pays_the_op_cost():
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = jnp.exp(x * 2.0 + 1.0).sum(axis=-1, keepdims=True)

    def call(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], 1),
                                                                     x.dtype))(x)

    est = pallas_sim.estimate(call, jax.ShapeDtypeStruct((256, 256), jnp.float32))
    assert est.last.ops.total("vector_ops") == 4, "multiply, add, exp, sum"
    cal = dataclass_replace(CAL, op_overhead_s=0.1e-6)
    t = timeline.predict(est.last, V7, calibration=cal)
    np.testing.assert_allclose(t.overhead, 1e-6 + 4 * 0.1e-6)


def test_parallel_axis_splits_over_tensorcores():
    x = jax.ShapeDtypeStruct((2048, 1024), jnp.float32)

    def call(x):
        return pl.pallas_call(
            _scale_kernel, grid=(8,),
            in_specs=[pl.BlockSpec((256, 1024), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((256, 1024), lambda i: (i, 0)),
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(x)

    est = pallas_sim.estimate(call, x)
    one = timeline.predict(est.last, V7, calibration=CAL, cores=1)
    two = timeline.predict(est.last, V7, calibration=CAL, cores=2)
    np.testing.assert_array_equal(two.core, [0, 0, 0, 0, 1, 1, 1, 1])
    dma = (1 << 20) / V7.hbm_bandwidth
    work = 1e-6 + 256 * 1024 / 1e12
    assert math.isclose(one.time_s, dma + 8 * work + dma, rel_tol=1e-9)
    assert math.isclose(two.time_s, dma + 4 * work + dma, rel_tol=1e-9)
    # an "arbitrary" leading axis stays on one core
    est_arb = pallas_sim.estimate(_scale, x, 256)
    assert timeline.predict(est_arb.last, V7, calibration=CAL, cores=2).cores == 1
    with pytest.raises(ValueError, match="TensorCore"):
        pallas_sim.estimate(call, x, chip="v6e", cores=2)


def test_vmem_peak_and_limit_are_reported():
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)
    est = pallas_sim.estimate(_scale, x, 256)
    t = est.timelines[0]
    assert t.vmem_bytes == 2 * 2 * (1 << 20) == est.last.vmem_bytes
    assert t.vmem_limit_bytes == 32 << 20
    assert t.vmem_capacity_bytes == 64 << 20
    assert est.time_s == t.time_s > 0


def test_other_chips_scale_the_units():
    x = jax.ShapeDtypeStruct((2048, 2048), jnp.bfloat16)
    times = {name: pallas_sim.estimate(matmul, x, x, block_shape=(512, 512, 512),
                                       chip=name).time_s for name in CHIPS}
    assert times["v5e"] > times["v6e"] > times["v7"], "slower chips predict longer times"
