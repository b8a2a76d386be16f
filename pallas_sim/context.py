"""Kernel-side state: which grid step is running (``pl.program_id``,
``pl.num_programs``) and what ``pl.when`` has run."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .errors import PallasSimError
from .values import KERNELS, KernelValue, concrete


class KernelContext:
    """State of the pallas_call whose kernel is running."""

    __slots__ = ("grid", "program_ids", "when_bodies_run")

    def __init__(self, grid: tuple[int, ...]) -> None:
        self.grid = grid
        self.program_ids: tuple[int, ...] = ()
        self.when_bodies_run = 0


_STACK: list[KernelContext] = KERNELS  # one list, shared with pallas_sim.values


def current() -> KernelContext:
    """The running kernel's context.

    Raises:
      PallasSimError: called outside a kernel.
    """
    if not _STACK:
        raise PallasSimError(
            "pl.program_id / pl.num_programs / pl.when can only be used inside a kernel "
            "run by pl.pallas_call")
    return _STACK[-1]


def program_id(axis: int) -> KernelValue:
    """Index of the current grid step along ``axis`` (JAX ``pl.program_id``): an int32
    kernel value (traced in JAX: arithmetic, comparisons, ref indexing and ``pl.ds``
    accept it; Python ``if``/``range`` on it raise ``TracerConversionError``).

    Raises:
      ValueError: ``axis`` is not an axis of the grid.
      PallasSimError: called outside a kernel.
    """
    ctx = current()
    return KernelValue(np.asarray(ctx.program_ids[_axis(ctx, axis, "program_id")], np.int32))


def num_programs(axis: int) -> int:
    """Size of the grid along ``axis`` (JAX ``pl.num_programs``): a plain int, static as
    in JAX for a grid of static sizes.

    Raises:
      ValueError: ``axis`` is not an axis of the grid.
      PallasSimError: called outside a kernel.
    """
    ctx = current()
    return ctx.grid[_axis(ctx, axis, "num_programs")]


def _axis(ctx: KernelContext, axis: int, what: str) -> int:
    if not -len(ctx.grid) <= axis < len(ctx.grid):
        raise ValueError(f"{what} axis={axis} but the grid {ctx.grid} has {len(ctx.grid)} axes")
    return axis


def when(condition: object) -> Callable[[Callable[[], None]], None]:
    """Run the decorated body now if ``condition`` holds (JAX ``pl.when``).

    Used as ``@pl.when(pl.program_id(2) == 0)`` over a function of no
    arguments.  Each body that runs is counted in the trace's
    ``when_bodies_run``, so skipped work is visible.  Outside a kernel it
    simply runs or skips the body.
    """
    def decorate(body: Callable[[], None]) -> None:
        if bool(concrete(condition)):
            if _STACK:
                _STACK[-1].when_bodies_run += 1
            body()
        return None
    return decorate
