"""What a1's public checks run around a student's kernel (shipped in the student bundle).

Runs in the student's own process (``pallas-lab check``) or in the worker (Gradescope's
visible tests); imports only numpy and pallas_sim. It holds no answer: Task 1.1's kernel
runs in the unblocked call the handout itself shows under Task 1.1 (the whole arrays as
one block), never in the grader's blocked call (``harness.py``, which is Task 1.2's
answer and stays with the grader).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from pallas_sim import jax, pl


def add_kernel(sub: ModuleType, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The student's ``add_kernel`` in the handout's unblocked ``pl.pallas_call`` (no grid,
    every operand one whole block; handout Task 1.1's example).

    x, y: [M, N] arrays of one dtype; returns the [M, N] output of that dtype. Raises
    ``NameError`` when the submission defines no ``add_kernel``, else what the kernel
    raises.
    """
    kernel = getattr(sub, "add_kernel", None)
    if not callable(kernel):
        raise NameError("function 'add_kernel' is not defined in the submission")
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)
