"""Public checks of a4_flash_attention (lecture §5): worked answers and NumPy softmax oracles.

They draw from the same families as grading (checks.py), with plain
float64 NumPy as the oracle: masked (-inf) rows in online_softmax, empty states
in the merge, grouped-query attention with 1 < Hkv < H (so a wrong head mapping
fails here, not only in the grade), rows whose scores all lie below -100, small
soft caps with the causal mask, a Max-Logit-Estimate constant from the safe
range and one far above every score, k, v of another length than q, and odd block
sizes with the causal mask (a tile whose first key is its q block's last query). The
``use_base2_exp`` option (lecture §6.6: with a constant near large logits too, and passed
on by the wrapper) and the micro-tiled kernel of Task 4.7 (lecture §5.3: its largest
intermediate, read from the trace by the harness) are checked too.

One module per task or small group of tasks (``MODULES``), shared helpers in
``common.py``; importing the package imports them in that order, the order in which
their checks register (the order of the feedback).
"""

from __future__ import annotations

import importlib

#: The modules registering checks, in registration order.
MODULES = (
    "softmax",  # Tasks 4.1 online_softmax and 4.2 merge and finalize
    "attention",  # Tasks 4.3 and 4.4: attention against dense NumPy
    "sizes",  # Tasks 4.5 mle_safe_range and 4.6 traffic
    "base2",  # Task 4.4 use_base2_exp
    "microtiled",  # Task 4.7 flash_attention_kernel_microtiled
    "performance",  # Task 4.8 choose_flash_config (performance)
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
