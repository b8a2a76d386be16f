"""Single-mistake variants of a2's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A2, Mutant, Variant

MUTANTS: list[Mutant] = [
    Mutant("no-slot-wait", A2, "2.1",
           (("slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
             "slot_ready = 0.0"),),
           "DMA k does not wait for a free slot"),
    Mutant("gantt-truncates", A2, "2.2",
           (("range(round(start * width / total), round(end * width / total))",
             "range(int(start * width / total), int(end * width / total))"),),
           "cells truncated instead of rounded", kept=5),
    Mutant("gantt-label", A2, "2.2",
           (('(("DMA     ", dma_intervals), ("compute ", compute_intervals))',
             '(("DMA    ", dma_intervals), ("compute ", compute_intervals))'),),
           "a row label one space short", kept=0),
    Mutant("idle-pipeline", A2, "2.3",
           (("    if finish == 0:\n        return 1.0",
             "    if finish == 0:\n        return 0.0"),),
           "a pipeline that takes no time reported as unused", kept=12),
    Mutant("bandwidth-whole-step", A2, "2.4",
           (("compute_time * (1.0 / utilization - 1.0)", "compute_time / utilization"),),
           "the DMA time taken as c / u (the whole step)", kept=0),
]


VARIANTS: list[Variant] = []
