"""VMEM and SMEM accounting, and the out-of-memory error of the real compiler.

VMEM bytes = Σ over VMEM operands (block bytes × buffers) + Σ VMEM scratch
bytes; SMEM (scalar prefetch, SMEM blocks and scratch) is counted apart.  The
limit is ``vmem_limit_bytes`` from CompilerParams, else the default scoped
limit (32 MiB), capped by the physical capacity (pallas-sim.md, "Memory
accounting"; lecture §2.1).
"""

from __future__ import annotations

import dataclasses

from .config import OPTIONS
from .errors import VmemOOMError

MiB = 1 << 20


@dataclasses.dataclass(frozen=True)
class Allocation:
    """One buffer set: ``buffers`` copies of ``nbytes`` bytes in ``memory_space``."""

    name: str
    role: str
    memory_space: str
    nbytes: int
    buffers: int
    what: str  # e.g. "float32[256, 256] block"

    @property
    def total(self) -> int:
        return self.nbytes * self.buffers


def default_buffers(num_steps: int, buffer_count: int | None) -> int:
    """Buffers per pipelined operand: ``buffer_count`` if given, 1 for a
    single-step grid, else 2 (double buffering, lecture §3.1)."""
    if buffer_count is not None:
        return int(buffer_count)
    return 1 if num_steps == 1 else 2


def scoped_limit(vmem_limit_bytes: int | None) -> int:
    """The VMEM limit in force, in bytes: ``vmem_limit_bytes`` (``pltpu.CompilerParams``),
    else the default scoped limit (32 MiB).

    Raises:
      VmemOOMError: ``vmem_limit_bytes`` above the chip's VMEM (``OPTIONS.vmem_capacity_bytes``,
        64 MiB): a real compile fails the same way, as a VMEM OOM naming the capacity
        (XLA:TPU's "Ran out of memory in memory space vmem"), in real and abstract runs.
    """
    limit = OPTIONS.default_vmem_limit_bytes if vmem_limit_bytes is None else int(vmem_limit_bytes)
    capacity = OPTIONS.vmem_capacity_bytes
    if limit > capacity:
        raise VmemOOMError(
            f"Ran out of memory in memory space vmem: vmem_limit_bytes={limit} "
            f"({limit / MiB:.2f}M) is above the chip's {capacity / MiB:.2f}M of VMEM.\n"
            "  A scoped limit cannot exceed the VMEM the TensorCore has; ask for at most "
            f"{capacity} bytes in pltpu.CompilerParams (lecture §2.1).")
    return limit


def totals(allocations: list[Allocation]) -> tuple[int, int]:
    """(VMEM bytes, SMEM bytes) of these allocations."""
    vmem = sum(a.total for a in allocations if a.memory_space == "vmem")
    smem = sum(a.total for a in allocations if a.memory_space == "smem")
    return vmem, smem


def check_vmem(call_name: str, allocations: list[Allocation], limit: int) -> int:
    """Return the VMEM bytes, or raise if they exceed ``limit``.

    Raises:
      VmemOOMError: first line ``Scoped allocation with size 48.00M and limit
        32.00M``, then one line per buffer.
    """
    vmem, _ = totals(allocations)
    if vmem <= limit:
        return vmem
    lines = [f"Scoped allocation with size {vmem / MiB:.2f}M and limit {limit / MiB:.2f}M",
             f"  in pallas_call {call_name!r}; VMEM buffers:"]
    for a in allocations:
        if a.memory_space != "vmem":
            continue
        lines.append(f"    {a.role:<7} {a.name:<16} {a.what:<28} x{a.buffers} "
                     f"= {a.total / MiB:.2f}M")
    lines.append("  Use smaller blocks, fewer buffers, or raise vmem_limit_bytes in "
                 "pltpu.CompilerParams (lecture §2.1).")
    raise VmemOOMError("\n".join(lines))
