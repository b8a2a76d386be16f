"""The ``jax`` namespace: what kernels and their wrappers use besides ``pl`` and ``pltpu``.

``jax.numpy`` (``jnp``), ``jax.lax``, ``jax.nn``, ``jax.random``, ``jax.tree``,
``jax.tree_util``, ``jax.Array``, ``jax.ShapeDtypeStruct``, the transformations
``jit``, ``vmap``, ``custom_vjp``/``custom_jvp``, and the device queries. There
is nothing to compile here, so the transformations run the function eagerly,
but they refuse what JAX refuses when it traces: ``jit`` a non-array argument
that is not marked static, or an unhashable static one; ``vmap`` axes of
different sizes. Any other ``jax.X`` raises
:class:`~pallas_sim.UnsupportedJaxAPIError` with what to use instead.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from . import jnp as numpy
from . import lax, nn, random, tree, tree_util
from ._src import surface as _surface
from ._src.arrays import Array, is_array
from ._src.errors import UnsupportedJaxUsageError
from ._src.pytrees import flatten as _flatten
from ._src.refs import Ref
from ._src.specs import ShapeDtypeStruct
from .random import KeyArray

T = TypeVar("T")
_NOT_GIVEN: Any = object()

# -- jit ---------------------------------------------------------------------------------------


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


# -- vmap --------------------------------------------------------------------------------------


def _is_none(x: Any) -> bool:
    return x is None


def _axes_for(prefix: Any, value: Any) -> list[tuple[Any, Any]]:
    """``(leaf, axis)`` for every leaf of ``value``, the axes given by the tree prefix
    ``prefix`` of ints and None (None: not mapped)."""
    axes, treedef = _flatten(prefix, is_leaf=_is_none)
    pairs: list[tuple[Any, Any]] = []
    for axis, subtree in zip(axes, treedef.flatten_up_to(value), strict=True):
        if axis is not None and not isinstance(axis, int):
            raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries "
                            f"corresponding to the positional arguments passed to the "
                            f"function, but got {prefix}.")
        pairs.extend((leaf, axis) for leaf in _flatten(subtree)[0])
    return pairs


def _take(leaf: Any, index: int, axis: int) -> Any:
    if isinstance(leaf, np.ndarray):
        return np.take(leaf, index, axis=axis)
    if axis == 0:
        return leaf[index]
    return np.take(leaf, index, axis=axis)


def _stack(leaves: list[Any], axis: int) -> Any:
    first = leaves[0]
    if isinstance(first, KeyArray):
        data = np.stack([random.key_data(k) for k in leaves], axis=axis)
        return random.wrap_key_data(data)
    if not _is_jax_value(first) or isinstance(first, Ref | ShapeDtypeStruct):
        raise TypeError(f"Output from batched function {first!r} with type {type(first)} is "
                        "not a valid JAX type")
    out = np.stack(leaves, axis=axis)
    if type(first) in (bool, int, float, complex):
        out = out.astype(lax.canonical_dtype(out.dtype))
    return out


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0,
         axis_name: object = None, axis_size: int | None = None,
         spmd_axis_name: object = None, sum_match: bool = False) -> Callable[..., Any]:
    """``jax.vmap``: ``fun`` mapped over an axis of its arguments.

    ``in_axes``: an int, None (not mapped), or a tuple/list with one entry per
    positional argument, each an int, None or a tree prefix of that argument;
    keyword arguments are mapped over axis 0, as in JAX. ``out_axes`` likewise for
    the result (negative axes count from the end). pallas_sim calls ``fun`` once per
    batch element and stacks the results, so a ``pallas_call`` inside it runs once
    per element (JAX adds a grid axis instead: one call, the same values). An output
    with ``out_axes`` None is taken from the first element.

    Raises:
      TypeError: malformed ``in_axes`` (JAX's message); an output that is not an array.
      ValueError: axes of different sizes, an axis beyond an argument's rank, no mapped
        axis and no ``axis_size``, or an ``in_axes`` tuple of the wrong length.
      UnsupportedJaxUsageError: a batch of size 0 (JAX would trace ``fun`` instead).
    """
    if not callable(fun):
        raise TypeError(f"vmap requires a callable, got {fun!r}")
    if not (in_axes is None or isinstance(in_axes, int | tuple | list | dict)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got "
                        f"{in_axes}.")

    @functools.wraps(fun)
    def batched(*args: Any, **kwargs: Any) -> Any:
        axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(axes, tuple) and len(axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(axes)}, len(args)="
                             f"{len(args)}")
        per_arg = axes if isinstance(axes, tuple) else (axes,) * len(args)
        pairs = _axes_for(tuple(per_arg), tuple(args)) + _axes_for(0, kwargs)
        sizes: dict[int, str] = {}
        normalized: list[int | None] = []
        for leaf, axis in pairs:
            if axis is None:
                normalized.append(None)
                continue
            shape = np.shape(leaf) if not isinstance(leaf, KeyArray) else leaf.shape
            rank = len(shape)
            if not -rank <= axis < rank:
                raise ValueError(f"vmap was requested to map its argument along axis {axis}, "
                                 f"which implies that its rank should be at least "
                                 f"{(axis if axis >= 0 else -axis - 1) + 1}, but is only "
                                 f"{rank} (its shape is {shape})")
            axis %= rank
            normalized.append(axis)
            sizes.setdefault(shape[axis], f"axis {axis} of an argument of shape {shape}")
        if axis_size is not None:
            sizes.setdefault(int(axis_size), f"axis_size={axis_size}")
        if not sizes:
            raise ValueError("vmap must have at least one non-None value in in_axes or "
                             "axis_size must be specified")
        if len(sizes) > 1:
            lines = "\n".join(f"  * one axis had size {n}: {where}" for n, where in sizes.items())
            raise ValueError(f"vmap got inconsistent sizes for array axes to be mapped:\n{lines}")
        (size,) = sizes
        if size == 0:
            raise UnsupportedJaxUsageError("pallas_sim's vmap calls the function once per batch "
                                           "element, so it cannot map over a batch of size 0")
        arg_leaves = [leaf for leaf, _ in pairs]
        _, arg_def = _flatten((tuple(args), kwargs))
        outs = []
        for i in range(size):
            sliced = [leaf if axis is None else _take(leaf, i, axis)
                      for leaf, axis in zip(arg_leaves, normalized, strict=True)]
            call_args, call_kwargs = arg_def.unflatten(sliced)
            outs.append(fun(*call_args, **call_kwargs))
        out_leaves, out_def = _flatten(outs[0])
        columns = [out_def.flatten_up_to(o) for o in outs]
        placed = _axes_for(out_axes, outs[0])
        result = []
        for j, (_, axis) in enumerate(placed):
            column = [c[j] for c in columns]
            if axis is None:
                result.append(column[0])
                continue
            rank = len(np.shape(column[0])) + 1
            result.append(_stack(column, axis % rank))
        return out_def.unflatten(result)

    return batched


# -- custom derivatives (forward only) ---------------------------------------------------------


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


# -- scopes and contexts -----------------------------------------------------------------------


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
            leaf = np.array(leaf, dtype=lax.canonical_dtype(leaf.dtype))
        moved.append(leaf)
    return treedef.unflatten(moved)


# -- devices -----------------------------------------------------------------------------------


class Device:
    """``jax.Device``: the one simulated TPU core pallas_sim models (``num_cores`` 1: one
    TensorCore, as on a v5e or v6e chip)."""

    __slots__ = ()
    id = 0
    process_index = 0
    platform = "tpu"
    device_kind = "TPU (pallas_sim)"
    num_cores = 1

    def __repr__(self) -> str:
        return "TpuDevice(id=0, simulated by pallas_sim)"


_DEVICE = Device()


def devices(backend: object = None) -> list[Device]:
    """``jax.devices``: ``[the simulated TPU core]`` (platform "tpu", device_kind
    "TPU (pallas_sim)")."""
    return [_DEVICE]


def local_devices(process_index: int | None = None, backend: object = None) -> list[Device]:
    """``jax.local_devices``: the same single device as :func:`devices`."""
    return [_DEVICE]


def default_backend() -> str:
    """``jax.default_backend``: ``"tpu"``, the platform pallas_sim simulates."""
    return "tpu"


def device_count(backend: object = None) -> int:
    """``jax.device_count``: 1."""
    return 1


def local_device_count(backend: object = None) -> int:
    """``jax.local_device_count``: 1."""
    return 1


def process_index(backend: object = None) -> int:
    """``jax.process_index``: 0."""
    return 0


def process_count(backend: object = None) -> int:
    """``jax.process_count``: 1."""
    return 1


__all__ = ["Array", "Device", "ShapeDtypeStruct", "block_until_ready", "custom_jvp",
           "custom_vjp", "default_backend", "default_matmul_precision", "device_count",
           "device_put", "devices", "disable_jit", "ensure_compile_time_eval", "jit", "lax",
           "local_device_count", "local_devices", "named_scope", "nn", "numpy",
           "process_count", "process_index", "random", "tree", "tree_util", "vmap"]
__getattr__ = _surface.refuse_missing("jax", __name__)
