"""``jax.vmap`` on NumPy: the function runs once per index of the mapped axes and the results
are stacked, with JAX's rules for ``in_axes`` and ``out_axes``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import UnsupportedJaxUsageError
from .exports import publish
from .jit import _is_jax_value
from .lax_common import canonical_dtype
from .prng import KeyArray, key_data, wrap_key_data
from .pytrees import flatten as _flatten
from .refs import Ref
from .specs import ShapeDtypeStruct


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
        data = np.stack([key_data(k) for k in leaves], axis=axis)
        return wrap_key_data(data)
    if not _is_jax_value(first) or isinstance(first, Ref | ShapeDtypeStruct):
        raise TypeError(f"Output from batched function {first!r} with type {type(first)} is "
                        "not a valid JAX type")
    out = np.stack(leaves, axis=axis)
    if type(first) in (bool, int, float, complex):
        out = out.astype(canonical_dtype(out.dtype))
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


__all__ = ["vmap"]
publish("pallas_sim.jax", globals(), __all__)
