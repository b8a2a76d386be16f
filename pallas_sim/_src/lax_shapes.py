"""``jax.lax``'s shape functions: broadcasts, ``iota``, ``full``, dtype conversions and
bitcasts, ``reshape``, ``transpose``, ``squeeze``, static slices and ``concatenate``.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import is_floating
from .exports import publish
from .lax_common import _aval, _cast, _dims, _same_dtypes, _value, canonical_dtype, lift_functions
from .refs import Ref


def broadcast_in_dim(operand: object, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     *, out_sharding: object = None) -> Any:
    """``jax.lax.broadcast_in_dim``: ``operand`` broadcast to ``shape``, its dimension ``i``
    becoming dimension ``broadcast_dimensions[i]`` of the result (a new array).

    Raises:
      TypeError: ``broadcast_dimensions`` of the wrong length or repeated, or an operand
        dimension that is neither 1 nor the target size (JAX's messages).
    """
    dtype, op_shape = _aval("broadcast_in_dim", operand)
    shape, dims = _dims(shape), _dims(broadcast_dimensions)
    if len(dims) != len(op_shape):
        raise TypeError("broadcast_in_dim broadcast_dimensions must have length equal to "
                        f"operand ndim; got broadcast_dimensions {dims} for operand ndim "
                        f"{len(op_shape)}.")
    if any(not 0 <= d < len(shape) for d in dims) or any(
            op_shape[i] not in (1, shape[d]) for i, d in enumerate(dims)):
        raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be "
                        "equal to their corresponding dimensions in the target broadcast "
                        f"shape; got operand of shape {op_shape}, target broadcast shape "
                        f"{shape}, broadcast_dimensions {dims} ")
    if len(set(dims)) != len(dims):
        raise TypeError("broadcast_in_dim broadcast_dimensions must be distinct; got "
                        f"broadcast_dimensions {dims}")
    order = sorted(range(len(dims)), key=lambda i: dims[i])  # JAX accepts any order
    value = _value(operand, dtype)
    if order != list(range(len(dims))):
        value = np.transpose(value, order)
    placed = [1] * len(shape)
    for i in order:
        placed[dims[i]] = op_shape[i]
    value = np.reshape(value, placed)
    return _cast(np.copy(np.broadcast_to(value, shape)), dtype)


def broadcast(operand: object, sizes: Sequence[int], *, out_sharding: object = None) -> Any:
    """``jax.lax.broadcast``: ``operand`` with leading dimensions ``sizes`` added."""
    _, op_shape = _aval("broadcast", operand)
    sizes = _dims(sizes)
    return broadcast_in_dim(operand, (*sizes, *op_shape),
                            tuple(range(len(sizes), len(sizes) + len(op_shape))))


def _check_shape(name: str, shape: tuple[int, ...]) -> None:
    if any(d < 0 for d in shape):
        raise TypeError(f"{name} shape must have every element be nonnegative, got {shape}.")


def iota(dtype: object, size: int) -> Any:
    """``jax.lax.iota``: ``[0, 1, ..., size - 1]`` in ``dtype``.

    Raises:
      TypeError: a negative ``size``.
    """
    _check_shape("iota", (int(size),))
    return np.arange(int(size)).astype(canonical_dtype(dtype))


def broadcasted_iota(dtype: object, shape: Sequence[int], dimension: int, *,
                     out_sharding: object = None) -> Any:
    """``jax.lax.broadcasted_iota``: an array of ``shape`` whose value is the index along
    ``dimension`` (how kernels build causal masks).

    Raises:
      ValueError: ``dimension`` is not an axis of ``shape``.
      TypeError: a negative size in ``shape``.
    """
    shape = _dims(shape)
    dimension = int(dimension)
    _check_shape("iota", shape)
    if not 0 <= dimension < len(shape):
        raise ValueError("iota dimension must be between 0 and len(shape), got "
                         f"dimension={dimension} for shape={shape}")
    index = np.arange(shape[dimension]).reshape(
        [-1 if axis == dimension else 1 for axis in range(len(shape))])
    return np.broadcast_to(index, shape).astype(canonical_dtype(dtype))


def full(shape: Sequence[int], fill_value: object, dtype: object = None, *,
         sharding: object = None) -> Any:
    """``jax.lax.full``: ``shape`` filled with ``fill_value``, in ``dtype`` or the fill
    value's dtype (a Python int -> int32, a float -> float32)."""
    fill_dtype, fill_shape = _aval("full", fill_value)
    if fill_shape:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{fill_shape}.")
    target = fill_dtype if dtype is None else canonical_dtype(dtype)
    shape = _dims(shape)
    _check_shape("full", shape)
    return _cast(np.full(shape, _value(fill_value, fill_dtype)), target)


def full_like(x: object, fill_value: object, dtype: object = None,
              shape: Sequence[int] | None = None, sharding: object = None) -> Any:
    """``jax.lax.full_like``: like :func:`full` with ``x``'s shape and dtype by default
    (``x`` may be a ref: only its shape and dtype are read)."""
    like_dtype = x.dtype if isinstance(x, Ref) else _aval("full_like", x)[0]
    like_shape = x.shape if shape is None else _dims(shape)  # type: ignore[attr-defined]
    return full(like_shape, fill_value, like_dtype if dtype is None else dtype)


def empty(shape: Sequence[int], dtype: object, *, out_sharding: object = None) -> Any:
    """``jax.lax.empty``: an array of ``shape`` and ``dtype`` whose contents are unspecified
    (zeros here, as on JAX's CPU backend)."""
    return np.zeros(_dims(shape), canonical_dtype(dtype))


def convert_element_type(operand: object, new_dtype: object) -> Any:
    """``jax.lax.convert_element_type``: ``operand`` in ``new_dtype``, as XLA converts:
    floats to integers round toward zero and saturate, NaN becomes 0; integers wrap.
    A 64-bit ``new_dtype`` gives its 32-bit version (JAX warns, x64 off)."""
    dtype, _ = _aval("convert_element_type", operand)
    target = canonical_dtype(new_dtype)
    value = _value(operand, dtype)
    if target.kind in "iu" and (is_floating(dtype) or dtype.kind == "c"):
        info = np.iinfo(target)
        real = (np.real(value) if dtype.kind == "c" else value).astype(np.float64)
        value = np.where(np.isnan(real), 0, np.clip(np.trunc(real), info.min, info.max))
    return _cast(value, target)


def bitcast_convert_type(operand: object, new_dtype: object) -> Any:
    """``jax.lax.bitcast_convert_type``: the same bits read as ``new_dtype``. A narrower
    type adds a last dimension (f32 -> uint8: ``(..., 4)``); a wider one removes it.

    Raises:
      TypeError: the last dimension does not match the ratio of the widths.
    """
    dtype, shape = _aval("bitcast_convert_type", operand)
    target = canonical_dtype(new_dtype)
    value = np.ascontiguousarray(_value(operand, dtype))
    if target.itemsize == dtype.itemsize:
        return value.view(target)
    if target.itemsize < dtype.itemsize:
        ratio = dtype.itemsize // target.itemsize
        return np.reshape(value.view(target), (*shape, ratio))
    ratio = target.itemsize // dtype.itemsize
    if not shape or shape[-1] != ratio:
        raise TypeError(f"bitcast_convert_type from {dtype} to {target} requires a last "
                        f"dimension of {ratio}, got shape {shape}")
    return np.reshape(value.view(target), shape[:-1])


def reshape(operand: object, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
            *, out_sharding: object = None) -> Any:
    """``jax.lax.reshape``: ``operand`` (transposed by ``dimensions`` first, if given)
    with shape ``new_sizes``.

    Raises:
      ValueError: the sizes do not have ``operand``'s number of elements (JAX 0.10.2
        fails when lowering, with a ValueError).
    """
    dtype, shape = _aval("reshape", operand)
    new_sizes = _dims(new_sizes)
    if math.prod(new_sizes) != math.prod(shape):
        raise ValueError(f"reshape total size must be unchanged, got new_sizes {new_sizes} "
                        f"(of total size {math.prod(new_sizes)}) for shape {shape} (of total "
                        f"size {math.prod(shape)}).")
    value = _value(operand, dtype)
    if dimensions is not None:
        value = transpose(value, dimensions)
    return _cast(np.reshape(value, new_sizes), dtype)


def transpose(operand: object, permutation: Sequence[int]) -> Any:
    """``jax.lax.transpose``: dimension ``i`` of the result is ``permutation[i]`` of
    ``operand``.

    Raises:
      TypeError: ``permutation`` is not a permutation of the operand's dimensions.
    """
    dtype, shape = _aval("transpose", operand)
    perm = _dims(permutation)
    if sorted(perm) != list(range(len(shape))):
        raise TypeError("transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {perm} for operand shape {shape}.")
    return _cast(np.transpose(_value(operand, dtype), perm), dtype)


def squeeze(array: object, dimensions: Sequence[int]) -> Any:
    """``jax.lax.squeeze``: ``array`` without the listed dimensions of size 1.

    Raises:
      ValueError: a listed dimension whose size is not 1 (JAX's message).
    """
    dtype, shape = _aval("squeeze", array)
    dims = tuple(d % len(shape) if len(shape) else d for d in _dims(dimensions))
    if any(not 0 <= d < len(shape) or shape[d] != 1 for d in dims):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={shape} and dimensions={_dims(dimensions)}")
    return _cast(np.reshape(_value(array, dtype),
                            [s for i, s in enumerate(shape) if i not in dims]), dtype)


def expand_dims(array: object, dimensions: Sequence[int]) -> Any:
    """``jax.lax.expand_dims``: ``array`` with size-1 dimensions inserted at ``dimensions``
    (positions in the result)."""
    dtype, _ = _aval("expand_dims", array)
    return _cast(np.expand_dims(_value(array, dtype), _dims(dimensions)), dtype)


def slice(operand: object, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None) -> Any:
    """``jax.lax.slice``: the static slice ``start:limit:stride`` of every dimension.

    Raises:
      TypeError: indices of the wrong length, outside the operand, a limit below its
        start, or a stride below 1 (as JAX when it traces).
    """
    dtype, shape = _aval("slice", operand)
    starts, limits = _dims(start_indices), _dims(limit_indices)
    steps = (1,) * len(shape) if strides is None else _dims(strides)
    if not len(starts) == len(limits) == len(steps) == len(shape):
        raise TypeError(f"slice start_indices, limit_indices and strides must have the "
                        f"operand's rank {len(shape)}, got {starts}, {limits}, {steps}.")
    if any(not 0 <= s <= lim <= d for s, lim, d in zip(starts, limits, shape, strict=True)) \
            or any(st < 1 for st in steps):
        raise TypeError(f"slice indices out of range: start_indices {starts}, limit_indices "
                        f"{limits}, strides {steps} for operand shape {shape}.")
    index = tuple(builtins.slice(s, lim, st) for s, lim, st in zip(starts, limits, steps,
                                                                  strict=True))
    return _cast(np.copy(_value(operand, dtype)[index]), dtype)


def slice_in_dim(operand: object, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    """``jax.lax.slice_in_dim``: :func:`slice` along ``axis`` only; None means the
    start/end and negative indices count from the end."""
    _, shape = _aval("slice_in_dim", operand)
    size = shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = size if limit_index is None else int(limit_index)
    start, limit = (start + size if start < 0 else start), (limit + size if limit < 0 else limit)
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: object, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """``jax.lax.index_in_dim``: element ``index`` (static; negative counts from the end)
    along ``axis``, keeping that dimension (size 1) when ``keepdims``.

    Raises:
      IndexError: ``index`` outside the dimension (JAX's message).
    """
    _, shape = _aval("index_in_dim", operand)
    size, index = shape[axis], int(index)
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return out if keepdims else np.squeeze(out, axis)


def concatenate(operands: Sequence[object], dimension: int) -> Any:
    """``jax.lax.concatenate``: the operands joined along ``dimension``.

    Raises:
      TypeError: different dtypes, or shapes that differ in another dimension.
      ValueError: no operands.
    """
    if not operands:
        raise ValueError("concatenate requires at least one operand")
    avals = [_aval("concatenate", op) for op in operands]
    dtype = _same_dtypes("concatenate", [d for d, _ in avals], "concatenate")
    shapes = [s for _, s in avals]
    others = {tuple(d for i, d in enumerate(s) if i != dimension) for s in shapes}
    if len({len(s) for s in shapes}) > 1 or len(others) > 1:
        raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                        f"than the one being concatenated: concatenating along dimension "
                        f"{dimension} for shapes {', '.join(str(s) for s in shapes)}.")
    return _cast(np.concatenate([_value(op, dtype) for op in operands], axis=dimension), dtype)


__all__ = ["bitcast_convert_type", "broadcast", "broadcast_in_dim", "broadcasted_iota",
    "concatenate", "convert_element_type", "empty", "expand_dims", "full", "full_like",
    "index_in_dim", "iota", "reshape", "slice", "slice_in_dim", "squeeze", "transpose"]
publish("pallas_sim.lax", globals(), __all__)
# The array functions take kernel values as JAX's take tracers (values.lift).
lift_functions(globals(), __all__)
