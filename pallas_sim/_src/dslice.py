"""``pl.ds`` (``pl.dslice``) and ``pl.multiple_of``: how a kernel spells a slice of a ref
(a Python ``slice``, so it indexes refs and arrays alike) and promises an alignment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .exports import publish
from .slices import Slice, plain_index
from .values import concrete


def ds(start: int | None, size: int | None = None, stride: int | None = None
       ) -> Slice | slice:
    """``pl.ds`` (``pl.dslice``): a slice of a ref, spelled as JAX spells it.

    * ``pl.ds(None)`` is ``:`` (a Python ``slice``, as in JAX);
    * ``pl.ds(j)`` is ``:j`` (``j`` elements from 0);
    * ``pl.ds(i, j)`` is ``i : i + j``;
    * ``pl.ds(i, j, stride)`` is ``j`` elements from ``i``, ``stride`` apart.

    Returns a :class:`Slice` (``pl.Slice``, with ``.start``, ``.size``, ``.stride``), as
    JAX does; it indexes refs and kernel values. ``start`` may be traced
    (``pl.program_id(0) * 8``); ``size`` and ``stride`` must be static ints, as in JAX.

    Raises:
      ValueError: ``size`` or ``stride`` is negative (JAX: "`stride` must be >= 0"), or
        ``stride`` is 0.
      TracerConversionError: ``size`` or ``stride`` is traced.
    """
    if start is None:
        return slice(None)
    if size is None:
        start, size = 0, start
    step = 1 if stride is None else int(stride)
    start, size = int(concrete(start)), int(size)
    if size < 0:
        raise ValueError(f"pl.ds size={size} must be >= 0")
    if step < 0:
        raise ValueError("`stride` must be >= 0.")
    if step == 0:
        raise ValueError("pl.ds with stride=0 (one element repeated) is not supported by "
                         "pallas_sim; index the element and broadcast it")
    return Slice(start, size, step)


dslice = ds


def multiple_of(x: Any, values: int | Sequence[int]) -> Any:
    """``pl.multiple_of(x, values)``: the promise that ``x`` (a grid index product, a
    ``pl.ds`` start) is a multiple of ``values``, which Mosaic uses to prove aligned
    accesses. Returns ``x`` unchanged, as JAX does; the hint changes no value.

    Raises:
      TypeError: ``values`` is not an int or a sequence of ints (JAX takes nothing else).
      ValueError: ``x`` is an integer known here and is not a multiple of ``values``: a
        false hint is undefined behaviour on a TPU (Mosaic trusts it), so pallas_sim
        refuses it where JAX's interpreter would pass it silently.
    """
    ints = [values] if isinstance(values, int) else list(values) if isinstance(
        values, (tuple, list)) else None
    if ints is None or not ints or any(isinstance(v, bool) or not isinstance(v, int)
                                       for v in ints):
        raise TypeError(f"pl.multiple_of values={values!r}: expected an int or a sequence "
                        "of ints")
    raw = concrete(x)
    if isinstance(raw, (int, np.integer, np.ndarray)) and not isinstance(raw, bool):
        array = np.asarray(raw)
        if array.dtype.kind in "iu" and array.size and isinstance(values, int) and values > 0:
            if np.any(array % values):
                raise ValueError(f"pl.multiple_of: {array.tolist()} is not a multiple of "
                                 f"{values}; the hint must hold (a false one is undefined "
                                 "behaviour on a TPU)")
    return x


publish("pallas_sim.pl", globals(), ["ds", "multiple_of"])

__all__ = ["Slice", "ds", "dslice", "multiple_of", "plain_index"]
