"""NumPy's functions as ``jax.numpy`` offers them: each of the names in
:data:`NUMPY_FUNCTIONS` (``jnp.exp``, ``jnp.sum``, ``jnp.where``, ``jnp.zeros``, ...) is
NumPy's function of that name, lifted (:func:`_lift`) to accept kernel values, to compute
64-bit results in 32 bits as JAX does with x64 off, and to count its ops in a trace.
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

from . import op_accounting as _ops
from .values import (
    KERNELS,
    KernelValue,
    _has_traced,
    _wrap,
    canonical_dtype,
    captured,
    concrete,
    requested_dtype,
)

# elementwise, reductions, constructors: NumPy's functions, lifted (see _lift)
NUMPY_FUNCTIONS = (
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
    elementwise = kind in ("vpu", "eup")  # one op per element of the result
    counted_as = "eup_ops" if kind == "eup" else "vpu_ops"

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
                    a = dtype_arg(a, name)
            elif in_kernel and t is np.ndarray and a.ndim:
                raise captured(a)
            plain.append(a)
        if kwargs:
            if kwargs.get("dtype") is not None:
                kwargs["dtype"] = dtype_arg(kwargs["dtype"], name)
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
            if elementwise and type(out) is KernelValue and out._a.ndim:
                _ops._STACK[-1].produced(counted_as, out._a.size)  # what ``count`` does, inline
            else:
                _ops.count(kind, args, kwargs, out)
        return out

    lifted.__name__ = lifted.__qualname__ = name
    lifted.__module__ = "pallas_sim.jnp"
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


for _name in NUMPY_FUNCTIONS:
    globals()[_name] = _lift(getattr(np, _name))
del _name


def dtype_arg(dtype: object, caller: str) -> np.dtype | None:
    """``dtype`` as the function ``caller`` computes in (None stays None); a 64-bit
    request is truncated to 32 bits with JAX's warning."""
    return None if dtype is None else requested_dtype(dtype, caller)
