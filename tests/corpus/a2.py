"""Single-mistake variants of a2's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A2, Mutant, Variant

CELLS = "range(round(start * width / total), round(end * width / total))"

MUTANTS: list[Mutant] = [
    Mutant("no-slot-wait", A2, "2.1",
           (("slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
             "slot_ready = 0.0"),),
           "DMA k does not wait for a free slot", says=("does not wait for a free slot",),
           elsewhere=(("2.3", "the schedule your pipeline_schedule returns"),),
           never=("double-buffer shortcut",)),
    Mutant("slot-off-by-one", A2, "2.1",
           (("slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
             "slot_ready = comp_iv[k - n_buffers - 1, 1] if k > n_buffers else 0.0"),),
           "DMA k waits for compute k - n_buffers - 1: one slot too many",
           says=("n_buffers + 1",),
           elsewhere=(("2.3", "the schedule your pipeline_schedule returns"),),
           never=("double-buffer shortcut",)),
    Mutant("compute-overlaps", A2, "2.1",
           (("        begin = max(dma_iv[k, 1], unit_ready)", "        begin = dma_iv[k, 1]"),),
           "compute k starts when its data is there, even while compute k-1 still runs",
           says=("compute k does not wait for compute k-1",)),
    Mutant("gantt-truncates", A2, "2.2",
           ((CELLS, CELLS.replace("round(", "int(")),),
           "cells truncated instead of rounded", kept=4, says=("truncated with int()",)),
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
           kept=8),
    Mutant("gantt-total-compute", A2, "2.2",
           (("    total = float(np.asarray(compute_intervals)[-1][1])\n",
             "    total = float(np.sum(np.diff(np.asarray(compute_intervals), axis=1)))\n"),),
           "T taken as the summed compute time instead of the end of the last compute step"),
    Mutant("idle-pipeline", A2, "2.3",
           (("    if finish == 0:\n        return 1.0",
             "    if finish == 0:\n        return 0.0"),),
           "a pipeline that takes no time reported as unused", kept=9),
    Mutant("zero-length-pipeline", A2, "2.3",
           (("    if finish == 0:\n        return 1.0\n", ""),),
           "no case for a pipeline that takes no time: 0 / 0 gives NaN", kept=9,
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
    Mutant("dma-start-then-wait", A2, "2.5",
           (("        fetch(0, 0).start()\n", ""),
            ("    @pl.when(k + 1 < n)\n    def _prefetch():\n        fetch(k + 1, other).start()\n"
             "\n    fetch(k, slot).wait()",
             "    fetch(k, slot).start()\n    fetch(k, slot).wait()")),
           "the slides' anti-pattern: each block's fetch is started and at once waited, so "
           "nothing overlaps the copy (values right)", kept=15,
           says=("start() immediately followed by wait()",)),
    Mutant("dma-single-buffer", A2, "2.5",
           (("            pltpu.VMEM((2, block_rows, cols), x.dtype),\n"
             "            pltpu.VMEM((2, block_rows, cols), x.dtype),",
             "            pltpu.VMEM((1, block_rows, cols), x.dtype),\n"
             "            pltpu.VMEM((2, block_rows, cols), x.dtype),"),
            ("        return pltpu.make_async_copy(rows, in_buf_ref.at[slot], in_sem_ref.at[slot])",
             "        return pltpu.make_async_copy(rows, in_buf_ref.at[0], in_sem_ref.at[0])"),
            ("    out_buf_ref[slot] = in_buf_ref[slot] * scale",
             "    out_buf_ref[slot] = in_buf_ref[0] * scale")),
           "one VMEM slot for the incoming blocks: block k + 1 is fetched into the slot block "
           "k is computed from (right values in the simulator, a race on a TPU)", kept=15,
           says=("single slot",)),
    Mutant("dma-slot-not-flipped", A2, "2.5",
           (("    slot_ref[0] = other\n", "    slot_ref[0] = slot\n"),),
           "the slot is never flipped: step 1 waits on the semaphore of slot 0, where no copy "
           "is in flight", kept=0, says=("the slot waited on is not the one",)),
    Mutant("dma-prefetch-into-current-slot", A2, "2.5",
           (("        fetch(k + 1, other).start()", "        fetch(k + 1, slot).start()"),),
           "block k + 1 is fetched into the current slot instead of the other one", kept=0,
           says=("the slot waited on is not the one",)),
    Mutant("dma-no-final-wait", A2, "2.5",
           (("    @pl.when(k == n - 1)\n    def _last_write_back():\n"
             "        write_back(k, slot).wait()\n\n", ""),),
           "the last write-back is started but never waited: it never lands", kept=0,
           says=("never waited",)),
    Mutant("dma-write-back-start-then-wait", A2, "2.5",
           (("    write_back(k, slot).start()\n",
             "    write_back(k, slot).start()\n    write_back(k, slot).wait()\n"),
            ("    @pl.when(k > 0)\n    def _previous_write_back():\n"
             "        write_back(k - 1, other).wait()\n\n", ""),
            ("    @pl.when(k == n - 1)\n    def _last_write_back():\n"
             "        write_back(k, slot).wait()\n\n", "")),
           "each write-back is waited right after it is started (values right)", kept=15,
           says=("start() immediately followed by wait()",)),
    Mutant("dma-computes-from-other-slot", A2, "2.5",
           (("    out_buf_ref[slot] = in_buf_ref[slot] * scale",
             "    out_buf_ref[slot] = in_buf_ref[other] * scale"),),
           "the block is computed from the slot the next fetch is going into: at step 0 that "
           "slot has not been filled yet (poison), later it holds the previous block",
           kept=15, says=("poison",)),
    Mutant("dma-write-back-wrong-rows", A2, "2.5",
           (("        rows = o_hbm_ref.at[pl.ds(block * block_rows, block_rows)]",
             "        rows = o_hbm_ref.at[pl.ds((n - 1 - block) * block_rows, block_rows)]"),),
           "block k written back to the rows of block n - 1 - k", kept=15,
           says=("holds block",)),
    Mutant("dma-parallel-grid", A2, "2.5",
           (('dimension_semantics=("arbitrary",)', 'dimension_semantics=("parallel",)'),),
           "the grid axis declared parallel although the slot carries between steps: the "
           "grader visits parallel axes in a shuffled order, so a step reads the slot before "
           "step 0 has set it", kept=0, says=("poison value SMEM scratch starts with",)),
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
