"""Memory spaces: ``pl.MemorySpace`` (``pl.ANY``) and ``pltpu.MemorySpace`` (``pltpu.VMEM``,
``pltpu.SMEM``, ``pltpu.HBM``, ``pltpu.SEMAPHORE``).

As in JAX 0.10.x both are enums whose members are also callables:
``pltpu.VMEM((8, 128), jnp.float32)`` declares a buffer of that shape and dtype in
VMEM, for ``scratch_shapes``, ``pl.run_scoped`` and ``pl.kernel(scratch_types=...)``.
A member used as ``BlockSpec(memory_space=...)`` says where the kernel's ref lives.

Inside the simulator a memory space is one of the strings of :class:`SpaceName`
("any", "hbm", "vmem", "smem", "semaphore"); :func:`space_name` turns a member into
it. The trace records those strings.

JAX has further members (``pl.MemorySpace.HOST``, ``pltpu.MemorySpace.VMEM_SHARED``,
``pltpu.MemorySpace.CMEM``, ...) for other chips and for SparseCore kernels;
pallas_sim simulates one TensorCore, and asking for them raises
:class:`~pallas_sim.UnsupportedJaxAPIError`.

Source: ``jax._src.pallas.core.MemorySpace`` and
``jax._src.pallas.mosaic.core.MemorySpace`` (JAX 0.10.x).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import as_dtype
from .errors import UnsupportedJaxAPIError


class SpaceName(enum.StrEnum):
    """The memory spaces pallas_sim simulates, by the names the trace uses.

    Members are the strings themselves (``SpaceName.VMEM == "vmem"``), so JSON and the
    trace's text are unchanged; ``pl.ANY``/``pltpu.VMEM`` are JAX's spellings of these
    (:func:`space_name`).
    """

    ANY = "any"
    HBM = "hbm"
    VMEM = "vmem"
    SMEM = "smem"
    SEMAPHORE = "semaphore"


#: The memory spaces pallas_sim simulates, by the names the trace uses.
SPACE_NAMES: tuple[SpaceName, ...] = tuple(SpaceName)
#: Memory spaces a kernel cannot load from or store to directly (DMA only).
HBM_SPACES = frozenset({SpaceName.ANY, SpaceName.HBM})


@dataclasses.dataclass(frozen=True)
class ScratchShape:
    """A buffer to allocate: ``shape`` (elements), ``dtype`` and ``memory_space`` (one of
    :data:`SPACE_NAMES`). What ``pltpu.VMEM(shape, dtype)`` returns (JAX: a
    ``MemoryRef``); used by ``scratch_shapes``, ``pl.run_scoped`` and
    ``pl.kernel(scratch_types=...)``."""

    shape: tuple[int, ...]
    dtype: np.dtype
    memory_space: str = "vmem"

    @property
    def nbytes(self) -> int:
        """Bytes the buffer takes (0 for semaphores, which live in no data memory)."""
        if self.memory_space == "semaphore":
            return 0
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n


class _RefusingEnumType(enum.EnumMeta):
    """An enum whose unknown public members raise UnsupportedJaxAPIError, naming what JAX
    has and pallas_sim does not."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        members = cls.__dict__.get("_member_map_", {})
        if name in members:
            return members[name]
        jax_name, known, hint = _JAX_ONLY.get(cls, (cls.__name__, (), ""))
        qualified = f"{jax_name}.{name}"
        if name in known:
            raise UnsupportedJaxAPIError(f"`{qualified}` is not supported by pallas_sim: "
                                         f"{hint}")
        raise UnsupportedJaxAPIError(f"`{qualified}` does not exist in JAX 0.10.2, so "
                                     "pallas_sim does not offer it either")


#: Per enum: its JAX name, the members JAX has that pallas_sim lacks, and what to use.
_JAX_ONLY: dict[type, tuple[str, tuple[str, ...], str]] = {}


def _scratch(space: str, shape: Sequence[int], dtype: object) -> ScratchShape:
    return ScratchShape(tuple(int(d) for d in shape), as_dtype(dtype), space)


class MemorySpace(enum.Enum, metaclass=_RefusingEnumType):
    """``pl.MemorySpace``: device-independent memory spaces. ``pl.ANY`` (=
    ``pl.MemorySpace.ANY``) lets the compiler place the array, which on a TPU means HBM:
    the kernel gets a raw ref it can only move data from and to with DMAs
    (``pltpu.sync_copy``, ``pltpu.async_copy``, ``pltpu.make_async_copy``).

    Calling a member, ``pl.ANY((8, 128), jnp.float32)``, declares a buffer of that
    shape and dtype in the space (pallas_call and run_scoped refuse HBM buffers, as
    JAX's TPU interpret mode does).
    """

    ANY = "any"

    def __call__(self, shape: Sequence[int], dtype: object) -> ScratchShape:
        return _scratch(space_name(self), shape, dtype)

    def __str__(self) -> str:
        return self.value


class TPUMemorySpace(enum.Enum, metaclass=_RefusingEnumType):
    """``pltpu.MemorySpace``: the memories of a TPU core. ``VMEM`` (vector memory, where
    blocks are computed on), ``SMEM`` (scalar memory), ``HBM`` (the chip's main memory,
    DMA only) and ``SEMAPHORE`` (DMA semaphores).

    ``pltpu.VMEM((8, 128), jnp.float32)`` declares a buffer; ``pltpu.VMEM`` alone, as a
    ``BlockSpec(memory_space=...)``, places an operand's block there.
    """

    VMEM = "vmem"
    SMEM = "smem"
    SEMAPHORE = "semaphore_mem"
    HBM = "hbm"

    def __call__(self, shape: Sequence[int], dtype: object) -> ScratchShape:
        return _scratch(space_name(self), shape, dtype)

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return self.name


_JAX_ONLY[MemorySpace] = (
    "jax.experimental.pallas.MemorySpace", ("DEFAULT", "ERROR", "INDEX", "KEY", "HOST"),
    "pallas_sim models the TPU memory spaces pl.ANY, pltpu.VMEM, pltpu.SMEM, pltpu.HBM and "
    "pltpu.SEMAPHORE")
_JAX_ONLY[TPUMemorySpace] = (
    "jax.experimental.pallas.tpu.MemorySpace", ("VMEM_SHARED", "CMEM", "HOST"),
    "pallas_sim simulates one TensorCore, with VMEM, SMEM, HBM and DMA semaphores")

ANY = MemorySpace.ANY
VMEM = TPUMemorySpace.VMEM
SMEM = TPUMemorySpace.SMEM
HBM = TPUMemorySpace.HBM
SEMAPHORE = TPUMemorySpace.SEMAPHORE

_NAMES: dict[object, str] = {ANY: "any", VMEM: "vmem", SMEM: "smem", HBM: "hbm",
                             SEMAPHORE: "semaphore"}


def space_name(memory_space: object) -> str:
    """The simulator's name ("any", "hbm", "vmem", "smem", "semaphore") of a memory space
    member; ``None`` (the default) is "vmem".

    Raises:
      TypeError: not a memory space pallas_sim knows.
    """
    if memory_space is None:
        return "vmem"
    name = _NAMES.get(memory_space)  # type: ignore[call-overload]
    if name is None:
        raise TypeError(f"memory_space={memory_space!r} is not a memory space; use pl.ANY, "
                        "pltpu.VMEM, pltpu.SMEM, pltpu.HBM or pltpu.SEMAPHORE")
    return name
