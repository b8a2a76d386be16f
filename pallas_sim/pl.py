"""The ``pl`` namespace: mirrors ``jax.experimental.pallas``.

Use ``from pallas_sim import pl``; swap for ``from jax.experimental import
pallas as pl`` to run the same kernel on real Pallas.
"""

from __future__ import annotations

from . import surface as _surface
from .block_dims import Blocked, BoundedSlice, Element, Squeezed, squeezed
from .call_args import no_block_spec
from .context import num_programs, program_id, when
from .loop import loop
from .memory_spaces import ANY, MemorySpace
from .mesh import kernel
from .pallas_call import cdiv, pallas_call
from .scoped import run_scoped
from .specs import BlockSpec, Buffered, CostEstimate, GridSpec
from .values import concrete


def ds(start: int, size: int) -> slice:
    """``pl.ds(start, size)``: the slice ``start : start + size`` of a ref.

    Returned as a Python ``slice``, so it indexes refs and plain arrays alike.
    ``start`` may be traced (``pl.program_id(0) * 8``); ``size`` must be a static int,
    as in JAX.

    Raises:
      ValueError: ``size`` is negative.
      TracerConversionError: ``size`` is traced.
    """
    start, size = int(concrete(start)), int(size)
    if size < 0:
        raise ValueError(f"pl.ds size={size} must be >= 0")
    return slice(start, start + size)


dslice = ds

__all__ = ["ANY", "BlockSpec", "Blocked", "BoundedSlice", "Buffered", "CostEstimate", "Element",
           "GridSpec", "MemorySpace", "Squeezed", "cdiv", "ds", "dslice", "kernel", "loop",
           "no_block_spec", "num_programs", "pallas_call", "program_id", "run_scoped",
           "squeezed", "when"]
__getattr__ = _surface.refuse_missing("jax.experimental.pallas", __name__)
