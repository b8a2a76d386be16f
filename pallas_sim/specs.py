"""Call configuration records: BlockSpec, GridSpec, memory spaces, scratch shapes.

Spelled as in ``jax.experimental.pallas`` (``pl.BlockSpec``, ``pl.GridSpec``,
``pl.Buffered``, ``pl.ANY``) and ``jax.experimental.pallas.tpu``
(``pltpu.VMEM``, ``pltpu.SMEM``, ``pltpu.PrefetchScalarGridSpec``,
``pltpu.CompilerParams``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from .dtypes import as_dtype

PARALLEL = "parallel"
ARBITRARY = "arbitrary"


@dataclasses.dataclass(frozen=True)
class ShapeDtypeStruct:
    """Shape and dtype of an output, as ``jax.ShapeDtypeStruct``.

    Args:
      shape: tuple of non-negative ints (elements).
      dtype: any dtype-like, including ``jnp.bfloat16`` and names.
    """

    shape: tuple[int, ...]
    dtype: np.dtype

    def __init__(self, shape: Sequence[int], dtype: object) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))
        object.__setattr__(self, "dtype", as_dtype(dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class MemorySpace:
    """A memory space (``pl.ANY``, ``pltpu.VMEM``, ``pltpu.SMEM``).

    Calling a memory space with ``(shape, dtype)`` declares a scratch buffer,
    as ``pltpu.VMEM((8, 128), jnp.float32)`` does in JAX.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        """"any", "vmem" or "smem" (read-only)."""
        return self._name

    def __call__(self, shape: Sequence[int], dtype: object) -> ScratchShape:
        return ScratchShape(tuple(int(d) for d in shape), as_dtype(dtype), self.name)

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name.upper()}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySpace) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


ANY = MemorySpace("any")
VMEM = MemorySpace("vmem")
SMEM = MemorySpace("smem")


@dataclasses.dataclass(frozen=True)
class ScratchShape:
    """A scratch buffer: allocated once per pallas_call, persists across grid steps."""

    shape: tuple[int, ...]
    dtype: np.dtype
    memory_space: str = "vmem"


@dataclasses.dataclass(frozen=True)
class Buffered:
    """``pl.Buffered(buffer_count)``: how many VMEM buffers an operand gets.

    Raises:
      ValueError: ``buffer_count`` < 1.
    """

    buffer_count: int

    def __post_init__(self) -> None:
        if int(self.buffer_count) < 1:
            raise ValueError(f"buffer_count={self.buffer_count} must be >= 1")


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """How one operand is cut into blocks (JAX ``pl.BlockSpec``).

    Args:
      block_shape: one entry per array dimension, in elements; ``None`` means
        a block of size 1 squeezed out of the kernel's ref.  ``None`` for the
        whole tuple means the whole array is one block.
      index_map: ``(*grid_indices, *scalar_prefetch_refs) -> block indices``
        (block units, not element offsets), one per dimension.  ``None`` maps
        every step to block 0.
      pipeline_mode: ``pl.Buffered(n)`` to choose the number of buffers.
      memory_space: ``pl.ANY`` for a raw HBM ref (no automatic copies),
        ``pltpu.SMEM`` for a block in SMEM; default VMEM.
    """

    block_shape: tuple[int | None, ...] | None = None
    index_map: Callable[..., object] | None = None
    pipeline_mode: Buffered | None = None
    memory_space: MemorySpace | None = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.block_shape is not None:
            object.__setattr__(self, "block_shape", tuple(
                None if d is None else int(d) for d in self.block_shape))


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """``pltpu.CompilerParams``: per-axis semantics and the scoped VMEM limit.

    Args:
      dimension_semantics: one of "parallel"/"arbitrary" per grid axis.
      vmem_limit_bytes: scoped VMEM limit in bytes (default 32 MiB).
    """

    dimension_semantics: tuple[str, ...] | None = None
    vmem_limit_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.dimension_semantics is not None:
            object.__setattr__(self, "dimension_semantics",
                               tuple(str(s) for s in self.dimension_semantics))


TPUCompilerParams = CompilerParams


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """``pl.GridSpec``: the grid, the operands' BlockSpecs and the scratch shapes."""

    grid: tuple[int, ...] | int = ()
    in_specs: Sequence[BlockSpec | None] | BlockSpec | None = None
    out_specs: Sequence[BlockSpec | None] | BlockSpec | None = None
    scratch_shapes: Sequence[ScratchShape] = ()
    num_scalar_prefetch: int = 0


@dataclasses.dataclass(frozen=True)
class PrefetchScalarGridSpec(GridSpec):
    """``pltpu.PrefetchScalarGridSpec``: the first ``num_scalar_prefetch`` call
    arguments are integer arrays placed in SMEM and passed to every index map
    (after the grid indices) and to the kernel (first)."""

    def __init__(self, num_scalar_prefetch: int, grid=(), in_specs=None, out_specs=None,
                 scratch_shapes=()) -> None:
        super().__init__(grid=grid, in_specs=in_specs, out_specs=out_specs,
                         scratch_shapes=tuple(scratch_shapes),
                         num_scalar_prefetch=int(num_scalar_prefetch))
