"""``jax.lax``'s reductions along axes (``reduce_sum``, ``reduce_max``, ``argmax``, ...), its
cumulative ops and ``sort``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .exports import publish
from .lax_common import (
    _aval,
    _aval_text,
    _cast,
    _dims,
    _require,
    _value,
    canonical_dtype,
    lift_functions,
)


def _reduce(name: str, fn: Callable[..., Any], operand: object, axes: Sequence[int],
            accepted: str | None) -> Any:
    dtype, shape = _aval(name, operand)
    if accepted is not None:
        _require(name, dtype, accepted)
    axes = _dims(axes)
    if any(not 0 <= a < len(shape) for a in axes):
        raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for "
                         f"{_aval_text(dtype, shape)}.")
    return _cast(fn(_value(operand, dtype), axis=axes), dtype)


def reduce_max(operand: object, axes: Sequence[int]) -> Any:
    """``jax.lax.reduce_max``: the maximum over ``axes`` (non-negative axis numbers).

    Raises:
      ValueError: an axis outside the operand (JAX's message).
    """
    return _reduce("reduce_max", np.max, operand, axes, None)


def reduce_min(operand: object, axes: Sequence[int]) -> Any:
    """``jax.lax.reduce_min``: the minimum over ``axes`` (as :func:`reduce_max`)."""
    return _reduce("reduce_min", np.min, operand, axes, None)


def reduce_sum(operand: object, axes: Sequence[int], *, out_sharding: object = None) -> Any:
    """``jax.lax.reduce_sum``: the sum over ``axes``, in the operand's dtype.

    Raises:
      TypeError: a bool operand. ValueError: an axis outside the operand.
    """
    return _reduce("reduce_sum", np.sum, operand, axes, "number")


def reduce_prod(operand: object, axes: Sequence[int]) -> Any:
    """``jax.lax.reduce_prod``: the product over ``axes``, in the operand's dtype."""
    return _reduce("reduce_prod", np.prod, operand, axes, "number")


def reduce_and(operand: object, axes: Sequence[int]) -> Any:
    """``jax.lax.reduce_and``: logical (bool) or bitwise (integer) AND over ``axes``."""
    return _reduce("reduce_and", np.bitwise_and.reduce, operand, axes, "integer, bool")


def reduce_or(operand: object, axes: Sequence[int]) -> Any:
    """``jax.lax.reduce_or``: logical (bool) or bitwise (integer) OR over ``axes``."""
    return _reduce("reduce_or", np.bitwise_or.reduce, operand, axes, "integer, bool")


def reduce_xor(operand: object, axes: Sequence[int]) -> Any:
    """``jax.lax.reduce_xor``: logical (bool) or bitwise (integer) XOR over ``axes``."""
    return _reduce("reduce_xor", np.bitwise_xor.reduce, operand, axes, "integer, bool")


def argmax(operand: object, axis: int, index_dtype: object) -> Any:
    """``jax.lax.argmax``: the index of the first maximum along ``axis`` (NaN counts as
    the maximum), in ``index_dtype``."""
    dtype, _ = _aval("argmax", operand)
    return np.argmax(_value(operand, dtype), axis=int(axis)).astype(canonical_dtype(index_dtype))


def argmin(operand: object, axis: int, index_dtype: object) -> Any:
    """``jax.lax.argmin``: the index of the first minimum along ``axis``."""
    dtype, _ = _aval("argmin", operand)
    return np.argmin(_value(operand, dtype), axis=int(axis)).astype(canonical_dtype(index_dtype))


def _cumulative(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def cumulative(operand: object, axis: int = 0, reverse: bool = False) -> Any:
        dtype, _ = _aval(name, operand)
        value = _value(operand, dtype)
        if reverse:
            return _cast(np.flip(fn(np.flip(value, axis), axis=axis), axis), dtype)
        return _cast(fn(value, axis=axis), dtype)
    cumulative.__name__ = cumulative.__qualname__ = name
    cumulative.__doc__ = (f"``jax.lax.{name}``: the running {name[3:]} along ``axis`` "
                          "(from the end when ``reverse``), in the operand's dtype.")
    return cumulative


cumsum = _cumulative("cumsum", np.cumsum)
cumprod = _cumulative("cumprod", np.cumprod)
cummax = _cumulative("cummax", np.maximum.accumulate)
cummin = _cumulative("cummin", np.minimum.accumulate)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """``jax.lax.sort``: ``operand`` sorted along ``dimension``; a tuple of operands is
    sorted by the first ``num_keys`` of them (lexicographically), the others following."""
    if not isinstance(operand, tuple | list):
        dtype, _ = _aval("sort", operand)
        return np.sort(_value(operand, dtype), axis=dimension, kind="stable")
    keys = [_value(o, _aval("sort", o)[0]) for o in operand[:num_keys]]
    if len(keys) == 1:
        order = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        moved = [np.moveaxis(k, dimension, -1) for k in keys]
        order = np.moveaxis(np.lexsort(moved[::-1], axis=-1), -1, dimension)
    return tuple(np.take_along_axis(_value(o, _aval("sort", o)[0]), order, axis=dimension)
                 for o in operand)


__all__ = ["argmax", "argmin", "cummax", "cummin", "cumprod", "cumsum", "reduce_and", "reduce_max",
    "reduce_min", "reduce_or", "reduce_prod", "reduce_sum", "reduce_xor", "sort"]
publish("pallas_sim.lax", globals(), __all__)
# The array functions take kernel values as JAX's take tracers (values.lift).
lift_functions(globals(), __all__)
