"""Checks of a2_pipelining (lecture §3): Tasks 2.1–2.5, 100 points.

The schedule model (docs/student-api.md, a2): one DMA engine copies blocks in
order into ``n_buffers`` VMEM slots; DMA k starts at max(end of DMA k-1, end
of compute k-n_buffers), compute k at max(end of DMA k, end of compute k-1).
Durations are drawn as multiples of 1/8 (exact in binary, readable in
feedback) from a mix of zeros, equal values, and long and short blocks, with
1 <= n <= 64 blocks and 1 <= n_buffers <= 6. Each task is compared with the
reference on drawn inputs and with the lecture's worked answers; the
schedule is also checked on its own invariants, so a student sees which rule
their schedule breaks. Task 2.5 runs the student's manually double-buffered kernel:
values against the reference, the schedule of its DMAs from the trace.

One module per task or small group of tasks (``MODULES``), shared helpers in
``common.py``; importing the package imports them in that order, the order in which
their checks register (the order of the feedback).
"""

from __future__ import annotations

import importlib

#: The modules registering checks, in registration order.
MODULES = (
    "schedule",  # Task 2.1 pipeline_schedule
    "gantt",  # Task 2.2 render_gantt
    "utilization",  # Task 2.3 pipeline_utilization
    "bandwidth",  # Task 2.4 effective_bandwidth
    "double_buffer",  # Task 2.5 double_buffered_scale
)

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
