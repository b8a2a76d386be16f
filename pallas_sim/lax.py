"""``jax.lax``: the primitives Pallas kernels and their wrappers use, on NumPy.

Every function mirrors the JAX 0.10.2 function of the same name: the same
signature, the same result shape and dtype, and the same refusals where JAX
refuses at trace time (``lax.add`` of float32 and int32, ``lax.exp`` of an
integer, ``lax.select`` cases of different shapes, a ``fori_loop`` body that
changes its carry's dtype or shape). Unlike ``jax.numpy``, lax does not
promote: both operands of a binary op must have the same dtype, a Python
``int`` counts as int32 and a Python ``float`` as float32, and arrays of
64-bit dtypes count as their 32-bit versions (JAX's default, x64 off), so
results have the dtypes JAX gives.

Arithmetic goes through NumPy functions and ufuncs, so values that implement
NumPy's ``__array_ufunc__`` / ``__array_function__`` protocols pass through.
Control flow runs eagerly: ``cond`` runs only the branch its predicate
selects (its side effects on refs happen once, as on a TPU), ``fori_loop``
and ``while_loop`` run their body in Python. The one place a value decides
control flow is :func:`_decide`.
"""

from __future__ import annotations

import builtins
import enum
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._src import op_accounting
from ._src import surface as _surface
from ._src.arrays import is_array
from ._src.dtypes import as_dtype, is_floating
from ._src.pytrees import flatten as _flatten
from ._src.refs import Ref
from ._src.values import KERNELS as _KERNELS
from ._src.values import KernelValue as _KernelValue
from ._src.values import _wrap as _traced_result
from ._src.values import concrete as _concrete
from ._src.values import lift as _lift

# -- dtypes as JAX sees them (x64 off) --------------------------------------------------------

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

# -- elementwise ------------------------------------------------------------------------------


def add(x: object, y: object) -> Any:
    """``jax.lax.add``: ``x + y``; same dtypes (no promotion), lax's broadcasting rule.

    Raises:
      TypeError: different dtypes, or shapes lax does not broadcast.
    """
    return _binary("add", np.add, x, y, tip="add")


def sub(x: object, y: object) -> Any:
    """``jax.lax.sub``: ``x - y`` (rules of :func:`add`)."""
    return _binary("sub", np.subtract, x, y, tip="subtract")


def mul(x: object, y: object, *, out_dtype: object = None) -> Any:
    """``jax.lax.mul``: ``x * y`` (rules of :func:`add`); ``out_dtype`` casts the result."""
    out = _binary("mul", np.multiply, x, y, tip="multiply")
    return out if out_dtype is None else _cast(out, canonical_dtype(out_dtype))


def div(x: object, y: object) -> Any:
    """``jax.lax.div``: ``x / y``, rounding integer quotients toward zero (C semantics,
    unlike Python's ``//``); an integer division by zero gives -1 as XLA does.

    Raises:
      TypeError: different dtypes, or shapes lax does not broadcast.
    """
    def divide(a: Any, b: Any) -> Any:
        if a.dtype.kind not in "iu":
            return np.true_divide(a, b)
        zero = b == 0
        safe = np.where(zero, 1, b)
        quotient = (a - np.fmod(a, safe)) // safe
        return np.where(zero, -1, quotient)
    return _binary("div", divide, x, y, tip="divide")


def rem(x: object, y: object) -> Any:
    """``jax.lax.rem``: remainder with the sign of ``x`` (C ``fmod``), for integers and
    floats; an integer remainder by zero gives ``x`` as XLA does."""
    def remainder(a: Any, b: Any) -> Any:
        if a.dtype.kind not in "iu":
            return np.fmod(a, b)
        zero = b == 0
        return np.where(zero, a, np.fmod(a, np.where(zero, 1, b)))
    return _binary("rem", remainder, x, y, tip="remainder")


def max(x: object, y: object) -> Any:  # noqa: A001 - JAX's name
    """``jax.lax.max``: elementwise maximum, NaN if either is NaN (rules of :func:`add`)."""
    return _binary("max", np.maximum, x, y, tip="maximum")


def min(x: object, y: object) -> Any:  # noqa: A001 - JAX's name
    """``jax.lax.min``: elementwise minimum, NaN if either is NaN (rules of :func:`add`)."""
    return _binary("min", np.minimum, x, y, tip="minimum")


def pow(x: object, y: object) -> Any:  # noqa: A001 - JAX's name
    """``jax.lax.pow``: ``x ** y`` for a float or complex ``x`` and a ``y`` of the same
    dtype or of an integer dtype; the result has ``x``'s dtype.

    Raises:
      TypeError: an integer ``x``, or float ``x`` and ``y`` of different dtypes.
    """
    (dx, sx), (dy, sy) = _aval("pow", x), _aval("pow", y)
    _require("pow", dx, _INEXACT, 0)
    if dy != dx and dy.kind not in "iu":
        raise TypeError("the first argument to pow must have an inexact dtype (float or "
                        "complex), and the second argument must have an inexact or integer "
                        "dtype, and two inexact dtypes must match, but got "
                        f"{dx} and {dy} respectively.")
    _broadcast_shapes("pow", (sx, sy))
    return _cast(np.power(_value(x, dx), _value(y, dy)), dx)


def integer_pow(x: object, y: int) -> Any:
    """``jax.lax.integer_pow``: ``x ** y`` for a static Python int ``y``.

    Raises:
      TypeError: a negative ``y`` for an integer ``x`` (JAX's message).
    """
    dtype, shape = _aval("integer_pow", x)
    if y < 0 and dtype.kind in "iu":
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({_aval_text(dtype, shape)}, {y})")
    if y < 0:
        return _cast(np.reciprocal(np.power(_value(x, dtype), -y)), dtype)
    return _cast(np.power(_value(x, dtype), y), dtype)


def nextafter(x1: object, x2: object) -> Any:
    """``jax.lax.nextafter``: the next float after ``x1`` toward ``x2``."""
    return _binary("nextafter", np.nextafter, x1, x2, tip="nextafter", accepted="floating")


def atan2(x: object, y: object) -> Any:
    """``jax.lax.atan2(x, y)``: ``arctan(x / y)`` in the quadrant given by the signs of
    both (``np.arctan2(x, y)``), for floats of one dtype."""
    return _binary("atan2", np.arctan2, x, y, tip="arctan2", accepted=_INEXACT)


def _compare(name: str, fn: Callable[[Any, Any], Any]) -> Callable[[object, object], Any]:
    def compare(x: object, y: object) -> Any:
        return _binary(name, fn, x, y, tip=None, result=_BOOL)
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = (f"``jax.lax.{name}``: elementwise ``{fn.__name__}``, a bool array; "
                       "both operands of one dtype (no promotion).")
    return compare


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)


def _bitwise(name: str, fn: Callable[[Any, Any], Any]) -> Callable[[object, object], Any]:
    def bitwise(x: object, y: object) -> Any:
        return _binary(name, fn, x, y, tip=None, accepted="integer, bool")
    bitwise.__name__ = bitwise.__qualname__ = name
    bitwise.__doc__ = (f"``jax.lax.{name}``: elementwise ``{fn.__name__}`` of integers or "
                       "bools of one dtype.")
    return bitwise


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)


def bitwise_not(x: object) -> Any:
    """``jax.lax.bitwise_not``: ``~x`` for integers and bools."""
    return _unary("bitwise_not", np.invert, x, "integer, bool")


def _shift_amount(a: Any, b: Any) -> tuple[Any, Any]:
    bits = a.dtype.itemsize * 8
    out_of_range = (b < 0) | (b >= bits)
    return out_of_range, np.where(out_of_range, 0, b)


def shift_left(x: object, y: object) -> Any:
    """``jax.lax.shift_left``: ``x << y``; 0 when ``y`` is negative or at least the bit
    width (XLA's rule; NumPy's result would depend on the CPU)."""
    def shift(a: Any, b: Any) -> Any:
        out_of_range, b = _shift_amount(a, b)
        return np.where(out_of_range, 0, np.left_shift(a, b))
    return _binary("shift_left", shift, x, y, tip=None, accepted="integer")


def shift_right_arithmetic(x: object, y: object) -> Any:
    """``jax.lax.shift_right_arithmetic``: ``x >> y`` filling with the sign bit (all sign
    bits when ``y`` is out of range)."""
    def shift(a: Any, b: Any) -> Any:
        out_of_range, b = _shift_amount(a, b)
        sign_fill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else 0
        return np.where(out_of_range, sign_fill, np.right_shift(a, b))
    return _binary("shift_right_arithmetic", shift, x, y, tip=None, accepted="integer")


def shift_right_logical(x: object, y: object) -> Any:
    """``jax.lax.shift_right_logical``: ``x >> y`` filling with zeros, also for signed
    integers (0 when ``y`` is out of range)."""
    def shift(a: Any, b: Any) -> Any:
        out_of_range, b = _shift_amount(a, b)
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        shifted = np.right_shift(a.astype(unsigned), b.astype(unsigned)).astype(a.dtype)
        return np.where(out_of_range, 0, shifted)
    return _binary("shift_right_logical", shift, x, y, tip=None, accepted="integer")


def _float_unary(name: str, fn: Callable[[Any], Any], what: str,
                 accepted: str = _INEXACT) -> Callable[..., Any]:
    def unary(x: object, *, accuracy: object = None) -> Any:
        return _unary(name, fn, x, accepted)
    unary.__name__ = unary.__qualname__ = name
    unary.__doc__ = (f"``jax.lax.{name}``: {what}, elementwise, in ``x``'s float dtype.\n\n"
                     f"Raises:\n  TypeError: ``x`` has an integer or bool dtype (JAX's "
                     f"message), or is a ref or a list.")
    return unary


def _rsqrt(x: Any) -> Any:
    return np.reciprocal(np.sqrt(x))


def _logistic(x: Any) -> Any:
    with np.errstate(over="ignore"):
        return np.reciprocal(1 + np.exp(np.negative(x)))


def _erf(x: Any) -> Any:
    # erfc by a Chebyshev fit with relative error below 1.2e-7 everywhere (Numerical
    # Recipes, erfcc), computed in float64.
    z = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


exp = _float_unary("exp", np.exp, "e ** x")
exp2 = _float_unary("exp2", np.exp2, "2 ** x")
log = _float_unary("log", np.log, "the natural logarithm")
log1p = _float_unary("log1p", np.log1p, "log(1 + x)")
expm1 = _float_unary("expm1", np.expm1, "exp(x) - 1")
tanh = _float_unary("tanh", np.tanh, "the hyperbolic tangent")
logistic = _float_unary("logistic", _logistic, "the sigmoid 1 / (1 + exp(-x))")
sqrt = _float_unary("sqrt", np.sqrt, "the square root")
rsqrt = _float_unary("rsqrt", _rsqrt, "1 / sqrt(x)")
cbrt = _float_unary("cbrt", np.cbrt, "the cube root", "floating")
sin = _float_unary("sin", np.sin, "the sine")
cos = _float_unary("cos", np.cos, "the cosine")
tan = _float_unary("tan", np.tan, "the tangent")
erf = _float_unary("erf", _erf, "the error function (within 1.2e-7 of the exact value)",
                   "floating")
floor = _float_unary("floor", np.floor, "rounding down", "floating")
ceil = _float_unary("ceil", np.ceil, "rounding up", "floating")


def is_finite(x: object) -> Any:
    """``jax.lax.is_finite``: a bool array, False for inf and NaN.

    Raises:
      TypeError: ``x`` is not a float array.
    """
    dtype, _ = _aval("is_finite", x)
    _require("is_finite", dtype, "floating")
    return np.isfinite(x)


def neg(x: object) -> Any:
    """``jax.lax.neg``: ``-x`` (wraps around for unsigned integers, as XLA)."""
    return _unary("neg", np.negative, x, "number")


def abs(x: object) -> Any:  # noqa: A001 - JAX's name
    """``jax.lax.abs``: ``|x|`` (the minimum of a signed integer type stays negative)."""
    return _unary("abs", np.abs, x, "number")


def sign(x: object) -> Any:
    """``jax.lax.sign``: -1, 0 or 1 in ``x``'s dtype."""
    return _unary("sign", np.sign, x, "number")


def square(x: object) -> Any:
    """``jax.lax.square``: ``x * x``."""
    return _unary("square", np.square, x, "number")


def reciprocal(x: object) -> Any:
    """``jax.lax.reciprocal``: ``1 / x`` for floats.

    Raises:
      TypeError: an integer ``x`` (JAX's ``integer_pow(x, -1)`` message).
    """
    return integer_pow(x, -1)


class RoundingMethod(enum.IntEnum):
    """``jax.lax.RoundingMethod``: how :func:`round` breaks ties."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x: object, rounding_method: RoundingMethod | int = RoundingMethod.AWAY_FROM_ZERO
          ) -> Any:  # noqa: A001 - JAX's name
    """``jax.lax.round``: to the nearest integer, ties away from zero (the default) or to
    even (``RoundingMethod.TO_NEAREST_EVEN``), in ``x``'s float dtype.

    Raises:
      TypeError: ``x`` is not a float array.
    """
    method = RoundingMethod(rounding_method)

    def rounding(a: Any) -> Any:
        if method is RoundingMethod.TO_NEAREST_EVEN:
            return np.rint(a)
        whole = np.trunc(a)
        return np.where(np.abs(a - whole) >= 0.5, whole + np.sign(a), whole)
    return _unary("round", rounding, x, "floating")


def clamp(min: object, x: object, max: object) -> Any:  # noqa: A002 - JAX's names
    """``jax.lax.clamp(min, x, max)``: ``x`` limited to ``[min, max]``.

    Raises:
      TypeError: different dtypes, or a ``min``/``max`` that is neither a scalar nor of
        ``x``'s shape.
    """
    (dlo, slo), (dx, sx), (dhi, shi) = (_aval("clamp", v) for v in (min, x, max))
    dtype = _same_dtypes("clamp", (dlo, dx, dhi), None)
    for label, shape in (("min", slo), ("max", shi)):
        if shape not in ((), sx):
            raise TypeError(f"clamp requires {label}.shape == operand.shape or "
                            f"{label}.shape == (), got {label}.shape={shape}, "
                            f"operand.shape={sx}.")
    return _cast(np.minimum(np.maximum(_value(x, dx), _value(min, dlo)), _value(max, dhi)),
                 dtype)


def select(pred: object, on_true: object, on_false: object) -> Any:
    """``jax.lax.select``: ``on_true`` where ``pred``, else ``on_false``.

    Unlike ``jnp.where`` nothing broadcasts: the cases have one shape and one dtype, and
    ``pred`` (bool, or int32 as JAX accepts) is a scalar or has that shape.

    Raises:
      TypeError: cases of different shapes or dtypes, or a ``pred`` of another shape.
    """
    return select_n(pred, on_false, on_true)


def select_n(which: object, *cases: object) -> Any:
    """``jax.lax.select_n``: ``cases[which]`` elementwise; a bool ``which`` picks between
    two cases (False -> ``cases[0]``).

    Raises:
      TypeError: cases of different shapes or dtypes, ``which`` of another shape, or a
        bool ``which`` with more than two cases.
      ValueError: no cases.
    """
    if not cases:
        raise ValueError("select_n called with no cases")
    dw, sw = _aval("select_n", which)
    avals = [_aval("select_n", c) for c in cases]
    shapes = [s for _, s in avals]
    if any(s != shapes[0] for s in shapes):
        raise TypeError(f"select cases must have the same shapes, got {shapes}.")
    dtype = _same_dtypes("select", [d for d, _ in avals], "where")
    if sw not in ((), shapes[0]):
        raise TypeError("select `which` must be scalar or have the same shape as cases, got "
                        f"`which` shape {sw} but case shape {shapes[0]}.")
    if dw.kind == "b":
        if len(cases) > 2:
            raise TypeError("select with boolean `which` cannot have > 2 cases.")
        if len(cases) == 1:
            return _cast(_value(cases[0], dtype), dtype)
        return _cast(np.where(_value(which, dw), _value(cases[1], dtype),
                              _value(cases[0], dtype)), dtype)
    if dw != np.int32:
        raise TypeError(f"select `which` must be boolean or int32 type, got {dw}.")
    return _cast(np.choose(_value(which, dw), [_value(c, dtype) for c in cases]), dtype)


# -- matrix products --------------------------------------------------------------------------


class Precision(enum.Enum):
    """``jax.lax.Precision``: accepted and ignored (pallas_sim multiplies in float32)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        names = {"default": 0, "fastest": 0, "bfloat16": 0, "high": 1, "bfloat16_3x": 1,
                 "tensorfloat32": 1, "highest": 2, "float32": 2}
        if isinstance(value, str) and value.lower() in names:
            return cls(names[value.lower()])
        return None


def _accumulation_dtype(dtypes: Sequence[np.dtype]) -> np.dtype:
    if any(d.kind == "c" for d in dtypes):
        return np.dtype(np.complex64)
    if any(is_floating(d) for d in dtypes):
        return np.dtype(np.float32)
    return np.dtype(np.int64)  # integer products accumulate wide, then wrap to the result


def _dims(value: object) -> tuple[int, ...]:
    return tuple(int(d) for d in value)  # type: ignore[attr-defined]


def _dot_general_out_elements(sl: tuple[int, ...], sr: tuple[int, ...], lc: tuple[int, ...],
                              lb: tuple[int, ...], rc: tuple[int, ...],
                              rb: tuple[int, ...]) -> int:
    """Elements of ``dot_general``'s result, a Python int: batch x lhs free x rhs free.

    It used to be (lhs size x rhs size) // (contracted**2 x batch) through this module's
    ``max``, which is ``lax.max``: its int32 array overflowed at lecture sizes.
    """
    lhs_free = math.prod(sl[d] for d in range(len(sl)) if d not in lc and d not in lb)
    rhs_free = math.prod(sr[d] for d in range(len(sr)) if d not in rc and d not in rb)
    return math.prod(sl[d] for d in lb) * lhs_free * rhs_free


def dot_general(lhs: object, rhs: object, dimension_numbers: Any, precision: object = None,
                preferred_element_type: object = None, *, out_sharding: object = None) -> Any:
    """``jax.lax.dot_general``: contract ``lhs`` and ``rhs`` over the given dimensions.

    ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``. The
    result's dimensions are the batch dimensions, then ``lhs``'s free dimensions, then
    ``rhs``'s. Products are summed in float32 (integers: exactly, then wrapped), as the
    MXU does, and the result has ``preferred_element_type`` or the inputs' promoted dtype
    (bf16 x bf16 -> bf16, bf16 x f32 -> f32).

    Raises:
      TypeError: contracting or batch dimensions of different sizes (JAX's messages), or
        dimensions out of range or repeated.
      ValueError: malformed ``dimension_numbers``.
    """
    (dl, sl), (dr, sr) = _aval("dot_general", lhs), _aval("dot_general", rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = _dims(lc), _dims(rc), _dims(lb), _dims(rb)
    for side, shape, dims in (("lhs", sl, lc + lb), ("rhs", sr, rc + rb)):
        if any(not 0 <= d < len(shape) for d in dims):
            raise TypeError(f"dot_general requires {side} dimension numbers to be in range "
                            f"[0, {len(shape)}), got {dims} for shape {shape}.")
        if len(set(dims)) != len(dims):
            raise TypeError(f"dot_general requires {side} dimension numbers to be distinct, "
                            f"got {dims}.")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs and rhs contracting and "
                        f"batch dimensions, got {dimension_numbers}.")
    for what, ldims, rdims in (("contracting", lc, rc), ("batch", lb, rb)):
        lsizes, rsizes = tuple(sl[d] for d in ldims), tuple(sr[d] for d in rdims)
        if lsizes != rsizes:
            prefix = "contracting dimensions" if what == "contracting" else (
                "lhs batch dimensions and rhs batch dimensions")
            raise TypeError(f"dot_general requires {prefix} to have the same shape, got "
                            f"{lsizes} and {rsizes}.")
    out_dtype = (canonical_dtype(preferred_element_type) if preferred_element_type is not None
                 else canonical_dtype(np.result_type(dl, dr)))
    if op_accounting._STACK:
        op_accounting.product(lhs, rhs, _dot_general_out_elements(sl, sr, lc, lb, rc, rb),
                              math.prod(sl[d] for d in lc))
    acc = _accumulation_dtype((dl, dr))
    a, b = _value(lhs, dl).astype(acc), _value(rhs, dr).astype(acc)
    if not lb and lc == (len(sl) - 1,) and rc == (0,) and len(sr) <= 2:
        return _cast(np.matmul(a, b), out_dtype)  # the common cases, without reshapes
    lfree = [d for d in range(len(sl)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(sr)) if d not in rc and d not in rb]
    batch = [sl[d] for d in lb]
    a = np.reshape(np.transpose(a, (*lb, *lfree, *lc)),
                   (math.prod(batch), math.prod(sl[d] for d in lfree),
                    math.prod(sl[d] for d in lc)))
    b = np.reshape(np.transpose(b, (*rb, *rc, *rfree)),
                   (math.prod(batch), math.prod(sr[d] for d in rc),
                    math.prod(sr[d] for d in rfree)))
    out = np.reshape(np.matmul(a, b), (*batch, *(sl[d] for d in lfree),
                                       *(sr[d] for d in rfree)))
    return _cast(out, out_dtype)


def dot(lhs: object, rhs: object, *, dimension_numbers: Any = None, precision: object = None,
        preferred_element_type: object = None, out_sharding: object = None) -> Any:
    """``jax.lax.dot``: vector-vector, matrix-vector or matrix-matrix product (the last
    dimension of ``lhs`` with the first of ``rhs``), or :func:`dot_general` when
    ``dimension_numbers`` is given. Accumulation and dtypes as :func:`dot_general`.

    Raises:
      ValueError: an operand of rank 0 or above 2 without ``dimension_numbers``.
      TypeError: the contracted sizes differ.
    """
    if dimension_numbers is None:
        (_, sl), (_, sr) = _aval("dot", lhs), _aval("dot", rhs)
        if len(sl) not in (1, 2) or len(sr) not in (1, 2):
            raise ValueError("jax.lax.dot: dimension_numbers must be specified when not "
                             "performing simple un-batched matrix-matrix, matrix-vector, or "
                             f"vector-vector products; got lhs_shape={sl} rhs_shape={sr}")
        dimension_numbers = (((len(sl) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


# -- shapes -----------------------------------------------------------------------------------


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


# -- dynamic slices ---------------------------------------------------------------------------


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


# -- reductions -------------------------------------------------------------------------------


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


# -- control flow -----------------------------------------------------------------------------


def _decide(value: Any) -> Any:
    """The Python value of a scalar that decides control flow (a ``cond`` predicate, a
    ``switch`` index, a ``while_loop`` condition, ``fori_loop`` bounds).

    pallas_sim runs one branch, not both, so it needs the value now; this is the one
    place lax turns a value into a Python scalar.
    """
    value = _concrete(value)  # a kernel value: the simulator's run knows it
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, np.generic):
        return value.item()
    return np.asarray(value).item()


def _scalar_pred(name: str, pred: object) -> None:
    dtype, shape = _aval(name, pred)
    if shape:
        raise TypeError(f"Pred must be a scalar, got {pred!r} of shape {shape}.")
    if dtype.kind not in "biuf" and not is_floating(dtype):
        raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")


_NO_OPERAND = object()


def _operands(name: str, operands: tuple[Any, ...], operand: Any) -> tuple[Any, ...]:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def cond(pred: object, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any, operand: Any = _NO_OPERAND) -> Any:
    """``jax.lax.cond``: ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

    Only the selected branch runs, so a branch that writes a ref writes it once. JAX
    traces both branches and refuses branches whose outputs differ in structure, shape
    or dtype; pallas_sim cannot check the branch it does not run.

    Raises:
      TypeError: ``pred`` is not a scalar bool or number, a branch is not callable, or
        ``operand=`` is given together with positional operands.
    """
    if not callable(true_fun) or not callable(false_fun):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands("cond", operands, operand)
    _scalar_pred("cond", pred)
    return (true_fun if _decide(pred) else false_fun)(*operands)


def switch(index: object, branches: Sequence[Callable[..., Any]], *operands: Any,
           operand: Any = _NO_OPERAND) -> Any:
    """``jax.lax.switch``: ``branches[index](*operands)``, ``index`` clamped into range.

    Raises:
      TypeError: ``index`` is not a scalar integer. ValueError: no branches.
    """
    if not branches:
        raise ValueError("Empty branch sequence")
    operands = _operands("switch", operands, operand)
    dtype, shape = _aval("switch", index)
    if shape or dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index!r} as {dtype}")
    chosen = builtins.min(builtins.max(int(_decide(index)), 0), len(branches) - 1)
    return branches[chosen](*operands)


def _leaf_aval(leaf: Any) -> tuple[np.dtype, tuple[int, ...], bool] | None:
    """``(dtype, shape, weak)`` of a carry leaf, None for what is not an array."""
    py = _PYTHON_DTYPES.get(type(leaf))
    if py is not None:
        return py, (), True
    dtype, shape = getattr(leaf, "dtype", None), getattr(leaf, "shape", None)
    if not isinstance(dtype, np.dtype) or not isinstance(shape, tuple):
        return None
    return _CANONICAL.get(dtype, dtype), shape, False


def _check_carry(where: str, before: Any, after: Any) -> None:
    """Refuse, as JAX does, a loop body whose carry changes structure, shape or dtype.

    A Python scalar in the input carry is weakly typed: its dtype may grow (int -> float),
    as JAX promotes it.
    """
    in_leaves, in_def = _flatten(before)
    out_leaves, out_def = _flatten(after)
    if in_def != out_def:
        raise TypeError(f"{where} carry input and carry output must have the same pytree "
                        f"structure, but they differ: the input carry is {in_def} but the "
                        f"output carry is {out_def}.")
    for index, (a, b) in enumerate(zip(in_leaves, out_leaves, strict=True)):
        aa, bb = _leaf_aval(a), _leaf_aval(b)
        if aa is None or bb is None:
            continue
        what = None
        if aa[1] != bb[1]:
            what = "shapes"
        elif aa[0] != bb[0] and not (aa[2] and _kind_rank(bb[0]) >= _kind_rank(aa[0])):
            what = "dtypes"
        if what:
            raise TypeError(
                f"{where} carry input and carry output must have equal types, but they differ:"
                f"\n\nThe input carry component {index} (leaf {index} of {in_def}) has type "
                f"{_aval_text(aa[0], aa[1])} but the corresponding output carry component has "
                f"type {_aval_text(bb[0], bb[1])}, so the {what} do not match.\n\nRevise the "
                "function so that all output types match the corresponding input types.")


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """``jax.lax.fori_loop``: ``val = body_fun(i, val)`` for ``i`` in ``[lower, upper)``.

    ``i`` is an int32 kernel value inside a kernel (traced, as in JAX) and a Python int
    elsewhere. After every step the carry must keep its structure, shapes and dtypes, as
    JAX requires.

    Raises:
      TypeError: ``lower`` and ``upper`` of different dtypes, non-integer bounds, or a
        body that changes its carry (JAX's message).
    """
    (dl, _), (du, _) = _aval("fori_loop", lower), _aval("fori_loop", upper)
    if dl != du:
        raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                        f"{dl} and {du}")
    if dl.kind not in "iu":
        raise TypeError(f"fori_loop bounds must be integers, got {dl}")
    val = init_val
    in_kernel = bool(_KERNELS)
    for i in range(int(_decide(lower)), int(_decide(upper))):
        new = body_fun(_KernelValue(np.asarray(i, dl)) if in_kernel else i, val)
        _check_carry("fori_loop body_fun", val, new)
        val = new
    return val


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """``jax.lax.while_loop``: ``val = body_fun(val)`` while ``cond_fun(val)``.

    Raises:
      TypeError: ``cond_fun`` returns something other than a bool scalar, or the body
        changes its carry (JAX's messages).
    """
    val = init_val
    while True:
        keep_going = cond_fun(val)
        aval = _leaf_aval(keep_going)
        if aval is None or aval[1] or aval[0] != _BOOL:
            shown = "?" if aval is None else _aval_text(aval[0], aval[1])
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"[ShapedArray({shown})].")
        if not _decide(keep_going):
            return val
        new = body_fun(val)
        _check_carry("while_loop body_fun", val, new)
        val = new


def _stack_ys(ys: list[Any], reverse: bool) -> Any:
    if reverse:
        ys = ys[::-1]
    leaves0, treedef = _flatten(ys[0])
    columns = [treedef.flatten_up_to(y) for y in ys]
    stacked = []
    for j, first in enumerate(leaves0):
        py = _PYTHON_DTYPES.get(type(first))
        column = [np.asarray(c[j], py) if py is not None else _concrete(c[j]) for c in columns]
        stacked.append(np.stack(column))
    if _KERNELS:
        stacked = [_traced_result(s) for s in stacked]
    return treedef.unflatten(stacked)


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None,
         length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False) -> tuple[Any, Any]:
    """``jax.lax.scan``: ``carry, y = f(carry, x)`` over the leading axis of ``xs``;
    returns the final carry and the ``y`` values stacked along a new leading axis.

    Raises:
      ValueError: no ``xs`` and no ``length``, or leading axes of different sizes.
      TypeError: ``f`` changes its carry (JAX's message).
      UnsupportedJaxUsageError: a scan of length 0 (JAX traces ``f`` for the shapes of
        ``ys``; pallas_sim would have to run it).
    """
    from ._src.errors import UnsupportedJaxUsageError

    x_leaves, x_def = _flatten(xs)
    lengths = {np.shape(leaf)[0] for leaf in x_leaves}
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError("scan got no xs and no length" if not lengths else
                         f"scan got values with different leading axis sizes: {sorted(lengths)}")
    n = lengths.pop()
    if n == 0:
        raise UnsupportedJaxUsageError("pallas_sim runs a scan step by step, so it cannot give "
                                       "the stacked outputs of a scan of length 0")
    carry, ys = init, []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        x = x_def.unflatten([leaf[i] for leaf in x_leaves])
        new, y = f(carry, x)
        _check_carry("scan body function", carry, new)
        carry = new
        ys.append(y)
    return carry, _stack_ys(ys, reverse)


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """``jax.lax.map``: ``f`` applied to each slice of ``xs`` along its leading axis, the
    results stacked (:func:`scan` without a carry)."""
    return scan(lambda carry, x: (carry, f(x)), (), xs)[1]


def stop_gradient(x: Any) -> Any:
    """``jax.lax.stop_gradient``: ``x`` itself (pallas_sim has no gradients)."""
    return x


def optimization_barrier(operand: Any, /) -> Any:
    """``jax.lax.optimization_barrier``: ``operand`` itself (nothing is reordered here)."""
    return operand


def _mesh_axes(axis_name: Any, what: str) -> list[tuple[int, int]]:
    """(index, size) of each named mesh axis of the running ``pl.kernel``.

    Raises:
      UnboundAxisError: a name no running kernel's mesh defines (JAX's message).
    """
    from ._src.context import running
    from ._src.errors import UnboundAxisError

    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    ctx = running()
    axes = ctx.axes if ctx is not None else {}
    missing = [n for n in names if n not in axes]
    if missing:
        head = ("Found an unbound axis name: {0}. To fix this, please call axis_index under "
                "`jax.shard_map`." if what == "axis_index" else "unbound axis name: {0}")
        raise UnboundAxisError(
            head.format(missing[0]) + " (pallas_sim binds mesh axes only inside a pl.kernel "
            "body on pltpu.create_tensorcore_mesh(axis_name))")
    return [axes[n] for n in names]


def axis_index(axis_name: Any) -> Any:
    """``jax.lax.axis_index(axis_name)`` inside a ``pl.kernel`` body: this core's index
    along the mesh axis (an int32 kernel value; 0 on the one simulated core). A tuple of
    names gives the row-major index over them.

    Raises:
      UnboundAxisError: outside a ``pl.kernel`` on a mesh with that axis (JAX's
        NameError; JAX's HLO interpreter fails even inside one, TPU interpret mode works).
    """
    index = 0
    for i, size in _mesh_axes(axis_name, "axis_index"):
        index = index * size + i
    return _KernelValue(np.asarray(index, np.int32))


def axis_size(axis_name: Any) -> int:
    """``jax.lax.axis_size(axis_name)`` inside a ``pl.kernel`` body: the mesh axis's size,
    a Python int (1 on the one simulated core); the product for a tuple of names.

    Raises:
      UnboundAxisError: outside a ``pl.kernel`` on a mesh with that axis (JAX's NameError).
    """
    return math.prod(size for _, size in _mesh_axes(axis_name, "axis_size"))


__all__ = sorted(
    name for name, value in list(globals().items())
    if not name.startswith("_") and callable(value) and getattr(value, "__module__", "") ==
    __name__ and name != "canonical_dtype")

#: Functions that call user code (their bodies see kernel values as they are).
_CONTROL_FLOW = {"cond", "switch", "fori_loop", "while_loop", "scan", "map", "axis_index",
                 "axis_size"}
# The array functions take kernel values as JAX's take tracers (pallas_sim._src.values.lift).
for _name in __all__:
    _fn = globals()[_name]
    if _name not in _CONTROL_FLOW and not isinstance(_fn, type):
        globals()[_name] = _lift(_fn)
del _name, _fn
__getattr__ = _surface.refuse_missing("jax.lax", __name__)
