"""Checks of a5_splash_attention (lecture §6): Tasks 5.1–5.7, 100 points.

Masks are drawn by kind (causal with offsets, local windows aligned and not
aligned with the blocks, documents of drawn lengths, random masks with no
empty query row, full masks, and ``&`` combinations) with block shapes that
differ on the two axes; each prints as the recipe that made it.  The
MaskInfo builder (Task 5.3) is compared with the reference field by field
and checked on its invariants, so the feedback names the field or invariant
that is wrong.  The Splash kernel (Task 5.4) runs in the grader's standard
pallas_call over the reference's MaskInfo, and the wrapper end to end; both
are compared with dense float64 masked attention, and the wrapper's trace
with the reference's.  The computed-mask variant (Task 5.6) is graded through
its wrapper only (a kernel that still takes the stored patterns has another
signature, and its values must still count): values against dense masked
attention, positions read from the call's arguments, and no argument of its
pallas_call that carries mask bits and moves from HBM.

Task 5.7 (performance) asks the student's ``choose_splash_blocks(mask_kind)`` for the
blocks of each of three masks at L 8192 and times their *kernel* in the grader's standard
Splash call (``splash_timing``; docs/performance-model.md, Task 5.7): the worker measures
it on small problems holding every step class of the masks (``harness.choose_splash_blocks``:
on shapes at every legal candidate, and on data, values checked here, at each choice), the
trusted side maps the counts onto its own full-size trace and compares the choice's time
with the fastest legal candidate's for the same kernel.

One module per task or small group of tasks (``MODULES``), shared helpers in
``common.py``; importing the package imports them in that order, the order in which
their checks register (the order of the feedback).
"""

from __future__ import annotations

import importlib

#: The modules registering checks, in registration order.
MODULES = (
    "masks",  # Tasks 5.1 masks and 5.2 classify and render
    "mask_info",  # Task 5.3 build_mask_info
    "kernel",  # Task 5.4 the Splash kernel and wrapper, use_base2_exp
    "stats",  # Task 5.5 mask_stats
    "computed",  # Task 5.6 masks computed in the kernel
    "performance",  # Task 5.7 choose_splash_blocks (performance)
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
