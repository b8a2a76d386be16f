"""Output blocks the kernel writes in place in HBM, instead of a VMEM buffer poisoned at each
new block and copied back after it.

In interpret mode a grid step poisons an output's VMEM buffer when the output's block index
changes, runs the kernel, and copies the buffer back to HBM before the block changes. When
nothing can read an output's HBM array while the call runs (no input/output aliasing, no
operand left in HBM for manual DMAs, no SMEM blocks) and no output block is entered twice
(``operands.check_revisits``, which every non-aliased output passes before the steps run),
the kernel can write the block where it lives: the HBM array starts poisoned
(``PallasCall._fill_hbm``), so a block's first visit sees poison as a fresh buffer would,
its writes persist while the block stays, and the call returns the same array. The output's
ref is pointed at its block's HBM view at every block change; the per-step poisoning and
write-back copies are gone. DMA and byte counts are unchanged (``Operand.account``).

Inputs are still copied into their buffer at each block change: an input's HBM array may be
the caller's own, and a kernel may write into an input's buffer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .memory_spaces import HBM_SPACES
from .operands import Operand


def can_write_in_place(ins: Sequence[Operand], outs: Sequence[Operand], aliased: bool) -> bool:
    """Whether this call's outputs can be written in place (the module docstring): no
    aliasing, every operand blocked in VMEM (none in HBM or SMEM), and every output's HBM
    array viewable block by block (``Operand.window_view`` is a reshaped array)."""
    if aliased or any(op.space in HBM_SPACES or op.space != "vmem" for op in (*ins, *outs)):
        return False
    return all(op.idx.shape[1] and isinstance(op.window_view(), np.ndarray) for op in outs)
