"""Every §2 number of docs/worked-answers.md, reproduced through pallas_sim."""

from __future__ import annotations

import numpy as np
import pytest
from sim_helpers import MiB, blocked_add, traced, unblocked_add

import pallas_sim
from pallas_sim import jax, pl


def test_unblocked_2048_add_is_48_mib_over_the_32_mib_limit():
    x = np.zeros((2048, 2048), np.float32)
    with pytest.raises(pallas_sim.VmemOOMError) as info:
        unblocked_add(x, x)
    lines = str(info.value).splitlines()
    assert lines[0] == "Scoped allocation with size 48.00M and limit 32.00M", (
        f"first line was {lines[0]!r}; with no grid every whole array is resident once: "
        "3 operands x 2048*2048*4 B = 3 x 16 MiB = 48 MiB > the default 32 MiB scoped limit"
    )
    table = "\n".join(lines[1:])
    for name in ("x_ref", "y_ref", "o_ref"):
        assert name in table, (
            f"the table under the first line must name every operand; {name!r} missing in:\n"
            f"{table}"
        )


def test_ex1_unblocked_4096_add_needs_192_mib():
    x = np.zeros((4096, 4096), np.float32)
    with pytest.raises(pallas_sim.VmemOOMError) as info:
        unblocked_add(x, x)
    first = str(info.value).splitlines()[0]
    assert first == "Scoped allocation with size 192.00M and limit 32.00M", (
        f"got {first!r}; unblocked f32[4096,4096] add: 3 x 4096*4096*4 B = 3 x 64 MiB = 192 MiB"
    )


def test_ex1_unblocked_4096_add_trace_counts_192_mib_when_vmem_is_big_enough():
    x = np.zeros((4096, 4096), np.float32)
    with pallas_sim.config(vmem_capacity_bytes=256 * MiB):
        _, call = traced(
            unblocked_add,
            x,
            x,
            compiler_params=pallas_sim.pltpu.CompilerParams(vmem_limit_bytes=256 * MiB),
        )
    assert call.vmem_bytes == 192 * MiB, (
        f"trace vmem_bytes = {call.vmem_bytes}; a single-step call holds 1 buffer per operand: "
        "3 x 64 MiB = 192 MiB = 201326592 B"
    )


def test_ex1_512_blocks_double_buffered_take_6_mib_on_an_8x8_grid():
    x = np.ones((4096, 4096), np.float32)
    out, call = traced(blocked_add, x, x, (512, 512))
    assert tuple(call.grid) == (8, 8), f"grid {call.grid}; cdiv(4096, 512) = 8 per axis"
    assert call.vmem_bytes == 6 * MiB, (
        f"vmem_bytes = {call.vmem_bytes}; 3 operands x 2 buffers x 512*512*4 B (1 MiB) = 6 MiB"
    )
    assert np.array_equal(out, x + x), "blocked add must equal x + x"


@pytest.mark.parametrize("block", [(256, 256), (512, 1024), (2048, 128), (8, 2048)])
def test_blocked_2048_add_reads_32_mib_and_writes_16_mib_for_any_block(block):
    x = np.ones((2048, 2048), np.float32)
    _, call = traced(blocked_add, x, x, block)
    assert call.hbm_bytes_read == 32 * MiB, (
        f"block {block}: read {call.hbm_bytes_read} B; an elementwise op copies each input "
        "element once: 2 inputs x 2048*2048*4 B = 32 MiB"
    )
    assert call.hbm_bytes_written == 16 * MiB, (
        f"block {block}: wrote {call.hbm_bytes_written} B; each output element is written "
        "back once: 2048*2048*4 B = 16 MiB"
    )


def bias_kernel(x_ref, b_ref, o_ref):
    """x_ref: (128, 128) block of x; b_ref: (1, 128) block of the bias; o_ref like x_ref."""
    o_ref[...] = x_ref[...] + b_ref[...]


def bias_add(x, bias, *, column_axis_inner):
    bm = bn = 128
    rows, cols = x.shape[0] // bm, x.shape[1] // bn
    if column_axis_inner:
        grid = (rows, cols)
        x_map, b_map = (lambda i, j: (i, j)), (lambda i, j: (0, j))
    else:
        grid = (cols, rows)
        x_map, b_map = (lambda j, i: (i, j)), (lambda j, i: (0, j))
    return pl.pallas_call(
        bias_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=grid,
        in_specs=[pl.BlockSpec((bm, bn), x_map), pl.BlockSpec((1, bn), b_map)],
        out_specs=pl.BlockSpec((bm, bn), x_map),
    )(x, bias)


@pytest.mark.parametrize(
    ("column_axis_inner", "expected", "why"),
    [
        (True, 192, "64 x copies + 64 bias copies (the bias block changes every step) "
                    "+ 64 output write-backs = 192"),
        (False, 136, "64 x copies + 8 bias copies (once per column of blocks) "
                     "+ 64 output write-backs = 136"),
    ],
)
def test_bias_add_dma_count_depends_on_grid_order(column_axis_inner, expected, why):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    bias = rng.standard_normal((1, 1024)).astype(np.float32)
    out, call = traced(bias_add, x, bias, column_axis_inner=column_axis_inner)
    assert call.dma_count == expected, (
        f"bias add f32[1024,1024], blocks (128,128), column axis "
        f"{'inner' if column_axis_inner else 'outer'}: {call.dma_count} DMAs; {why}"
    )
    assert np.array_equal(out, x + bias), "bias add must equal x + bias"


def test_ragged_1000_by_256_computes_1048576_elements_of_which_95_37_percent_are_valid():
    x = np.ones((1000, 1000), np.float32)
    out, call = traced(blocked_add, x, x, (256, 256))
    assert call.elements_computed == 1_048_576, (
        f"elements_computed = {call.elements_computed}; grid cdiv(1000,256)^2 = 4x4 = 16 "
        "blocks x 256*256 = 1,048,576"
    )
    assert call.elements_valid == 1_000_000, (
        f"elements_valid = {call.elements_valid}; the logical output has 1000*1000 elements"
    )
    fraction = call.elements_valid / call.elements_computed
    assert fraction == pytest.approx(0.9537, rel=5e-3), (
        f"valid fraction {fraction:.4%}; 1,000,000 / 1,048,576 = 95.37 %"
    )
    assert np.array_equal(out, x + x), "padding must not leak into the 1000x1000 result"
