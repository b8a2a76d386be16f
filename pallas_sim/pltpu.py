"""The ``pltpu`` namespace: mirrors ``jax.experimental.pallas.tpu``."""

from __future__ import annotations

from . import surface as _surface
from .dma import SemaphoreType, make_async_copy
from .specs import ARBITRARY, PARALLEL, SMEM, VMEM, CompilerParams, PrefetchScalarGridSpec

__all__ = ["ARBITRARY", "PARALLEL", "SMEM", "VMEM", "CompilerParams", "PrefetchScalarGridSpec",
           "SemaphoreType", "make_async_copy"]
__getattr__ = _surface.refuse_missing("jax.experimental.pallas.tpu", __name__)
