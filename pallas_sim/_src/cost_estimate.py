"""``pl.estimate_cost``: a ``pl.CostEstimate`` for a function, from running it once."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import op_accounting
from .exports import publish
from .pytrees import leaves
from .specs import CostEstimate
from .values import canonical_dtype, concrete, traced


def estimate_cost(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> CostEstimate:
    """``pl.estimate_cost(fun, *args, **kwargs)``: what ``fun(*args, **kwargs)`` costs,
    as JAX's ``jax._src.pallas.cost_estimate.estimate_cost`` defines it.

    JAX traces ``fun`` and counts per primitive; pallas_sim runs it once on zeros of the
    arguments' shapes and dtypes with its op counters (:mod:`pallas_sim._src.op_accounting`):

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
    flat = leaves(args)
    zeros = {id(a): traced(np.zeros(tuple(a.shape), canonical_dtype(a.dtype))) for a in flat
             if hasattr(a, "shape") and hasattr(a, "dtype")}

    def as_zeros(tree: Any) -> Any:
        from .pytrees import flatten
        items, treedef = flatten(tree)
        return treedef.unflatten([zeros.get(id(a), a) for a in items])

    counter = op_accounting.begin(1)
    try:
        out = functools.partial(fun, **kwargs)(*as_zeros(args))
    finally:
        counts = op_accounting.end(counter)
    flops = int(counts.mxu_flops().sum()) + counts.total("vpu_ops") + counts.total(
        "scalar_ops")
    nbytes = sum(math.prod(a.shape) * canonical_dtype(a.dtype).itemsize for a in flat
                 if hasattr(a, "shape") and hasattr(a, "dtype"))
    for leaf in leaves(out):
        a = np.asarray(concrete(leaf))
        nbytes += a.size * canonical_dtype(a.dtype).itemsize
    return CostEstimate(flops=flops, transcendentals=counts.total("eup_ops"),
                        bytes_accessed=int(nbytes))


publish("pallas_sim.pl", globals(), ["estimate_cost"])
