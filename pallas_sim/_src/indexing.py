"""``x.at[index].set/add/multiply/min/max/get/...``: JAX's functional indexed updates.

JAX arrays are immutable, so ``x.at[i].set(v)`` returns a new array and leaves
``x`` alone. :class:`IndexUpdateHelper` implements that on NumPy for any value
that supports ``np.copy``, ``np.pad``, item assignment on the copy and the
``ufunc.at`` methods: an array type gets ``.at`` with one line,
``at = property(IndexUpdateHelper)``. The semantics are JAX 0.10.2's:

* ``add``, ``multiply``, ``min``, ``max``, ... apply every update, also when an
  index repeats (NumPy's ``x[i] += v`` would apply only the last);
* out-of-bounds updates are dropped (``mode="drop"``, the default for updates);
  ``mode="clip"`` clamps the indices instead;
* out-of-bounds reads are clamped (``get()``'s default) or, with
  ``mode="fill"``, read ``fill_value`` (NaN for floats, the minimum for signed
  integers, the maximum for unsigned ones, True for bools);
* negative indices count from the end unless ``wrap_negative_indices=False``;
* ``divide`` of an integer array gives float32, as JAX promotes it.

pallas_sim's own arrays are plain NumPy arrays, which cannot carry an ``.at``
attribute (docs/fidelity.md, "The JAX surface", says what to write instead);
the class is here for array types pallas_sim defines.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from .dtypes import is_floating

_MODES = (None, "promise_in_bounds", "clip", "drop", "fill")


def _fill_for(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return True
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return np.nan


def _is_int_index(entry: Any) -> bool:
    if isinstance(entry, bool | np.bool_):
        return False
    if isinstance(entry, int | np.integer):
        return True
    dtype = getattr(entry, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind in "iu"


def _is_bool_index(entry: Any) -> bool:
    dtype = getattr(entry, "dtype", None)
    return isinstance(dtype, np.dtype) and dtype.kind == "b"


def _expand(index: Any, ndim: int) -> list[Any]:
    """The index as a list of entries with Ellipsis replaced by full slices and boolean
    arrays by their ``nonzero()`` integer arrays.

    Raises:
      TypeError: a list used as an index (JAX's rule: use an array).
      IndexError: more than one Ellipsis, or too many indices.
    """
    entries = list(index) if isinstance(index, tuple) else [index]
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, list):
            raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                            "allowed; use `arr[array(seq)]` instead of `arr[seq]`.")
        if _is_bool_index(entry) and not isinstance(entry, bool | np.bool_):
            out.extend(np.nonzero(entry))
        else:
            out.append(entry)
    consumed = sum(0 if e is None or e is Ellipsis else 1 for e in out)
    ellipses = [i for i, e in enumerate(out) if e is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {consumed} were "
                         "indexed")
    fill = [builtins.slice(None)] * (ndim - consumed)
    if ellipses:
        at = ellipses[0]
        return out[:at] + fill + out[at + 1:]
    return out + fill


class IndexUpdateHelper:
    """``x.at``: ``x.at[index]`` gives an :class:`IndexUpdateRef` (JAX's
    ``_IndexUpdateHelper``)."""

    __slots__ = ("_array",)

    def __init__(self, array: Any) -> None:
        self._array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self._array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self._array!r})"


class IndexUpdateRef:
    """``x.at[index]``: the functional updates of JAX's ``_IndexUpdateRef``. Every method
    returns a new array; ``x`` is never changed."""

    __slots__ = ("_array", "_index")

    def __init__(self, array: Any, index: Any) -> None:
        self._array = array
        self._index = index

    @property
    def array(self) -> Any:
        """The array being indexed."""
        return self._array

    @property
    def index(self) -> Any:
        """The index, as written."""
        return self._index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self._array!r}, {self._index!r})"

    # -- the shared machinery --------------------------------------------------------------

    def _prepare(self, mode: str | None, wrap: bool, *, reading: bool
                 ) -> tuple[tuple[Any, ...], list[bool]]:
        """The NumPy index, and which axes need one padding element for out-of-bounds
        positions (reads of ``fill``, dropped writes)."""
        if mode not in _MODES:
            raise ValueError(f"mode={mode!r}: expected one of {_MODES[1:]}")
        shape = np.shape(self._array)
        entries = _expand(self._index, len(shape))
        clip = mode == "clip" or (reading and mode in (None, "promise_in_bounds"))
        padded = [False] * len(shape)
        index: list[Any] = []
        axis = 0
        for entry in entries:
            if entry is None:
                index.append(None)
                continue
            if _is_int_index(entry):
                dim = shape[axis]
                if isinstance(entry, int | np.integer):
                    value = int(entry)
                    value = value + dim if wrap and value < 0 else value
                    if clip:
                        value = builtins.min(builtins.max(value, 0), dim - 1)
                    elif not 0 <= value < dim:
                        value, padded[axis] = dim, True
                    index.append(value)
                else:
                    value = np.where(entry < 0, entry + dim, entry) if wrap else entry
                    if clip:
                        value = np.clip(value, 0, dim - 1)
                    else:
                        outside = (value < 0) | (value >= dim)
                        value = np.where(outside, dim, value)
                        padded[axis] = True
                    index.append(value)
            else:
                index.append(entry)
            axis += 1
        return tuple(index), padded

    def _padded(self, padded: list[bool], fill: Any) -> Any:
        if not any(padded):
            return np.copy(self._array)
        widths = [(0, 1) if p else (0, 0) for p in padded]
        return np.pad(self._array, widths, constant_values=fill)

    @staticmethod
    def _unpadded(array: Any, padded: list[bool], shape: tuple[int, ...]) -> Any:
        if not any(padded):
            return array
        return np.copy(array[tuple(builtins.slice(0, d) for d in shape)])

    def _scatter(self, values: Any, ufunc: Callable[..., Any] | None, mode: str | None,
                 wrap: bool, dtype: np.dtype | None = None) -> Any:
        shape = np.shape(self._array)
        index, padded = self._prepare(mode, wrap, reading=False)
        out = self._padded(padded, 0)
        if dtype is not None and out.dtype != dtype:
            out = out.astype(dtype)
        if ufunc is None:
            out[index] = values
        else:
            # ufunc.at takes no None entries; they only add size-1 axes, which a reshape
            # removes without moving any value.
            probe = np.broadcast_to(np.empty((), bool), out.shape)
            kept = tuple(e for e in index if e is not None)
            updates = np.broadcast_to(values, probe[index].shape)
            ufunc.at(out, kept, np.reshape(updates, probe[kept].shape))
        return self._unpadded(out, padded, shape)

    # -- JAX's methods ---------------------------------------------------------------------

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | None = None, fill_value: Any = None, out_sharding: object = None,
            wrap_negative_indices: bool = True) -> Any:
        """``x[index]``; out-of-bounds indices are clamped, or read ``fill_value`` with
        ``mode="fill"``."""
        index, padded = self._prepare(mode, wrap_negative_indices, reading=True)
        dtype = np.dtype(getattr(self._array, "dtype", np.float32))
        source = self._padded(padded, _fill_for(dtype) if fill_value is None else fill_value)
        return np.copy(source[index])

    def set(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | None = None,
            out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` with ``x[index] = values`` (``values`` cast to ``x``'s dtype); where an
        index repeats, one of the values wins."""
        return self._scatter(values, None, mode, wrap_negative_indices)

    def add(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | None = None,
            out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` with ``values`` added at ``index``, every repeat counted."""
        return self._scatter(values, np.add, mode, wrap_negative_indices)

    def subtract(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: str | None = None,
                 out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` with ``values`` subtracted at ``index``, every repeat counted."""
        return self._scatter(values, np.subtract, mode, wrap_negative_indices)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: str | None = None,
                 out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` multiplied by ``values`` at ``index``, every repeat counted."""
        return self._scatter(values, np.multiply, mode, wrap_negative_indices)

    mul = multiply

    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: str | None = None,
               out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` divided by ``values`` at ``index``; an integer ``x`` becomes float32."""
        dtype = np.dtype(self._array.dtype)
        result = dtype if is_floating(dtype) or dtype.kind == "c" else np.dtype(np.float32)
        return self._scatter(values, np.true_divide, mode, wrap_negative_indices, result)

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: str | None = None,
              out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` raised to ``values`` at ``index``."""
        return self._scatter(values, np.power, mode, wrap_negative_indices)

    def min(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | None = None,
            out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` with ``minimum(x, values)`` at ``index``."""
        return self._scatter(values, np.minimum, mode, wrap_negative_indices)

    def max(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | None = None,
            out_sharding: object = None, wrap_negative_indices: bool = True) -> Any:
        """``x`` with ``maximum(x, values)`` at ``index``."""
        return self._scatter(values, np.maximum, mode, wrap_negative_indices)

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: str | None = None,
              wrap_negative_indices: bool = True) -> Any:
        """``x`` with ``func`` applied to each element at ``index``, once per occurrence
        (an index listed twice gets ``func(func(x))``), as JAX's scatter-apply."""
        shape = np.shape(self._array)
        index, padded = self._prepare(mode, wrap_negative_indices, reading=False)
        out = np.ascontiguousarray(self._padded(padded, 0))
        positions = np.arange(out.size).reshape(out.shape)[index]
        unique, counts = np.unique(positions, return_counts=True)
        flat = out.reshape(-1)
        for step in range(int(counts.max()) if counts.size else 0):
            chosen = unique[counts > step]
            flat[chosen] = func(flat[chosen])
        return self._unpadded(out, padded, shape)

