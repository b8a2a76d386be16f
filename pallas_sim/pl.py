"""The ``pl`` namespace: mirrors ``jax.experimental.pallas``.

Use ``from pallas_sim import pl``; swap for ``from jax.experimental import
pallas as pl`` to run the same kernel on real Pallas.
"""

from __future__ import annotations

from ._src import surface as _surface
from ._src.block_dims import Blocked, BoundedSlice, Element, Squeezed, squeezed
from ._src.call_args import no_block_spec
from ._src.context import num_programs, program_id, when
from ._src.cost_estimate import estimate_cost
from ._src.dslice import Slice, ds, dslice, multiple_of
from ._src.loop import loop
from ._src.memory_spaces import ANY, MemorySpace
from ._src.mesh import kernel
from ._src.pallas_call import cdiv, pallas_call
from ._src.scoped import run_scoped
from ._src.specs import BlockSpec, Buffered, CostEstimate, GridSpec

__all__ = ["ANY", "BlockSpec", "Blocked", "BoundedSlice", "Buffered", "CostEstimate", "Element",
           "Slice", "estimate_cost",
           "GridSpec", "MemorySpace", "Squeezed", "cdiv", "ds", "dslice", "kernel", "loop",
           "multiple_of",
           "no_block_spec", "num_programs", "pallas_call", "program_id", "run_scoped",
           "squeezed", "when"]
__getattr__ = _surface.refuse_missing("jax.experimental.pallas", __name__)
