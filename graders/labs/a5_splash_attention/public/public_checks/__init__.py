"""Public checks of a5_splash_attention (lecture §6): mask formulas, plain-loop oracles and the
worked answers.

The masks are drawn from the families grading draws from (causal with offsets, local windows
aligned with the blocks and not, documents, random masks with no empty query row, full masks,
and ``&`` combinations), with block sizes that differ per axis. The oracles are written here
in plain loops over tiles: no reference code.

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
    "kernel",  # Task 5.4 the Splash kernel and wrapper
    "stats",  # Task 5.5 mask_stats
    "computed",  # Task 5.6 masks computed in the kernel
    "performance",  # Task 5.7 choose_splash_blocks (performance)
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
