"""Checks of a4_flash_attention (lecture §5, §6.6): Tasks 4.1–4.8, 100 points.

Softmax states are ``(m, l, acc)``: the running maximum, the sum of
``exp(s - m)`` and the unnormalized weighted sum of values.  Inputs are drawn
with scores on three scales, including logits large enough (40..90) that a
softmax which does not subtract the running maximum overflows float32, and
with the edge cases of the handout's contract: masked (-inf) entries and rows
in online_softmax, empty states in the merge, rows whose scores all lie below
-87 (where float32 exp underflows), small soft caps with the causal mask, and
a Max-Logit-Estimate constant far above every score (which shows whether the
kernel uses it at all).

The Flash Attention kernel (4.3) is graded in isolation inside the grader's
pallas_call (``harness.py``): its values against dense float64
attention (``reference.dense_attention``), causal block skipping through the
trace's per-step ``kernel_reads`` of k_ref and v_ref. The wrapper (4.4) is
graded against what the student's own kernel computes in that standard call
(one fault, one charge), on its trace against the reference's pallas_call, and
on refusing k and v of another length than q.

The kernel's ``use_base2_exp`` option (lecture §6.6) is graded on the output and on the
final m scratch, which the harness copies out: the row maximum in base-2 units. The
micro-tiled kernel (4.7) is graded on values and on the trace's
``largest_intermediate`` (lecture §5.3): ``block_q × bkv_compute`` on drawn inputs and
at the lecture's sizes (an abstract run).

Task 4.8 (performance) measures the student's kernel, in Task 4.3's standard call, on a
small problem at the (block_q, block_kv, max_logit_const) their ``choose_flash_config()``
returns (in the worker, on data and on shapes: ``harness.choose_flash_config``), refuses
a configuration whose blocks, scratch and f32 score tiles exceed the TensorCore's VMEM
(lecture §5.3), predicts the full size here (``timing.py``) and compares it with the
fastest legal candidate for their kernel, whose work at the other candidates is
projected from the reference kernel's (``step_model.project``).

A "looks like" diagnosis is shown only when the failing output equals the
output of that modelled mistake on the failing input (``emulate`` runs the
kernel with the mistake in float32; the 4.1 and 4.2 models likewise).

One module per task or small group of tasks (``MODULES``), shared helpers in
``common.py``; importing the package imports them in that order, the order in which
their checks register (the order of the feedback).
"""

from __future__ import annotations

import importlib

#: The modules registering checks, in registration order.
MODULES = (
    "softmax",  # Task 4.1 online_softmax
    "merge",  # Task 4.2 merge and finalize
    "kernel",  # Task 4.3 flash_attention_kernel
    "wrapper",  # Task 4.4 flash_attention
    "sizes",  # Tasks 4.5 mle_safe_range and 4.6 traffic and work
    "microtiled",  # Task 4.7 flash_attention_kernel_microtiled
    "performance",  # Task 4.8 choose_flash_config (performance)
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
