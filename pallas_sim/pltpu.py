"""The ``pltpu`` namespace: mirrors ``jax.experimental.pallas.tpu``."""

from __future__ import annotations

from . import surface as _surface
from .dma import SemaphoreType, async_copy, make_async_copy, sync_copy
from .memory_spaces import HBM, SEMAPHORE, SMEM, VMEM
from .memory_spaces import TPUMemorySpace as MemorySpace
from .mesh import create_tensorcore_mesh
from .pipeline import emit_pipeline
from .specs import (
    ARBITRARY,
    CORE_PARALLEL,
    PARALLEL,
    CompilerParams,
    GridDimensionSemantics,
    PrefetchScalarGridSpec,
)

__all__ = ["ARBITRARY", "CORE_PARALLEL", "HBM", "PARALLEL", "SEMAPHORE", "SMEM", "VMEM",
           "CompilerParams", "GridDimensionSemantics", "MemorySpace", "PrefetchScalarGridSpec",
           "SemaphoreType", "async_copy", "create_tensorcore_mesh", "emit_pipeline",
           "make_async_copy", "sync_copy"]
__getattr__ = _surface.refuse_missing("jax.experimental.pallas.tpu", __name__)
