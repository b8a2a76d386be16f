"""The ``jax`` namespace: ``jax.ShapeDtypeStruct``, ``jax.numpy``, ``jax.jit`` and a
small ``jax.lax`` (the names Pallas kernels commonly use on TPU)."""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from . import jnp as numpy  # noqa: F401  (jax.numpy)
from .dtypes import as_dtype
from .specs import ShapeDtypeStruct

T = TypeVar("T")


def jit(fun: Callable[..., T] | None = None, *, static_argnums: object = None,
        static_argnames: object = None, donate_argnums: object = None,
        **_options: object) -> Callable[..., T]:
    """``jax.jit``: there is nothing to compile here, so the function runs as it is.

    Accepted both as ``@jax.jit`` and as ``functools.partial(jax.jit,
    static_argnames=...)``, so wrappers written for real JAX run unchanged.
    """
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums,  # type: ignore[return-value]
                             static_argnames=static_argnames, donate_argnums=donate_argnums)
    return fun


def _fori_loop(lower: int, upper: int, body_fun: Callable[[int, T], T], init_val: T,
               *, unroll: object = None) -> T:
    """``jax.lax.fori_loop``: ``val = body_fun(i, val)`` for i in [lower, upper)."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def _broadcasted_iota(dtype: object, shape: Sequence[int], dimension: int) -> np.ndarray:
    """``jax.lax.broadcasted_iota``: an array of ``shape`` whose value is the index
    along ``dimension`` (the usual way to build causal masks inside a kernel).

    Raises:
      ValueError: ``dimension`` is not an axis of ``shape``.
    """
    shape = tuple(int(d) for d in shape)
    if not 0 <= dimension < len(shape):
        raise ValueError(f"broadcasted_iota dimension={dimension} for shape {shape}")
    index = np.arange(shape[dimension]).reshape(
        [-1 if axis == dimension else 1 for axis in range(len(shape))])
    return np.broadcast_to(index, shape).astype(as_dtype(dtype))


lax = types.SimpleNamespace(
    fori_loop=_fori_loop,
    broadcasted_iota=_broadcasted_iota,
    exp=np.exp,
    max=np.maximum,
    min=np.minimum,
    select=np.where,
)

__all__ = ["ShapeDtypeStruct", "jit", "lax", "numpy"]
