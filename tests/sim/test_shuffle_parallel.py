"""The ``shuffle_parallel`` sanitizer (docs/pallas-sim.md rule 1) and aliased revisits.

TPU interpret mode (JAX 0.10.x) visits each leading "parallel" axis through
its own seeded permutation while the loop nest stays row-major; "arbitrary"
axes keep their order.  These tests check that form, not particular
permutations.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim._src.grid_order import grid_steps
from pallas_sim._src.values import concrete  # the tests' own records of traced values


@st.composite
def grids(draw):
    ndim = draw(st.integers(1, 3))
    grid = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    n_par = draw(st.integers(0, ndim))
    return grid, ("parallel",) * n_par + ("arbitrary",) * (ndim - n_par)


def record_order(grid, semantics):
    """Run a kernel that records pl.program_id at every step; return the list."""
    seen = []

    def kernel(o_ref):
        seen.append(tuple(int(concrete(pl.program_id(a))) for a in range(len(grid))))
        o_ref[...] = jnp.zeros_like(o_ref)

    pl.pallas_call(kernel, grid=grid, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                   compiler_params=pltpu.CompilerParams(dimension_semantics=semantics))()
    return seen


@SIM_SETTINGS
@given(grids(), st.integers(0, 2**31))
def test_shuffled_order_permutes_each_parallel_axis_and_keeps_the_loop_nest(case, seed):
    grid, semantics = case
    with pallas_sim.config(shuffle_parallel=True, shuffle_seed=seed):
        seen = record_order(grid, semantics)
        again = record_order(grid, semantics)
    assert seen == again, "same seed and grid, same order: grading stays deterministic"
    assert sorted(seen) == list(itertools.product(*map(range, grid))), "every point once"
    n_par = semantics.count("parallel")
    for axis in range(len(grid)):
        # loop position along `axis` of step s, in row-major loop order
        loop = [pos[axis] for pos in itertools.product(*map(range, grid))]
        coord = [p[axis] for p in seen]
        mapping = {}
        for li, c in zip(loop, coord, strict=True):
            assert mapping.setdefault(li, c) == c, (
                f"axis {axis}: loop index {li} must always visit the same coordinate")
        if axis >= n_par:
            assert all(k == v for k, v in mapping.items()), f"arbitrary axis {axis} reordered"


def test_a_long_parallel_axis_is_actually_shuffled_and_seeds_differ():
    grid, semantics = (16, 2), ("parallel", "arbitrary")
    plain = record_order(grid, semantics)
    with pallas_sim.config(shuffle_parallel=True, shuffle_seed=1):
        one = record_order(grid, semantics)
    with pallas_sim.config(shuffle_parallel=True, shuffle_seed=2):
        two = record_order(grid, semantics)
    assert plain == list(itertools.product(range(16), range(2)))
    assert one != plain and two != plain and one != two


def test_shuffling_exposes_a_kernel_that_depends_on_the_order_of_parallel_steps():
    """A running sum across a "parallel" axis is a race on a megacore TPU."""
    def kernel(x_ref, o_ref, carry_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            carry_ref[...] = jnp.zeros_like(carry_ref)
        carry_ref[...] += x_ref[...]
        o_ref[...] = carry_ref[...]

    def cumsum(x):
        spec = pl.BlockSpec((1, 128), lambda i: (i, 0))
        return pl.pallas_call(
            kernel, grid=(8,), in_specs=[spec], out_specs=spec,
            scratch_shapes=[pltpu.VMEM((1, 128), jnp.float32)],
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(x)

    x = np.ones((8, 128), np.float32)
    np.testing.assert_array_equal(cumsum(x), np.cumsum(x, axis=0))
    with pallas_sim.config(shuffle_parallel=True, shuffle_seed=0):
        shuffled = cumsum(x)
    assert not np.array_equal(shuffled, np.cumsum(x, axis=0)), (
        "visited in a shuffled order, the order-dependent kernel gives a different answer")


def test_grid_steps_without_parallel_axes_is_row_major_even_when_shuffling():
    assert grid_steps((2, 3), ("arbitrary", "arbitrary"), shuffle=True, seed=5) == list(
        itertools.product(range(2), range(3)))


@pytest.mark.parametrize("bad", [{"shuffle_parallel": 1}, {"shuffle_seed": -1},
                                 {"unwaited_dma": "ignore"}])
def test_bad_sanitizer_options_are_value_errors(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        pallas_sim.config(**bad)


def test_an_aliased_output_may_revisit_a_block_and_reads_back_its_own_writes():
    """TPU interpret mode skips the revisit check for outputs aliased to an
    input; the input block is fetched again from HBM, which already holds the
    first visit's result (JAX 0.10.x gives x + 2 here)."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    x = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
    spec = pl.BlockSpec((8, 128), lambda i, j: (j, 0))
    out = pl.pallas_call(kernel, grid=(2, 2), in_specs=[spec], out_specs=spec,
                         input_output_aliases={0: 0},
                         out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x.copy())
    np.testing.assert_array_equal(out, x + 2)
