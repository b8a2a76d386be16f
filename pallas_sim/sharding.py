"""``jax.sharding``: ``PartitionSpec``, so wrappers that describe a sharding at module
level import; meshes, shardings and collectives raise
:class:`~pallas_sim.UnsupportedJaxAPIError` (pallas_sim simulates one core)."""

from __future__ import annotations

from ._src import surface as _surface
from ._src.named_values import PartitionSpec

__all__ = ["PartitionSpec"]
__getattr__ = _surface.refuse_missing("jax.sharding", __name__)
