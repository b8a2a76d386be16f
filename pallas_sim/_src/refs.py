"""``Ref``: what a kernel receives for each operand and scratch buffer.

A ref is a named, mutable view of one buffer (a VMEM block, an SMEM array, or a
raw HBM array for ``memory_space=pl.ANY``).  Reading ``ref[idx]`` returns a copy,
as reading a ref in JAX yields an immutable value; ``ref[idx] = v`` stores into
the buffer.  Every index is bounds-checked: NumPy would silently clip a slice,
a TPU would read garbage, and a student deserves an error naming the ref
(docs/pallas-sim.md rule 6).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .abstract import AbstractArray
from .errors import HBMAccessError, RefIndexError, TracerConversionError
from .slices import Slice, plain_index
from .values import KERNELS, NOT_OPERANDS, KernelValue, canonical_dtype, captured


class Ref:
    """A kernel-side reference to a buffer.

    Attributes (all read-only: a kernel changes a ref's contents, never the ref):
      name: the kernel parameter's name (e.g. ``"x_ref"``), used in errors.
      memory_space: "vmem", "smem" or "any" (HBM).
      reads: how many times the kernel has read the ref in the current grid
        step (``ref[...]``, ``np.asarray(ref)``); pallas_call turns it into
        the per-step ``OperandTrace.kernel_reads``.
      shape, dtype, ndim, size: those of the buffer (``None`` block dims are
        already squeezed out).

    Raises (on indexing):
      IndexError: an index or slice outside the ref's shape, naming the ref.
      ValueError: a stored value whose shape or dtype is not the target's (JAX's
        "Invalid shape for `swap`" / "Invalid dtype for `swap`": no broadcasting, not
        even of a scalar).
    """

    __slots__ = ("_buf", "_name", "_space", "_reads", "_strided")

    def __init__(self, buf: np.ndarray, name: str, memory_space: str = "vmem",
                 strided: bool = False) -> None:
        self._buf = buf
        self._name = name
        self._space = memory_space
        self._reads = 0
        self._strided = strided

    @property
    def strided(self) -> bool:
        """Whether this ref's elements are not one contiguous range of its buffer (a
        ``ref.at[...]`` view of a block narrower than the array, e.g. a [1024, 1024] tile
        of a [4096, 7168] HBM array: one 2 KiB run per row). A DMA to or from such a view
        is a strided copy (the timeline model's strided rate)."""
        return self._strided

    @property
    def name(self) -> str:
        return self._name

    @property
    def memory_space(self) -> str:
        return self._space

    @property
    def reads(self) -> int:
        return self._reads

    @property
    def shape(self) -> tuple[int, ...]:
        return self._buf.shape

    @property
    def dtype(self) -> np.dtype:
        return self._buf.dtype

    @property
    def ndim(self) -> int:
        return self._buf.ndim

    @property
    def size(self) -> int:
        return self._buf.size

    def __repr__(self) -> str:
        return f"Ref({self.name}: {self.dtype}{list(self.shape)} in {self.memory_space})"

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def at(self) -> _RefIndexer:
        """``ref.at[idx]``: a sub-ref viewing part of this buffer (JAX ``Ref.at``).

        Used to point a manual DMA at part of an HBM or VMEM buffer, e.g.
        ``x_hbm.at[pl.ds(i * 8, 8)]``.  Only basic indices (ints, slices)
        are allowed, so the sub-ref writes through to this buffer.

        Raises (on indexing):
          IndexError: an index outside the ref's shape, naming the ref.
          TypeError: an array (advanced) index.
        """
        return _RefIndexer(self)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        raise TracerConversionError(
            f"{self._name} is a ref, not an array: read it with {self._name}[...] (or "
            f"{self._name}[i:j]), which gives a value jnp functions accept")

    def __getitem__(self, idx) -> KernelValue:
        self._reads += 1
        if idx is Ellipsis:
            return KernelValue(self._buf.copy())
        value = self._buf[self._checked(idx)]
        return KernelValue(value.copy() if isinstance(value, np.ndarray | AbstractArray)
                           else np.asarray(value))

    def __setitem__(self, idx, value) -> None:
        target = idx if idx is Ellipsis else self._checked(idx)
        if type(value) is KernelValue:
            value = value._a
        elif isinstance(value, np.ndarray) and value.ndim and KERNELS:
            raise captured(value)
        _check_store_dtype(self, value)
        want = self._buf.shape if target is Ellipsis else self._buf[target].shape
        shape = np.shape(value)
        if shape != want:
            raise ValueError(
                f"Invalid shape for `swap`. Ref shape: {self._buf.shape}. Expected shape: "
                f"{want}. Value shape: {shape}. (storing into {self._name}{_fmt(idx)}: JAX "
                f"stores a value of exactly the target's shape and never broadcasts it; "
                f"write jnp.broadcast_to(value, {want}), or jnp.zeros_like / jnp.full_like "
                f"for a constant)")
        self._buf[target] = value

    def _checked(self, idx):
        """Return ``idx`` (traced entries made concrete) after checking every entry against
        the ref's shape."""
        shape = self._buf.shape
        if type(idx) is tuple and len(idx) <= len(shape) and _plain_slices(idx, shape):
            return idx  # the common ``x_ref[:, 0:1]``: nothing to make concrete, in bounds
        if type(idx) is KernelValue:
            idx = _concrete_index(idx)
        if type(idx) is int and shape:  # the common scalar read of an SMEM table
            if not -shape[0] <= idx < shape[0]:
                self._raise(idx, 0, shape[0])
            return idx
        if isinstance(idx, tuple) and any(type(e) is KernelValue for e in idx):
            idx = tuple(_concrete_index(e) if type(e) is KernelValue else e for e in idx)
        entries = idx if isinstance(idx, tuple) else (idx,)
        dim = 0
        has_slice = False  # a pl.ds (pl.Slice) entry, made a Python slice at the end
        for entry in entries:
            if entry is None:
                continue
            if entry is Ellipsis:
                n_real = sum(1 for e in entries if e is not None and e is not Ellipsis)
                dim += len(shape) - n_real
                continue
            if dim >= len(shape):
                raise IndexError(
                    f"too many indices for {self.name}: {idx!r} on a ref of shape {shape}")
            size = shape[dim]
            if isinstance(entry, slice):
                self._check_python_slice(entry, size, dim, idx)
            elif isinstance(entry, (int, np.integer)):
                if not -size <= int(entry) < size:
                    self._raise(idx, dim, size)
            elif type(entry) is Slice:
                has_slice = True
                self._check_slice(entry.as_slice(), size, dim, idx)
            else:
                arr = np.asarray(entry)
                if arr.dtype != np.bool_ and arr.size and (
                        arr.max() >= size or arr.min() < -size):
                    self._raise(idx, dim, size)
            dim += 1
        return plain_index(idx) if has_slice else idx

    def _check_python_slice(self, s: slice, size: int, dim: int, idx) -> None:
        """A Python slice of a ref (``x_ref[-4:]``, ``x_ref[0:300]``): JAX reads its static
        bounds as NumPy does when it traces the kernel (negative bounds count from the end,
        bounds past the end are clipped), on every backend, since the slice is made
        concrete before lowering; so do we. It refuses what JAX cannot run: a non-positive
        step, and a slice that selects nothing (JAX fails on one with a ZeroDivisionError).
        A ``pl.ds`` is checked strictly (``_check_slice``), as JAX checks it."""
        step = 1 if s.step is None else s.step
        if step <= 0:
            raise IndexError(f"{self.name}: only positive slice steps are supported, got {s}")
        if len(range(*s.indices(size))) == 0:
            raise RefIndexError(
                f"index {_fmt(idx)} selects nothing on axis {dim} of {self.name} (shape "
                f"{self._buf.shape}): a ref slice must hold at least one element")

    def _check_slice(self, s: slice, size: int, dim: int, idx) -> None:
        step = 1 if s.step is None else s.step
        if step <= 0:
            raise IndexError(f"{self.name}: only positive slice steps are supported, got {s}")
        start = 0 if s.start is None else int(s.start)
        stop = size if s.stop is None else int(s.stop)
        if start < 0 or stop > size or start > stop:
            self._raise(idx, dim, size)

    def _raise(self, idx, dim: int, size: int) -> None:
        raise RefIndexError(
            f"index {_fmt(idx)} is out of bounds for {self.name} of shape "
            f"{self._buf.shape} (axis {dim} has size {size})")


NOT_OPERANDS[Ref] = "arithmetic on a ref: load it first (x_ref[...]), as in JAX"


def _plain_slices(idx: tuple, shape: tuple[int, ...]) -> bool:
    """``idx`` is only step-1 slices with int (or omitted) bounds inside ``shape``, one
    per leading axis: ``Ref._checked`` would accept it unchanged. Anything else (negative
    or traced bounds, steps, ints, Ellipsis, None, a bound out of range) is False and goes
    through the full check, which gives its error."""
    for dim, entry in enumerate(idx):
        if type(entry) is not slice or entry.step is not None:
            return False
        start, stop, size = entry.start, entry.stop, shape[dim]
        if start is None:
            start = 0
        elif type(start) is not int or start < 0:
            return False
        if stop is None:
            stop = size
        elif type(stop) is not int or stop > size:
            return False
        if start > stop:
            return False
    return True


def _concrete_index(value: KernelValue) -> object:
    """A traced index (``pl.program_id(0)``, ``rows_ref[g]``) as the int or int array it
    holds: JAX indexes refs with traced values."""
    a = value._a
    if a.dtype.kind not in "iub":
        raise IndexError(f"a ref index must be an integer, got a {a.dtype.name} value")
    return int(a) if a.ndim == 0 else a


def _check_store_dtype(ref: Ref, value: object) -> None:
    """JAX stores into a ref only values of its own dtype (Python scalars are weakly typed
    and take the ref's dtype; NumPy's 64-bit dtypes count as their 32-bit counterparts).

    Raises:
      ValueError: JAX's message, e.g. "Invalid dtype for `swap`. Ref dtype: bfloat16. Value
        dtype: float32."
    """
    dtype = getattr(value, "dtype", None)
    if dtype is None or isinstance(value, (bool, int, float, complex)):
        return
    want = ref._buf.dtype
    if dtype != want and canonical_dtype(dtype) != want:
        raise ValueError(
            f"Invalid dtype for `swap`. Ref dtype: {want.name}. Value dtype: "
            f"{canonical_dtype(dtype).name}. (storing into {ref._name}: convert the value "
            f"with .astype({ref._name}.dtype) first)")


def _fmt(idx) -> str:
    entries = idx if isinstance(idx, tuple) else (idx,)
    parts = []
    for e in entries:
        if type(e) is Slice:
            e = e.as_slice()
        if isinstance(e, slice):
            start = "" if e.start is None else e.start
            stop = "" if e.stop is None else e.stop
            parts.append(f"{start}:{stop}")
        elif e is Ellipsis:
            parts.append("...")
        else:
            parts.append(repr(e))
    return "[" + ", ".join(parts) + "]"


class _RefIndexer:
    __slots__ = ("_ref",)

    def __init__(self, ref: Ref) -> None:
        self._ref = ref

    def __getitem__(self, idx) -> Ref:
        ref = self._ref
        shown = idx
        if type(idx) is KernelValue:
            idx = _concrete_index(idx)
        elif isinstance(idx, tuple) and any(type(e) is KernelValue for e in idx):
            idx = tuple(_concrete_index(e) if type(e) is KernelValue else e for e in idx)
        for e in idx if isinstance(idx, tuple) else (idx,):
            if not (e is None or e is Ellipsis
                    or isinstance(e, (slice, Slice, int, np.integer))):
                raise TypeError(f"{ref.name}.at[...] takes ints and slices (pl.ds), got {e!r}")
        # checked as given: a pl.ds strictly, a Python slice as JAX reads it (_checked)
        checked = ref._checked(idx)
        entries = checked if isinstance(checked, tuple) else (checked,)
        view = ref._buf[checked]
        if not isinstance(view, np.ndarray):  # all ints: NumPy gave a scalar copy
            view = ref._buf[(*entries, Ellipsis)]  # the trailing ... keeps a 0-d view
        strided = ref._strided or _strided_region(ref.shape, checked)
        return type(ref)(view, f"{ref.name}.at{_fmt(shown)}", ref.memory_space, strided)


def _strided_region(shape: tuple[int, ...], idx: object) -> bool:
    """Whether basic index ``idx`` (ints, slices, None, ``...``) selects more than one
    contiguous run of a C-ordered array of ``shape``. A kernel indexes the same way on
    every grid step, so the answer is cached per (shape, index)."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    # Slices are not hashable before Python 3.12: a slice is keyed as its 3-tuple (no
    # other entry of a basic index is a tuple).
    key = tuple((e.start, e.stop, e.step) if type(e) is slice else e for e in entries)
    return _strided_layout(tuple(int(d) for d in shape), key)


@functools.lru_cache(maxsize=4096)
def _strided_layout(shape: tuple[int, ...], key: tuple[Any, ...]) -> bool:
    """``_strided_region`` for a hashable index ``key``, computed on a view with the
    array's strides over one byte, which NumPy never reads (only views are taken: the
    index keeps a trailing ``...``)."""
    entries = tuple(slice(*e) if type(e) is tuple else e for e in key)
    if Ellipsis not in entries:
        entries = (*entries, Ellipsis)
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    layout = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=shape,
                                             strides=tuple(reversed(strides)),
                                             writeable=False)
    return not layout[entries].flags.c_contiguous


class HbmRef(Ref):
    """A ref to an array in HBM (memory space "any" or "hbm"): what a kernel gets for a
    ``BlockSpec(memory_space=pl.ANY)`` operand and for every operand of ``pl.kernel``.

    Its shape, dtype and ``.at[...]`` views work as on any ref; loading from it or storing
    into it refuses, as JAX's TPU interpret mode does: a TensorCore reaches HBM only by
    DMA (``pltpu.sync_copy``, ``pltpu.async_copy``, ``pltpu.make_async_copy``).

    Raises (on ``ref[idx]`` and ``ref[idx] = v``):
      HBMAccessError: JAX's message, naming the ref.
    """

    __slots__ = ()

    def __getitem__(self, idx) -> KernelValue:
        raise _hbm_access("get_p", self)

    def __setitem__(self, idx, value) -> None:
        raise _hbm_access("swap_p", self)


def _hbm_access(primitive: str, ref: Ref) -> HBMAccessError:
    return HBMAccessError(
        f"{primitive}: Buffers with a memory space of HBM or ANY cannot be referenced "
        f"directly. Instead, use `pltpu.sync_copy` or `pltpu.async_copy`. ({ref.name} lives "
        f"in HBM ({ref.memory_space}): copy the part you need into a VMEM buffer, e.g. "
        f"pltpu.sync_copy({ref.name}.at[...], buf) with buf a pltpu.VMEM scratch or "
        "pl.run_scoped buffer, compute there, and copy the result back)")


def make_ref(buf: np.ndarray, name: str, memory_space: str) -> Ref:
    """A :class:`Ref` to ``buf``, or an :class:`HbmRef` when ``memory_space`` is "any" or
    "hbm"."""
    if memory_space in ("any", "hbm"):
        return HbmRef(buf, name, memory_space)
    return Ref(buf, name, memory_space)
