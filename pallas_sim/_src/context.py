"""Kernel-side state: which grid step is running (``pl.program_id``,
``pl.num_programs``), what ``pl.when`` has run, the mesh axes of a ``pl.kernel``, and the
memory and DMAs the running kernel has used so far (``pl.run_scoped`` buffers, manual
copies)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import memory
from .errors import NoGridError, OutsideKernelError
from .values import KERNELS, KernelValue, concrete


class KernelContext:
    """State of the kernel that is running.

    Attributes:
      grid: the grid (a tuple of sizes), or None in a ``pl.kernel`` body, which has none.
      program_ids: the current step's indices.
      when_bodies_run: ``pl.when`` bodies executed so far.
      kind: "pallas_call" or "mpmd_map" (``pl.kernel``), for JAX's wording in errors.
      axes: mesh axis name -> (this core's index, axis size), for ``jax.lax.axis_index``.
      call_name: the call's name, for errors.
      vmem_limit: the scoped VMEM limit in bytes; static_allocations: the call's own
        buffers (operands, scratch), which ``pl.run_scoped`` buffers come on top of.
      scoped: the ``pl.run_scoped`` allocations live now, innermost last.
      peak_scoped_vmem, peak_scoped_smem: the most scoped VMEM/SMEM bytes live at once.
      manual_dmas, manual_dma_bytes: copies started by the kernel (``make_async_copy``,
        ``async_copy``, ``sync_copy``, ``emit_pipeline``) and the bytes they moved.
    """

    __slots__ = ("grid", "program_ids", "when_bodies_run", "kind", "axes", "call_name",
                 "vmem_limit", "static_allocations", "scoped", "peak_scoped_vmem",
                 "peak_scoped_smem", "manual_dmas", "manual_dma_bytes")

    def __init__(self, grid: tuple[int, ...] | None, *, kind: str = "pallas_call",
                 axes: dict[str, tuple[int, int]] | None = None, call_name: str = "",
                 vmem_limit: int = 0,
                 static_allocations: list[memory.Allocation] | None = None) -> None:
        self.grid = grid
        self.program_ids: tuple[int, ...] = ()
        self.when_bodies_run = 0
        self.kind = kind
        self.axes = axes or {}
        self.call_name = call_name
        self.vmem_limit = vmem_limit
        self.static_allocations = static_allocations or []
        self.scoped: list[memory.Allocation] = []
        self.peak_scoped_vmem = 0
        self.peak_scoped_smem = 0
        self.manual_dmas = 0
        self.manual_dma_bytes = 0


_STACK: list[KernelContext] = KERNELS  # one list, shared with pallas_sim.values


def running() -> KernelContext | None:
    """The innermost running kernel's context, or None outside kernels."""
    return _STACK[-1] if _STACK else None


def current(what: str = "pl.program_id / pl.num_programs") -> KernelContext:
    """The running kernel's context, which must have a grid.

    Raises:
      NoGridError: called outside a kernel, or in a ``pl.kernel`` body (JAX 0.10.x fails an
        assertion in both cases).
    """
    if not _STACK:
        raise NoGridError(f"{what} can only be used inside a kernel run by pl.pallas_call")
    ctx = _STACK[-1]
    if ctx.grid is None:
        axes = ", ".join(repr(a) for a in ctx.axes) or "'core'"
        raise NoGridError(
            f"{what} inside a pl.kernel body: a kernel on a mesh has no grid (JAX fails an "
            f"assertion here). Use jax.lax.axis_index({axes}) for the core's index, or "
            "pltpu.emit_pipeline(body, grid=...) for a grid over blocks, whose body may call "
            "pl.program_id")
    return ctx


def program_id(axis: int) -> KernelValue:
    """Index of the current grid step along ``axis`` (JAX ``pl.program_id``): an int32
    kernel value (traced in JAX: arithmetic, comparisons, ref indexing and ``pl.ds``
    accept it; Python ``if``/``range`` on it raise ``TracerConversionError``). Inside a
    ``pltpu.emit_pipeline`` body it is the pipeline's step, as in JAX.

    Raises:
      ValueError: ``axis`` is not an axis of the grid.
      NoGridError: called outside a kernel or in a ``pl.kernel`` body.
    """
    ctx = current()
    return KernelValue(np.asarray(ctx.program_ids[_axis(ctx, axis, "program_id")], np.int32))


def num_programs(axis: int) -> int:
    """Size of the grid along ``axis`` (JAX ``pl.num_programs``): a plain int, static as
    in JAX for a grid of static sizes.

    Raises:
      ValueError: ``axis`` is not an axis of the grid.
      NoGridError: called outside a kernel or in a ``pl.kernel`` body.
    """
    ctx = current()
    return ctx.grid[_axis(ctx, axis, "num_programs")]  # type: ignore[index]


def _axis(ctx: KernelContext, axis: int, what: str) -> int:
    grid = ctx.grid or ()
    if not -len(grid) <= axis < len(grid):
        raise ValueError(f"{what} axis={axis} but the grid {grid} has {len(grid)} axes")
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


def require_kernel(what: str) -> KernelContext:
    """The running kernel's context.

    Raises:
      OutsideKernelError: no kernel is running (JAX: "Evaluation rule for 'run_scoped' not
        implemented").
    """
    ctx = running()
    if ctx is None:
        raise OutsideKernelError(
            f"Evaluation rule for 'run_scoped' not implemented ({what} works only inside a "
            "kernel run by pl.pallas_call or pl.kernel)")
    return ctx
