"""Shared kernels, wrappers and independent arithmetic for the pallas_sim tests.

Everything here is computed from the spec (docs/pallas-sim.md), never read back from
the simulator, so that the tests are an oracle and not a mirror.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from hypothesis import HealthCheck, settings

import pallas_sim
from pallas_sim import jax, pl

MiB = 1 << 20

# Deterministic and small: the whole tests/sim suite must stay well under 20 s.
SIM_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def add_kernel(x_ref, y_ref, o_ref):
    """One block of z = x + y.  x_ref, y_ref, o_ref: the same block shape."""
    o_ref[...] = x_ref[...] + y_ref[...]


def blocked_add(x, y, block_shape, **call_kwargs):
    """x + y through pallas_call with a grid of cdiv(dim, block) blocks."""
    bm, bn = block_shape
    grid = (pl.cdiv(x.shape[0], bm), pl.cdiv(x.shape[1], bn))
    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    return pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=grid,
        in_specs=[spec, spec],
        out_specs=spec,
        **call_kwargs,
    )(x, y)


def unblocked_add(x, y, **call_kwargs):
    """x + y with no grid and no BlockSpecs: every whole array resident in VMEM."""
    return pl.pallas_call(
        add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), **call_kwargs
    )(x, y)


def traced(fn: Callable, *args, **kwargs):
    """Run fn under pallas_sim.trace(); return (result, the last CallTrace)."""
    with pallas_sim.trace() as t:
        out = fn(*args, **kwargs)
    assert len(t.calls) >= 1, "pallas_sim.trace() recorded no pallas_call"
    return out, t.calls[-1]


def grid_points(grid: Sequence[int]) -> list[tuple[int, ...]]:
    """Grid steps in Pallas order: row-major, last axis fastest."""
    return list(itertools.product(*(range(g) for g in grid)))


def input_dma_count(indices: Iterable[tuple[int, ...]]) -> int:
    """Copies of an input: at the first step and whenever the block index changes."""
    count, previous = 0, None
    for index in indices:
        if index != previous:
            count += 1
        previous = index
    return count


def output_writeback_count(indices: Sequence[tuple[int, ...]]) -> int:
    """Write-backs of an output: when the next step's index differs, and after the last."""
    return sum(
        1
        for t, index in enumerate(indices)
        if t == len(indices) - 1 or indices[t + 1] != index
    )


def first_revisit(indices: Sequence[tuple[int, ...]]):
    """(block index, step written back, step revisited) of the first non-consecutive
    revisit of an output block, or None."""
    written_back: dict[tuple[int, ...], int] = {}
    for t, index in enumerate(indices):
        if index in written_back:
            return index, written_back[index], t
        if t == len(indices) - 1 or indices[t + 1] != index:
            written_back[index] = t
    return None


def poison_value(dtype) -> object:
    """What fresh memory holds under the default sanitizer: TPU interpret mode's poison
    (NaN, the integer maximum, True)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).max
    return np.nan


def is_poison(a: np.ndarray) -> np.ndarray:
    """Elementwise: does a hold the poison value of its dtype?"""
    a = np.asarray(a)
    value = poison_value(a.dtype)
    if isinstance(value, float):
        return np.isnan(a.astype(np.float32))
    return a == value
