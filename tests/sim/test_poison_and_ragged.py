"""Uninitialized memory, ragged padding and scratch lifetime
(docs/pallas-sim.md, rules 4 and 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS, grid_points, is_poison, poison_value

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim._src.values import concrete  # the tests' own records of traced values

POISON_DTYPES = [np.float32, jnp.bfloat16, np.int32, np.int8, np.uint8, np.bool_]


def untouched_output(dtype, grid=(2,)):
    """A call whose kernel never writes its (8, 128) output blocks."""

    def kernel(o_ref):
        return None

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8 * grid[0], 128), dtype),
        grid=grid,
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
    )()


@pytest.mark.parametrize("dtype", POISON_DTYPES, ids=lambda d: np.dtype(d).name)
def test_fresh_output_block_is_poisoned(dtype):
    out = untouched_output(dtype)
    expected = poison_value(dtype)
    assert np.all(is_poison(out)), (
        f"{np.dtype(dtype).name}: an output block the kernel never writes is written back "
        f"from a fresh VMEM buffer, which holds poison ({expected}); got {np.unique(out)[:5]}"
    )


def test_partly_written_output_block_keeps_poison_where_not_written():
    def kernel(o_ref):
        o_ref[0:4, :] = jnp.ones((4, 128), np.float32)

    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), np.float32))()
    assert np.all(out[:4] == 1) and np.all(np.isnan(out[4:])), (
        "rows 0..3 were written with 1; rows 4..7 of the fresh output buffer stay NaN"
    )


@pytest.mark.parametrize("dtype", POISON_DTYPES, ids=lambda d: np.dtype(d).name)
def test_each_new_output_block_starts_poisoned_not_with_the_previous_blocks_data(dtype):
    seen = []

    def kernel(o_ref):
        seen.append(concrete(o_ref[...]))
        o_ref[...] = jnp.ones(o_ref.shape, dtype)

    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((24, 128), dtype),
        grid=(3,),
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
    )()
    assert all(np.all(is_poison(block)) for block in seen), (
        f"{np.dtype(dtype).name}: at steps 0, 1, 2 the kernel reads output blocks 0, 1, 2 "
        "before writing them; each is a fresh buffer holding poison "
        f"({poison_value(dtype)}), not the 1s written into the previous block"
    )
    assert np.all(out == 1), "every block written with 1"


@pytest.mark.parametrize("dtype", POISON_DTYPES, ids=lambda d: np.dtype(d).name)
def test_scratch_starts_poisoned(dtype):
    first = []

    def kernel(o_ref, scratch_ref):
        if concrete(pl.program_id(0)) == 0:  # the test's own record, not kernel logic
            first.append(concrete(scratch_ref[...]))
        o_ref[...] = jnp.zeros(o_ref.shape, np.float32)

    pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((16, 128), np.float32),
        grid=(2,),
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((8, 128), dtype)],
    )()
    assert len(first) == 1 and np.all(is_poison(first[0])), (
        f"{np.dtype(dtype).name} scratch at step 0 must hold poison "
        f"({poison_value(dtype)}); got {np.unique(first[0])[:5] if first else 'nothing'}"
    )


def test_config_uninitialized_zero_turns_poison_off_inside_a_with_block():
    with pallas_sim.config(uninitialized="zero"):
        zeroed = untouched_output(np.float32)
        zeroed_int = untouched_output(np.int32)
    after = untouched_output(np.float32)
    assert np.all(zeroed == 0) and np.all(zeroed_int == 0), (
        "under config(uninitialized='zero') fresh output buffers hold zeros"
    )
    assert np.all(np.isnan(after)), "leaving the with block restores poisoning"


def test_config_uninitialized_zero_works_as_a_setter():
    try:
        pallas_sim.config(uninitialized="zero")
        zeroed = untouched_output(np.float32)
    finally:
        pallas_sim.config(uninitialized="poison")
    assert np.all(zeroed == 0), "pallas_sim.config(uninitialized='zero') as a call sets the option"
    assert np.all(np.isnan(untouched_output(np.float32))), "config(uninitialized='poison') resets"


def test_scratch_persists_across_steps():
    def kernel(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, np.float32)

        acc_ref[...] += x_ref[...]
        o_ref[...] = acc_ref[...]

    x = np.arange(4 * 8 * 128, dtype=np.float32).reshape(32, 128)
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(4,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
    )(x)
    expected = np.cumsum(x.reshape(4, 8, 128), axis=0).reshape(32, 128)
    assert np.array_equal(out, expected), (
        "scratch is allocated once per call and keeps its contents between steps: output "
        "block i must be the running sum of x blocks 0..i"
    )


def test_scratch_is_fresh_at_each_call():
    seen = []

    def kernel(o_ref, s_ref):
        seen.append(concrete(s_ref[...]))
        s_ref[...] = jnp.ones(s_ref.shape, np.float32)
        o_ref[...] = s_ref[...]

    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8, 128), np.float32),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
    )
    call()
    call()
    assert len(seen) == 2 and np.all(np.isnan(seen[1])), (
        "scratch buffers are allocated once per call: the second call starts from poison, "
        "not from the 1s the first call left"
    )


@st.composite
def ragged_case(draw):
    bm, bn = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    m = draw(st.integers(1, 4 * bm))
    n = draw(st.integers(1, 4 * bn))
    dtype = draw(st.sampled_from([np.float32, jnp.bfloat16, np.int32]))
    return (m, n), (bm, bn), dtype


@SIM_SETTINGS
@given(ragged_case())
def test_ragged_edge_blocks_are_padded_with_poison_and_clipped_on_write(case):
    (m, n), (bm, bn), dtype = case
    x = (np.arange(m * n) % 97 + 1).reshape(m, n).astype(dtype)
    seen = {}

    def kernel(x_ref, o_ref):
        seen[(int(concrete(pl.program_id(0))), int(concrete(pl.program_id(1))))] = concrete(
            x_ref[...])
        o_ref[...] = jnp.ones(o_ref.shape, dtype)  # also into the padded region

    grid = (pl.cdiv(m, bm), pl.cdiv(n, bn))
    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), dtype),
        grid=grid,
        in_specs=[spec],
        out_specs=spec,
    )(x)
    assert out.shape == (m, n) and np.all(out == 1), (
        f"output {m}x{n} with ({bm},{bn}) blocks: writes inside the logical shape land, "
        "writes into the padding are dropped (no error, no change of shape)"
    )
    for i, j in grid_points(grid):
        block = seen[(i, j)]
        rows, cols = min(bm, m - i * bm), min(bn, n - j * bn)
        assert block.shape == (bm, bn), f"the kernel sees a whole ({bm},{bn}) block at {(i, j)}"
        assert np.array_equal(block[:rows, :cols], x[i * bm:i * bm + rows, j * bn:j * bn + cols]), (
            f"block {(i, j)}: the valid {rows}x{cols} corner must be the array's data"
        )
        pad = np.ones((bm, bn), bool)
        pad[:rows, :cols] = False
        assert np.all(is_poison(block)[pad]), (
            f"x {np.dtype(dtype).name}[{m},{n}], block ({bm},{bn}), step {(i, j)}: the "
            f"{int(pad.sum())} padded elements outside the array must be poison "
            f"({poison_value(dtype)})"
        )
