"""DMA rules (docs/pallas-sim.md, rules 2, 3 and 6), checked against counts
computed independently from the index maps."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import (
    SIM_SETTINGS,
    first_revisit,
    grid_points,
    input_dma_count,
    output_writeback_count,
    traced,
)

import pallas_sim
from pallas_sim import jax, jnp, pl
from pallas_sim._src.values import concrete  # the tests' own records of traced values

# One component of a 2-D block index as a function of the grid point (i, j),
# reduced modulo the number of blocks n of that array dimension.
COMPONENTS = {
    "i": lambda i, j, g: i,
    "j": lambda i, j, g: j,
    "0": lambda i, j, g: 0,
    "i+j": lambda i, j, g: i + j,
    "g0-1-i": lambda i, j, g: g[0] - 1 - i,
    "j//2": lambda i, j, g: j // 2,
    "i*j": lambda i, j, g: i * j,
}


@st.composite
def index_maps(draw, grid):
    """An index map over a 2-D grid and the array's size in blocks: (label, map, nblocks)."""
    nblocks = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    names = (draw(st.sampled_from(sorted(COMPONENTS))), draw(st.sampled_from(sorted(COMPONENTS))))
    f0, f1 = COMPONENTS[names[0]], COMPONENTS[names[1]]

    def index_map(i, j):
        return (f0(i, j, grid) % nblocks[0], f1(i, j, grid) % nblocks[1])

    return f"({names[0]}, {names[1]}) mod {nblocks}", index_map, nblocks


@st.composite
def two_inputs_case(draw):
    grid = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    block = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return grid, block, draw(index_maps(grid)), draw(index_maps(grid))


@SIM_SETTINGS
@given(two_inputs_case())
def test_input_is_copied_exactly_when_its_block_index_changes(case):
    grid, (bm, bn), (x_label, x_map, x_blocks), (y_label, y_map, y_blocks) = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((x_blocks[0] * bm, x_blocks[1] * bn)).astype(np.float32)
    y = rng.standard_normal((y_blocks[0] * bm, y_blocks[1] * bn)).astype(np.float32)
    seen_x, seen_y = [], []

    def kernel(x_ref, y_ref, o_ref):
        seen_x.append(concrete(x_ref[...]))
        seen_y.append(concrete(y_ref[...]))
        o_ref[...] = x_ref[...] + y_ref[...]

    out_spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    out, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((grid[0] * bm, grid[1] * bn), np.float32),
            grid=grid,
            in_specs=[pl.BlockSpec((bm, bn), x_map), pl.BlockSpec((bm, bn), y_map)],
            out_specs=out_spec,
        ),
        x,
        y,
    )
    points = grid_points(grid)
    by_name = {op.name: op for op in call.operands}
    for name, label, index_map, arr, seen in (
        ("x_ref", x_label, x_map, x, seen_x),
        ("y_ref", y_label, y_map, y, seen_y),
    ):
        indices = [index_map(*p) for p in points]
        op = by_name[name]
        expected = input_dma_count(indices)
        assert op.dma_count == expected, (
            f"{name} index map {label} on grid {grid}: {op.dma_count} DMAs; an input is copied "
            f"at the first step and whenever its block index changes: indices {indices} "
            f"-> {expected}"
        )
        assert op.hbm_bytes == expected * bm * bn * 4, (
            f"{name}: hbm_bytes {op.hbm_bytes}; {expected} copies x {bm}*{bn}*4 B"
        )
        assert np.array_equal(np.asarray(op.block_indices), np.array(indices)), (
            f"{name}: trace block_indices {np.asarray(op.block_indices).tolist()} must be the "
            f"index map's result at each step in row-major order: {indices}"
        )
        for t, ((bi, bj), block) in enumerate(zip(indices, seen, strict=True)):
            want = arr[bi * bm:(bi + 1) * bm, bj * bn:(bj + 1) * bn]
            assert np.array_equal(block, want), (
                f"{name} at step {t}: the kernel must see block {(bi, bj)} of the array"
            )
    out_writebacks = by_name["o_ref"].dma_count
    assert out_writebacks == grid[0] * grid[1], (
        "an output whose block index (i, j) differs at every step is written back once per "
        f"step: {grid[0]}*{grid[1]} = {grid[0] * grid[1]}; got {out_writebacks}"
    )
    assert call.dma_count == sum(op.dma_count for op in call.operands), (
        "call.dma_count is the sum of the operands' DMA counts (input copies + write-backs)"
    )


@st.composite
def output_case(draw):
    grid = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return grid, draw(index_maps(grid))


@SIM_SETTINGS
@given(output_case())
def test_output_is_written_back_when_the_next_index_differs_and_after_the_last_step(case):
    grid, (label, o_map, nblocks) = case
    bm, bn = 2, 3
    points = grid_points(grid)
    indices = [o_map(*p) for p in points]

    def kernel(o_ref):
        step = pl.program_id(0) * pl.num_programs(1) + pl.program_id(1)
        o_ref[...] = jnp.full(o_ref.shape, step, jnp.float32)

    call_fn = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((nblocks[0] * bm, nblocks[1] * bn), np.float32),
        grid=grid,
        out_specs=pl.BlockSpec((bm, bn), o_map),
    )
    revisit = first_revisit(indices)
    if revisit is not None:
        with pytest.raises(pallas_sim.RevisitedOutputBlockError) as info:
            call_fn()
        message = str(info.value)
        assert "o_ref" in message and str(revisit[0]) in message, (
            f"index map {label} on grid {grid} revisits block {revisit[0]} at step "
            f"{revisit[2]} after its write-back at step {revisit[1]}; the error must name "
            f"the operand 'o_ref' and the block index; got: {message}"
        )
        return
    out, call = traced(call_fn)
    (op,) = [op for op in call.operands if op.role == "out"]
    expected = output_writeback_count(indices)
    assert op.dma_count == expected, (
        f"index map {label} on grid {grid}: {op.dma_count} write-backs; an output is written "
        f"back when the next step's index differs and after the last step: {indices} "
        f"-> {expected}"
    )
    assert op.hbm_bytes == expected * bm * bn * 4, (
        f"o_ref hbm_bytes {op.hbm_bytes}; {expected} write-backs x {bm}*{bn}*4 B"
    )
    last_step = {index: t for t, index in enumerate(indices)}
    for (bi, bj), t in last_step.items():
        block = out[bi * bm:(bi + 1) * bm, bj * bn:(bj + 1) * bn]
        assert np.all(block == t), (
            f"block {(bi, bj)} must hold what the kernel wrote at its last visit, step {t}"
        )


def test_constant_input_block_is_copied_once():
    def kernel(w_ref, o_ref):
        o_ref[...] = w_ref[...] * 2

    w = np.ones((8, 128), np.float32)
    _, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((32, 128), np.float32),
            grid=(4,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (0, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        ),
        w,
    )
    w_op = call.operands[0]
    assert w_op.dma_count == 1, (
        f"w_ref: {w_op.dma_count} copies; its block index is (0, 0) at all 4 steps, so it is "
        "copied once at the first step and never again"
    )


def test_accumulator_output_stays_resident_across_the_last_axis_and_is_written_back_once_per_row():
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros(o_ref.shape, np.float32)

        o_ref[...] += x_ref[...]

    x = np.arange(3 * 8 * 4 * 128, dtype=np.float32).reshape(3 * 8, 4 * 128)
    out, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((24, 128), np.float32),
            grid=(3, 4),
            in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, k))],
            out_specs=pl.BlockSpec((8, 128), lambda i, k: (i, 0)),
            compiler_params=pallas_sim.pltpu.CompilerParams(
                dimension_semantics=("parallel", "arbitrary")
            ),
        ),
        x,
    )
    o_op = [op for op in call.operands if op.role == "out"][0]
    assert o_op.dma_count == 3, (
        f"o_ref: {o_op.dma_count} write-backs; its index (i, 0) stays the same over the 4 "
        "k steps, so it is written back once per row block: 3"
    )
    assert call.dma_count == 12 + 3, (
        f"dma_count {call.dma_count}; 12 x copies (one per step) + 3 output write-backs = 15"
    )
    expected = x.reshape(24, 4, 128).sum(axis=1)
    assert np.array_equal(out, expected), "sum over k of the x blocks"


def revisiting_call():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    # Grid (2, 2); o_ref's block (0, 1 - j): step 0 = (0, 0) -> block (0, 1), written back
    # at step 0; step 1 = (0, 1) -> block (0, 0); step 2 = (1, 0) -> block (0, 1) again.
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8, 256), np.float32),
        grid=(2, 2),
        in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((8, 128), lambda i, j: (0, 1 - j)),
    )


def test_non_consecutive_output_revisit_raises_naming_operand_block_steps_and_the_fix():
    x = np.ones((16, 256), np.float32)
    with pytest.raises(pallas_sim.RevisitedOutputBlockError) as info:
        revisiting_call()(x)
    message = str(info.value)
    assert "o_ref" in message, f"the message must name the operand o_ref: {message}"
    assert "(0, 1)" in message, f"the message must name the block index (0, 1): {message}"
    steps_as_points = "(0, 0)" in message and "(1, 0)" in message
    steps_as_numbers = re.search(r"\b0\b", message) and re.search(r"\b2\b", message)
    assert steps_as_points or steps_as_numbers, (
        "the message must name both steps: the write-back at grid step (0, 0) (step 0) and "
        f"the revisit at grid step (1, 0) (step 2): {message}"
    )
    assert "reduction" in message.lower() and "last" in message.lower(), (
        f"the message must say that the reduction axis belongs last: {message}"
    )


def test_out_of_bounds_input_block_index_raises_block_index_error_in_the_spec_form():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    x = np.zeros((16, 128), np.float32)
    with pytest.raises(pallas_sim.BlockIndexError) as info:
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((16, 128), np.float32),
            grid=(4,),
            in_specs=[pl.BlockSpec((4, 128), lambda i: (i + 1, 0))],
            out_specs=pl.BlockSpec((4, 128), lambda i: (i, 0)),
        )(x)
    assert str(info.value).startswith(
        "Out-of-bounds block index (4, 0) for input 'x_ref' at grid step (3,): "
        "the array has shape (16, 128) and block shape (4, 128)"
    ), (
        "index map i -> (i + 1, 0) on grid (4,) gives block (4, 0) at step (3,), but "
        f"cdiv(16, 4) = 4 blocks exist (0..3); got: {info.value}"
    )


@pytest.mark.parametrize(
    ("o_map", "bad", "step"),
    [(lambda i: (i - 1, 0), "(-1, 0)", "(0,)"), (lambda i: (0, i), "(0, 1)", "(1,)")],
)
def test_out_of_bounds_output_block_index_names_the_output(o_map, bad, step):
    def kernel(o_ref):
        o_ref[...] = jnp.zeros(o_ref.shape, np.float32)

    with pytest.raises(pallas_sim.BlockIndexError) as info:
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((16, 128), np.float32),
            grid=(4,),
            out_specs=pl.BlockSpec((4, 128), o_map),
        )()
    message = str(info.value)
    for part in (f"Out-of-bounds block index {bad}", "output 'o_ref'", f"grid step {step}",
                 "shape (16, 128)", "block shape (4, 128)"):
        assert part in message, (
            f"valid block indices are [0, 4) x [0, 1); the message must contain {part!r}: "
            f"{message}"
        )
