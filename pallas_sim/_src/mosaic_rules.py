"""The block shapes a TPU compile refuses: the checks of Mosaic's lowering of a
``pallas_call``, applied to a recorded call.

Interpret mode (JAX's and pallas_sim's concrete runs) accepts any block shape that fits
the array; the TPU compiler does not. JAX's Pallas TPU lowering checks every blocked
operand before it lowers the kernel (``_check_block_mappings`` in
``jax/_src/pallas/mosaic/lowering.py``, JAX 0.10) and raises ``ValueError``:

* ``rank``: a block must have at least one dimension;
* ``whole array``: an operand left in HBM (``memory_space=pl.ANY``) must be the whole
  array at block index 0 (the kernel copies from it itself);
* ``(8, 128) tiling``: with two or more dimensions, the block's last dimension must be a
  multiple of 128 or the array's whole last dimension, and its second-to-last a
  multiple of 8 or the array's whole second-to-last dimension (a squeezed ``None``
  dimension counts as size 1, as in JAX);
* ``1-D tiling``: a one-dimensional block must be the whole array, a multiple of
  8 · 128 = 1024 elements, or a power of two of at least 128 · (32 / the dtype's bits)
  elements.

SMEM operands whose block is the whole array (at block index 0) and semaphores are not
checked, as in JAX. The lane and sublane counts (128 and 8) are those of every TPU
generation pallas_sim models (JAX's ``tpu_info``).

:func:`pallas_sim.estimate` records what this module finds (``Estimate.lowering_problems``)
and refuses it with ``lowering="refuse"``; ``pallas-lab profile`` refuses by default.
"""

from __future__ import annotations

import numpy as np

from .dtypes import as_dtype
from .errors import PallasSimError

#: Lanes and sublanes of a TPU vector register (every generation pallas_sim models).
LANES, SUBLANES = 128, 8


class MosaicLoweringError(PallasSimError, ValueError):
    """A block shape the TPU compiler (Mosaic) refuses, though interpret mode runs it.
    A ``ValueError``, as JAX's lowering raises."""


def _bits(dtype_name: str) -> int:
    if dtype_name == "bool":
        return 32  # JAX stores a bool block as 32-bit words
    return as_dtype(dtype_name).itemsize * 8


def _whole(operand: object) -> bool:
    """The operand's block is its whole array, at block index 0 at every step."""
    shape = tuple(operand.shape)
    block = tuple(1 if b is None else int(b) for b in operand.block_shape)
    indices = np.asarray(operand.block_indices)
    return block == shape and not (indices.size and indices.any())


def operand_problem(operand: object) -> str | None:
    """What the TPU lowering would refuse about one operand of a recorded call
    (``pallas_sim.OperandTrace``: ``role``, ``name``, ``shape``, ``dtype``,
    ``block_shape`` with ``None`` for a squeezed dimension, ``memory_space``,
    ``block_indices``), naming the rule; None when it compiles. Scratch and
    scalar-prefetch operands are not blocked and give None."""
    if str(operand.role) not in ("in", "out"):
        return None
    space = str(operand.memory_space)
    if space == "semaphore" or (space == "smem" and _whole(operand)):
        return None
    shape = tuple(int(d) for d in operand.shape)
    block = tuple(1 if b is None else int(b) for b in operand.block_shape)
    where = (f"{operand.role}put {operand.name}: block {tuple(operand.block_shape)} of "
             f"{operand.dtype}{list(shape)}")
    if not block:
        return f"{where}: rule 'rank': the TPU lowering needs blocks of at least one dimension"
    if space == "any":
        if _whole(operand):
            return None
        return (f"{where}: rule 'whole array': an operand left in HBM (pl.ANY) must be the "
                "whole array at block index 0")
    if len(block) >= 2:
        (b1, b0), (a1, a0) = block[-2:], shape[-2:]
        if (b0 == a0 or b0 % LANES == 0) and (b1 == a1 or b1 % SUBLANES == 0):
            return None
        return (f"{where}: rule '(8, 128) tiling': the last two block dimensions must be "
                f"multiples of {SUBLANES} and {LANES} or equal the array's ({a1}, {a0})")
    (b0,), (a0,) = block, shape
    min_tiling = LANES * (32 // _bits(operand.dtype))
    if b0 == a0 or b0 % (SUBLANES * LANES) == 0 or (b0 >= min_tiling and b0 & (b0 - 1) == 0):
        return None
    return (f"{where}: rule '1-D tiling': a 1-D block must be the whole array ({a0}), a "
            f"multiple of {SUBLANES * LANES}, or a power of two of at least {min_tiling}")


def call_problems(call: object) -> list[str]:
    """Every operand problem (:func:`operand_problem`) of a recorded call
    (``pallas_sim.CallTrace``), each prefixed with the call's name."""
    problems = []
    for operand in call.operands:
        problem = operand_problem(operand)
        if problem is not None:
            problems.append(f"{call.name}: {problem}")
    return problems
