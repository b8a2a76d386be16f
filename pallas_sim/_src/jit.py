"""``jax.jit`` without compiling: the function runs as it is, with JAX's checks of static and
traced arguments.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .arrays import Array, is_array
from .errors import UnsupportedJaxUsageError
from .exports import publish
from .pytrees import flatten as _flatten
from .refs import Ref
from .specs import ShapeDtypeStruct

T = TypeVar("T")
_NOT_GIVEN: Any = object()


def _is_jax_value(leaf: Any) -> bool:
    """What JAX accepts as a traced argument: arrays of numeric dtypes, Python scalars,
    keys, refs and ``ShapeDtypeStruct``s."""
    if type(leaf) in (bool, int, float, complex):
        return True
    if isinstance(leaf, Array):
        return is_array(leaf)
    return isinstance(leaf, Ref | ShapeDtypeStruct) or hasattr(type(leaf), "__jax_array__")


def _static_positions(fun: Callable[..., Any], argnums: Any, argnames: Any
                      ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """JAX's rule: static_argnums and static_argnames each imply the other through the
    signature of ``fun``.

    Raises:
      ValueError: a name ``fun`` does not take, or a position beyond its parameters.
    """
    nums = () if argnums is None else ((argnums,) if isinstance(argnums, int) else
                                       tuple(int(n) for n in argnums))
    names = () if argnames is None else ((argnames,) if isinstance(argnames, str) else
                                         tuple(argnames))
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    kinds = inspect.Parameter
    positional = [p.name for p in params if p.kind in (kinds.POSITIONAL_ONLY,
                                                       kinds.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD,
                                                    kinds.KEYWORD_ONLY)}
    var_positional = any(p.kind is kinds.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind is kinds.VAR_KEYWORD for p in params)
    invalid = {n for n in names if n not in by_name}
    if invalid and not var_keyword:
        raise ValueError(f"Jitted function has invalid argnames {invalid} in static_argnames. "
                         "Function does not take these args.")
    if not var_positional and any(n >= len(positional) for n in nums):
        raise ValueError(f"Jitted function has static_argnums={nums}, but only accepts "
                         f"{len(positional)} positional arguments.")
    nums = nums + tuple(i for i, n in enumerate(positional) if n in names and i not in nums)
    names = names + tuple(positional[n] for n in nums
                          if 0 <= n < len(positional) and positional[n] not in names
                          and positional[n] in by_name)
    return nums, names


def _check_static(value: Any) -> None:
    try:
        hash(value)
    except TypeError as exc:
        raise ValueError("Non-hashable static arguments are not supported. An error occurred "
                         f"while trying to hash an object of type {type(value)}, {value}. The "
                         f"error was:\nTypeError: {exc}\n") from None


def _check_traced(fun: Callable[..., Any], value: Any, path: str) -> None:
    for leaf in _flatten(value)[0]:
        if not _is_jax_value(leaf):
            raise TypeError(
                f"Error interpreting argument to {fun!r} as an abstract array. The problematic "
                f"value is of type {type(leaf)} and was passed to the function at path {path}."
                "\nThis typically means that a jit-wrapped function was called with a "
                "non-array argument, and this argument was not marked as static using the "
                "static_argnums or static_argnames parameters of jax.jit.")


def _param_names(fun: Callable[..., Any]) -> list[str]:
    try:
        return [p.name for p in inspect.signature(fun).parameters.values()
                if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                              inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def jit(fun: Callable[..., T] = _NOT_GIVEN, /, *, in_shardings: object = None,
        out_shardings: object = None, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        device: object = None, backend: object = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None) -> Any:
    """``jax.jit``: ``fun`` runs as it is (nothing is compiled), with JAX's checks.

    Works as ``@jax.jit``, ``jax.jit(fun, static_argnames=...)``,
    ``@jax.jit(static_argnames=...)`` and ``functools.partial(jax.jit, ...)``.
    Static arguments (``static_argnums``/``static_argnames``, each inferred from
    the other as JAX does) must be hashable; every other argument must be a tree of
    arrays and Python numbers, as JAX traces it, and so must the result. The
    jitted function's ``lower``/``trace``/``eval_shape`` raise
    :class:`~pallas_sim.UnsupportedJaxUsageError` (nothing is compiled).

    Raises:
      TypeError: ``fun`` is not callable; at call time, a non-static argument or a
        result that is not an array (a string, a function, a dtype), JAX's message.
      ValueError: a static name or position ``fun`` does not have; at call time, an
        unhashable static argument.
    """
    if fun is _NOT_GIVEN:
        return functools.partial(
            jit, in_shardings=in_shardings, out_shardings=out_shardings,
            static_argnums=static_argnums, static_argnames=static_argnames,
            donate_argnums=donate_argnums, donate_argnames=donate_argnames,
            keep_unused=keep_unused, device=device, backend=backend, inline=inline,
            compiler_options=compiler_options)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    nums, names = _static_positions(fun, static_argnums, static_argnames)
    params = _param_names(fun)

    @functools.wraps(fun)
    def jitted(*args: Any, **kwargs: Any) -> T:
        count = len(args)
        for i, arg in enumerate(args):
            if i in nums or i - count in nums:
                _check_static(arg)
            else:
                _check_traced(fun, arg, params[i] if i < len(params) else f"args[{i}]")
        for name, arg in kwargs.items():
            if name in names:
                _check_static(arg)
            else:
                _check_traced(fun, arg, name)
        out = fun(*args, **kwargs)
        for leaf in _flatten(out)[0]:
            if not _is_jax_value(leaf):
                raise TypeError(f"function {getattr(fun, '__name__', fun)} traced for jit "
                                f"returned a value of type {type(leaf)}, which is not a valid "
                                "JAX type")
        return out

    for method in ("lower", "trace", "eval_shape"):
        setattr(jitted, method, _not_compiled(method))
    jitted.clear_cache = lambda: None  # type: ignore[attr-defined]
    return jitted


def _not_compiled(method: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedJaxUsageError(
            f"`jax.jit(f).{method}` is not supported by pallas_sim: nothing is traced or "
            "compiled here; call the function itself (pallas_sim.trace() records what its "
            "pallas_calls do)")
    refuse.__name__ = refuse.__qualname__ = method
    return refuse


__all__ = ["jit"]
publish("pallas_sim.jax", globals(), __all__)
