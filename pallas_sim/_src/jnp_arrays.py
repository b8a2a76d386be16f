"""``jax.numpy``'s array makers that take refs and kernel values: ``asarray``, ``array``,
``zeros_like``, ``ones_like``, ``full_like`` and ``astype``, and :func:`as_value`, how
``jnp`` reads any operand (a ref: its whole buffer)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import convert
from .exports import publish
from .jnp_lifted import dtype_arg
from .refs import Ref
from .values import KERNELS, KernelValue, _wrap, captured, concrete, requested_dtype


def as_value(x: object) -> Any:
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


def asarray(a: object, dtype: object = None) -> Any:
    """``jnp.asarray``: ``a`` as an array (a ref: its whole buffer; a kernel value stays
    traced); a 64-bit ``dtype`` is truncated to 32 bits with JAX's warning."""
    v = as_value(a)
    want = dtype_arg(dtype, "asarray")
    return v if want is None else _astype(v, want)


def array(a: object, dtype: object = None) -> Any:
    """``jnp.array``: always a new array (see :func:`asarray`)."""
    v = as_value(a)
    want = dtype_arg(dtype, "array")
    return v.copy() if want is None else _astype(v, want)


def _like(a: object, dtype: object, fill: object, caller: str) -> Any:
    want = dtype_arg(dtype, caller)
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


def astype(x: object, dtype: object) -> Any:
    """``jnp.astype`` (a 64-bit ``dtype`` is truncated to 32 bits with JAX's warning)."""
    return _astype(as_value(x), requested_dtype(dtype, "astype"))


def _astype(v: Any, dtype: np.dtype) -> Any:
    """``v`` in ``dtype``, floats to integers saturating as in JAX (``dtypes.convert``)."""
    if isinstance(v, np.ndarray | np.generic):
        return convert(v, dtype)
    return v.astype(dtype)  # a kernel value converts alike (values.KernelValue.astype)


publish("pallas_sim.jnp", globals(),
        ["asarray", "array", "zeros_like", "ones_like", "full_like", "astype"])
