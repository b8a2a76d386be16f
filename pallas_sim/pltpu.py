"""The ``pltpu`` namespace: mirrors ``jax.experimental.pallas.tpu``."""

from __future__ import annotations

from .dma import SemaphoreType, make_async_copy
from .specs import (
                    ANY,
                    ARBITRARY,
                    PARALLEL,
                    SMEM,
                    VMEM,
                    CompilerParams,
                    PrefetchScalarGridSpec,
                    TPUCompilerParams,
)

__all__ = ["ANY", "ARBITRARY", "PARALLEL", "SMEM", "VMEM", "CompilerParams",
           "PrefetchScalarGridSpec", "SemaphoreType", "TPUCompilerParams", "make_async_copy"]
