"""``jax.tree``: ``map``, ``leaves``, ``structure``, ``flatten``, ``unflatten``, ``all`` and
``reduce`` over tuples, lists, dicts, NamedTuples and None (:mod:`pallas_sim._src.pytrees`)."""

from __future__ import annotations

from ._src import surface as _surface
from ._src.pytrees import all, flatten, leaves, map, reduce, structure, unflatten  # noqa: A004

__all__ = ["all", "flatten", "leaves", "map", "reduce", "structure", "unflatten"]
__getattr__ = _surface.refuse_missing("jax.tree", __name__)
