"""The grid loop of an abstract run (:func:`pallas_sim.estimate`).

It does what the real loop in :mod:`pallas_sim.pallas_call` does — set the grid indices,
run the kernel, count the input refs' reads and the ops of every step — but moves no
data (all buffers are shape-only), and it replicates whole slabs of the grid when it can
prove them identical:

A kernel body sees concrete values only through the grid indices (``pl.program_id``)
and SMEM data (scalar-prefetch tables, SMEM blocks and scratch); everything it loads
from VMEM is shape-only. When, over the first slab of steps (leading grid index 0), the
body never read the leading grid index, the call has no SMEM scratch and no SMEM blocks,
and no manual DMA is in flight at the slab's end, every other slab runs the same code
path with the same concrete values, so it records the same per-step counts: they are
copied instead of recomputed. (Flash and Splash grids lead with the heads axis: 128
identical slabs at the lecture's sizes.) Anything else runs step by step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .op_accounting import OpCounter


class _WatchedIndices(tuple):
    """A step's grid indices that note whether the leading one was read."""

    __slots__ = ()
    read_leading = [False]

    def __getitem__(self, i: Any) -> Any:  # type: ignore[override]
        if i == 0 or (isinstance(i, int) and i == -len(self)):
            _WatchedIndices.read_leading[0] = True
        return tuple.__getitem__(self, i)


def run_steps(kernel: Callable[..., Any], refs: tuple[Any, ...], steps: Sequence[tuple],
              grid: tuple[int, ...] | None, ctx: Any, counter: OpCounter,
              in_refs: list[Any], reads: np.ndarray, sem_refs: list[Any], *,
              replicable: bool, returned_error: Callable[[object], Exception]) -> None:
    """Run the kernel over ``steps`` on shape-only buffers, filling ``reads`` (inputs x
    steps) and the per-step op counts of ``counter``; slabs are replicated when
    ``replicable`` (no SMEM scratch or blocks, row-major order) and the body allows it.

    Raises:
      whatever the kernel raises; ``returned_error(value)`` when it returns a value.
    """
    num_steps = len(steps)
    slab = num_steps
    if replicable and grid and len(grid) >= 1 and grid[0] > 1 and num_steps == \
            int(np.prod(grid)):
        slab = num_steps // grid[0]
    _WatchedIndices.read_leading[0] = False
    whens_before = ctx.when_bodies_run
    dmas_before, bytes_before = ctx.manual_dmas, ctx.manual_dma_bytes
    for s in range(num_steps):
        if s == slab and _can_replicate(sem_refs):
            _replicate(slab, num_steps, counter, reads, ctx, whens_before, dmas_before,
                       bytes_before)
            return
        ctx.program_ids = _WatchedIndices(steps[s]) if slab < num_steps else steps[s]
        counter.step(s)
        returned = kernel(*refs)
        if returned is not None:
            raise returned_error(returned)
        for j, ref in enumerate(in_refs):
            if ref._reads:
                reads[j, s] = ref._reads
                ref._reads = 0


def _can_replicate(sem_refs: list[Any]) -> bool:
    if _WatchedIndices.read_leading[0]:
        return False
    return not any(s.pending for ref in sem_refs for s in ref._all())


def _replicate(slab: int, num_steps: int, counter: OpCounter, reads: np.ndarray, ctx: Any,
               whens_before: int, dmas_before: int, bytes_before: int) -> None:
    copies = num_steps // slab
    for k in range(1, copies):
        counter.steps[k * slab:(k + 1) * slab] = [dict(row) for row in counter.steps[:slab]]
    reads[:, slab:] = np.tile(reads[:, :slab], (1, copies - 1))
    ctx.when_bodies_run = whens_before + (ctx.when_bodies_run - whens_before) * copies
    ctx.manual_dmas = dmas_before + (ctx.manual_dmas - dmas_before) * copies
    ctx.manual_dma_bytes = bytes_before + (ctx.manual_dma_bytes - bytes_before) * copies
