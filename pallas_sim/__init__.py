"""pallas_sim: a NumPy simulator of JAX Pallas for TPU, for teaching and grading.

Students write::

    import numpy as np
    from pallas_sim import jax, jnp, pl, pltpu

and the same kernel runs on real Pallas once that line becomes the JAX imports.
On top of JAX's behaviour the simulator counts what a TPU would do (DMAs, HBM
bytes, VMEM bytes; see :func:`trace`) and poisons uninitialized memory so
kernels that read garbage fail loudly.  Semantics: ``docs/pallas-sim.md`` in the
repository; lecture §2.  A JAX name pallas_sim does not offer raises
:class:`UnsupportedJaxAPIError` with what to use instead (docs/fidelity.md,
"The JAX surface").

:func:`estimate` runs a function's pallas_calls on ``jax.ShapeDtypeStruct`` shapes
only (the same trace as a real run, with per-step op counts) and predicts their time,
MFU and bounds on a TPU (docs/performance-model.md).
"""

from . import jax, jnp, pl, pltpu
from ._src.abstract import AbstractValueError
from ._src.abstract_run import Estimate, estimate
from ._src.chips import UnknownChipError
from ._src.config import config
from ._src.errors import (
    BlockIndexError,
    BlockShapeError,
    CapturedConstantError,
    GridSemanticsError,
    HBMAccessError,
    KernelSignatureError,
    NoGridError,
    OutsideKernelError,
    PallasSimError,
    RefIndexError,
    RevisitedOutputBlockError,
    TracerConversionError,
    UnboundAxisError,
    UnsupportedJaxAPIError,
    UnsupportedJaxImportError,
    UnsupportedJaxUsageError,
    UnwaitedDMAError,
    VmemOOMError,
)
from ._src.mosaic_rules import MosaicLoweringError
from ._src.tracing import CallTrace, OperandTrace, Trace, trace

__all__ = ["AbstractValueError", "BlockIndexError", "BlockShapeError", "CallTrace",
           "CapturedConstantError", "Estimate", "GridSemanticsError", "UnknownChipError",
           "estimate", "HBMAccessError", "KernelSignatureError", "MosaicLoweringError",
           "NoGridError", "OperandTrace", "OutsideKernelError", "PallasSimError", "RefIndexError",
           "RevisitedOutputBlockError", "Trace", "TracerConversionError", "UnboundAxisError",
           "UnsupportedJaxAPIError", "UnsupportedJaxImportError", "UnsupportedJaxUsageError",
           "UnwaitedDMAError", "VmemOOMError", "config", "jax", "jnp", "pl", "pltpu", "trace"]
