"""The ``jnp`` namespace: a NumPy-backed subset of ``jax.numpy``.

Names are NumPy's where JAX's behave the same on concrete arrays.  The
differences that matter inside kernels are handled here:

* ``dot`` / ``matmul`` / ``einsum`` accept ``preferred_element_type``: the
  inputs are multiplied in float32 (float64 if an input is float64) and the
  result is cast to that type, which is how the MXU takes bf16 inputs and
  accumulates in f32 (lecture §4).
* ``zeros_like`` / ``ones_like`` / ``full_like`` accept refs.
* ``bfloat16`` is ``ml_dtypes.bfloat16``; ``finfo`` understands it.

Only the names listed here exist, so code that runs here also finds its
functions in real ``jax.numpy``; any other name raises
:class:`~pallas_sim.UnsupportedJaxAPIError` saying whether JAX has it
(``jnp.rsqrt`` does not: it is ``jax.lax.rsqrt``).
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any

import ml_dtypes
import numpy as np

from ._src import op_accounting as _ops
from ._src import surface as _surface
from ._src.arrays import Array as ndarray  # noqa: F401  (jnp.ndarray is jax.Array)
from ._src.dtypes import is_floating
from ._src.refs import Ref
from ._src.values import (
    KERNELS,
    KernelValue,
    _has_traced,
    _wrap,
    canonical_dtype,
    captured,
    concrete,
    requested_dtype,
)

# dtypes
bfloat16 = ml_dtypes.bfloat16
bool = np.bool_  # noqa: A001 - jax.numpy's name
int4, uint4 = ml_dtypes.int4, ml_dtypes.uint4
float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32 = np.uint8, np.uint16, np.uint32
bool_ = np.bool_
dtype = np.dtype
iinfo = np.iinfo
finfo = ml_dtypes.finfo
inf, nan, pi, e = np.inf, np.nan, np.pi, np.e
newaxis = None

# elementwise, reductions, constructors: NumPy's functions, lifted (see _lift)
_NUMPY_FUNCTIONS = (
    "abs",
    "absolute",
    "add",
    "all",
    "allclose",
    "any",
    "arange",
    "arctan",
    "argmax",
    "argmin",
    "argsort",
    "array_equal",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_to",
    "ceil",
    "clip",
    "concatenate",
    "cos",
    "cosh",
    "cumprod",
    "cumsum",
    "divide",
    "equal",
    "exp",
    "exp2",
    "expand_dims",
    "expm1",
    "eye",
    "flip",
    "float_power",
    "floor",
    "floor_divide",
    "full",
    "greater",
    "greater_equal",
    "hypot",
    "invert",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "multiply",
    "ndim",
    "negative",
    "not_equal",
    "ones",
    "outer",
    "pow",
    "power",
    "prod",
    "reciprocal",
    "remainder",
    "repeat",
    "reshape",
    "right_shift",
    "rint",
    "roll",
    "round",
    "shape",
    "sign",
    "sin",
    "sinh",
    "size",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "subtract",
    "sum",
    "swapaxes",
    "take",
    "tanh",
    "tile",
    "transpose",
    "tril",
    "triu",
    "true_divide",
    "where",
    "zeros",
)


def _lift(fn: Any) -> Any:
    """``fn`` (a NumPy function) as ``jax.numpy`` offers it: it accepts kernel values
    (and returns one when any argument is one), computes 64-bit results in 32 bits as
    JAX does with x64 off, and truncates an explicit 64-bit dtype with JAX's warning."""
    name = fn.__name__
    kind = _ops.category(name)

    def lifted(*args: Any, **kwargs: Any) -> Any:
        in_kernel = _builtins.bool(KERNELS)
        traced = False
        plain = []  # the arguments as NumPy takes them, built in the one pass
        for a in args:
            t = type(a)
            if t is KernelValue:
                traced = True
                a = a._a
            elif t is list or t is tuple:
                if _has_traced(a, in_kernel):
                    traced = True
                    a = concrete(a)
            elif t is type or t is np.dtype:
                if _is_dtype(a):
                    a = _dtype_arg(a, name)
            elif in_kernel and t is np.ndarray and a.ndim:
                raise captured(a)
            plain.append(a)
        if kwargs:
            if kwargs.get("dtype") is not None:
                kwargs["dtype"] = _dtype_arg(kwargs["dtype"], name)
            for key, v in list(kwargs.items()):
                t = type(v)
                if t is KernelValue:
                    traced = True
                    kwargs[key] = v._a
                elif t is list or t is tuple:
                    if _has_traced(v, in_kernel):
                        traced = True
                        kwargs[key] = concrete(v)
                elif in_kernel and isinstance(v, np.ndarray) and v.ndim:
                    raise captured(v)
        if not (traced or in_kernel):
            return _canonical(fn(*plain, **kwargs))
        out = _wrap(fn(*plain, **kwargs))  # in a kernel, even from Python values: traced
        if _ops._STACK:
            _ops.count(kind, args, kwargs, out)
        return out

    lifted.__name__ = lifted.__qualname__ = name
    lifted.__module__ = __name__
    lifted.__doc__ = (f"``jax.numpy.{name}``: NumPy's ``{name}``, accepting kernel values, "
                      "in JAX's 32-bit default dtypes.")
    return lifted


def _is_dtype(x: object) -> bool:
    if x in (_builtins.bool, int, float, complex):  # Python's types: JAX's defaults, no warning
        return False
    try:
        np.dtype(x)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True


def _canonical(out: Any) -> Any:
    if isinstance(out, np.ndarray | np.generic):
        dt = canonical_dtype(out.dtype)
        return out if dt == out.dtype else out.astype(dt)
    if isinstance(out, list | tuple):
        return type(out)(_canonical(o) for o in out)
    return out


for _name in _NUMPY_FUNCTIONS:
    globals()[_name] = _lift(getattr(np, _name))
del _name



def _value(x: object) -> Any:
    """An operand as an array or kernel value (a ref reads its whole buffer, as JAX's
    ``ref[...]``; inside a kernel, anything else becomes a kernel value, and a non-scalar
    NumPy array is a captured constant).

    Raises:
      CapturedConstantError: a non-scalar NumPy array inside a running kernel.
    """
    if isinstance(x, Ref):
        return x[...]
    if type(x) is KernelValue:
        return x
    if KERNELS:
        if isinstance(x, np.ndarray) and x.ndim:
            raise captured(x)
        return _wrap(np.asarray(x))
    return np.asarray(x)


def _dtype_arg(dtype: object, caller: str) -> np.dtype | None:
    return None if dtype is None else requested_dtype(dtype, caller)


def asarray(a: object, dtype: object = None) -> Any:
    """``jnp.asarray``: ``a`` as an array (a ref: its whole buffer; a kernel value stays
    traced); a 64-bit ``dtype`` is truncated to 32 bits with JAX's warning."""
    v = _value(a)
    want = _dtype_arg(dtype, "asarray")
    return v if want is None else v.astype(want)


def array(a: object, dtype: object = None) -> Any:
    """``jnp.array``: always a new array (see :func:`asarray`)."""
    v = _value(a)
    want = _dtype_arg(dtype, "array")
    return v.copy() if want is None else v.astype(want)


def _like(a: object, dtype: object, fill: object, caller: str) -> Any:
    want = _dtype_arg(dtype, caller)
    out = np.full(a.shape, fill, want if want is not None else a.dtype)  # type: ignore
    return KernelValue(out) if KERNELS or isinstance(a, Ref | KernelValue) else out


def zeros_like(a: object, dtype: object = None) -> Any:
    """Zeros with ``a``'s shape and dtype (``a`` may be a ref or a kernel value, and the
    result is then a kernel value)."""
    return _like(a, dtype, 0, "zeros_like")


def ones_like(a: object, dtype: object = None) -> Any:
    """Ones with ``a``'s shape and dtype (``a`` may be a ref or a kernel value)."""
    return _like(a, dtype, 1, "ones_like")


def full_like(a: object, fill_value: object, dtype: object = None) -> Any:
    """``fill_value`` with ``a``'s shape and dtype (``a`` may be a ref or a kernel value)."""
    return _like(a, dtype, concrete(fill_value), "full_like")


_F32 = np.dtype(np.float32)


def _compute_dtype(*xs: np.ndarray) -> np.dtype:
    if _builtins.all(x.dtype == _F32 for x in xs):  # the common case, decided fast
        return _F32
    if _builtins.any(is_floating(x.dtype) for x in xs):
        return np.dtype(np.float32)
    return np.dtype(np.int32)  # integer products accumulate in int32, as the MXU's


def _result_dtype(xs: tuple[np.ndarray, ...], preferred: object) -> np.dtype:
    if preferred is not None:
        return requested_dtype(preferred, "preferred_element_type")
    return canonical_dtype(np.result_type(*xs))


def _product(fn: Any, operands: tuple[object, ...], preferred: object, *args: object) -> Any:
    """``fn(*args, *operands)`` with the MXU's accumulation rule (see :func:`dot`); a kernel
    value back when any operand is one."""
    values = tuple(_value(o) for o in operands)
    traced = KERNELS or _builtins.any(type(v) is KernelValue for v in values)
    xs = tuple(concrete(v) for v in values)
    c = _compute_dtype(*xs)
    out = fn(*args, *(x.astype(c, copy=False) for x in xs)).astype(
        _result_dtype(xs, preferred), copy=False)
    if _ops._STACK and len(xs) >= 2:
        contracted = (_ops.einsum_contracted(args[0], xs) if args else
                      xs[0].shape[-1] if xs[0].ndim else 1)
        _ops.product(xs[0], xs[1], out.size, contracted)
    return KernelValue(out) if traced else out


def dot(a: object, b: object, *, preferred_element_type: object = None,
        precision: object = None) -> Any:
    """``jnp.dot`` with MXU-style accumulation.

    Inputs (any float dtype incl. bf16) are multiplied and summed in float32;
    the result has ``preferred_element_type`` or the inputs' promoted dtype
    (32-bit at most, as JAX with 64-bit types off).
    """
    return _product(np.dot, (a, b), preferred_element_type)


def matmul(a: object, b: object, *, preferred_element_type: object = None,
           precision: object = None) -> Any:
    """``jnp.matmul`` (batched ``@``) with the accumulation rule of :func:`dot`."""
    return _product(np.matmul, (a, b), preferred_element_type)


def einsum(subscripts: str, *operands: object, preferred_element_type: object = None,
           precision: object = None) -> Any:
    """``jnp.einsum`` with the accumulation rule of :func:`dot`."""
    return _product(np.einsum, operands, preferred_element_type, subscripts)


def astype(x: object, dtype: object) -> Any:
    """``jnp.astype`` (a 64-bit ``dtype`` is truncated to 32 bits with JAX's warning)."""
    return _value(x).astype(requested_dtype(dtype, "astype"))




#: The public names: every dtype, constant and function above; not the helpers this
#: module imports (``Ref``, ``as_dtype``, ``is_floating``) nor the modules it uses.
__all__ = sorted(
    name for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, type(_builtins))
    and name not in {"Ref", "as_dtype", "is_floating", "annotations", "ml_dtypes", "np", "Any",
                     "KernelValue", "canonical_dtype", "concrete", "requested_dtype", "KERNELS",
                     "captured"})
__getattr__ = _surface.refuse_missing("jax.numpy", __name__)
