"""The lecture's worked answers of a3_matmul (lecture §4.1, §4.2, Exercise 5), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``),
the fidelity cases (``graders/fidelity/cases.py``) and the tests of the reference
and the solution (``tests/reference/test_reference_a2_a3.py``), so each number is written
once. The lecture's matmul is (4096, 7168) @ (7168, 18432) on one Ironwood
TensorCore; sizes in bytes (``MiB`` = 2**20), times in seconds, rates per second.
Imports nothing but the standard library (it ships with the public checks).
"""

from __future__ import annotations

MiB = 1 << 20

#: (M, N, K) of the lecture's matmul: (4096, 7168) @ (7168, 18432).
SHAPE = (4096, 18432, 7168)
#: One Ironwood TensorCore: peak bf16 FLOP/s and HBM bytes/s.
PEAK_FLOPS, HBM_BANDWIDTH = 1028.75e12, 3685.5e9

#: Task 3.3 (lecture §4.1): VMEM of the 1024-block 1d/2d/3d grids, bf16 in, f32 out.
VMEM_BLOCK = 1024
VMEM_MIB: dict[str, int] = {"1d": 664, "2d": 64, "3d": 16}

#: Task 3.4 (lecture §4.2, Ex5): the smallest compute-bound bf16 block, by ``multiple_of``.
MIN_BLOCK: dict[int, int] = {8: 560, 1: 559}
#: Task 3.4 (lecture §4.2): the per-step intensity of a bf16 block of 1024 is b/2 = 512.
INTENSITY_BLOCK, INTENSITY = 1024, 512.0
#: Task 3.4 (lecture §4.2): the ideal time of SHAPE on Ironwood, in ms, by block size.
IDEAL_MS: dict[int, float] = {512: 1.147, 1024: 1.052}

#: Task 3.5 (performance): the values each of bm, bn, bk may take (the handout's set; the
#: reference's ``MATMUL_BLOCK_CANDIDATES``, checked equal by
#: tests/reference/test_reference_a2_a3.py).
BLOCK_CANDIDATES = (128, 256, 512, 1024, 2048)
#: Task 3.5: the lecture's matmul as x [M, K] @ y [K, N] shapes, bf16 (lecture §4.2).
X_SHAPE, Y_SHAPE = (SHAPE[0], SHAPE[2]), (SHAPE[2], SHAPE[1])
#: Task 3.5: the scoped VMEM limit of a pallas_call (32 MiB, lecture §4.1).
SCOPED_VMEM = 32 * MiB
#: Task 3.5: the predicted time (ms, 4 decimals) of the fastest legal candidate, from the
#: calibrated timeline model (docs/performance-model.md); full points within 10 % of it.
#: tests/reference/test_reference_a2_a3.py checks it against the reference's prediction.
FASTEST_MS = 1.6030
#: Task 3.5: those blocks (bm, bn, bk); the self-check times the student's own matmul there
#: (tests/reference/test_reference_a2_a3.py checks it is the reference's ``BEST_MATMUL_BLOCKS``).
BEST_BLOCKS = (1024, 2048, 1024)
PERFORMANCE_RTOL = 0.10
