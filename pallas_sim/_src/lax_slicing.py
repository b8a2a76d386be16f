"""``jax.lax``'s dynamic slices: ``dynamic_slice``, ``dynamic_update_slice`` and their
``_in_dim`` forms, with start indices clamped into range as JAX clamps them.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from .exports import publish
from .lax_common import _aval, _cast, _dims, _same_dtypes, _value, lift_functions


def _plain(x: object) -> bool:
    return type(x) is np.ndarray or isinstance(x, np.generic)


def _is_concrete(x: object) -> bool:
    return isinstance(x, int | np.integer) or (type(x) is np.ndarray and x.ndim == 0)


def _start_list(name: str, start_indices: Any, shape: tuple[int, ...]) -> list[Any]:
    starts = [start_indices[i] for i in range(len(start_indices))]
    if len(starts) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(starts)} vs {shape})")
    for s in starts:
        dtype, s_shape = _aval(name, s)
        if dtype.kind not in "iu" or s_shape:
            raise TypeError(f"{name} start_indices must be scalar integers, got {s!r}")
    return starts


def _clamped_start(start: Any, dim: int, size: int, allow_negative: bool) -> Any:
    """The start JAX uses: negative wraps (when allowed), then clamp to ``[0, dim - size]``."""
    if _is_concrete(start):
        s = int(start)
        s = s + dim if allow_negative and s < 0 else s
        return builtins.min(builtins.max(s, 0), dim - size)
    if allow_negative:
        start = np.where(start < 0, start + dim, start)
    return np.clip(start, 0, dim - size)


def dynamic_slice(operand: object, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """``jax.lax.dynamic_slice``: the block of static ``slice_sizes`` starting at
    ``start_indices`` (which may be computed values).

    As in JAX a start that would run past the end is clamped so the block fits, and a
    negative start counts from the end when ``allow_negative_indices``.

    Raises:
      ValueError: ``start_indices`` of the wrong length.
      TypeError: a slice size larger than the operand, or non-integer starts.
    """
    dtype, shape = _aval("dynamic_slice", operand)
    sizes = _dims(slice_sizes)
    starts = _start_list("dynamic_slice", start_indices, shape)
    if len(sizes) != len(shape) or any(not 0 <= z <= d for z, d in zip(sizes, shape,
                                                                        strict=True)):
        raise TypeError("slice slice_sizes must be less than or equal to operand shape, got "
                        f"slice_sizes {sizes} for operand shape {shape}.")
    allow = _per_dim(allow_negative_indices, len(shape))
    value = _value(operand, dtype)
    clamped = [_clamped_start(s, d, z, a) for s, d, z, a in zip(starts, shape, sizes, allow,
                                                               strict=True)]
    if all(isinstance(s, int) for s in clamped):
        index = tuple(builtins.slice(s, s + z) for s, z in zip(clamped, sizes, strict=True))
        return _cast(np.copy(value[index]), dtype)
    for axis, (s, z) in enumerate(zip(clamped, sizes, strict=True)):
        value = np.take(value, s + np.arange(z), axis=axis)
    return _cast(value, dtype)


def _per_dim(flag: bool | Sequence[bool], ndim: int) -> list[bool]:
    return [bool(flag)] * ndim if isinstance(flag, bool | np.bool_) else [bool(f) for f in flag]


def dynamic_update_slice(operand: object, update: object, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """``jax.lax.dynamic_update_slice``: a copy of ``operand`` with ``update`` written at
    ``start_indices`` (clamped so the update fits, as in JAX).

    Raises:
      TypeError: different dtypes, an update of another rank or larger than the operand.
      ValueError: ``start_indices`` of the wrong length.
    """
    dtype, shape = _aval("dynamic_update_slice", operand)
    u_dtype, u_shape = _aval("dynamic_update_slice", update)
    _same_dtypes("dynamic_update_slice", (dtype, u_dtype), None)
    if len(u_shape) != len(shape):
        raise TypeError("dynamic_update_slice update must have the same rank as operand, got "
                        f"update shape {u_shape} for operand shape {shape}.")
    if any(u > d for u, d in zip(u_shape, shape, strict=True)):
        raise TypeError("dynamic_update_slice update shape must be smaller than operand shape, "
                        f"got update shape {u_shape} for operand shape {shape}.")
    starts = _start_list("dynamic_update_slice", start_indices, shape)
    allow = _per_dim(allow_negative_indices, len(shape))
    clamped = [_clamped_start(s, d, z, a) for s, d, z, a in zip(starts, shape, u_shape, allow,
                                                               strict=True)]
    value, new = _value(operand, dtype), _value(update, u_dtype)
    if all(isinstance(s, int) for s in clamped) and _plain(value) and _plain(new):
        out = np.array(value)
        out[tuple(builtins.slice(s, s + z) for s, z in zip(clamped, u_shape, strict=True))] = new
        return _cast(out, dtype)
    # Functional form (no item assignment): gather the update onto the operand's grid and
    # select it inside the window.
    inside: Any = True
    gathered = new
    for axis, (s, z, d) in enumerate(zip(clamped, u_shape, shape, strict=True)):
        position = np.arange(d)
        in_window = (position >= s) & (position < s + z)
        source = np.clip(position - s, 0, builtins.max(z - 1, 0))
        gathered = np.take(gathered, source, axis=axis)
        placed = [1] * len(shape)
        placed[axis] = d
        inside = inside & np.reshape(in_window, placed)
    return _cast(np.where(inside, gathered, value), dtype)


def dynamic_slice_in_dim(operand: object, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """``jax.lax.dynamic_slice_in_dim``: :func:`dynamic_slice` along ``axis`` only."""
    _, shape = _aval("dynamic_slice_in_dim", operand)
    starts: list[Any] = [0] * len(shape)
    sizes = list(shape)
    starts[axis], sizes[axis] = start_index, int(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_update_slice_in_dim(operand: object, update: object, start_index: Any, axis: int,
                                *, allow_negative_indices: bool = True) -> Any:
    """``jax.lax.dynamic_update_slice_in_dim``: :func:`dynamic_update_slice` along ``axis``."""
    _, shape = _aval("dynamic_update_slice_in_dim", operand)
    starts: list[Any] = [0] * len(shape)
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand: object, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """``jax.lax.dynamic_index_in_dim``: element ``index`` along ``axis`` (clamped into
    range, as :func:`dynamic_slice`)."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else np.squeeze(out, axis)


__all__ = ["dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim"]
publish("pallas_sim.lax", globals(), __all__)
# The array functions take kernel values as JAX's take tracers (values.lift).
lift_functions(globals(), __all__)
