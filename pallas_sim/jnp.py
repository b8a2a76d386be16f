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
:class:`~pallas_sim.errors.UnsupportedJaxAPIError` saying whether JAX has it
(``jnp.rsqrt`` does not: it is ``jax.lax.rsqrt``).
"""

from __future__ import annotations

import builtins as _builtins

import ml_dtypes
import numpy as np

from . import surface as _surface
from .arrays import Array as ndarray  # noqa: F401  (jnp.ndarray is jax.Array)
from .dtypes import as_dtype, is_floating
from .refs import Ref

# dtypes
bfloat16 = ml_dtypes.bfloat16
float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32 = np.uint8, np.uint16, np.uint32
bool_ = np.bool_
bool = np.bool_  # noqa: A001 - jax.numpy's name
int4, uint4 = ml_dtypes.int4, ml_dtypes.uint4
dtype = np.dtype
iinfo = np.iinfo
finfo = ml_dtypes.finfo
inf, nan, pi, e = np.inf, np.nan, np.pi, np.e
newaxis = None

# elementwise and reductions: same semantics as jax.numpy on concrete arrays
from numpy import (  # noqa: E402,F401
    abs,
    absolute,
    add,
    all,
    allclose,
    any,
    arange,
    arctan,
    argmax,
    argmin,
    argsort,
    array_equal,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    broadcast_to,
    ceil,
    clip,
    concatenate,
    cos,
    cosh,
    cumprod,
    cumsum,
    divide,
    equal,
    exp,
    exp2,
    expand_dims,
    expm1,
    eye,
    flip,
    float_power,
    floor,
    floor_divide,
    full,
    greater,
    greater_equal,
    hypot,
    invert,
    isclose,
    isfinite,
    isinf,
    isnan,
    left_shift,
    less,
    less_equal,
    linspace,
    log,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    max,
    maximum,
    mean,
    min,
    minimum,
    mod,
    multiply,
    ndim,
    negative,
    not_equal,
    ones,
    outer,
    pow,
    power,
    prod,
    reciprocal,
    remainder,
    repeat,
    reshape,
    right_shift,
    rint,
    roll,
    round,
    shape,
    sign,
    sin,
    sinh,
    size,
    sort,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    subtract,
    sum,
    swapaxes,
    take,
    tanh,
    tile,
    transpose,
    tril,
    triu,
    true_divide,
    where,
    zeros,
)


def _value(x: object) -> np.ndarray:
    return np.array(x) if isinstance(x, Ref) else np.asarray(x)


def asarray(a: object, dtype: object = None) -> np.ndarray:
    """``jnp.asarray``; reads a ref's whole buffer."""
    v = _value(a)
    return v if dtype is None else v.astype(as_dtype(dtype))


def array(a: object, dtype: object = None) -> np.ndarray:
    """``jnp.array``: always a new array."""
    return np.array(_value(a), dtype=None if dtype is None else as_dtype(dtype))


def zeros_like(a: object, dtype: object = None) -> np.ndarray:
    """Zeros with ``a``'s shape and dtype (``a`` may be a ref)."""
    return np.zeros(a.shape, as_dtype(dtype) if dtype is not None else a.dtype)  # type: ignore


def ones_like(a: object, dtype: object = None) -> np.ndarray:
    """Ones with ``a``'s shape and dtype (``a`` may be a ref)."""
    return np.ones(a.shape, as_dtype(dtype) if dtype is not None else a.dtype)  # type: ignore


def full_like(a: object, fill_value: object, dtype: object = None) -> np.ndarray:
    """``fill_value`` with ``a``'s shape and dtype (``a`` may be a ref)."""
    return np.full(a.shape, fill_value,  # type: ignore[union-attr]
                   as_dtype(dtype) if dtype is not None else a.dtype)  # type: ignore


_F32 = np.dtype(np.float32)


def _compute_dtype(*xs: np.ndarray) -> np.dtype:
    if _builtins.all(x.dtype == _F32 for x in xs):  # the common case, decided fast
        return _F32
    if _builtins.any(x.dtype == np.float64 for x in xs):
        return np.dtype(np.float64)
    if _builtins.any(is_floating(x.dtype) for x in xs):
        return np.dtype(np.float32)
    return np.dtype(np.int64)  # integer products accumulate wide, as the MXU's int32


def _result_dtype(xs: tuple[np.ndarray, ...], preferred: object) -> np.dtype:
    if preferred is not None:
        return as_dtype(preferred)
    return np.result_type(*xs)


def dot(a: object, b: object, *, preferred_element_type: object = None,
        precision: object = None) -> np.ndarray:
    """``jnp.dot`` with MXU-style accumulation.

    Inputs (any float dtype incl. bf16) are multiplied and summed in float32
    (float64 if either is float64); the result has ``preferred_element_type``
    or the inputs' promoted dtype.
    """
    x, y = _value(a), _value(b)
    c = _compute_dtype(x, y)
    return np.dot(x.astype(c, copy=False), y.astype(c, copy=False)).astype(
        _result_dtype((x, y), preferred_element_type), copy=False)


def matmul(a: object, b: object, *, preferred_element_type: object = None,
           precision: object = None) -> np.ndarray:
    """``jnp.matmul`` (batched ``@``) with the accumulation rule of :func:`dot`."""
    x, y = _value(a), _value(b)
    c = _compute_dtype(x, y)
    return np.matmul(x.astype(c, copy=False), y.astype(c, copy=False)).astype(
        _result_dtype((x, y), preferred_element_type), copy=False)


def einsum(subscripts: str, *operands: object, preferred_element_type: object = None,
           precision: object = None) -> np.ndarray:
    """``jnp.einsum`` with the accumulation rule of :func:`dot`."""
    xs = tuple(_value(o) for o in operands)
    c = _compute_dtype(*xs)
    return np.einsum(subscripts, *(x.astype(c, copy=False) for x in xs)).astype(
        _result_dtype(xs, preferred_element_type), copy=False)


def astype(x: object, dtype: object) -> np.ndarray:
    """``jnp.astype``."""
    return _value(x).astype(as_dtype(dtype))


#: The public names: every dtype, constant and function above; not the helpers this
#: module imports (``Ref``, ``as_dtype``, ``is_floating``) nor the modules it uses.
__all__ = sorted(
    name for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, type(_builtins))
    and name not in {"Ref", "as_dtype", "is_floating", "annotations", "ml_dtypes", "np"})
__getattr__ = _surface.refuse_missing("jax.numpy", __name__)
