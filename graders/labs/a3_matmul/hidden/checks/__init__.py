"""Checks of a3_matmul (lecture §4): Tasks 3.1–3.5, 100 points.

The kernel (3.1) runs in the grader's standard 3D-grid pallas_call
(``harness.py``), so a fault in the student's wrapper is not
charged to it; the wrapper (3.2) is checked end to end and on its trace
against the reference's (grid, semantics, block shapes, DMAs, HBM bytes,
VMEM, one write-back per output block). Inputs are f32 or bf16 with (M, N, K)
multiples of drawn blocks, at least two k steps and at least two output
blocks, so that a missing zero-initialization (fresh output buffers are
poisoned with NaN), a ReLU inside the k loop and a grid with K first all
change the result. Values are compared with float64 ``x @ y`` with an error
bound relative to ``|x| @ |y|``.

Task 3.5 (performance) measures the student's kernel, in the standard call, on a small
problem at the blocks their ``choose_matmul_blocks()`` returns (in the worker, on data
and on shapes: ``harness.choose_matmul_blocks``), predicts the full size here
(``timing.py``) and compares it with the fastest legal candidate for their kernel, whose
work at the other candidates is projected from the reference kernel's
(``step_model.project``; docs/performance-model.md, "Performance tasks").

One module per task or small group of tasks (``MODULES``), shared helpers in
``common.py``; importing the package imports them in that order, the order in which
their checks register (the order of the feedback).
"""

from __future__ import annotations

import importlib

#: The modules registering checks, in registration order.
MODULES = (
    "kernel",  # Task 3.1 matmul_kernel
    "matmul",  # Task 3.2 matmul
    "vmem",  # Task 3.3 matmul_vmem_bytes
    "roofline",  # Task 3.4 roofline
    "performance",  # Task 3.5 choose_matmul_blocks (performance)
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
