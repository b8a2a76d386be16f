"""Sanitizer switches of the simulator.

``pallas_sim.config(uninitialized="zero")`` turns poisoning off;
``pallas_sim.config(vmem_capacity_bytes=...)`` changes the physical VMEM size.
Used as a plain call it sets the options for the rest of the process; used as
a context manager it restores the previous options on exit::

    with pallas_sim.config(uninitialized="zero"):
        out = my_call(x)
"""

from __future__ import annotations

import dataclasses
import types
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

MiB = 1 << 20


@dataclasses.dataclass
class Options:
    """Current simulator options.

    Attributes:
      uninitialized: "poison" fills fresh output blocks, scratch buffers and
        ragged padding with NaN (floats), the dtype's minimum (ints) or False
        (bool), as TPU interpret mode does with uninitialized memory; "zero"
        fills them with zeros.
      vmem_capacity_bytes: physical VMEM of one core in bytes in concrete runs (64 MiB,
        one v7 (Ironwood) TensorCore, ``estimate``'s default chip; an estimate uses its
        chip's): it caps the default scoped limit, and a ``vmem_limit_bytes`` above it
        raises ``VmemOOMError``, as a real compile does.
      default_vmem_limit_bytes: the scoped VMEM limit when CompilerParams
        gives none (32 MiB, Mosaic's default).
      shuffle_parallel: visit the leading "parallel" grid axes in a seeded
        random order, each axis permuted on its own, as TPU interpret mode
        does (JAX 0.10.x ``InterpretParams.random_seed``); docs/pallas-sim.md
        rule 1.  The grader runs student code with it on.
      shuffle_seed: the seed of those permutations (same seed, same grid →
        same order, so grading stays deterministic).
      unwaited_dma: a manual DMA never waited by the end of the call raises
        ``UnwaitedDMAError`` ("raise") or only warns ("warn"; the destination
        keeps its old contents, as in TPU interpret mode).
    """

    uninitialized: Literal["poison", "zero"] = "poison"
    vmem_capacity_bytes: int = 64 * MiB
    default_vmem_limit_bytes: int = 32 * MiB
    shuffle_parallel: bool = False
    shuffle_seed: int = 0
    unwaited_dma: Literal["raise", "warn"] = "raise"


OPTIONS = Options()

#: The sanitizers grading turns on over the defaults, written once for every place that
#: runs kernels as the grader does: the worker (locked, for the submission), the trusted
#: grader (its reference and model runs) and a student's ``pallas-lab check``. Parallel
#: grid axes are visited in a seeded random order, as TPU interpret mode does
#: (docs/pallas-sim.md rule 1); the fixed seed keeps grading deterministic and gives the
#: reference and the submission the same order.
GRADING_SANITIZERS: Mapping[str, object] = types.MappingProxyType(
    {"shuffle_parallel": True, "shuffle_seed": 0})


_LOCK = {"locked": False}


def _set(options: dict[str, object]) -> None:
    """Validate and apply ``options`` (no lock check: the grader's own entry point)."""
    for key, value in options.items():
        if not hasattr(OPTIONS, key):
            raise ValueError(f"unknown pallas_sim option {key!r}")
        if key == "uninitialized" and value not in ("poison", "zero"):
            raise ValueError(f"uninitialized={value!r}: expected 'poison' or 'zero'")
        if key == "unwaited_dma" and value not in ("raise", "warn"):
            raise ValueError(f"unwaited_dma={value!r}: expected 'raise' or 'warn'")
        if key == "shuffle_parallel" and not isinstance(value, bool):
            raise ValueError(f"shuffle_parallel={value!r}: expected True or False")
        if key == "shuffle_seed" and (not isinstance(value, int) or value < 0):
            raise ValueError(f"shuffle_seed={value!r}: expected an int >= 0")
        if key.endswith("_bytes") and (not isinstance(value, int) or value <= 0):
            raise ValueError(f"{key}={value!r}: expected a positive int")
        setattr(OPTIONS, key, value)


def _lock(**options: object) -> None:
    """Apply ``options`` and lock them: ``config(...)`` then raises (the grader's worker
    calls this before it loads a submission, and again before every call)."""
    _set(options)
    _LOCK["locked"] = True


@contextmanager
def _override(**options: object) -> Iterator[Options]:
    """Change options for a ``with`` block even when they are locked (the grader's own
    harnesses, e.g. zero-filled buffers to check an activation alone)."""
    previous = dataclasses.replace(OPTIONS)
    _set(options)
    try:
        yield OPTIONS
    finally:
        _set(dataclasses.asdict(previous))


class config:  # noqa: N801 - spelled like a function on purpose
    """Set simulator options; restores the previous ones when used with ``with``.

    Args:
      uninitialized: "poison" (default) or "zero".
      vmem_capacity_bytes: physical VMEM capacity in bytes (int > 0).
      default_vmem_limit_bytes: scoped limit in bytes when none is given.
      shuffle_parallel: bool; shuffle_seed: int >= 0.
      unwaited_dma: "raise" (default) or "warn".

    Raises:
      ValueError: an unknown option value.

    Warns:
      RuntimeWarning: while a submission is graded the grader fixes the options
        (poisoned memory, the 32 MiB scoped VMEM limit, shuffled parallel grid
        axes) and the call changes nothing, so a submission cannot switch its
        own checks' sanitizers off.
    """

    def __init__(self, **options: object) -> None:
        self._previous: Options | None = None
        if _LOCK["locked"]:
            warnings.warn(
                "pallas_sim.config(...) changes nothing while your code is graded: the grader "
                "fixes the options (poisoned memory, the 32 MiB scoped VMEM limit, shuffled "
                "parallel grid axes). It works in your own runs.", RuntimeWarning, stacklevel=2)
            return
        self._previous = dataclasses.replace(OPTIONS)
        _set(options)

    def __enter__(self) -> Options:
        return OPTIONS

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            _set(dataclasses.asdict(self._previous))
