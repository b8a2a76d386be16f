"""A blocked elementwise op over drawn shapes, blocks (dividing or not) and dtypes."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS, blocked_add, traced

from pallas_sim import jnp, pl

DTYPES = [np.float32, jnp.bfloat16, np.int32]


@st.composite
def add_case(draw, dividing=None):
    """(x, y, block): block sizes 1..9, 1..5 blocks per axis, dividing or ragged."""
    dtype = draw(st.sampled_from(DTYPES))
    block = (draw(st.integers(1, 9)), draw(st.integers(1, 9)))
    shape = []
    for b in block:
        nblocks = draw(st.integers(1, 5))
        divides = draw(st.booleans()) if dividing is None else dividing
        last = b if divides else draw(st.integers(1, b))
        shape.append((nblocks - 1) * b + last)
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        x, y = (rng.integers(-(2**20), 2**20, shape).astype(dtype) for _ in range(2))
    else:
        x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    return x, y, block


@SIM_SETTINGS
@given(add_case())
def test_blocked_add_equals_x_plus_y(case):
    x, y, block = case
    out, call = traced(blocked_add, x, y, block)
    grid = tuple(pl.cdiv(d, b) for d, b in zip(x.shape, block, strict=True))
    assert tuple(call.grid) == grid and call.num_steps == grid[0] * grid[1], (
        f"{x.shape} with block {block}: grid cdiv = {grid}"
    )
    assert out.shape == x.shape and out.dtype == x.dtype, (
        f"output {out.dtype}{list(out.shape)} must follow out_shape {x.dtype}{list(x.shape)}"
    )
    assert np.array_equal(out, x + y), (
        f"{np.dtype(x.dtype).name}{list(x.shape)} blocked by {block}: the blocked add must "
        "equal x + y exactly (an elementwise op rounds the same per element)"
    )


@SIM_SETTINGS
@given(add_case(dividing=True))
def test_elementwise_hbm_traffic_is_the_arrays_bytes_whatever_the_block(case):
    x, y, block = case
    _, call = traced(blocked_add, x, y, block)
    assert call.hbm_bytes_read == x.nbytes + y.nbytes, (
        f"{np.dtype(x.dtype).name}{list(x.shape)}, block {block}: read {call.hbm_bytes_read} B; "
        f"each input element is copied once: {x.nbytes} + {y.nbytes} B"
    )
    assert call.hbm_bytes_written == x.nbytes, (
        f"wrote {call.hbm_bytes_written} B; each output element is written back once: "
        f"{x.nbytes} B"
    )
    steps = call.num_steps
    assert call.dma_count == 3 * steps, (
        f"dma_count {call.dma_count}; every step brings a new x and y block and writes one "
        f"output block: 3 x {steps}"
    )


@SIM_SETTINGS
@given(add_case(dividing=False))
def test_ragged_elementwise_traffic_moves_only_the_arrays_elements(case):
    x, y, block = case
    _, call = traced(blocked_add, x, y, block)
    assert call.hbm_bytes_read == x.nbytes + y.nbytes, (
        f"{np.dtype(x.dtype).name}{list(x.shape)}, ragged block {block}: read "
        f"{call.hbm_bytes_read} B; the padding is not in HBM, so each input element is "
        f"copied once: {x.nbytes} + {y.nbytes} B"
    )
    assert call.hbm_bytes_written == x.nbytes, (
        f"wrote {call.hbm_bytes_written} B; writes into the padding are dropped: {x.nbytes} B"
    )
    assert call.elements_valid == x.size, f"elements_valid {call.elements_valid} = {x.size}"
    gm, gn = call.grid
    assert call.elements_computed == gm * gn * block[0] * block[1], (
        f"elements_computed {call.elements_computed}; {gm}x{gn} blocks x {block[0]}*{block[1]}"
    )
