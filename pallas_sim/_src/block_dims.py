"""Block dimensions: what one entry of ``BlockSpec.block_shape`` may be.

JAX 0.10.x spells a block dimension as

* an ``int`` n or ``pl.Blocked(n)``: blocks of n elements; the index map returns the
  BLOCK index i and the block covers elements ``[i * n, (i + 1) * n)``;
* ``None``, ``pl.Squeezed()`` or ``pl.squeezed``: a block of one element, squeezed out
  of the kernel's ref; the index map returns the element (= block) index;
* ``pl.Element(n, padding=(lo, hi))``: a window of n elements; the index map returns
  the ELEMENT offset s and the window covers ``[s, s + n)`` of the dimension padded
  with ``lo`` elements before and ``hi`` after (padding values are undefined: poison
  here); windows may overlap;
* ``pl.BoundedSlice(n)``: a window whose start and size (at most n) the index map
  returns as ``pl.ds(start, size)``. JAX's interpreters and the Mosaic compiler refuse
  it in a ``pallas_call`` ("Unsupported block dim type"), and so does pallas_sim.

:func:`canonical` turns an entry into one of the classes below, as JAX's
``_canonicalize_block_dim`` does.

Source: ``jax._src.pallas.core`` (``Element``, ``Squeezed``, ``Blocked``,
``BoundedSlice``), JAX 0.10.x; the padding semantics are those of the HLO interpreter and
of the Mosaic lowering (``#tpu.element_window``).
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Element:
    """``pl.Element(block_size, padding=(0, 0))``: index this dimension by element offset.

    Args:
      block_size: the window's length, in elements (a positive int).
      padding: ``(lo, hi)`` elements of (undefined) padding before and after the
        dimension; the index map's offsets count from the start of the padding.
    """

    block_size: int
    padding: tuple[int, int] = (0, 0)

    def __str__(self) -> str:
        if tuple(self.padding) == (0, 0):
            return f"Element({self.block_size})"
        return f"Element({self.block_size}, padding={self.padding})"


@dataclasses.dataclass(frozen=True)
class Squeezed:
    """``pl.Squeezed()``: a dimension of block size 1 that the kernel's ref does not have
    (the same as ``None`` in ``block_shape``)."""


squeezed = Squeezed()


@dataclasses.dataclass(frozen=True)
class Blocked:
    """``pl.Blocked(block_size)``: blocks of ``block_size`` elements, indexed by block
    number (the same as the plain int)."""

    block_size: int

    def __str__(self) -> str:
        return f"Blocked({self.block_size})"


@dataclasses.dataclass(frozen=True)
class BoundedSlice:
    """``pl.BoundedSlice(block_size)``: a window of at most ``block_size`` elements whose
    start and size the index map returns as ``pl.ds(start, size)``. ``pallas_call``
    refuses it, as both of JAX's interpreters do; ``pltpu.emit_pipeline`` refuses it too
    (see :mod:`pallas_sim._src.pipeline`)."""

    block_size: int

    def __repr__(self) -> str:
        return f"BoundedSlice({self.block_size})"


BlockDim = Element | Squeezed | Blocked | BoundedSlice

_KINDS = (Element, Squeezed, Blocked, BoundedSlice)


def canonical(dim: Any) -> BlockDim:
    """One ``block_shape`` entry as a block dimension: ``None`` → ``squeezed``, an int →
    ``Blocked(int)``, block dimensions unchanged.

    Raises:
      ValueError: anything else (JAX's message).
    """
    if dim is None:
        return squeezed
    if isinstance(dim, _KINDS):
        return dim
    if isinstance(dim, bool) or isinstance(dim, str | bytes):
        raise _unsupported(dim)
    try:
        return Blocked(int(dim))
    except (TypeError, ValueError):
        raise _unsupported(dim) from None


def _unsupported(dim: Any) -> ValueError:
    return ValueError(
        f"Unsupported block dimension type: {type(dim)}. Allowed types: `pl.Squeezed`, "
        "`pl.Blocked`, `pl.Element`, `int`, `None`.")


def size(dim: BlockDim) -> int:
    """Elements the block spans along this dimension (1 for a squeezed one)."""
    if isinstance(dim, Squeezed):
        return 1
    return int(dim.block_size)


def kernel_size(dim: BlockDim) -> int | None:
    """The dimension as the trace records it: its size, or None when squeezed out."""
    return None if isinstance(dim, Squeezed) else int(dim.block_size)
