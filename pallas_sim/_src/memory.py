"""VMEM and SMEM accounting, and the out-of-memory error of the real compiler.

VMEM bytes = Σ over VMEM operands (block bytes × buffers) + Σ VMEM scratch
bytes; SMEM (scalar prefetch, SMEM blocks and scratch) is counted apart.  The
limit is ``vmem_limit_bytes`` from CompilerParams, else the default scoped
limit (32 MiB) capped by the physical capacity; a ``vmem_limit_bytes`` above the
physical capacity of the chip is a compile error, as on a TPU (lecture §2.1).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

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


#: The chips whose VMEM bounds the calls running now, innermost last: (name, VMEM bytes of
#: one TensorCore). ``pallas_sim.estimate`` pushes its chip for the abstract run
#: (:func:`on_chip`); a concrete run has none and uses the config's capacity.
_CHIPS: list[tuple[str, int]] = []


@contextlib.contextmanager
def on_chip(name: str, vmem_bytes: int) -> Iterator[None]:
    """Bound the calls made inside by the VMEM of chip ``name`` (``vmem_bytes`` per
    TensorCore), as ``pallas_sim.estimate(..., chip=name)`` does."""
    _CHIPS.append((name, int(vmem_bytes)))
    try:
        yield
    finally:
        _CHIPS.pop()


def capacity() -> tuple[int, str]:
    """(VMEM bytes of one TensorCore, what it is) for the calls running now: the chip of the
    running ``pallas_sim.estimate``, else the config's ``vmem_capacity_bytes`` (64 MiB by
    default: one Ironwood (v7) TensorCore, ``estimate``'s default chip)."""
    if _CHIPS:
        name, nbytes = _CHIPS[-1]
        return nbytes, f"one {name} TensorCore"
    return (OPTIONS.vmem_capacity_bytes,
            "the simulated TensorCore (pallas_sim.config vmem_capacity_bytes; by default "
            "one v7 TensorCore's)")


def scoped_limit(vmem_limit_bytes: int | None, call_name: str = "pallas_call") -> int:
    """The VMEM limit in force, in bytes: ``vmem_limit_bytes`` (CompilerParams), else the
    default scoped limit (32 MiB), which the physical VMEM caps.

    Raises:
      VmemOOMError: ``vmem_limit_bytes`` above the physical VMEM of the chip
        (:func:`capacity`): a real compile for that chip fails too, whatever the
        kernel needs (lecture §2.1: the scoped limit is a part of the physical VMEM).
    """
    total, what = capacity()
    if vmem_limit_bytes is None:
        return min(OPTIONS.default_vmem_limit_bytes, total)
    limit = int(vmem_limit_bytes)
    if limit > total:
        raise VmemOOMError(
            f"vmem_limit_bytes={limit} ({limit / MiB:.2f}M) is above the {total / MiB:.2f}M "
            f"of VMEM of {what}, in pallas_call {call_name!r}: a compile for this chip "
            f"fails. Ask for at most {total} bytes (pltpu.CompilerParams(vmem_limit_bytes=...)"
            ", lecture §2.1).")
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
