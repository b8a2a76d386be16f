"""Single-mistake variants of a2's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A2, Mutant, Variant

CELLS = "range(round(start * width / total), round(end * width / total))"

MUTANTS: list[Mutant] = [
    Mutant("no-slot-wait", A2, "2.1",
           (("slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
             "slot_ready = 0.0"),),
           "DMA k does not wait for a free slot", says=("does not wait for a free slot",)),
    Mutant("slot-off-by-one", A2, "2.1",
           (("slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
             "slot_ready = comp_iv[k - n_buffers - 1, 1] if k > n_buffers else 0.0"),),
           "DMA k waits for compute k - n_buffers - 1: one slot too many",
           says=("n_buffers + 1",)),
    Mutant("compute-overlaps", A2, "2.1",
           (("        begin = max(dma_iv[k, 1], unit_ready)", "        begin = dma_iv[k, 1]"),),
           "compute k starts when its data is there, even while compute k-1 still runs",
           says=("compute k does not wait for compute k-1",)),
    Mutant("gantt-truncates", A2, "2.2",
           ((CELLS, CELLS.replace("round(", "int(")),),
           "cells truncated instead of rounded", kept=5, says=("truncated with int()",)),
    Mutant("gantt-label", A2, "2.2",
           (('(("DMA     ", dma_intervals), ("compute ", compute_intervals))',
             '(("DMA    ", dma_intervals), ("compute ", compute_intervals))'),),
           "a row label one space short", kept=0),
    Mutant("gantt-inclusive-end", A2, "2.2",
           ((CELLS, "range(round(start * width / total), round(end * width / total) + 1)"),),
           "a block also fills the cell of its end (off by one)"),
    Mutant("gantt-block-number", A2, "2.2",
           (("cells[cell] = str(k % 10)", "cells[cell] = str(k)"),),
           "the block number instead of its last digit: blocks from 10 on take two characters",
           kept=10),
    Mutant("gantt-total-compute", A2, "2.2",
           (("    total = float(np.asarray(compute_intervals)[-1][1])\n",
             "    total = float(np.sum(np.diff(np.asarray(compute_intervals), axis=1)))\n"),),
           "T taken as the summed compute time instead of the end of the last compute step"),
    Mutant("idle-pipeline", A2, "2.3",
           (("    if finish == 0:\n        return 1.0",
             "    if finish == 0:\n        return 0.0"),),
           "a pipeline that takes no time reported as unused", kept=12),
    Mutant("zero-length-pipeline", A2, "2.3",
           (("    if finish == 0:\n        return 1.0\n", ""),),
           "no case for a pipeline that takes no time: 0 / 0 gives NaN", kept=12,
           says=("NaN",)),
    Mutant("utilization-single-buffer-formula", A2, "2.3",
           (("    return float(np.sum(compute_iv[:, 1] - compute_iv[:, 0]) / finish)",
             "    return float(np.sum(compute_times) / (np.sum(dma_times) "
             "+ np.sum(compute_times)))"),),
           "c / (c + d) summed over the blocks, whatever n_buffers is",
           says=("single-buffered",)),
    Mutant("bandwidth-whole-step", A2, "2.4",
           (("compute_time * (1.0 / utilization - 1.0)", "compute_time / utilization"),),
           "the DMA time taken as c / u (the whole step)", kept=0,
           says=("which is the whole step",)),
    Mutant("bandwidth-inverted-ratio", A2, "2.4",
           (("compute_time * (1.0 / utilization - 1.0)",
             "compute_time * utilization / (1.0 - utilization)"),),
           "d = c·u / (1 - u): the ratio of the two times turned upside down", kept=0,
           says=("upside down",)),
]


VARIANTS: list[Variant] = [
    Variant("closed-forms-rewritten", A2,
            "utilization from the inputs' compute times and bandwidth as b·u / (c·(1 - u)): "
            "the same numbers, computed another way",
            (("    return float(np.sum(compute_iv[:, 1] - compute_iv[:, 0]) / finish)",
              "    return float(np.sum(np.asarray(compute_times, dtype=np.float64))) / finish"),
             ("    dma_seconds = compute_time * (1.0 / utilization - 1.0)\n"
              "    return bytes_per_step / dma_seconds",
              "    return bytes_per_step * utilization / (compute_time * (1.0 - utilization))"))),
]
