"""``jax.Array`` (also ``jnp.ndarray``): the type of the arrays pallas_sim computes.

pallas_sim's arrays are plain NumPy arrays and scalars, so ``jax.Array`` is a
class whose ``isinstance`` accepts ``np.ndarray``, NumPy's number and bool
scalars (what JAX returns as 0-d arrays, e.g. ``jnp.sum(x)``) and instances of
its subclasses (the typed PRNG keys of :mod:`pallas_sim.random`). It exists
for annotations (``def f(x: jax.Array) -> jax.Array``) and ``isinstance``
checks; it cannot be instantiated, and it has no ``register``, so no code can
change what counts as an array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .values import KernelValue

#: The NumPy types that stand for a ``jax.Array``.
ARRAY_TYPES: tuple[type, ...] = (np.ndarray, np.number, np.bool_, KernelValue)


class _ArrayMeta(type):
    """``isinstance(x, Array)`` also holds for the NumPy types; for a subclass of Array
    only its own instances count."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return (cls is Array and isinstance(obj, ARRAY_TYPES)) or \
            type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return (cls is Array and isinstance(sub, type) and issubclass(sub, ARRAY_TYPES)) or \
            type.__subclasscheck__(cls, sub)


class Array(metaclass=_ArrayMeta):
    """``jax.Array``: ``isinstance(x, jax.Array)`` holds for NumPy arrays and NumPy
    number/bool scalars, and for pallas_sim's own array types (its subclasses).

    Raises:
      TypeError: on ``jax.Array(...)``; as in JAX, arrays come from ``jnp``
        functions (``jnp.asarray``, ``jnp.zeros``), not from the class.
    """

    __slots__ = ()

    def __new__(cls, *args: object, **kwargs: object) -> Array:
        if cls is Array:
            raise TypeError("jax.Array cannot be instantiated; make arrays with jnp.asarray, "
                            "jnp.zeros, ... (as in JAX)")
        return super().__new__(cls)


def is_array(value: object) -> bool:
    """True for what pallas_sim treats as a JAX array: :class:`Array` instances whose
    dtype JAX has (bool, integers, floats incl. bfloat16, complex)."""
    if not isinstance(value, Array):
        return False
    dtype = getattr(value, "dtype", None)
    if not isinstance(dtype, np.dtype):
        return True  # pallas_sim's own array types (keys) carry their own dtype
    return dtype.kind in "biufc" or dtype.type.__module__.startswith("ml_dtypes")
