"""``pl.loop``: a decorator that runs its function over a range of indices.

::

    @pl.loop(0, n_rows, step=8)
    def _(i):                       # i: an int32 kernel value, 0, 8, 16, ...
        o_ref[pl.ds(i, 8), :] = x_ref[pl.ds(i, 8), :] * 2

    @pl.loop(0, 4, init_carry=jnp.zeros((8, 128), jnp.float32))
    def total(i, acc):              # with a carry: returns the next one
        return acc + x_ref[pl.ds(i * 8, 8), :]

As in JAX 0.10.x, the loop runs ``cdiv(upper - lower, step)`` times (JAX's ``pl.cdiv``,
which for a negative ``step`` with Python ints rounds as ``(a + b - 1) // b``) with index
``lower + k * step``, through ``jax.lax.fori_loop``: the index is a traced int32 value
inside a kernel, the carry must keep its structure, shapes and dtypes, and a body without
a carry must return None. ``unroll`` changes nothing here (it only changes the code JAX
generates).

Source: ``jax._src.pallas.helpers.loop`` (JAX 0.10.x).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .lax_control_flow import fori_loop
from .values import KERNELS, KernelValue, canonical_dtype, concrete


def loop(lower: Any, upper: Any, *, init_carry: Any = None, step: Any = 1,
         unroll: int | bool | None = None) -> Callable[[Callable[..., Any]], Any]:
    """``pl.loop(lower, upper, *, init_carry=None, step=1, unroll=None)``.

    Args:
      lower, upper: the range's ends (Python ints or int32 kernel values, e.g.
        ``pl.program_id(0)`` or a value loaded from SMEM).
      init_carry: a pytree carried through the iterations; with it the body is
        ``body(i, carry) -> carry`` and the decorator returns the final carry.
      step: the index's increment (a non-zero int; may be negative).
      unroll: accepted, as in JAX; no effect on the result.

    Returns:
      A decorator; applying it runs the loop at once and returns None (no carry) or the
      final carry.

    Raises:
      ZeroDivisionError: ``step == 0`` with Python ints (as in JAX).
      TypeError: bounds that are not integers (JAX: "lax.div requires arguments to have
        the same dtypes"), a body without a carry that returns a value, or a carry whose
        structure, shape or dtype changes (JAX's messages).
    """
    static = all(isinstance(v, int | np.integer) and not isinstance(v, bool)
                 for v in (lower, upper, step))
    if not static:
        for v in (lower, upper, step):
            dt = canonical_dtype(np.asarray(concrete(v)).dtype)
            if dt.kind not in "iu":
                raise TypeError("lax.div requires arguments to have the same dtypes, got "
                                f"{dt.name}, int32. (pl.loop bounds and step must be "
                                "integers)")
    lo, hi, st = (int(np.asarray(concrete(v))) for v in (lower, upper, step))
    if static:
        count = (hi - lo + st - 1) // st  # JAX's pl.cdiv on Python ints
    else:
        if st == 0:
            raise ZeroDivisionError("pl.loop step is 0")
        span = hi - lo + (st - 1)
        count = abs(span) // abs(st) * (1 if (span >= 0) == (st > 0) else -1)  # lax.div

    def decorator(body: Callable[..., Any]) -> Any:
        def with_index(k: Any, carry: Any) -> Any:
            index = _index(lo + int(concrete(k)) * st, static)
            if init_carry is None:
                result = body(index)
                if result is not None:
                    raise TypeError(
                        "scan body function carry input and carry output must have the same "
                        "pytree structure, but they differ: the input carry is None but the "
                        f"body returned {type(result).__name__}. (a pl.loop body without "
                        "init_carry must return None)")
                return None
            return body(index, carry)

        return fori_loop(0, count, with_index, init_carry, unroll=unroll)

    return decorator


def _index(value: int, static: bool) -> Any:
    """``lower + k * step``: an int32 kernel value inside a kernel (traced in JAX), else a
    NumPy int32 scalar (a concrete JAX array)."""
    if KERNELS or not static:
        return KernelValue(np.asarray(value, np.int32))
    return np.int32(value)
