"""Manual DMA: DMA semaphores, ``pltpu.make_async_copy``, ``pltpu.async_copy`` and
``pltpu.sync_copy``.

A kernel that takes a raw HBM ref (``BlockSpec(memory_space=pl.ANY)``, or any operand
of ``pl.kernel``) moves data itself::

    copy = pltpu.make_async_copy(x_hbm.at[pl.ds(start, 8)], buf, sem)
    copy.start()
    ...                      # buf still holds its old contents here
    copy.wait()              # the 8 rows land in buf now

    pltpu.async_copy(x_hbm, buf, sem).wait()   # start at once, wait later
    pltpu.sync_copy(x_hbm, buf)                # start and wait, on a semaphore of its own

Semantics follow JAX 0.10.x TPU interpret mode with its default
``dma_execution_mode="on_wait"`` (docs/pallas-sim.md rule 7): a started copy is
queued on its semaphore and executed, reading the source and writing the
destination, only when some ``.wait()`` on that semaphore takes it; so reading
the destination before the wait sees the old contents (poison in a fresh
buffer).  A copy never waited by the end of the pallas_call never lands; TPU
interpret mode then prints "Semaphore ... has non-zero count ... at kernel
exit" and returns the poisoned result, pallas_sim raises
:class:`~pallas_sim.UnwaitedDMAError` (or warns, with
``pallas_sim.config(unwaited_dma="warn")``).  Waiting on a semaphore with no
copy in flight would hang a TPU; pallas_sim raises instead.
"""

from __future__ import annotations

import collections
import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from . import context, op_accounting
from .config import OPTIONS
from .errors import PallasSimError, UnsupportedJaxUsageError, UnwaitedDMAError
from .memory_spaces import ScratchShape
from .pytrees import flatten
from .refs import Ref
from .values import concrete

SEMAPHORE_SPACE = "semaphore"


class Semaphore:
    """One DMA semaphore: the FIFO of copies started on it and not yet waited.

    Attributes:
      name: e.g. ``"sem_ref"`` or ``"sems_ref[1]"``, used in errors.
      pending: copies in flight, oldest first.
    """

    __slots__ = ("name", "pending")

    def __init__(self, name: str) -> None:
        self.name = name
        self.pending: collections.deque[AsyncCopy] = collections.deque()


class SemaphoreRef:
    """What a kernel receives for ``pltpu.SemaphoreType.DMA`` scratch.

    A scalar semaphore ref (shape ``()``) is used directly; an array of them
    (``SemaphoreType.DMA((n,))``) is indexed with ``sems.at[i]``.

    Raises (on ``.at[...]``):
      IndexError: an index outside the array of semaphores.
    """

    __slots__ = ("_sems", "_name")

    def __init__(self, sems: np.ndarray, name: str) -> None:
        self._sems = sems
        self._name = name

    @property
    def name(self) -> str:
        """The kernel parameter's name, used in errors (read-only)."""
        return self._name

    @classmethod
    def allocate(cls, shape: Sequence[int], name: str) -> SemaphoreRef:
        """Fresh semaphores of ``shape`` (``()`` for one)."""
        sems = np.empty(tuple(shape), dtype=object)
        for index in np.ndindex(sems.shape):
            label = name + ("" if not index else "[" + ", ".join(map(str, index)) + "]")
            sems[index] = Semaphore(label)
        return cls(sems, name)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._sems.shape

    @property
    def at(self) -> _SemaphoreIndexer:
        """``sems.at[i]``: the semaphore ref of element ``i``."""
        return _SemaphoreIndexer(self)

    def _semaphore(self) -> Semaphore:
        """The single semaphore of a scalar ref.

        Raises:
          ValueError: the ref holds an array of semaphores (JAX's message).
        """
        if self._sems.shape:
            raise ValueError(
                f"Cannot signal on a non-()-shaped semaphore: {self._sems.shape} ({self.name} "
                f"is an array of DMA semaphores; pick one with {self.name}.at[i])")
        return self._sems[()]

    def _all(self) -> Iterable[Semaphore]:
        """Every semaphore this ref holds."""
        return self._sems.reshape(-1).tolist()

    def __repr__(self) -> str:
        return f"SemaphoreRef({self.name}: DMA{list(self.shape)})"


class _SemaphoreIndexer:
    __slots__ = ("_ref",)

    def __init__(self, ref: SemaphoreRef) -> None:
        self._ref = ref

    def __getitem__(self, idx: object) -> SemaphoreRef:
        idx = concrete(idx)  # a traced slot (pl.program_id(0) % 2) selects a semaphore
        if isinstance(idx, np.ndarray) and idx.ndim == 0:
            idx = int(idx)
        try:
            sub = self._ref._sems[idx]
        except IndexError as exc:
            raise IndexError(f"index {idx!r} is out of bounds for {self._ref.name} of shape "
                             f"{self._ref.shape}") from exc
        if not isinstance(sub, np.ndarray):
            sub = np.array(sub, dtype=object)
            sub[()] = self._ref._sems[idx]
        return SemaphoreRef(sub, f"{self._ref.name}.at[{idx!r}]")


class _SemaphoreKind(ScratchShape):
    """``pltpu.SemaphoreType.DMA``: a scratch entry holding one DMA semaphore;
    called with a shape (``SemaphoreType.DMA((2,))``) it declares an array."""

    def __call__(self, shape: Sequence[int]) -> ScratchShape:
        return ScratchShape(tuple(int(d) for d in shape), np.dtype(np.int32), SEMAPHORE_SPACE)


class SemaphoreType:
    """``pltpu.SemaphoreType``: only ``DMA`` semaphores are simulated."""

    DMA = _SemaphoreKind((), np.dtype(np.int32), SEMAPHORE_SPACE)


_NOT_REFS = "DMA source/destination/semaphore arguments must be Refs."


def _ref_parts(ref: object, what: str) -> tuple[np.ndarray, str]:
    if not isinstance(ref, Ref):
        raise ValueError(f"{_NOT_REFS} (the {what} is a {type(ref).__name__}; pass a kernel "
                         "argument, a scratch or pl.run_scoped buffer, or ref.at[...], not a "
                         "loaded value)")
    return ref._buf, ref.name


class AsyncCopy:
    """A copy descriptor from ``pltpu.make_async_copy(src_ref, dst_ref, sem)`` (JAX's
    ``AsyncCopyDescriptor``).

    ``start()`` queues the copy on ``sem``; ``wait()`` executes the oldest
    copy queued on ``sem`` (source read and destination written then).  A
    descriptor built again with the same arguments may wait for a copy that
    another descriptor started, as in JAX.

    Raises:
      ValueError: ``src_ref``/``dst_ref``/``sem`` is not a ref ("DMA
        source/destination/semaphore arguments must be Refs."), source and destination
        differ in shape or dtype, or ``sem`` holds an array of semaphores ("Cannot signal
        on a non-()-shaped semaphore").
    """

    __slots__ = ("_src", "_dst", "_sem", "_src_name", "_dst_name", "strided")

    def __init__(self, src_ref: object, dst_ref: object, sem: object) -> None:
        self._src, self._src_name = _ref_parts(src_ref, "source")
        self._dst, self._dst_name = _ref_parts(dst_ref, "destination")
        #: Whether either end is a strided view (``Ref.strided``): the copy moves many
        #: short runs, which the timeline model times at its strided rate.
        self.strided = bool(src_ref.strided or dst_ref.strided)  # type: ignore[union-attr]
        if not isinstance(sem, SemaphoreRef):
            raise ValueError(f"{_NOT_REFS} (the semaphore is {sem!r}; pass a DMA semaphore: "
                             "scratch pltpu.SemaphoreType.DMA, or sems.at[i])")
        self._sem = sem._semaphore()
        if self._src.shape != self._dst.shape or self._src.dtype != self._dst.dtype:
            raise ValueError(
                f"make_async_copy from {self._src_name} ({self._src.dtype}"
                f"{list(self._src.shape)}) to {self._dst_name} ({self._dst.dtype}"
                f"{list(self._dst.shape)}): source and destination must have the same shape "
                "and dtype")

    def start(self, priority: int = 0, *, add: bool = False) -> None:
        """Queue the copy on its semaphore; no data moves yet (JAX's
        ``AsyncCopyDescriptor.start``).

        Args:
          priority: the DMA queue's priority (a non-negative int; no effect here).
          add: accumulate into the destination instead of overwriting it.

        Raises:
          ValueError: a negative priority (JAX's message).
          UnsupportedJaxUsageError: ``add=True``: neither of JAX 0.10.2's interpreters
            models it (the HLO interpreter raises NotImplementedError, TPU interpret mode
            copies without adding), so pallas_sim does not either.
        """
        if priority < 0:
            raise ValueError(f"DMA start priority must be non-negative: {priority}")
        if add:
            raise UnsupportedJaxUsageError(
                "a DMA with add=True (accumulate into the destination) is not modelled: JAX "
                "0.10.2's HLO interpreter raises NotImplementedError (DMA partial discharge "
                "add=True not yet implemented) and its TPU interpret mode overwrites instead "
                "of adding. Load both blocks into VMEM and add them there")
        self._sem.pending.append(self)
        ctx = context.running()
        if ctx is not None:
            ctx.manual_dmas += 1
        op_accounting.dma_started(self)

    def wait(self) -> None:
        """Execute the oldest copy queued on this descriptor's semaphore.

        Raises:
          PallasSimError: no copy is in flight on the semaphore (a TPU would
            wait forever).
        """
        if not self._sem.pending:
            raise PallasSimError(
                f"wait() on DMA semaphore {self._sem.name} with no copy in flight (copy "
                f"{self._src_name} -> {self._dst_name}); on a TPU this wait never returns. "
                "Call .start() first.")
        copy = self._sem.pending.popleft()
        np.copyto(copy._dst, copy._src)
        ctx = context.running()
        if ctx is not None:
            ctx.manual_dma_bytes += copy._dst.nbytes
        op_accounting.dma_waited(copy, copy._dst.nbytes)

    def __repr__(self) -> str:
        return f"AsyncCopy({self._src_name} -> {self._dst_name} on {self._sem.name})"


def make_async_copy(src_ref: object, dst_ref: object, sem: object) -> AsyncCopy:
    """``pltpu.make_async_copy``: a local DMA from ``src_ref`` to ``dst_ref``.

    Args:
      src_ref, dst_ref: refs (or ``ref.at[...]`` sub-refs) of equal shape and
        dtype, in any memory space (HBM refs come from ``pl.ANY`` operands).
      sem: a scalar DMA semaphore ref (``pltpu.SemaphoreType.DMA`` scratch, or
        ``sems.at[i]``).

    Returns:
      An :class:`AsyncCopy`; call ``.start()`` then ``.wait()``.

    Raises:
      ValueError, TypeError: see :class:`AsyncCopy`.
    """
    return AsyncCopy(src_ref, dst_ref, sem)


def async_copy(src_ref: object, dst_ref: object, sem: object, *, priority: int = 0,
               add: bool = False) -> AsyncCopy:
    """``pltpu.async_copy``: build the copy and start it at once; ``.wait()`` the returned
    descriptor before using the destination (JAX 0.10.x ``async_copy``).

    Args:
      src_ref, dst_ref, sem: as :func:`make_async_copy`.
      priority, add: as :meth:`AsyncCopy.start`.

    Returns:
      The started :class:`AsyncCopy`.

    Raises:
      ValueError, UnsupportedJaxUsageError: see :class:`AsyncCopy` and
        :meth:`AsyncCopy.start`.
    """
    copy = AsyncCopy(src_ref, dst_ref, sem)
    copy.start(priority=priority, add=add)
    return copy


def sync_copy(src_ref: object, dst_ref: object, *, add: bool = False) -> None:
    """``pltpu.sync_copy``: copy a pytree of refs into a pytree of refs of the same
    structure, and wait: every copy is started, then every one waited, on a DMA semaphore
    of their own (JAX 0.10.x runs them in a ``pl.run_scoped`` semaphore).

    Counts one manual DMA per pair of refs in the trace. Refs may be in any memory
    space, e.g. HBM → VMEM, VMEM → HBM, HBM → SMEM, HBM → HBM.

    Raises:
      ValueError: the trees differ, a leaf is not a ref, or a pair differs in shape or
        dtype.
      UnsupportedJaxUsageError: ``add=True`` (see :meth:`AsyncCopy.start`).
      OutsideKernelError: called outside a running kernel.
    """
    context.require_kernel("pltpu.sync_copy")
    srcs, src_def = flatten(src_ref)
    if not srcs:
        return
    dsts, dst_def = flatten(dst_ref)
    if src_def != dst_def:
        raise ValueError(f"pltpu.sync_copy: the source tree {src_def} and the destination "
                         f"tree {dst_def} differ")
    sem = SemaphoreRef.allocate((), "sync_copy semaphore")
    copies = [AsyncCopy(s, d, sem) for s, d in zip(srcs, dsts, strict=True)]
    for copy in copies:
        copy.start(add=add)
    for copy in copies:
        copy.wait()


def check_drained(sem_refs: Iterable[SemaphoreRef], call_name: str,
                  where: str = "pallas_call", end: str = "the kernel's last step ends") -> None:
    """At the end of a pallas_call (``where``: or of a ``pl.run_scoped`` body, whose
    semaphores end with it): complain about copies never waited.

    Their destinations keep their old contents (as in TPU interpret mode).

    Raises:
      UnwaitedDMAError: with ``config(unwaited_dma="raise")`` (the default).

    Warns:
      RuntimeWarning: with ``config(unwaited_dma="warn")``.
    """
    pending = [c for ref in sem_refs for s in ref._all() for c in s.pending]
    if not pending:
        return
    message = (f"{where} {call_name!r} ended with {len(pending)} DMA(s) started and never "
               f"waited, first {pending[0]!r}; the destination never receives the data. "
               f"Every .start() needs a matching .wait() before {end}.")
    for ref in sem_refs:
        for s in ref._all():
            s.pending.clear()
    if OPTIONS.unwaited_dma == "warn":
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        return
    raise UnwaitedDMAError(message)
