# Baseline (honest): the solution with the lecture's slow 512^3 blocks: legal (3 of 10),
# 2.9x slower than the best candidate, predicted 4.614 ms.


def choose_matmul_blocks():
    return (512, 512, 512)
