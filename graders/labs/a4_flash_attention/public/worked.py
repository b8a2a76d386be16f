"""The lecture's worked answers of a4_flash_attention (lecture §5.1-§5.4), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``), the
fidelity cases (``graders/fidelity/cases.py``) and the tests of the reference and the
solution (``tests/reference/test_reference_worked_answers.py``), so each number is written once.
The lecture's layer: Q, K [128, 4096, 192], V [128, 4096, 128] in bf16. Sizes in bytes
(``MiB`` = 2**20, ``GiB`` = 2**30). Imports nothing but the standard library (it ships
with the public checks).
"""

from __future__ import annotations

from dataclasses import dataclass

MiB, GiB = 1 << 20, 1 << 30


@dataclass(frozen=True, kw_only=True)
class SoftmaxTrace:
    """Task 4.1 (lecture §5.1): ``online_softmax(x, block_size)``'s running ``(m, l)`` after
    each block, to 4 decimals, and (when the lecture gives it) the softmax to 4 decimals."""

    x: tuple[float, ...]
    block_size: int
    trace: tuple[tuple[float, float], ...]
    probs: tuple[float, ...] | None = None


#: Task 4.1: the lecture's example and its Exercise 7, both with blocks of 2.
SOFTMAX_TRACES: tuple[SoftmaxTrace, ...] = (
    SoftmaxTrace(x=(1, 3, 2, 5, 0, 4), block_size=2,
                 trace=((3, 1.1353), (5, 1.2034), (5, 1.5781))),
    SoftmaxTrace(x=(2, 0, 4, 1), block_size=2, trace=((2, 1.1353), (4, 1.2034)),
                 probs=(0.1125, 0.0152, 0.8310, 0.0414)),
)
#: The relative tolerance the 4-decimal worked numbers are compared with.
WORKED_RTOL = 5e-3

#: Task 4.5 (lecture §5.4, Exercise 10): float32 limits of exp: ln(f32 max) and
#: ln(f32 smallest normal).
LN_F32_MAX, LN_F32_TINY = 88.7228, -87.3365
#: Task 4.5: ``mle_safe_range(max_logit, min_row_max)`` of the exercise (scores in
#: [-30, 40]) and the lecture's answer, about (-48.7, 57.3).
MLE_ARGS = (40.0, -30.0)
MLE_SAFE_RANGE = (-48.7, 57.3)


@dataclass(frozen=True, kw_only=True)
class Traffic:
    """Task 4.6 (lecture §5.2): ``func(*args)`` is ``value`` (bytes or FLOPs), because ``why``."""

    func: str
    args: tuple[int, ...]
    value: int
    why: str


#: (H, L, d, dv) of the lecture's attention: 128 heads, L 4096, d 192, dv 128.
SHAPE = (128, 4096, 192, 128)
#: Task 4.6: HBM traffic of Flash (by block_q) and of XLA's three fusions, and the FLOPs.
TRAFFIC: tuple[Traffic, ...] = (
    Traffic(func="flash_attention_hbm_bytes", args=(*SHAPE, 1024), value=1728 * MiB,
            why="1728 MiB = Q 192 MiB + 4 q blocks x (K 192 + V 128) MiB + O 256 MiB"),
    Traffic(func="flash_attention_hbm_bytes", args=(*SHAPE, 2048), value=1088 * MiB,
            why="1088 MiB = Q 192 MiB + 2 q blocks x (K 192 + V 128) MiB + O 256 MiB"),
    Traffic(func="xla_attention_hbm_bytes", args=SHAPE, value=99 * GiB // 4,
            why="24.75 GiB = f32 scores 8 GiB x 3 (written once, read twice) + Q, K, V, O "
                "0.75 GiB"),
    Traffic(func="attention_flops", args=SHAPE, value=2 * 128 * 4096**2 * (192 + 128),
            why="1.3744e12 = 2·H·L²·(d + dv)"),
)


# --- Task 4.7: the score tiles of one grid step (lecture §5.3) ---------------------------

#: Head dims of the lecture's layer (d for q and k, dv for v); bf16 inputs.
HEAD_DIM, VALUE_DIM = SHAPE[2], SHAPE[3]
#: Bytes of the score tiles a kernel holds at once: two float32 arrays (scores, exp).
SCORE_ARRAYS, SCORE_BYTES = 2, 4

#: Lecture §5.3 (VMEM of the score tiles): (block_q, block_kv) -> MiB of two f32 tiles.
FULL_TILE_MIB: dict[tuple[int, int], int] = {(1024, 2048): 16, (2048, 2048): 32,
                                             (4096, 4096): 128}

#: Lecture §5.3 and the §6.6 exercise: (block_q, block_kv, bkv_compute) -> MiB of two f32
#: tiles of [block_q, bkv_compute] (4096 x 4096 blocks: 128 MiB without micro-tiling, 32 MiB
#: with bkv_compute 1024; the exercise's 2048 x 2048 with bkv_compute 512).
MICROTILED_MIB: dict[tuple[int, int, int], int] = {(4096, 4096, 1024): 32,
                                                   (2048, 2048, 512): 8}


def score_tile_mib(block_q: int, columns: int) -> float:
    """MiB of the ``SCORE_ARRAYS`` float32 tiles of [block_q, columns] (lecture §5.3)."""
    return SCORE_ARRAYS * SCORE_BYTES * block_q * columns / MiB


# --- Task 4.8 (performance): block sizes and MLE for the lecture's attention (§5.3, §5.4) ---

#: Task 4.8: the values each of block_q and block_kv may take (the handout's set; all divide
#: L = 4096; the reference's ``FLASH_BLOCK_CANDIDATES``, checked equal by
#: tests/reference/test_reference_a4.py).
FLASH_BLOCK_CANDIDATES = (256, 512, 1024, 2048, 4096)
#: Task 4.8: max_logit_const: None (MLE off) or the slides' exercise constant 70 (MLE on).
MLE_CONSTANT = 70.0
FLASH_MLE_CANDIDATES = (None, MLE_CONSTANT)
#: Task 4.8: q, k [H, L, d] and v [H, L, dv] of the lecture's layer, bf16, non-causal.
Q_SHAPE, V_SHAPE = SHAPE[:3], (SHAPE[0], SHAPE[1], SHAPE[3])
#: Task 4.8: VMEM of one Ironwood TensorCore (JAX's TPU info table): the blocks' buffers,
#: the scratch and the two f32 [block_q, block_kv] score tiles must fit in it (lecture §5.3:
#: 4096 x 4096 tiles, 128 MiB, do not).
VMEM_CAPACITY = 64 * MiB
#: Task 4.8: the predicted time (ms, 4 decimals) of the fastest legal candidate, (2048, 2048,
#: 70.0), from the calibrated timeline model (docs/performance-model.md); full points within
#: 10 % of it. tests/reference/test_reference_a4.py checks it against the reference's prediction.
FLASH_FASTEST_MS = 2.7281
#: Task 4.8: that configuration; the self-check times the student's own flash_attention
#: there (tests/reference/test_reference_a4.py checks it is the reference's ``BEST_FLASH_CONFIG``).
FLASH_BEST_CONFIG = (2048, 2048, 70.0)
PERFORMANCE_RTOL = 0.10
