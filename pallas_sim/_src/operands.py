"""One operand of a blocked loop: its blocks, its index map's results, its DMA plan.

Shared by ``pl.pallas_call`` (the grid loop, :mod:`pallas_sim._src.pallas_call`) and
``pltpu.emit_pipeline`` (an inner loop over HBM refs, :mod:`pallas_sim._src.pipeline`).
The rules are those of docs/pallas-sim.md, "Execution rules":

* an index map returns one entry per block dimension (:mod:`pallas_sim._src.block_dims`):
  a block index for int/``pl.Blocked``/``None``/``pl.Squeezed`` dimensions, an element
  offset for ``pl.Element`` ones; out-of-range results raise
  :class:`~pallas_sim.BlockIndexError`;
* an input block is copied HBM→VMEM at the first step and whenever its index changes;
* an output block is poisoned when its index changes, and written back when the next
  step's index differs and after the last step; coming back to a block already written
  back raises :class:`~pallas_sim.RevisitedOutputBlockError` (pallas_call only).

Everything here runs once per call, before the first step, so the step loop only copies
blocks (:meth:`Operand.plan` builds the per-step copy lists).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import abstract, block_dims, memory
from .abstract import AbstractArray
from .block_dims import BlockDim, Blocked, BoundedSlice, Element, Squeezed
from .config import OPTIONS
from .dtypes import fill_value
from .errors import (
    BlockIndexError,
    BlockShapeError,
    KernelSignatureError,
    RevisitedOutputBlockError,
    TracerConversionError,
)
from .memory_spaces import HBM_SPACES, space_name
from .refs import make_ref
from .slices import Slice
from .values import KernelValue, concrete

_DTYPE_NAMES: dict[np.dtype, str] = {}


def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name``, cached (NumPy recomputes the name on every access)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints (block counts)."""
    return -(-a // b)


def _role_word(role: str) -> str:
    return "input" if role == "in" else "output"


class Operand:
    """One array operand: shape, dtype, block dimensions, memory space, and, once
    :meth:`set_indices` ran, its index per step and DMA counts.

    Attributes:
      role: "in" or "out". name: the kernel parameter's name.
      dims: the canonical block dimensions (:func:`pallas_sim._src.block_dims.canonical`).
      space: "vmem", "smem", "any" or "hbm". buffers: VMEM buffers (0 in HBM).
      idx: int64 [steps, ndim], the index map's result at each step.
      hbm: the (padded) array the blocks come from and go to; buf: the block buffer;
      ref: the kernel's ref to ``buf``.

    Raises (on construction):
      KernelSignatureError: a block shape of the wrong rank.
      ValueError: a non-positive block size, a ``pl.BoundedSlice`` (JAX's message), bad
        ``pl.Element`` padding, or a block spec in semaphore memory.
    """

    __slots__ = ("role", "name", "shape", "dtype", "dims", "index_map", "space", "buffers",
                 "idx", "hbm", "buf", "ref", "dma_count", "hbm_bytes", "ragged", "pads",
                 "element_dims", "sizes", "kernel_shape", "padded_shape", "needs_padding",
                 "_low", "_high", "_sizes", "_dims", "changed", "writeback")

    def __init__(self, role: str, name: str, shape: tuple[int, ...], dtype: np.dtype,
                 spec: Any, num_steps: int, *, default_space: str = "vmem",
                 buffer_default: Callable[[int, int | None], int] = memory.default_buffers
                 ) -> None:
        self.role, self.name, self.shape, self.dtype = role, name, shape, dtype
        self.index_map = None if spec is None else spec.index_map
        if spec is None or spec.block_shape is None:
            self.dims: tuple[BlockDim, ...] = tuple(Blocked(d) for d in shape)
        else:
            self.dims = tuple(block_dims.canonical(d) for d in spec.block_shape)
            if len(self.dims) != len(shape):
                raise BlockShapeError(
                    f"BlockSpec for {_role_word(role)} {name!r} has block shape "
                    f"{tuple(spec.block_shape)} with {len(self.dims)} dims but the array has "
                    f"shape {shape}")
        self._check_dims(spec)
        self.pads = tuple(tuple(int(p) for p in d.padding) if isinstance(d, Element) else (0, 0)
                          for d in self.dims)
        self.element_dims = tuple(i for i, d in enumerate(self.dims) if isinstance(d, Element))
        self._shapes()
        space = None if spec is None else spec.memory_space
        self.space = default_space if space is None else space_name(space)
        if self.space == "semaphore":
            raise ValueError(f"{_role_word(role)} {name!r}: a BlockSpec cannot place an array "
                             "in semaphore memory; use pltpu.VMEM, pltpu.SMEM or pl.ANY")
        count = (spec.pipeline_mode.buffer_count
                 if spec is not None and spec.pipeline_mode is not None else None)
        self.buffers = 0 if self.space in HBM_SPACES else buffer_default(num_steps, count)
        self.dma_count = 0
        self.hbm_bytes = 0
        self.changed: np.ndarray | None = None  # set by account()
        self.writeback: np.ndarray | None = None

    def _check_dims(self, spec: Any) -> None:
        for d in self.dims:
            if isinstance(d, BoundedSlice):
                raise ValueError(f"Unsupported block dim type: {type(d)} ({_role_word(self.role)}"
                                 f" {self.name!r}: JAX's interpreters and the Mosaic compiler "
                                 "refuse pl.BoundedSlice in a pallas_call; use whole blocks or "
                                 "pl.Element)")
            if isinstance(d, Squeezed):
                continue
            if not isinstance(d.block_size, int | np.integer) or d.block_size <= 0:
                shown = self.dims if spec is None or spec.block_shape is None else tuple(
                    spec.block_shape)
                raise ValueError(f"block shape {shown} of {self.name!r} has a non-positive "
                                 f"entry {d}")
            if isinstance(d, Element):
                pad = tuple(d.padding) if isinstance(d.padding, tuple | list) else ()
                if len(pad) != 2 or any(not isinstance(p, int | np.integer) or p < 0
                                        for p in pad):
                    raise ValueError(f"pl.Element padding must be (low, high) non-negative "
                                     f"ints, got {d.padding!r} for {self.name!r}")

    # -- shapes ---------------------------------------------------------------------------

    def _shapes(self) -> None:
        """Derive, once, the shapes and index bounds the call's setup reads.

        Attributes set: ``sizes`` (elements the block spans per dimension, 1 when
        squeezed), ``kernel_shape`` (the kernel's ref: squeezed dimensions dropped),
        ``padded_shape`` (:attr:`hbm`'s shape: ragged dims rounded up to whole blocks,
        Element dims with their padding), ``ragged``, ``needs_padding``, and the bounds of
        valid indices per dimension.
        """
        sizes, kernel, padded, high = [], [], [], []
        ragged = False
        for d, b, (lo, hi) in zip(self.shape, self.dims, self.pads, strict=True):
            if isinstance(b, Squeezed):
                sizes.append(1)
                padded.append(d)
                high.append(d)
                continue
            n = int(b.block_size)
            sizes.append(n)
            kernel.append(n)
            if isinstance(b, Element):
                padded.append(lo + d + hi)
                high.append(lo + d + hi - n + 1)  # offsets s with s + n <= the padded size
            else:
                blocks = -(-d // n)
                padded.append(blocks * n)
                high.append(blocks)
                ragged = ragged or d % n != 0
        self.sizes, self.kernel_shape = tuple(sizes), tuple(kernel)
        self.padded_shape = tuple(padded)
        self._low, self._high = 0, np.asarray(high, np.int64)
        self._sizes, self._dims = np.asarray(sizes, np.int64), np.asarray(self.shape, np.int64)
        self.ragged = ragged
        self.needs_padding = self.ragged or any(p != (0, 0) for p in self.pads)

    @property
    def trace_block_shape(self) -> tuple[int | None, ...]:
        """The block shape as the trace records it (None for squeezed dimensions)."""
        return tuple(block_dims.kernel_size(d) for d in self.dims)

    @property
    def logical(self) -> tuple[slice, ...]:
        """Where the array sits inside :attr:`hbm`."""
        return tuple(slice(lo, lo + d) for d, (lo, _) in zip(self.shape, self.pads, strict=True))

    def allocation(self) -> memory.Allocation:
        """The operand's VMEM/SMEM buffers, for the memory accounting."""
        nbytes = math.prod(self.kernel_shape) * self.dtype.itemsize
        what = f"{dtype_name(self.dtype)}{list(self.kernel_shape)} block"
        return memory.Allocation(self.name, self.role, self.space, nbytes, self.buffers, what)

    # -- index maps -------------------------------------------------------------------------

    def set_indices(self, steps: list[tuple[int, ...]], extra_args: list[Any],
                    grid_idx: np.ndarray | None, where: str = "grid step") -> None:
        """Evaluate the index map at every step (``extra_args``: the scalar-prefetch refs
        passed after the grid indices) into :attr:`idx`, bounds-checked.

        Raises:
          BlockIndexError: an index outside the array (JAX's TPU interpret mode's message).
          KernelSignatureError: the index map takes or returns the wrong number of values.
          TracerConversionError: Python control flow on a grid index.
        """
        self.idx = _block_indices(self, steps, extra_args, grid_idx, where)

    def window_view(self) -> Any:
        """``view[key]`` (read and write) is the block at index ``key`` as the kernel sees
        it. A reshaped view of a C-contiguous :attr:`hbm` when every dim is blocked, else
        slices per access."""
        if not self.element_dims and self.hbm.flags.c_contiguous:
            return _blocked_view(self)
        return _Windows(self)

    def valid_bytes(self) -> np.ndarray:
        """int64 [steps]: bytes of each step's block inside the logical array."""
        if not self.shape:
            return np.full(len(self.idx), self.dtype.itemsize, np.int64)
        sizes, dims = self._sizes, self._dims
        if not self.element_dims:
            ext = np.minimum(dims - self.idx * sizes, sizes)
            np.maximum(ext, 0, out=ext)
        else:
            element = np.zeros(len(sizes), bool)
            element[list(self.element_dims)] = True
            starts = np.where(element, self.idx, self.idx * sizes)
            starts -= np.asarray([lo for lo, _ in self.pads], np.int64)
            ext = np.clip(np.minimum(starts + sizes, dims) - np.maximum(starts, 0), 0, sizes)
        return ext.prod(axis=1) * self.dtype.itemsize

    def plan(self, steps: list[tuple[int, ...]], plan_in: list[list], plan_fresh: list[list],
             plan_out: list[list], *, check_revisits: str | None) -> None:
        """:meth:`account` for these steps, then :meth:`schedule` into the plans."""
        self.account(steps, check_revisits=check_revisits)
        self.schedule(plan_in, plan_fresh, plan_out)

    def account(self, steps: list[tuple[int, ...]], *, check_revisits: str | None) -> None:
        """Decide at which steps this operand's block is copied in (:attr:`changed`: the
        block index differs from the previous step's) and, for an output, written back
        (:attr:`writeback`: the next step's differs, or the last step); count its DMAs and
        HBM bytes (:attr:`dma_count`, :attr:`hbm_bytes`). An operand left in HBM (``ANY``)
        has none.

        ``check_revisits``: the call's name to check that no output block is entered again
        after its write-back, or None not to check.

        Raises:
          RevisitedOutputBlockError: see :func:`check_revisits`.
        """
        if self.space in HBM_SPACES:
            return
        num_steps = len(steps)
        changed = np.ones(num_steps, bool)
        if num_steps > 1:
            changed[1:] = (np.any(self.idx[1:] != self.idx[:-1], axis=1)
                           if self.idx.shape[1] else False)
        valid = self.valid_bytes()
        self.changed = changed
        if self.role == "in":
            self.dma_count = int(changed.sum())
            self.hbm_bytes = int(valid[changed].sum())
            return
        if check_revisits is not None:
            _check_revisits(self, changed, check_revisits, steps)
        writeback = np.ones(num_steps, bool)
        writeback[:-1] = changed[1:]
        self.writeback = writeback
        self.dma_count = int(writeback.sum())
        self.hbm_bytes = int(valid[writeback].sum())

    def schedule(self, plan_in: list[list], plan_fresh: list[list], plan_out: list[list],
                 plan_bind: list[list] | None = None,
                 every_step: list[tuple] | None = None) -> None:
        """Append this operand's per-step work (after :meth:`account`) to the plans: input
        copies ``(buffer, view, key)``, output buffers to poison ``(buffer, value)``,
        write-backs ``(view, key, buffer)``; or, for an output written in place
        (``plan_bind`` given: ``direct_outputs.py``), ``(ref, view, key)`` at each block
        change, the step pointing the ref at ``view[key]``. An input whose block changes
        at every step goes to ``every_step`` when given, as one ``(buffer, view, keys)``
        (step s copies ``view[keys[s]]``)."""
        if self.space in HBM_SPACES:
            return
        view, buf, every = self.window_view(), self.buf, self.dma_count == len(plan_in)
        keys = list(map(tuple, self.idx.tolist()))
        if plan_bind is not None and self.role == "out":
            for s in np.flatnonzero(self.changed).tolist():
                plan_bind[s].append((self.ref, view, keys[s]))
            return
        if self.role == "in":
            if every and every_step is not None:  # a new block at every step
                every_step.append((buf, view, keys))
            elif every:
                for work, key in zip(plan_in, keys, strict=True):
                    work.append((buf, view, key))
            else:
                for s in np.flatnonzero(self.changed).tolist():
                    plan_in[s].append((buf, view, keys[s]))
            return
        fresh = (buf, fill_value(self.dtype, OPTIONS.uninitialized))
        if every:  # a new block at every step, written back after it
            for work, out, key in zip(plan_fresh, plan_out, keys, strict=True):
                work.append(fresh)
                out.append((view, key, buf))
            return
        for s in np.flatnonzero(self.changed).tolist():
            plan_fresh[s].append(fresh)
        for s in np.flatnonzero(self.writeback).tolist():
            plan_out[s].append((view, keys[s], buf))


def _blocked_view(op: Operand) -> np.ndarray:
    """A view of the (padded, C-contiguous) HBM array indexed by block index: ``view[i]``
    is block ``i`` as the kernel sees it (squeezed dims dropped). Built by reshape +
    transpose, so each DMA is one NumPy copy with no per-step slicing."""
    shape: list[int] = []
    block_axes: list[int] = []
    inner_axes: list[int] = []
    for full, size, b in zip(op.padded_shape, op.sizes, op.dims, strict=True):
        block_axes.append(len(shape))
        shape.append(full // size)
        if not isinstance(b, Squeezed):
            inner_axes.append(len(shape))
            shape.append(size)
    return op.hbm.reshape(shape).transpose(block_axes + inner_axes)


class _Windows:
    """``view[key]`` / ``view[key] = block`` by slicing: element offsets for Element dims,
    ``index * size`` for blocked ones, the index itself for squeezed ones."""

    __slots__ = ("_hbm", "_kinds")

    def __init__(self, op: Operand) -> None:
        self._hbm = op.hbm
        self._kinds = tuple(
            (0, 0) if isinstance(d, Squeezed) else (1 if isinstance(d, Element) else 2, n)
            for d, n in zip(op.dims, op.sizes, strict=True))

    def _index(self, key: tuple[int, ...]) -> tuple[Any, ...]:
        out: list[Any] = []
        for i, (kind, size) in zip(key, self._kinds, strict=True):
            if kind == 0:
                out.append(i)
            else:
                start = i if kind == 1 else i * size
                out.append(slice(start, start + size))
        return tuple(out)

    def __getitem__(self, key: tuple[int, ...]) -> np.ndarray:
        return self._hbm[self._index(key)]

    def __setitem__(self, key: tuple[int, ...], block: np.ndarray) -> None:
        self._hbm[self._index(key)] = block


def _block_indices(op: Operand, steps: list[tuple[int, ...]], extra_args: list[Any],
                   grid_idx: np.ndarray | None, where: str) -> np.ndarray:
    """Evaluate the index map at every step → int64 [steps, ndim], bounds-checked."""
    ndim = len(op.shape)
    out = np.zeros((len(steps), ndim), np.int64)
    spec_map = op.index_map
    if spec_map is not None:
        vectorized = (None if grid_idx is None
                      else _vectorized_indices(spec_map, grid_idx, extra_args, ndim))
        if vectorized is not None:
            out[...] = vectorized
        else:
            for s, pid in enumerate(steps):
                out[s] = _one_step(op, spec_map, pid, extra_args, ndim)
    _check_bounds(op, out, steps, where)
    return out


def _one_step(op: Operand, spec_map: Callable[..., Any], pid: tuple[int, ...],
              extra_args: list[Any], ndim: int) -> tuple[Any, ...]:
    try:
        r = spec_map(*(KernelValue(np.asarray(i, np.int32)) for i in pid), *extra_args)
    except TracerConversionError:
        raise
    except TypeError as exc:
        raise KernelSignatureError(
            f"index_map of {_role_word(op.role)} {op.name!r} failed at grid step {pid}: "
            f"{exc}. An index map takes one argument per grid axis ({len(pid)}), then the "
            f"scalar-prefetch refs ({len(extra_args)}), and returns block indices") from exc
    if not isinstance(r, tuple):
        r = tuple(r) if isinstance(r, list) else (r,)
    if len(r) != ndim:
        raise KernelSignatureError(
            f"index_map of {_role_word(op.role)} {op.name!r} returned {len(r)} indices {r} at "
            f"grid step {pid} but the array has {ndim} dims (shape {op.shape})")
    for position, entry in enumerate(r):
        if isinstance(entry, slice | Slice):
            raise ValueError(
                f"index_map of {_role_word(op.role)} {op.name!r} returned a slice (pl.ds) at "
                f"grid step {pid}: a block dimension takes an integer index (pl.ds is for "
                "pl.BoundedSlice, which pallas_call does not support)")
        value = concrete(entry)
        dtype = getattr(value, "dtype", None)
        kind = ("b" if isinstance(value, bool) else "f" if isinstance(value, float) else
                getattr(dtype, "kind", "i"))
        if kind not in "iu" or getattr(value, "ndim", 0):
            raise ValueError(
                f"index_map of {_role_word(op.role)} {op.name!r} must return integer "
                f"scalars, as in JAX: at grid step {pid} entry {position} is {value!r} "
                f"({_type_name(value)}). Block indices are integers: use // for a quotient "
                "and .astype(jnp.int32) for a computed float")
    return concrete(r)


def _type_name(value: object) -> str:
    dtype = getattr(value, "dtype", None)
    shape = tuple(getattr(value, "shape", ()))
    return f"{dtype}{list(shape)}" if dtype is not None else type(value).__name__


_MIN_VECTORIZED_STEPS = 8


def _vectorized_indices(index_map: Callable[..., object], grid_idx: np.ndarray,
                        extra_args: list[Any], ndim: int) -> np.ndarray | None:
    """Evaluate ``index_map`` once on int arrays of all grid indices.

    ``grid_idx`` is int32 [grid ndim, steps], built once per call.  Index maps
    are usually affine (``lambda i, j: (i, 0)``), so one call on arrays gives
    every step's block index.  Anything that does not come back as ``ndim``
    integer arrays of one value per step (Python branching on an index raises
    on arrays, for example) returns None, and the caller falls back to one call
    per step: the result is the same either way.
    """
    n_steps = grid_idx.shape[1]
    try:
        r = index_map(*(KernelValue(g) for g in grid_idx), *extra_args)
    except Exception:  # noqa: BLE001 - any failure means "evaluate step by step"
        return None
    if not isinstance(r, (tuple, list)) or len(r) != ndim:
        return None
    cols = []
    for entry in r:
        a = np.asarray(concrete(entry))
        if a.dtype.kind not in "iu" or a.ndim > 1 or (a.ndim == 1 and len(a) != n_steps):
            return None
        cols.append(np.broadcast_to(a, (n_steps,)))
    return np.stack(cols, axis=1) if cols else np.zeros((n_steps, 0), np.int64)


def vectorized_grid(steps: list[tuple[int, ...]]) -> np.ndarray | None:
    """int32 [grid ndim, steps] of the grid indices, when worth evaluating index maps on
    arrays (enough steps and a non-empty grid), else None."""
    if len(steps) >= _MIN_VECTORIZED_STEPS and steps[0]:
        return np.asarray(steps, dtype=np.int32).T
    return None


def _check_bounds(op: Operand, out: np.ndarray, steps: list[tuple[int, ...]],
                  where: str) -> None:
    """Raise BlockIndexError for the first step whose block leaves the array.

    Block dims need ``0 <= index < cdiv(dim, block)``; Element dims need the window
    ``[offset, offset + block)`` inside the padded dimension.
    """
    if not out.size:
        return
    bad = np.any((out < op._low) | (out >= op._high), axis=1)
    if not bad.any():
        return
    s = int(np.argmax(bad))
    shape_text = "(" + ", ".join(
        str(b) if isinstance(b, Element) else "None" if isinstance(b, Squeezed)
        else str(b.block_size) for b in op.dims) + ("," if len(op.dims) == 1 else "") + ")"
    counts = tuple(cdiv(d, n) for d, n in zip(op.shape, op.sizes, strict=True))
    detail = (f"(valid block indices are 0 .. n-1 with n = {counts})"
              if not op.element_dims else
              "(a pl.Element dimension's index is an element offset s: the window "
              "[s, s + block size) must lie inside the dimension and its padding)")
    raise BlockIndexError(
        f"Out-of-bounds block index {tuple(int(i) for i in out[s])} for "
        f"{_role_word(op.role)} {op.name!r} at {where} {steps[s]}: the array has shape "
        f"{op.shape} and block shape {shape_text} {detail}")


def _check_revisits(op: Operand, changed: np.ndarray, call_name: str,
                    steps: list[tuple[int, ...]]) -> None:
    """Raise if an output block is entered again after its write-back.

    Raises:
      RevisitedOutputBlockError: naming the operand, the block index and the
        two grid steps (write-back, revisit).
    """
    entries = np.flatnonzero(changed)
    rows = op.idx[entries]
    if len(rows) < 2:
        return
    if rows.shape[1] == 0:  # a 0-d output: every entry is the same block
        n, first = 1, 0
    else:
        # the common case first: every entered block distinct (one number per block index,
        # the indices being in bounds and so non-negative)
        try:
            flat = np.ravel_multi_index(tuple(rows.T), tuple(int(m) + 1 for m in rows.max(0)))
        except ValueError:  # more block indices than an int64 holds: the general path
            flat = None
        if flat is not None:  # (np.sort, not np.unique: NumPy 2's imports numpy.ma lazily)
            flat.sort()
            if not (flat[1:] == flat[:-1]).any():
                return
        _, first_of, inverse = np.unique(rows, axis=0, return_index=True,
                                         return_inverse=True)
        if len(first_of) == len(rows):
            return
        first_visit = first_of[inverse.reshape(-1)]
        n = int(np.flatnonzero(first_visit != np.arange(len(rows)))[0])
        first = int(first_visit[n])
    s = int(entries[n])
    key = tuple(int(i) for i in rows[n])
    written_at = int(entries[first + 1] - 1)
    raise RevisitedOutputBlockError(
        f"output {op.name!r} of pallas_call {call_name!r} returns to block index "
        f"{key} at grid step {steps[s]} after writing it back to HBM at grid step "
        f"{steps[written_at]}; the second visit would start from an uninitialized "
        "VMEM buffer and overwrite the first result. Put the reduction axis last in "
        "the grid so each output block is visited in consecutive steps.")


def allocate_buffers(op: Operand, ref_name: str | None = None) -> None:
    """Give ``op`` its block buffer (poisoned) and the kernel's ref to it; an HBM operand's
    ref is to :attr:`Operand.hbm` itself."""
    if op.space in HBM_SPACES:
        op.buf = op.hbm
    else:
        op.buf = (AbstractArray(op.kernel_shape, op.dtype) if abstract.ACTIVE[0] and (
                      op.space != "smem" or isinstance(op.hbm, AbstractArray)) else
                  np.full(op.kernel_shape, fill_value(op.dtype, OPTIONS.uninitialized), op.dtype))
    op.ref = make_ref(op.buf, ref_name or op.name, op.space)
