"""VMEM / SMEM accounting and the scoped limit (docs/pallas-sim.md, "Memory accounting")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS, MiB, add_kernel, blocked_add, traced, unblocked_add

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu


def first_line(error: BaseException) -> str:
    return str(error).splitlines()[0]


def test_single_step_grid_holds_one_buffer_per_operand():
    x = np.ones((64, 256), np.float32)
    _, call = traced(blocked_add, x, x, (64, 256))
    assert call.num_steps == 1, f"grid {call.grid} has one step"
    for op in call.operands:
        assert op.buffers == 1, f"{op.name}: {op.buffers} buffers; a single-step grid needs 1"
    assert call.vmem_bytes == 3 * 64 * 256 * 4, (
        f"vmem_bytes {call.vmem_bytes}; 3 operands x 1 buffer x 64*256*4 B = 196608"
    )


@SIM_SETTINGS
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 4),
    bm=st.sampled_from([8, 16, 24]),
    bn=st.sampled_from([128, 256]),
    dtype=st.sampled_from([np.float32, jnp.bfloat16, np.int32, np.int8]),
)
def test_vmem_bytes_is_operands_times_block_bytes_times_buffers(rows, cols, bm, bn, dtype):
    x = np.zeros((rows * bm, cols * bn), dtype)
    _, call = traced(blocked_add, x, x, (bm, bn))
    buffers = 1 if rows * cols == 1 else 2
    itemsize = np.dtype(dtype).itemsize
    expected = 3 * buffers * bm * bn * itemsize
    assert call.vmem_bytes == expected, (
        f"{np.dtype(dtype).name}[{rows * bm},{cols * bn}] with ({bm},{bn}) blocks, grid "
        f"({rows},{cols}): vmem_bytes {call.vmem_bytes}; 3 operands x {buffers} buffer(s) x "
        f"{bm}*{bn}*{itemsize} B = {expected}"
    )
    assert call.smem_bytes == 0, "no scalar prefetch and no SMEM scratch: smem_bytes 0"


def test_buffered_pipeline_mode_sets_the_buffer_count():
    x = np.zeros((64, 128), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    triple = pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(3))
    single = pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(1))
    _, call = traced(
        pl.pallas_call(
            add_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(8,),
            in_specs=[triple, single],
            out_specs=spec,
        ),
        x,
        x,
    )
    buffers = {op.name: op.buffers for op in call.operands}
    assert buffers == {"x_ref": 3, "y_ref": 1, "o_ref": 2}, (
        f"buffers {buffers}; pl.Buffered(3) -> 3, pl.Buffered(1) -> 1, default on an "
        "8-step grid -> 2"
    )
    block = 8 * 128 * 4
    assert call.vmem_bytes == (3 + 1 + 2) * block, (
        f"vmem_bytes {call.vmem_bytes}; (3 + 1 + 2) buffers x 8*128*4 B = {(3 + 1 + 2) * block}"
    )


def test_scratch_is_counted_once_in_vmem_and_smem_is_counted_apart():
    def kernel(x_ref, o_ref, acc_ref, count_ref):
        o_ref[...] = x_ref[...]

    x = np.zeros((32, 128), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    _, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(4,),
            in_specs=[spec],
            out_specs=spec,
            scratch_shapes=[pltpu.VMEM((16, 128), jnp.float32), pltpu.SMEM((8,), jnp.int32)],
        ),
        x,
    )
    block = 8 * 128 * 4
    assert call.vmem_bytes == 2 * 2 * block + 16 * 128 * 4, (
        f"vmem_bytes {call.vmem_bytes}; 2 operands x 2 buffers x {block} B + one VMEM scratch "
        f"16*128*4 B = {4 * block + 16 * 128 * 4}; the SMEM scratch is not VMEM"
    )
    assert call.smem_bytes == 8 * 4, f"smem_bytes {call.smem_bytes}; SMEM scratch int32[8] = 32 B"
    roles = {op.name: op.role for op in call.operands}
    assert roles.get("acc_ref") == "scratch" and roles.get("count_ref") == "scratch", (
        f"scratch buffers appear in the trace with role 'scratch': {roles}"
    )


def test_scratch_counts_towards_the_limit_and_is_named_in_the_oom_table():
    def kernel(x_ref, o_ref, big_scratch_ref):
        o_ref[...] = x_ref[...]

    x = np.zeros((8, 128), np.float32)
    with pytest.raises(pallas_sim.VmemOOMError) as info:
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            scratch_shapes=[pltpu.VMEM((8192, 1024), jnp.float32)],
        )(x)
    size = (2 * 8 * 128 * 4 + 8192 * 1024 * 4) / MiB
    assert first_line(info.value) == f"Scoped allocation with size {size:.2f}M and limit 32.00M", (
        f"got {first_line(info.value)!r}; 2 x 4 KiB operands + 32 MiB scratch = {size:.2f} MiB"
    )
    assert "big_scratch_ref" in str(info.value), (
        f"the OOM table must name the scratch buffer big_scratch_ref: {info.value}"
    )


def test_vmem_limit_bytes_raises_the_limit():
    x = np.zeros((2048, 2048), np.float32)
    _, call = traced(
        unblocked_add, x, x, compiler_params=pltpu.CompilerParams(vmem_limit_bytes=64 * MiB)
    )
    assert call.vmem_bytes == 48 * MiB, f"vmem_bytes {call.vmem_bytes}; 3 x 16 MiB = 48 MiB"
    assert call.vmem_limit_bytes == 64 * MiB, (
        f"vmem_limit_bytes {call.vmem_limit_bytes}; CompilerParams asked for 64 MiB"
    )


def test_a_call_needing_exactly_the_limit_fits():
    x = np.zeros((2048, 2048), np.float32)
    _, call = traced(
        unblocked_add, x, x, compiler_params=pltpu.CompilerParams(vmem_limit_bytes=48 * MiB)
    )
    assert call.vmem_bytes == 48 * MiB, "48 MiB needed, 48 MiB allowed: only *over* the limit fails"


def test_vmem_limit_bytes_lowers_the_limit():
    x = np.zeros((4096, 4096), np.float32)
    with pytest.raises(pallas_sim.VmemOOMError) as info:
        params = pltpu.CompilerParams(vmem_limit_bytes=4 * MiB)
        blocked_add(x, x, (512, 512), compiler_params=params)
    assert first_line(info.value) == "Scoped allocation with size 6.00M and limit 4.00M", (
        f"got {first_line(info.value)!r}; (512,512) f32 blocks double-buffered: 3 x 2 x 1 MiB "
        "= 6 MiB > vmem_limit_bytes 4 MiB"
    )


def test_default_limit_is_32_mib_in_the_trace():
    x = np.zeros((16, 128), np.float32)
    _, call = traced(blocked_add, x, x, (8, 128))
    assert call.vmem_limit_bytes == 32 * MiB, (
        f"vmem_limit_bytes {call.vmem_limit_bytes}; without CompilerParams the scoped limit "
        "is 32 MiB"
    )


def test_a_vmem_limit_above_the_physical_vmem_fails_as_a_compile_does():
    """A vmem_limit_bytes above the chip's VMEM used to be capped silently (and
    reported, never checked); a real compile for that chip fails, whatever the kernel
    needs. A concrete run has no chip: the config's capacity (64 MiB, one v7 TensorCore)."""
    x = np.zeros((16, 128), np.float32)  # needs a few KiB
    for limit in (64 * MiB + 1, 128 * MiB):
        with pytest.raises(pallas_sim.VmemOOMError) as info:
            unblocked_add(x, x, compiler_params=pltpu.CompilerParams(vmem_limit_bytes=limit))
        assert first_line(info.value).startswith(
            f"vmem_limit_bytes={limit} ({limit / MiB:.2f}M) is above the 64.00M of VMEM of "
            "the simulated TensorCore"), first_line(info.value)
    _, call = traced(unblocked_add, x, x,
                     compiler_params=pltpu.CompilerParams(vmem_limit_bytes=64 * MiB))
    assert call.vmem_limit_bytes == 64 * MiB, "up to the physical VMEM is a legal limit"


@pytest.mark.parametrize(("chip", "vmem_mib"), [("v7", 64), ("v6e", 128), ("v5e", 128)])
def test_estimate_holds_vmem_limit_bytes_to_its_chips_vmem(chip, vmem_mib):
    x = jax.ShapeDtypeStruct((16, 128), jnp.float32)

    def run(limit):
        return pallas_sim.estimate(
            lambda a, b: unblocked_add(
                a, b, compiler_params=pltpu.CompilerParams(vmem_limit_bytes=limit)),
            x, x, chip=chip)

    with pytest.raises(pallas_sim.VmemOOMError) as info:
        run(vmem_mib * MiB + 1)
    assert f"is above the {vmem_mib}.00M of VMEM of one {chip} TensorCore" in str(info.value)
    assert run(vmem_mib * MiB).last.vmem_limit_bytes == vmem_mib * MiB


def test_a_call_made_outside_estimate_is_held_to_the_chip_it_runs_on():
    """The limit is checked when the call runs (a compile), so a pallas_call built before
    ``estimate`` is bounded by the estimate's chip."""
    x = jax.ShapeDtypeStruct((16, 128), jnp.float32)
    call = pl.pallas_call(add_kernel, out_shape=x,
                          compiler_params=pltpu.CompilerParams(vmem_limit_bytes=100 * MiB))
    assert pallas_sim.estimate(call, x, x, chip="v6e").last.vmem_limit_bytes == 100 * MiB
    with pytest.raises(pallas_sim.VmemOOMError, match="64.00M of VMEM of one v7"):
        pallas_sim.estimate(call, x, x, chip="v7")


def test_physical_capacity_is_configurable():
    x = np.zeros((2048, 4096), np.float32)
    with pallas_sim.config(vmem_capacity_bytes=128 * MiB):
        _, call = traced(
            unblocked_add, x, x, compiler_params=pltpu.CompilerParams(vmem_limit_bytes=128 * MiB)
        )
    assert call.vmem_bytes == 96 * MiB, (
        f"vmem_bytes {call.vmem_bytes}; with 128 MiB physical VMEM a 128 MiB limit holds 96 MiB"
    )


@SIM_SETTINGS
@given(
    mib=st.integers(33, 63),
    limit_mib=st.one_of(st.none(), st.integers(1, 100)),
)
def test_oom_first_line_follows_mosaic_with_two_decimals(mib, limit_mib):
    rows = mib * MiB // (4 * 1024)  # f32[rows, 1024] is `mib` MiB
    x = np.zeros((rows, 1024), np.float32)

    def kernel(x_ref, o_ref):
        o_ref[0, 0] = x_ref[0, 0]

    params = None if limit_mib is None else pltpu.CompilerParams(vmem_limit_bytes=limit_mib * MiB)
    limit = 32 if limit_mib is None else limit_mib
    out_bytes = 8 * 128 * 4
    size = (mib * MiB + out_bytes) / MiB
    call_fn = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8, 128), np.float32),
        compiler_params=params,
    )
    if limit > 64:  # above the physical VMEM: the limit itself fails to compile
        with pytest.raises(pallas_sim.VmemOOMError, match="is above the 64.00M of VMEM"):
            call_fn(x)
        return
    if mib * MiB + out_bytes <= limit * MiB:
        _, call = traced(call_fn, x)
        assert call.vmem_bytes == mib * MiB + out_bytes
        return
    with pytest.raises(pallas_sim.VmemOOMError) as info:
        call_fn(x)
    expected = f"Scoped allocation with size {size:.2f}M and limit {limit}.00M"
    assert first_line(info.value) == expected, (
        f"got {first_line(info.value)!r}; {mib} MiB input + 4 KiB output = {size:.2f} MiB over "
        f"the limit of {limit} MiB (M = MiB, two decimals)"
    )


def test_over_the_limit_fails_before_any_grid_step_runs():
    ran = []

    def kernel(x_ref, y_ref, o_ref):
        ran.append(1)

    x = np.zeros((2048, 2048), np.float32)
    with pytest.raises(pallas_sim.VmemOOMError):
        pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, x)
    assert ran == [], "a scoped allocation failure is a compile-time error: no step runs"


def test_trace_reports_the_default_limit_capped_by_the_physical_vmem():
    x = np.zeros((16, 128), np.float32)
    with pallas_sim.config(default_vmem_limit_bytes=128 * MiB):
        _, call = traced(blocked_add, x, x, (8, 128))
    assert call.vmem_limit_bytes == 64 * MiB, (
        f"vmem_limit_bytes {call.vmem_limit_bytes}; a default of 128 MiB (none asked) is "
        "capped by the 64 MiB physical VMEM"
    )
