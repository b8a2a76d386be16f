"""``jax.custom_vjp`` and ``jax.custom_jvp`` without autodiff: calling one runs the forward
function; the rules are recorded and never run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from .exports import publish


class custom_vjp:  # noqa: N801 - JAX's name
    """``jax.custom_vjp``: calling it runs ``fun`` (pallas_sim has no autodiff); ``defvjp``
    records the forward and backward rules, which JAX requires before the first call.

    Raises (on call):
      AttributeError: no ``defvjp`` yet (JAX's message).
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.nondiff_argnames = tuple(nondiff_argnames)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self.symbolic_zeros = False
        self.optimize_remat = False

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any],
               symbolic_zeros: bool = False, optimize_remat: bool = False) -> None:
        """Record ``fwd`` (``args -> (out, residuals)``) and ``bwd``
        (``(residuals, cotangent) -> input cotangents``); pallas_sim never calls them."""
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros, self.optimize_remat = symbolic_zeros, optimize_remat

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself, as JAX does outside differentiation (no ``fwd``/``bwd``).

        Raises:
          AttributeError: ``defvjp`` was never called (JAX's message).
        """
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using defvjp.")
        return self.fun(*args, **kwargs)


class custom_jvp:  # noqa: N801 - JAX's name
    """``jax.custom_jvp``: calling it runs ``fun``; ``defjvp``/``defjvps`` record the rule,
    which JAX requires before the first call.

    Raises (on call):
      AttributeError: no ``defjvp`` yet (JAX's message).
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable[..., Any], symbolic_zeros: bool = False) -> Callable[..., Any]:
        """Record the JVP rule ``(primals, tangents) -> (out, tangent_out)``; returns it."""
        self.jvp, self.symbolic_zeros = jvp, symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """Record one tangent rule per argument."""
        self.jvp = lambda primals, tangents: (self.fun(*primals), jvps)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself, as JAX does outside differentiation (no JVP rule runs).

        Raises:
          AttributeError: ``defjvp``/``defjvps`` was never called (JAX's message).
        """
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using defjvp.")
        return self.fun(*args, **kwargs)


__all__ = ["custom_jvp", "custom_vjp"]
publish("pallas_sim.jax", globals(), __all__)
