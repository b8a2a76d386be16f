"""``jnp.repeat`` with ``total_repeat_length`` and ``jnp.histogram``, as JAX defines them
(the host-side helpers of kernels' wrappers, e.g. JAX's megablox group metadata)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .exports import publish
from .jnp_lifted import repeat as _numpy_repeat
from .values import canonical_dtype, concrete


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """``jnp.repeat``: each element of ``a`` (flattened when ``axis`` is None) repeated
    ``repeats`` times along ``axis``.

    With ``total_repeat_length`` (a static int) the result has exactly that length along
    ``axis``, as in JAX: longer repeats are cut at the end, shorter ones padded by
    repeating the last element (an empty input stays empty).

    Raises:
      ValueError: a negative ``total_repeat_length``, or ``repeats`` of the wrong shape.
    """
    if total_repeat_length is None:
        return _numpy_repeat(a, repeats, axis=axis)
    if total_repeat_length < 0:
        raise ValueError(f"total_repeat_length={total_repeat_length} must be >= 0")
    out = np.asarray(_numpy_repeat(concrete(a), concrete(repeats), axis=axis))
    ax = 0 if axis is None else axis % max(out.ndim, 1)
    n = out.shape[ax]
    if n >= total_repeat_length:
        return np.take(out, np.arange(total_repeat_length), axis=ax)
    if n == 0:
        shape = list(out.shape)
        shape[ax] = total_repeat_length
        return np.zeros(shape, out.dtype)
    index = np.minimum(np.arange(total_repeat_length), n - 1)
    return np.take(out, index, axis=ax)


def histogram(a: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
              weights: Any = None, density: bool | None = None) -> tuple[Any, Any]:
    """``jnp.histogram``: ``(counts, bin_edges)`` of the values of ``a``, as JAX computes
    them: edges are ``bins + 1`` float32 points from ``range`` (default: ``a``'s min
    and max, widened by 0.5 on each side when they are equal), or ``bins`` itself when
    it is an array; a value equal to the last edge falls in the last bin; values outside
    the edges are dropped. Counts have the float dtype of ``a`` (float32 for integer
    input) or of ``weights``; ``density=True`` divides by the bin widths and the total.

    Raises:
      ValueError: ``range`` not a pair, or ``weights`` of another shape than ``a``.
    """
    x = np.asarray(concrete(a))
    dtype = canonical_dtype(np.result_type(x.dtype, np.float32) if x.dtype.kind != "f"
                            else x.dtype)
    if weights is None:
        w = np.ones(x.shape, dtype)
    else:
        w = np.asarray(concrete(weights))
        if w.shape != x.shape:
            raise ValueError("weights should have the same shape as a.")
        dtype = canonical_dtype(np.result_type(dtype, w.dtype))
        w = w.astype(dtype)
    x = x.astype(dtype)
    edges_given = np.asarray(concrete(bins))
    if edges_given.ndim == 1:
        edges = edges_given.astype(dtype)
    else:
        lo, hi = ((x.min(), x.max()) if range is None else
                  tuple(np.asarray(range, dtype).tolist()))
        if range is not None and np.shape(range) != (2,):
            raise ValueError(f"`range` must be either None or a sequence of scalars, got "
                             f"{range}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, int(edges_given) + 1, dtype=dtype)
    index = np.searchsorted(edges, x.ravel(), side="right")
    index = np.where(x.ravel() == edges[-1], len(edges) - 1, index)
    counts = np.zeros(len(edges), dtype)
    keep = index < len(edges)
    np.add.at(counts, index[keep], w.ravel()[keep])
    counts = counts[1:]
    if density:
        counts = (counts / np.diff(edges) / counts.sum()).astype(dtype)
    return counts, edges


publish("pallas_sim.jnp", globals(), ["histogram", "repeat"])
