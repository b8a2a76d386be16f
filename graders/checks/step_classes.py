"""Per-step work measured on a small problem, charged to a full-size trace by step class
(issue 23, items 1-2: performance no code can steer).

A kernel's op counts at one grid step depend on what the step is (its class: a Splash
tile's kind and whether it opens or closes its query row, say), not on the problem's
size. The worker runs the student's kernel on a small problem that has every class of
the full problem, concretely (values checked) and abstractly; the trusted side then
builds the full-size call's trace from the grader's own standard call and gives each of
its steps the counts measured for its class. The student's code never runs at full size,
so nothing it does when it detects being measured reaches the time.

Everything here is trusted-side and reads the worker's reply as hostile data.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from pallas_sim._src import timeline
from pallas_sim._src.chips import get_chip
from pallas_sim._src.op_accounting import OpCounts
from pallas_sim._src.tracing import CallTrace

#: The op-accounting keys the timeline reads or reports (docs/performance-model.md §1),
#: besides ``mxu_flops_<dtype>``.
COUNT_KEYS = frozenset({
    "vpu_ops", "eup_ops", "xlane_elements", "cast_elements", "vector_ops", "scalar_ops",
    "manual_dma_bytes", "manual_dma_exposed_bytes", "manual_dma_exposed_count",
    "manual_dma_strided_bytes", "manual_dma_exposed_strided_bytes"})
_MXU_KEY = re.compile(r"mxu_flops_[a-z0-9_]{1,24}")
#: No count of one step may exceed this (far above any block's work; keeps sums in int64).
MAX_COUNT = 1 << 52


class CountsRefused(ValueError):
    """A reply's counts are not per-step op counts of the run they claim to be."""


def read_counts(value: object, steps: int) -> dict[str, np.ndarray]:
    """The per-step op counts of a worker's reply: ``value`` must be a dict of known keys
    (``COUNT_KEYS``, ``mxu_flops_<dtype>``) to lists of
    ``steps`` ints in [0, ``MAX_COUNT``]; ``num_steps`` and ``largest_intermediate`` (as
    ``OpCounts.to_dict`` writes them) are allowed and dropped. Returns int64 arrays.

    Raises:
      CountsRefused: anything else (the message says what).
    """
    if not isinstance(value, dict):
        raise CountsRefused(f"op counts are a {type(value).__name__}, not a dict")
    counts: dict[str, np.ndarray] = {}
    for key, per_step in value.items():
        if key in ("num_steps", "largest_intermediate"):
            continue
        if not isinstance(key, str) or not (key in COUNT_KEYS or _MXU_KEY.fullmatch(key)):
            raise CountsRefused(f"unknown op-count key {str(key)[:40]!r}")
        if not isinstance(per_step, list) or len(per_step) != steps or not all(
                type(n) is int and 0 <= n <= MAX_COUNT for n in per_step):
            raise CountsRefused(f"{key}: not {steps} counts between 0 and 2**52")
        counts[key] = np.asarray(per_step, np.int64)
    return counts


def counts_differ(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> list[str]:
    """The keys whose per-step counts differ between two runs (a key counted in one run
    only differs unless it is all zeros there)."""
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        x = np.zeros_like(y) if x is None else x
        y = np.zeros_like(x) if y is None else y
        if not np.array_equal(x, y):
            out.append(key)
    return out


def per_class(counts: Mapping[str, np.ndarray], classes: Sequence[Hashable]
              ) -> dict[Hashable, dict[str, int]]:
    """Each step class's counts: per key, the largest count among the steps of that class
    (an honest kernel's steps of one class count the same; a kernel whose steps of a class
    differ is charged its most expensive one)."""
    out: dict[Hashable, dict[str, int]] = {}
    for step, cls in enumerate(classes):
        mine = out.setdefault(cls, {})
        for key, per_step in counts.items():
            mine[key] = max(mine.get(key, 0), int(per_step[step]))
    return out


def full_counts(class_counts: Mapping[Hashable, Mapping[str, int]],
                step_class: np.ndarray, labels: Sequence[Hashable]) -> OpCounts:
    """The full-size call's per-step counts: step ``s`` gets ``class_counts[labels[
    step_class[s]]]``.

    Raises:
      KeyError: a class of the full call that was not measured.
    """
    keys = sorted({k for c in labels for k in class_counts[c]})
    table = {k: np.array([class_counts[c].get(k, 0) for c in labels], np.int64) for k in keys}
    return OpCounts({k: v[step_class] for k, v in table.items()}, len(step_class))


def work_floor(class_counts: Mapping[Hashable, Mapping[str, int]], steps_per_class:
               Mapping[Hashable, int], *, chip: str) -> float:
    """A lower bound (seconds) of the full call's time: the compute of every step one after
    another (docs/performance-model.md §3, item 3: a core runs its steps' compute in turn),
    without their copies; ``steps_per_class``: how many steps of each class the call runs.
    Used to skip candidates that cannot beat one already timed."""
    the_chip = get_chip(chip)
    cal = timeline.CALIBRATION.for_chip(the_chip)
    total = 0.0
    for cls, n in steps_per_class.items():
        c = class_counts[cls]
        mxu = sum(v / the_chip.flops_rate(k[len("mxu_flops_"):]) for k, v in c.items()
                  if k.startswith("mxu_flops_"))
        vpu = (c.get("vpu_ops", 0) + c.get("cast_elements", 0)
               + c.get("xlane_elements", 0)) / cal.vpu_rate
        eup = c.get("eup_ops", 0) / cal.eup_rate
        total += n * (cal.step_overhead_s + c.get("vector_ops", 0) * cal.op_overhead_s
                      + mxu + vpu + eup)
    return total * (1 - 1e-9)


def predict_full(trace: CallTrace, counts: OpCounts, *, chip: str) -> timeline.Timeline:
    """``timeline.predict`` of the grader's full-size ``trace`` (grid, specs, block indices,
    VMEM: the standard call's, recorded with an empty kernel) with the kernel's ``counts``:
    the time ``pallas_sim.estimate`` gives a run whose steps count these ops."""
    return timeline.predict(dataclasses.replace(trace, ops=counts), chip)
