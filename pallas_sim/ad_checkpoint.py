"""``jax.ad_checkpoint``: ``checkpoint_name``, which returns its argument (no autodiff
here); any other name raises :class:`~pallas_sim.UnsupportedJaxAPIError`."""

from __future__ import annotations

from ._src import surface as _surface
from ._src.named_values import checkpoint_name

__all__ = ["checkpoint_name"]
__getattr__ = _surface.refuse_missing("jax.ad_checkpoint", __name__)
