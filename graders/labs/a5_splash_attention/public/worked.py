"""The lecture's worked answers of a5_splash_attention used by Tasks 5.6 and 5.7 (lecture §6.5,
§6.6), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``), the
fidelity cases (``graders/fidelity/cases.py``) and the tests of the reference and the
solution (``tests/reference/test_reference_a5.py``), so each number is written once.

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


# --- Task 5.7 (performance): Splash's block size at L = 8192 (lecture §6.5) -----------------
#
# The problem, stated once (the reference's PERFORMANCE_* constants, checked equal by
# tests/reference/test_reference_a5.py). Attention shape: the lecture's Splash configuration (§6.6,
# DeepSeek-V3: 128 query heads, q/k head dim 192, v head dim 128), bf16 q, k, v, f32 output,
# at L = 8192, on one Ironwood TensorCore. Three masks [L, L]:
#
# * "causal":   q >= kv;
# * "local":    causal with a window of 2048 earlier keys, q - 2048 <= kv <= q (the lecture's
#               "causal ∧ window 2048", §6.4 and §6.6);
# * "document": five packed documents of 1000, 2000, 1096, 2500 and 1596 tokens (in that
#               order; mean 1638, near the lecture's 1820 at L 32768; the first three are
#               Exercise 12's), q and kv see each other iff in the same document (document
#               mask only, as Exercise 12).
#
# The student's ``choose_splash_blocks(mask_kind)`` returns (block_q, block_kv), each one of
# PERF_BLOCK_CANDIDATES. The grader builds the mask's MaskInfo at those blocks with the
# reference and runs the student's own ``splash_attention`` on shapes through
# ``pallas_sim.estimate``. Legal: it runs within the 32 MiB scoped VMEM (the (bq, bkv) bool
# pattern block is double-buffered too, so (4096, 4096) does not fit). Full points for a mask
# within 10 % of the fastest legal candidate's predicted time.

#: Task 5.7: sequence length, heads, q/k head dim, v head dim.
PERF_LENGTH = 8192
PERF_HEADS, PERF_HEAD_DIM, PERF_VALUE_DIM = 128, 192, 128
#: Task 5.7: the local mask's window (earlier keys) and the document mask's segment lengths.
PERF_WINDOW = 2048
PERF_DOCUMENTS = (1000, 2000, 1096, 2500, 1596)
#: Task 5.7: the masks, by the name ``choose_splash_blocks`` receives, in grading order.
PERF_MASKS = ("causal", "local", "document")
#: Task 5.7: the values each of block_q and block_kv may take (all divide PERF_LENGTH).
PERF_BLOCK_CANDIDATES = (256, 512, 1024, 2048, 4096)
#: Task 5.7: the scoped VMEM limit of a pallas_call (lecture §2.1).
PERF_SCOPED_VMEM = 32 * MiB
#: Task 5.7: the fastest legal candidate per mask and its predicted time (ms, 4 decimals;
#: tests/reference/test_reference_a5.py checks both against the reference's search).
PERF_BEST_BLOCKS: dict[str, tuple[int, int]] = {
    "causal": (2048, 2048), "local": (2048, 2048), "document": (4096, 2048)}
PERF_FASTEST_MS: dict[str, float] = {"causal": 9.6150, "local": 6.7442, "document": 6.7505}
PERFORMANCE_RTOL = 0.10
#: Task 5.7: Ironwood's bf16 peak per TensorCore (lecture §4.2): the floor of any prediction.
PERF_PEAK_FLOPS = 1028.75e12
