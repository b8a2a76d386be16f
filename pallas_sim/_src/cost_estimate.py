"""``pl.estimate_cost``: a ``pl.CostEstimate`` for a function, from running it once."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import op_accounting
from .abstract import AbstractArray, AbstractValueError, abstract_mode
from .exports import publish
from .pytrees import leaves
from .specs import CostEstimate
from .values import KernelValue, canonical_dtype, concrete, traced


def estimate_cost(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> CostEstimate:
    """``pl.estimate_cost(fun, *args, **kwargs)``: what ``fun(*args, **kwargs)`` costs,
    as JAX's ``jax._src.pallas.cost_estimate.estimate_cost`` defines it.

    JAX traces ``fun`` and counts per primitive; pallas_sim runs it once, shapes only (its
    abstract run, :mod:`pallas_sim._src.abstract`: nothing is computed, however large the
    arrays), with its op counters (:mod:`pallas_sim._src.op_accounting`); a ``fun`` that
    needs values (Python control flow on one) is run on zeros of those shapes instead:

    * ``flops``: 2 * M * N * K per product (JAX's ``dot_general`` rule) plus one per
      element of every elementwise result (JAX counts add, mul, sub, div, min, max,
      and/or/xor, neg, floor, ceil, round, not; pallas_sim's vector count also has
      compares, selects and the elements reductions consume, so it can be larger);
    * ``transcendentals``: one per element of exp, log, tanh, sqrt, ... results;
    * ``bytes_accessed``: the bytes of the arguments plus those of the result, as in
      JAX (its per-primitive rules add none).

    Args:
      fun: the function (a reference implementation, usually).
      *args: arrays or ``jax.ShapeDtypeStruct``s (any pytree of them).
      **kwargs: static keyword arguments passed through to ``fun``.

    Returns:
      A ``pl.CostEstimate`` of Python ints.

    Raises:
      Exception: whatever ``fun`` raises on zeros of those shapes.
    """
    key = _cache_key(fun, args, kwargs)
    if key is not None and key in _CACHE:
        return _CACHE[key]
    flat = leaves(args)
    try:  # shapes only, as JAX traces: no arithmetic on data (a reference attention is large)
        with abstract_mode():
            counts, out = _counted(fun, args, kwargs, flat, lambda shape, dtype: KernelValue(
                AbstractArray(shape, dtype)))
    except AbstractValueError:  # ``fun`` needs values: run it on zeros, every time
        key = None
        counts, out = _counted(fun, args, kwargs, flat, lambda shape, dtype: traced(
            np.zeros(shape, dtype)))
    flops = int(counts.mxu_flops().sum()) + counts.total("vpu_ops") + counts.total(
        "scalar_ops")
    nbytes = sum(math.prod(a.shape) * canonical_dtype(a.dtype).itemsize for a in flat
                 if hasattr(a, "shape") and hasattr(a, "dtype"))
    for leaf in leaves(out):
        a = concrete(leaf)
        if not isinstance(a, AbstractArray):
            a = np.asarray(a)
        nbytes += math.prod(a.shape) * canonical_dtype(a.dtype).itemsize
    cost = CostEstimate(flops=flops, transcendentals=counts.total("eup_ops"),
                        bytes_accessed=int(nbytes))
    if key is not None:
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = cost
    return cost


#: Estimates kept, by function, argument shapes and dtypes and static arguments: a jitted
#: JAX wrapper calls ``estimate_cost`` once, when it is traced, then reuses its compiled
#: form; pallas_sim runs the wrapper at every call, so it reuses the estimate instead.
CACHE_SIZE = 256
_CACHE: dict[tuple[Any, ...], CostEstimate] = {}


def _cache_key(fun: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """What an estimate depends on when ``fun`` needs no values: ``fun``, the arguments'
    structure, each array's shape and dtype, each other leaf and every keyword argument;
    None when one of them cannot be a dictionary key."""
    from .pytrees import flatten

    items, treedef = flatten(args)
    parts = tuple(("array", tuple(a.shape), str(canonical_dtype(a.dtype)))
                  if hasattr(a, "shape") and hasattr(a, "dtype") else a for a in items)
    key = (fun, treedef, parts, tuple(sorted(kwargs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _counted(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             flat: list[Any], stand_in: Callable[[tuple[int, ...], np.dtype], Any]
             ) -> tuple[op_accounting.OpCounts, Any]:
    """(the op counts, the result) of ``fun(*args, **kwargs)`` with each array leaf of
    ``args`` (``flat``) replaced by ``stand_in(shape, dtype)``."""
    from .pytrees import flatten

    standins = {id(a): stand_in(tuple(a.shape), canonical_dtype(a.dtype)) for a in flat
                if hasattr(a, "shape") and hasattr(a, "dtype")}
    items, treedef = flatten(args)
    counter = op_accounting.begin(1)
    try:
        out = functools.partial(fun, **kwargs)(
            *treedef.unflatten([standins.get(id(a), a) for a in items]))
    finally:
        counts = op_accounting.end(counter)
    return counts, out


publish("pallas_sim.pl", globals(), ["estimate_cost"])
