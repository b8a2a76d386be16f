"""The lecture's worked answers of a5_splash_attention used by Task 5.6 (lecture §6.6), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``), the
fidelity cases (``graders/fidelity/cases.py``) and the tests of the reference and the
solution (``tests/test_reference_a5.py``), so each number is written once.

Lecture §6.6 counts what storing partial patterns costs at ``L = 16384`` with
``1024 x 1024`` tiles, one byte per mask element: a causal mask needs 1 pattern
(1 MiB), a causal sliding window of 2048 keys 2 patterns (2 MiB), and the document
mask of its example 28 patterns (28 MiB: nearly every partial tile is a pattern of
its own). A kernel that computes each partial tile's mask from positions and segment
ids stores none of them, and moves none from HBM: that is the saving. The causal and
window counts follow from the geometry (block-aligned window); the document count
depends on the lecture's random document lengths and is kept as the lecture states it.
Imports nothing but the standard library (it ships with the public checks).
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20

#: Sequence length and (square) tile size of the lecture's count (§6.6).
LENGTH, BLOCK = 16384, 1024
#: The causal sliding window of the count: each query sees itself and 2048 earlier keys.
WINDOW = 2048


@dataclass(frozen=True, kw_only=True)
class StoredPatterns:
    """``mask``: which mask (words); ``patterns``: distinct partial patterns stored;
    ``reproducible``: whether the count follows from the geometry alone (the document
    count depends on the lecture's random draw)."""

    mask: str
    patterns: int
    reproducible: bool = True

    @property
    def pattern_bytes(self) -> int:
        """Bytes of stored patterns, one byte per element of a BLOCK x BLOCK tile."""
        return self.patterns * BLOCK * BLOCK

    @property
    def saved_mib(self) -> float:
        """MiB the in-kernel mask does not store (and never moves from HBM)."""
        return self.pattern_bytes / MiB


#: §6.6: the stored patterns a kernel that computes its masks saves, at LENGTH / BLOCK.
SAVED: tuple[StoredPatterns, ...] = (
    StoredPatterns(mask="causal", patterns=1),
    StoredPatterns(mask=f"causal & window {WINDOW}", patterns=2),
    StoredPatterns(mask="documents (the lecture's draw)", patterns=28, reproducible=False),
)

#: The geometric counts scaled by 1/SCALE (L 2048, tiles 128, window 256): the pattern
#: counts depend only on L / BLOCK and WINDOW / BLOCK, so checks can run them quickly.
SCALE = 8
