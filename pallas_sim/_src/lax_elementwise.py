"""``jax.lax``'s elementwise functions: arithmetic, comparisons, bitwise ops and shifts, the
float functions (``exp``, ``rsqrt``, ``erf``, ...), rounding, ``clamp`` and ``select``;
both operands of one dtype, as JAX requires.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np

from .exports import publish
from .lax_common import (
    _BOOL,
    _INEXACT,
    _aval,
    _aval_text,
    _binary,
    _broadcast_shapes,
    _cast,
    _require,
    _same_dtypes,
    _unary,
    _value,
    canonical_dtype,
    lift_functions,
)


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


__all__ = ["RoundingMethod", "abs", "add", "atan2", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "cbrt", "ceil", "clamp", "cos", "div", "eq", "erf", "exp", "exp2",
    "expm1", "floor", "ge", "gt", "integer_pow", "is_finite", "le", "log", "log1p",
    "logistic", "lt", "max", "min", "mul", "ne", "neg", "nextafter", "pow",
    "reciprocal", "rem", "round", "rsqrt", "select", "select_n", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sqrt", "square",
    "sub", "tan", "tanh"]
publish("pallas_sim.lax", globals(), __all__)
# The array functions take kernel values as JAX's take tracers (values.lift).
lift_functions(globals(), __all__)
