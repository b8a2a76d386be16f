"""Call configuration records: BlockSpec, GridSpec, compiler parameters, cost estimates.

Spelled as in ``jax.experimental.pallas`` (``pl.BlockSpec``, ``pl.GridSpec``,
``pl.Buffered``, ``pl.CostEstimate``) and ``jax.experimental.pallas.tpu``
(``pltpu.PrefetchScalarGridSpec``, ``pltpu.CompilerParams``,
``pltpu.GridDimensionSemantics``). Memory spaces (``pl.ANY``, ``pltpu.VMEM``, ...) are
in :mod:`pallas_sim._src.memory_spaces`, block dimensions (``pl.Element``, ...) in
:mod:`pallas_sim._src.block_dims`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence

import numpy as np

from . import block_dims
from .call_args import check_in_specs, no_block_spec, top_level_tuple
from .dtypes import as_dtype
from .memory_spaces import _JAX_ONLY, ANY, SMEM, VMEM, MemorySpace, ScratchShape, TPUMemorySpace
from .memory_spaces import _RefusingEnumType as _RefusingEnum
from .values import canonical_dtype

# Re-exported for the modules that build calls.
_REEXPORTED = (ANY, SMEM, VMEM, MemorySpace, ScratchShape, TPUMemorySpace)


class GridDimensionSemantics(enum.Enum, metaclass=_RefusingEnum):
    """``pltpu.GridDimensionSemantics``: how the steps along one grid axis may run.

    ``PARALLEL``: in any order (TPU interpret mode, and pallas_sim with
    ``config(shuffle_parallel=True)``, visit them in a shuffled order), so such axes must
    lead the grid. ``ARBITRARY``: in order, one after the other (a reduction axis).
    ``CORE_PARALLEL``: split across the TensorCores of a chip; on the one core pallas_sim
    simulates, the steps run in order, and JAX's interpreters treat it as neither parallel
    nor arbitrary for the prefix rule (it is not shuffled and need not lead the grid).
    ``dimension_semantics`` also takes the plain strings "parallel", "arbitrary" and
    "core_parallel", as JAX does.

    Source: ``jax._src.pallas.mosaic.core.GridDimensionSemantics`` (JAX 0.10.x), whose
    members compare unequal to the strings.
    """

    PARALLEL = "parallel"
    CORE_PARALLEL = "core_parallel"
    ARBITRARY = "arbitrary"

    def __repr__(self) -> str:
        return f"<GridDimensionSemantics.{self.name}: {self.value!r}>"


_JAX_ONLY[GridDimensionSemantics] = (
    "jax.experimental.pallas.tpu.GridDimensionSemantics", ("SUBCORE_PARALLEL",),
    "subcore_parallel splits a grid across the subcores of a SparseCore; pallas_sim simulates "
    "one TensorCore")

PARALLEL = GridDimensionSemantics.PARALLEL
CORE_PARALLEL = GridDimensionSemantics.CORE_PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY


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

    @classmethod
    def like(cls, x: object) -> ShapeDtypeStruct:
        """``jax.ShapeDtypeStruct.like(x)``: the shape and dtype of ``x`` (an array, a
        kernel value, a ShapeDtypeStruct or a Python number) in JAX's 32-bit dtypes, as
        JAX's with 64-bit types off (a float64 array gives float32, a Python int int32).
        """
        if isinstance(x, bool | int | float | complex):
            return cls((), canonical_dtype(np.asarray(x).dtype))
        return cls(x.shape, canonical_dtype(x.dtype))  # type: ignore[attr-defined]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


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
      block_shape: one entry per array dimension (:mod:`pallas_sim._src.block_dims`): an int
        or ``pl.Blocked(n)`` (blocks of n elements, indexed by block number), ``None``
        or ``pl.Squeezed()`` (one element, squeezed out of the kernel's ref),
        ``pl.Element(n, padding)`` (a window of n elements indexed by element offset).
        ``None`` for the whole tuple means the whole array is one block.
      index_map: ``(*grid_indices, *scalar_prefetch_refs) -> indices``, one per
        dimension: block indices, element offsets for ``pl.Element`` dimensions.
        ``None`` maps every step to block 0.
      pipeline_mode: ``pl.Buffered(n)`` to choose the number of buffers.
      memory_space: ``pl.ANY`` or ``pltpu.HBM`` for a raw HBM ref (no automatic copies;
        DMA only), ``pltpu.SMEM`` for a block in SMEM; default (None or ``pltpu.VMEM``)
        VMEM.

    Raises:
      ValueError: a ``block_shape`` entry of another type (JAX's message).
    """

    block_shape: tuple[int | block_dims.BlockDim | None, ...] | None = None
    index_map: Callable[..., object] | None = None
    pipeline_mode: Buffered | None = None
    memory_space: object = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.block_shape is not None:
            object.__setattr__(self, "block_shape", tuple(
                d if d is None or isinstance(d, block_dims.Element | block_dims.Squeezed |
                                              block_dims.Blocked | block_dims.BoundedSlice)
                else block_dims.canonical(d).block_size for d in self.block_shape))


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """``pltpu.CompilerParams``: per-axis semantics and the scoped VMEM limit.

    Args:
      dimension_semantics: per grid axis, a :class:`GridDimensionSemantics` member
        (``pltpu.PARALLEL``, ``pltpu.ARBITRARY``, ``pltpu.CORE_PARALLEL``) or its string
        ("parallel", "arbitrary", "core_parallel"); kept as given, as in JAX, and checked
        when the call runs.
      vmem_limit_bytes: scoped VMEM limit in bytes (default 32 MiB).
    """

    dimension_semantics: tuple[object, ...] | None = None
    vmem_limit_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.dimension_semantics is not None:
            object.__setattr__(self, "dimension_semantics", tuple(self.dimension_semantics))


TPUCompilerParams = CompilerParams


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """``pl.GridSpec``: the grid, the operands' BlockSpecs and the scratch shapes.

    ``in_specs``/``out_specs`` default to ``pl.no_block_spec`` (whole arrays); given,
    they are pytrees matching the arguments / ``out_shape`` (:mod:`pallas_sim._src.call_args`).

    Raises:
      ValueError: ``in_specs`` given as something other than a tuple or list (JAX's
        message).
    """

    grid: tuple[int, ...] | int = ()
    in_specs: object = no_block_spec
    out_specs: object = no_block_spec
    scratch_shapes: object = ()
    num_scalar_prefetch: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "in_specs", check_in_specs(self.in_specs))
        object.__setattr__(self, "out_specs", top_level_tuple(self.out_specs))


@dataclasses.dataclass(frozen=True)
class PrefetchScalarGridSpec(GridSpec):
    """``pltpu.PrefetchScalarGridSpec``: the first ``num_scalar_prefetch`` call
    arguments are integer arrays placed in SMEM and passed to every index map
    (after the grid indices) and to the kernel (first)."""

    def __init__(self, num_scalar_prefetch: int, grid=(), in_specs=no_block_spec,
                 out_specs=no_block_spec, scratch_shapes=()) -> None:
        super().__init__(grid=grid, in_specs=in_specs, out_specs=out_specs,
                         scratch_shapes=tuple(scratch_shapes),
                         num_scalar_prefetch=int(num_scalar_prefetch))


@dataclasses.dataclass(frozen=True)
class CostEstimate:
    """``pl.CostEstimate(flops, transcendentals, bytes_accessed, remote_bytes_transferred=0)``:
    what the kernel costs, for XLA's scheduler. ``pallas_call(cost_estimate=...)`` and
    ``pl.kernel(cost_estimate=...)`` record it on the call's trace
    (``CallTrace.cost_estimate``); nothing else reads it yet.

    Args:
      flops: floating-point operations of the whole call.
      transcendentals: transcendental operations (exp, log, ...).
      bytes_accessed: bytes read from and written to HBM.
      remote_bytes_transferred: bytes sent to other devices (0 on one core).

    Raises:
      ValueError: a field that is not a Python int (JAX's message: "All fields in
        CostEstimate must be ints. flops is not an int: <class 'float'>(1.0)").
    """

    flops: int
    transcendentals: int
    bytes_accessed: int
    remote_bytes_transferred: int = 0

    def __post_init__(self) -> None:
        for k, v in dataclasses.asdict(self).items():
            if not isinstance(v, int):
                raise ValueError("All fields in CostEstimate must be ints. "
                                 f"{k} is not an int: {type(v)}({v})")

    def to_json(self) -> bytes:
        """The estimate as JSON bytes, as JAX serializes it into the custom call."""
        return (f'{{"flops": {self.flops}, "transcendentals": {self.transcendentals},'
                f' "bytes_accessed": {self.bytes_accessed},'
                f' "remote_bytes_transferred": {self.remote_bytes_transferred}}}'
                ).encode("ascii")
