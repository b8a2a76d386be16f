"""The ``jax`` namespace: ``jax.ShapeDtypeStruct``, ``jax.numpy`` and a tiny ``jax.lax``."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TypeVar

from . import jnp as numpy  # noqa: F401  (jax.numpy)
from .specs import ShapeDtypeStruct

T = TypeVar("T")


def _fori_loop(lower: int, upper: int, body_fun: Callable[[int, T], T], init_val: T,
               *, unroll: object = None) -> T:
    """``jax.lax.fori_loop``: ``val = body_fun(i, val)`` for i in [lower, upper)."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


lax = types.SimpleNamespace(fori_loop=_fori_loop)

__all__ = ["ShapeDtypeStruct", "lax", "numpy"]
