"""The ``pltpu`` namespace: mirrors ``jax.experimental.pallas.tpu``."""

from __future__ import annotations

from ._src import surface as _surface
from ._src.dma import SemaphoreType, async_copy, make_async_copy, sync_copy
from ._src.memory_spaces import HBM, SEMAPHORE, SMEM, VMEM
from ._src.memory_spaces import TPUMemorySpace as MemorySpace
from ._src.mesh import create_tensorcore_mesh
from ._src.pipeline import emit_pipeline
from ._src.specs import (
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
