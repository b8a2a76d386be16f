"""The lecture's worked answers of a1_pallas_basics (lecture §2.1, §2.2, Exercise 1), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``),
the fidelity cases (``graders/fidelity/cases.py``) and the tests of the reference
and the solution (``tests/reference/test_reference_worked_answers.py``), so each number is
written once. Sizes are in bytes; ``MiB`` is 2**20 bytes. Imports nothing but
the standard library (it ships to students with the public checks).
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True, kw_only=True)
class VmemAnswer:
    """A worked ``vmem_bytes`` call (Task 1.5) and its answer.

    ``shapes``/``dtypes`` of the operands (dtype names), ``block_shape`` (None:
    whole arrays, resident once), ``buffer_count`` and the answer ``vmem_bytes``;
    ``label`` is how feedback names the case.
    """

    label: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    block_shape: tuple[int, int] | None
    buffer_count: int = 2
    vmem_bytes: int

    @property
    def mib(self) -> int:
        """The answer in whole MiB."""
        return self.vmem_bytes // MiB


@dataclass(frozen=True, kw_only=True)
class BlockedAddAnswer:
    """The worked blocked add (Task 1.2, lecture §2.2): ``x + y`` of two ``shape`` f32
    arrays in ``block_shape`` blocks: its ``grid``, HBM bytes read and written and VMEM."""

    shape: tuple[int, int]
    block_shape: tuple[int, int]
    grid: tuple[int, int]
    hbm_bytes_read: int
    hbm_bytes_written: int
    vmem_bytes: int


@dataclass(frozen=True, kw_only=True)
class BiasAddAnswer:
    """The worked bias add (Task 1.3, lecture §2.2): f32 ``x`` of ``shape`` plus a
    ``(1, N)`` bias in ``block_shape`` blocks: the ``grid`` and ``dma_count`` with the
    column-block axis outer (each bias block fetched once per column of blocks)."""

    shape: tuple[int, int]
    block_shape: tuple[int, int]
    grid: tuple[int, int]
    dma_count: int


_F32_2048, _F32_4096 = ((2048, 2048),) * 3, ((4096, 4096),) * 3

#: Task 1.5 (lecture §2.1, Exercise 1): 48 MiB, 192 MiB unblocked; 6 MiB in blocks.
VMEM: tuple[VmemAnswer, ...] = (
    VmemAnswer(label="three unblocked f32[2048, 2048] operands", shapes=_F32_2048,
               dtypes=("float32",) * 3, block_shape=None, vmem_bytes=48 * MiB),
    VmemAnswer(label="three unblocked f32[4096, 4096] operands (Ex1)", shapes=_F32_4096,
               dtypes=("float32",) * 3, block_shape=None, vmem_bytes=192 * MiB),
    VmemAnswer(label="three f32[4096, 4096] operands in double-buffered (512, 512) blocks "
                     "(Ex1)", shapes=_F32_4096, dtypes=("float32",) * 3,
               block_shape=(512, 512), vmem_bytes=6 * MiB),
)

#: Task 1.2 (lecture §2.2): grid (4, 4), reads 32 MiB, writes 16 MiB, 6 MiB of VMEM.
BLOCKED_ADD = BlockedAddAnswer(shape=(2048, 2048), block_shape=(512, 512), grid=(4, 4),
                               hbm_bytes_read=32 * MiB, hbm_bytes_written=16 * MiB,
                               vmem_bytes=6 * MiB)

#: Task 1.3 (lecture §2.2): 64 x copies + 8 bias copies + 64 write-backs = 136 DMAs.
BIAS_ADD = BiasAddAnswer(shape=(1024, 1024), block_shape=(128, 128), grid=(8, 8),
                         dma_count=136)
