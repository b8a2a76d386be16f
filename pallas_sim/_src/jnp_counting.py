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
    ``repeats`` times along ``axis`` (``repeats``: an int, or one count per element).

    With ``total_repeat_length`` (a static int) the result has exactly that length along
    ``axis``, computed as JAX computes it: output position ``p`` takes element ``i``, the
    last one whose exclusive running sum of ``repeats`` is ``<= p``. So longer repeats
    are cut at the end, and shorter ones are padded with the *last element of* ``a``
    (``repeat([0, 1, 2], [1, 2, 0], total_repeat_length=6)`` is ``[0, 1, 1, 2, 2, 2]``);
    an empty ``a`` is returned as it is, a length of 0 gives an empty result.

    Raises:
      ValueError: a negative ``total_repeat_length``, ``repeats`` of the wrong shape, or
        a scalar ``a`` with more than one count (JAX's message).
    """
    if total_repeat_length is None:
        return _numpy_repeat(a, repeats, axis=axis)
    if total_repeat_length < 0:
        raise ValueError(f"total_repeat_length={total_repeat_length} must be >= 0")
    arr = np.asarray(concrete(a))
    counts = np.asarray(concrete(repeats))
    if axis is None:
        arr, axis = arr.ravel(), 0
    if arr.ndim == 0:
        if counts.size != 1:
            raise ValueError("`repeat` with a scalar parameter `a` is only implemented for "
                             "scalar values of the parameter `repeats`.")
        return np.full((total_repeat_length,), arr)
    ax = axis % arr.ndim
    counts = np.broadcast_to(counts, (arr.shape[ax],))
    if total_repeat_length == 0:
        shape = list(arr.shape)
        shape[ax] = 0
        return np.zeros(shape, arr.dtype)
    if arr.shape[ax] == 0:
        return arr
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])  # exclusive running sum
    index = np.searchsorted(starts, np.arange(total_repeat_length), side="right") - 1
    return np.take(arr, index, axis=ax)


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
