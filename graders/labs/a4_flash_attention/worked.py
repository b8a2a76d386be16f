"""The lecture's worked answers of a4_flash_attention used by Task 4.7 (lecture §5.3), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``) and
the tests, so each number is written once. The lecture's layer: Q, K [128, 4096, 192],
V [128, 4096, 128] in bf16; the score tile of one grid step is float32, and the kernel
keeps two arrays of that shape at once (the scores and their exp). Sizes in bytes
(``MiB`` = 2**20). Imports nothing but the standard library (it ships with the public
checks).
"""

from __future__ import annotations

MiB = 1 << 20

#: Head dims of the lecture's layer (d for q and k, dv for v); bf16 inputs.
HEAD_DIM, VALUE_DIM = 192, 128
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
