"""The JAX context managers and helpers that have nothing to do when everything runs eagerly
on NumPy: ``named_scope``, ``ensure_compile_time_eval``, ``disable_jit``,
``default_matmul_precision``, ``block_until_ready`` and ``device_put``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np

from .exports import publish
from .lax_common import canonical_dtype
from .pytrees import flatten as _flatten

T = TypeVar("T")


class named_scope(contextlib.ContextDecorator):  # noqa: N801 - JAX's name
    """``jax.named_scope(name)``: a context manager and decorator that names the ops inside
    it in JAX's profiles; a no-op here.

    Raises:
      TypeError: ``name`` is not a string (JAX's message).
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """``jax.ensure_compile_time_eval()``: everything already runs eagerly here."""
    yield


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """``jax.disable_jit()``: nothing is compiled here anyway."""
    yield


@contextlib.contextmanager
def default_matmul_precision(name: str | None) -> Iterator[None]:
    """``jax.default_matmul_precision(name)``: accepted; products are float32 here."""
    yield


def block_until_ready(x: T) -> T:
    """``jax.block_until_ready``: ``x`` itself (pallas_sim computes synchronously)."""
    return x


def device_put(x: Any, device: object = None, *, src: object = None, donate: object = False,
               may_alias: object = None) -> Any:
    """``jax.device_put``: ``x`` as device arrays would be: every array leaf copied (a
    later change to ``x`` does not show), 64-bit dtypes as their 32-bit versions and
    Python numbers as 0-d arrays of int32/float32, as JAX converts them (x64 off)."""
    leaves, treedef = _flatten(x)
    moved = []
    for leaf in leaves:
        if type(leaf) in (bool, int, float, complex):
            leaf = np.asarray(leaf)
        if isinstance(leaf, np.ndarray | np.generic):
            leaf = np.array(leaf, dtype=canonical_dtype(leaf.dtype))
        moved.append(leaf)
    return treedef.unflatten(moved)


__all__ = ["block_until_ready", "default_matmul_precision", "device_put", "disable_jit",
           "ensure_compile_time_eval", "named_scope"]
publish("pallas_sim.jax", globals(), __all__)
