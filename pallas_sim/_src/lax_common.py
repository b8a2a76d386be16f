"""How ``jax.lax`` sees its operands, shared by the lax modules: dtypes as JAX sees them (x64
off, Python scalars weakly typed), an operand's dtype and shape (its aval), and the checks
JAX makes at trace time (no promotion, accepted dtypes, broadcastable shapes) with JAX's
messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .arrays import is_array
from .dtypes import as_dtype, is_floating
from .refs import Ref
from .values import lift as _lift

_CANONICAL = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
              np.dtype(np.uint64): np.dtype(np.uint32),
              np.dtype(np.complex128): np.dtype(np.complex64)}
#: The dtype JAX gives a Python scalar (weakly typed).
_PYTHON_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int32),
                  float: np.dtype(np.float32), complex: np.dtype(np.complex64)}
_INEXACT = "floating, complexfloating"


def canonical_dtype(dtype: object) -> np.dtype:
    """The dtype JAX computes in for ``dtype`` with x64 off (float64 -> float32, int64 ->
    int32, uint64 -> uint32, complex128 -> complex64; others unchanged)."""
    d = as_dtype(dtype)
    return _CANONICAL.get(d, d)


def _is_inexact(dtype: np.dtype) -> bool:
    return is_floating(dtype) or dtype.kind == "c"


def _kind_rank(dtype: np.dtype) -> int:
    if dtype.kind == "b":
        return 0
    if dtype.kind in "iu":
        return 1
    return 3 if dtype.kind == "c" else 2


def _aval(name: str, x: object) -> tuple[np.dtype, tuple[int, ...]]:
    """``(dtype, shape)`` of an operand as JAX sees it.

    Raises:
      TypeError: a ref (read it first), or a value that is not an array or a
        Python scalar (a list, a string), as JAX does.
    """
    py = _PYTHON_DTYPES.get(type(x))
    if py is not None:
        return py, ()
    if isinstance(x, Ref):
        raise TypeError(f"{name} got the ref {x.name}; read its value first: {x.name}[...]")
    dtype, shape = getattr(x, "dtype", None), getattr(x, "shape", None)
    if not isinstance(dtype, np.dtype) or not isinstance(shape, tuple):
        raise TypeError(f"Error interpreting argument to {name} as a JAX value. The "
                        f"problematic value is of type {type(x)}.")
    if isinstance(x, np.ndarray | np.generic) and not is_array(x):
        raise TypeError(f"Value {x!r} with dtype {dtype} is not a valid JAX array type. Only "
                        "arrays of numeric types are supported by JAX.")
    return _CANONICAL.get(dtype, dtype), shape


def _value(x: object, dtype: np.dtype) -> Any:
    """``x`` ready for NumPy: a Python scalar becomes a 0-d array of ``dtype``."""
    return np.asarray(x, dtype) if type(x) in _PYTHON_DTYPES else x


def _cast(x: Any, dtype: np.dtype) -> Any:
    return x if x.dtype == dtype else x.astype(dtype)


def _aval_text(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


_ACCEPTS: dict[str, Callable[[np.dtype], bool]] = {
    _INEXACT: _is_inexact,
    "floating": is_floating,
    "integer": lambda d: d.kind in "iu",
    "integer, bool": lambda d: d.kind in "iub",
    "number": lambda d: d.kind in "iufc" or is_floating(d),
}


def _require(name: str, dtype: np.dtype, accepted: str, position: int | None = None) -> None:
    if not _ACCEPTS[accepted](dtype):
        at = "" if position is None else f" at position {position}"
        raise TypeError(f"{name} does not accept dtype {dtype}{at}. Accepted dtypes{at} are "
                        f"subtypes of {accepted}.")


def _same_dtypes(name: str, dtypes: Sequence[np.dtype], tip: str | None) -> np.dtype:
    if any(d != dtypes[0] for d in dtypes):
        text = ", ".join(str(d) for d in dtypes)
        hint = (f" (Tip: jnp.{tip} is a similar function that does automatic type promotion "
                "on inputs).") if tip else ""
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{text}.{hint}")
    return dtypes[0]


def _broadcast_shapes(name: str, shapes: Sequence[tuple[int, ...]]) -> None:
    """lax's rule: rank-0 operands broadcast; the others need the same rank and shapes
    that agree wherever neither size is 1."""
    ranked = [s for s in shapes if s]
    if len({len(s) for s in ranked}) > 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got "
                        f"{ {len(s) for s in ranked} }")
    try:
        np.broadcast_shapes(*ranked)
    except ValueError:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        f"{', '.join(str(s) for s in ranked)}.") from None


def _unary(name: str, fn: Callable[[Any], Any], x: object, accepted: str | None) -> Any:
    dtype, _ = _aval(name, x)
    if accepted is not None:
        _require(name, dtype, accepted)
    return _cast(fn(_value(x, dtype)), dtype)


def _binary(name: str, fn: Callable[[Any, Any], Any], x: object, y: object, *,
            tip: str | None, accepted: str | None = None, result: np.dtype | None = None
            ) -> Any:
    (dx, sx), (dy, sy) = _aval(name, x), _aval(name, y)
    if accepted is not None:
        _require(name, dx, accepted, 0 if accepted == _INEXACT else None)
    dtype = _same_dtypes(name, (dx, dy), tip)
    _broadcast_shapes(name, (sx, sy))
    return _cast(fn(_value(x, dx), _value(y, dy)), dtype if result is None else result)


_BOOL = np.dtype(np.bool_)


def _dims(value: object) -> tuple[int, ...]:
    return tuple(int(d) for d in value)  # type: ignore[attr-defined]


def lift_functions(scope: dict[str, Any], names: Sequence[str]) -> None:
    """Replace each of ``names`` in ``scope`` (a lax module's ``globals()``) with its lifted
    form (:func:`pallas_sim._src.values.lift`): the array functions take kernel values as
    JAX's take tracers (classes are left as they are). Called at the end of each lax
    module, after :func:`publish`, so the lifted function keeps the public module's name."""
    for name in names:
        if not isinstance(scope[name], type):  # RoundingMethod, Precision: enums as they are
            scope[name] = _lift(scope[name])
