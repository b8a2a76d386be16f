"""``jnp.dot``, ``jnp.matmul`` and ``jnp.einsum`` with the MXU's accumulation rule, and the
operators of kernel values that are products (``@``, ``x.dot``).

JAX's way: the core array type gets the methods that belong to the numpy layer installed
from it when that layer is imported (``jax.numpy`` installs them on ``jax.Array``), so
the core (:mod:`pallas_sim._src.values`) never imports the numpy layer. Here the last
lines of this module install ``@`` and ``dot`` on :class:`KernelValue`; ``pallas_sim``
imports ``jnp``, and so this module, before any kernel runs.
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

from . import op_accounting as _ops
from .dtypes import is_floating
from .exports import publish
from .jnp_arrays import as_value
from .values import KERNELS, KernelValue, canonical_dtype, concrete, requested_dtype

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
    if len(operands) == 2:
        fast = _f32_product(fn, operands, preferred, args)
        if fast is not None:
            return fast
    values = tuple(as_value(o) for o in operands)
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


def _f32_product(fn: Any, operands: tuple[object, ...], preferred: object,
                 args: tuple[object, ...]) -> Any:
    """The common case of :func:`_product`, decided in a few lookups: two kernel values of
    float dtypes (f32, bf16, ...), as in ``jnp.dot(p, v, preferred_element_type=
    jnp.float32)`` or ``q @ k.T`` in a kernel; None for anything else, which takes the
    general path. Computes and counts exactly what the general path does: the operands in
    float32, the result in ``preferred`` or else the operands' promoted dtype."""
    a, b = operands
    if type(a) is not KernelValue or type(b) is not KernelValue:
        return None
    x, y = a._a, b._a
    if type(x) is not np.ndarray or type(y) is not np.ndarray:
        return None
    dx, dy = x.dtype, y.dtype
    if dx != _F32 or dy != _F32:
        if not (_floating(dx) and _floating(dy)):
            return None
    if preferred is not None:
        result = requested_dtype(preferred, "preferred_element_type")
    else:
        result = _PROMOTED.get((dx, dy))
        if result is None:
            result = _PROMOTED[dx, dy] = canonical_dtype(np.result_type(dx, dy))
    out = fn(*args, x.astype(_F32, copy=False), y.astype(_F32, copy=False))
    if type(out) is not np.ndarray:
        return None
    out = out.astype(result, copy=False)
    if _ops._STACK:
        contracted = _ops.einsum_contracted(args[0], (x, y)) if args else (
            x.shape[-1] if x.ndim else 1)
        _ops.product(x, y, out.size, contracted)
    return KernelValue(out)


#: The promoted (32-bit) dtype of a product's two operand dtypes, when no result dtype is
#: asked for.
_PROMOTED: dict[tuple[np.dtype, np.dtype], np.dtype] = {}
#: Whether a dtype is a float (``is_floating``), by dtype: asked at every product.
_FLOATING_DTYPES: dict[np.dtype, bool] = {}


def _floating(dt: np.dtype) -> bool:
    known = _FLOATING_DTYPES.get(dt)
    if known is None:
        known = _FLOATING_DTYPES[dt] = bool(is_floating(dt))
    return known


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


publish("pallas_sim.jnp", globals(), ["dot", "matmul", "einsum"])


def _matmul(a: Any, b: Any) -> Any:
    return matmul(a, b)  # jnp's product rule: MXU-style f32 accumulation


KernelValue.__matmul__ = KernelValue.__imatmul__ = lambda self, other: _matmul(self, other)
KernelValue.__rmatmul__ = lambda self, other: _matmul(other, self)
KernelValue.dot = lambda self, other: _matmul(self, other)
