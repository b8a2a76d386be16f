"""Known-mistake models of a2_pipelining (lecture §3): what each plausible mistake
computes on a given input, and the diagnosis it earns.

A hidden check names a mistake only when its model reproduces the student's result on the
failing input (docs/style.md: a shown diagnosis is verified, not guessed): a schedule with one
rule left out, a chart with truncated cell boundaries, a bandwidth from the whole step,
and for Task 2.5 the simulator's own error or the blocks the output holds.
"""

from __future__ import annotations

import math
import re

import numpy as np

import reference.a2_pipelining as ref
from graders.checking.compare import tolerance
from graders.checking.framework import CheckFailure
from graders.checking.strategies import Case

#: Times are equal within this, absolute and relative (sums of at most 64 durations <= 20).
TIME_TOL = 1e-9


def close_times(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays of times are equal within ``TIME_TOL``."""
    return bool(np.allclose(a, b, rtol=TIME_TOL, atol=TIME_TOL))

def variant_schedule(dma, compute, buffers: int, *, engine: bool = True,
                      slots: bool = True, unit: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A schedule with one rule left out (for diagnoses): ``engine=False`` lets DMAs
    overlap, ``slots=False`` lets DMAs run ahead without waiting for a free slot,
    ``unit=False`` lets compute steps overlap."""
    d, c = np.asarray(dma, np.float64), np.asarray(compute, np.float64)
    dma_iv, comp_iv = np.zeros((len(d), 2)), np.zeros((len(d), 2))
    for k in range(len(d)):
        start = dma_iv[k - 1, 1] if engine and k else 0.0
        if slots and k >= buffers:
            start = max(start, comp_iv[k - buffers, 1])
        dma_iv[k] = start, start + d[k]
        begin = max(dma_iv[k, 1], comp_iv[k - 1, 1] if unit and k else 0.0)
        comp_iv[k] = begin, begin + c[k]
    return dma_iv, comp_iv


def diagnose_schedule(got: tuple[np.ndarray, np.ndarray], case: Case) -> str | None:
    """The diagnosis of the modelled mistakes whose schedule ``got`` is on this input (all
    of them when the input cannot tell them apart), else None."""
    dma, compute, buffers = case.args
    guesses = []
    if buffers > 1:  # with one buffer the single-buffered schedule is the right one
        guesses.append((
            ref.pipeline_schedule(dma, compute, 1),
            "n_buffers is ignored: this is the single-buffered schedule, where DMA k waits for "
            "compute k-1 whatever the number of slots (lecture §3.1)"))
    guesses += [
        (variant_schedule(dma, compute, buffers, engine=False),
         "two DMAs run at the same time: there is one DMA engine, so DMA k also waits for "
         "DMA k-1 to finish (lecture §3.1)"),
        (variant_schedule(dma, compute, buffers, slots=False),
         "DMA k does not wait for a free slot: with n_buffers slots it must wait for compute "
         "k - n_buffers to finish (lecture §3.1)"),
        (ref.pipeline_schedule(dma, compute, buffers + 1),
         "this is the schedule of n_buffers + 1 slots: DMA k waits for compute "
         "k - n_buffers - 1, one block too few; with n_buffers slots it waits for compute "
         "k - n_buffers (lecture §3.1)"),
        (variant_schedule(dma, compute, buffers, unit=False),
         "compute k does not wait for compute k-1: there is one compute unit, so compute k "
         "starts at max(end of DMA k, end of compute k-1) (lecture §3.1)"),
    ]
    texts = [text for (dma_iv, comp_iv), text in guesses
             if close_times(got[0], dma_iv) and close_times(got[1], comp_iv)]
    if len(texts) <= 1:
        return texts[0] if texts else None
    return f"{len(texts)} known mistakes give exactly this schedule here: " + "; or ".join(texts)


def truncated_gantt(dma_iv: np.ndarray, comp_iv: np.ndarray, width: int) -> str:
    """The chart with cells cut by int() instead of round() (a known mistake)."""
    total = float(comp_iv[-1, 1])
    lines = []
    for label, rows in (("DMA     |", dma_iv), ("compute |", comp_iv)):
        cells = [" "] * width
        for k, (start, end) in enumerate(rows.tolist()):
            for cell in range(int(start * width / total), int(end * width / total)):
                cells[cell] = str(k % 10)
        lines.append(label + "".join(cells) + "|")
    return "\n".join(lines)


def diagnose_bandwidth(got: float, bytes_per_step: float, compute: float, u: float
                       ) -> str | None:
    """The known effective_bandwidth mistake that gives ``got`` (B/s) for these arguments
    (bytes per step, compute time in s, utilization u), else None."""
    if math.isclose(got, bytes_per_step * u / compute, rel_tol=1e-6):
        return ("the DMA time was taken as c / u, which is the whole step (c + d); subtract the "
                "compute time: d = c·(1/u - 1) (lecture §3.2)")
    if math.isclose(got, bytes_per_step * (1 - u) / (compute * u), rel_tol=1e-6):
        return ("the DMA time was taken as c·u / (1 - u), the ratio of the two times turned "
                "upside down: from u = c / (c + d), d = c·(1/u - 1) (lecture §3.2)")
    return None


ANTI_PATTERN = ("each copy is waited right after it is started (start() immediately followed "
                "by wait(), the slides' anti-pattern): nothing is computed while the data "
                "moves, which is the single-buffered schedule of Task 2.1. Start the copy of "
                "block k + 1 before waiting for block k, and wait for a write-back only after "
                "the next block has been computed (lecture §3.2)")


SINGLE_BUFFER = ("the VMEM scratch holds {slots} block(s), not four: with a single slot for the "
                 "incoming (or the outgoing) blocks, the copy of block k + 1 lands in the slot "
                 "block k is being computed from (on a TPU a race, on a schedule without it no "
                 "overlap). Give each direction two slots, (2, block_rows, N), and alternate "
                 "(lecture §3.2)")


NO_FINAL_WAIT = ("a copy is still in flight when the kernel ends (the simulator names the "
                 "first one): a DMA that is never waited never lands, so a missing final wait "
                 "leaves the last write-back's rows out of HBM. Every start() needs its wait() "
                 "by the last step: there, also wait for your own write-back (lecture §3.2)")


WRONG_SLOT = ("a wait found no copy in flight on its semaphore: the slot waited on is not "
              "the one the copy was started on. The slot must flip once per step, after the "
              "block is computed, and block k + 1 goes into the other slot "
              "(1 - slot) (lecture §3.2)")


UNSET_SLOT = ("a slot index near ±2³¹ is the poison value SMEM scratch starts with: the slot "
              "was read before any step stored it. Store 0 in slot_ref at step 0, and keep "
              "the grid 'arbitrary' so that step 0 runs first and the steps run in order "
              "(a 'parallel' axis may run them in any order, lecture §3.2)")


#: A ref index out of range: pallas_sim raises ``RefIndexError`` (an ``IndexError`` and,
#: as JAX raises, a ``ValueError``); a plain ``IndexError`` from NumPy indexing too.
RAISED_INDEX_ERROR = re.compile(r"raised (?:Ref)?IndexError\b")
#: An index of 2**30 or more in magnitude in an IndexError: a poisoned int32 slot.
POISON_INDEX = re.compile(r"index \[?-?\d{10}\b")


def diagnose_raised(failure: CheckFailure) -> CheckFailure:
    """Add the diagnosis of a known mistake to the failure of a call that raised."""
    what = failure.what or ""
    if failure.diagnosis is None:
        if "raised UnwaitedDMAError" in what:
            failure.diagnosis = NO_FINAL_WAIT
        elif "no copy in flight" in what:
            failure.diagnosis = WRONG_SLOT
        elif RAISED_INDEX_ERROR.search(what) and POISON_INDEX.search(what):
            failure.diagnosis = UNSET_SLOT
    return failure


def diagnose_blocks(got: np.ndarray, case: Case) -> str | None:
    """What the wrong output blocks hold, when that names a mistake: another block of x
    scaled (the slot read is not the one the block was copied into), or NaN (a slot read
    before any copy into it was waited, or a block never written back)."""
    (x, scale), block_rows = case.args, case.kwargs["block_rows"]
    if got.shape != x.shape:
        return None
    rtol, atol = tolerance(x.dtype)
    expected = ref.double_buffered_scale(x, scale, block_rows=block_rows).astype(np.float64)
    g = got.astype(np.float64)
    steps = x.shape[0] // block_rows
    blocks = [slice(k * block_rows, (k + 1) * block_rows) for k in range(steps)]
    for k, rows in enumerate(blocks):
        if np.allclose(g[rows], expected[rows], rtol=rtol, atol=atol):
            continue
        if np.isnan(g[rows]).all():
            return (f"block {k} of the output is all NaN (poison): its slot was read before "
                    "the copy into it was waited, or its write-back never ran (lecture §3.2)")
        for j, other in enumerate(blocks):
            if j != k and np.allclose(g[rows], expected[other], rtol=rtol, atol=atol):
                return (f"block {k} of the output holds block {j} of x, scaled: a fetch, "
                        "the slot read or a write-back is matched to the wrong block. Fetch "
                        "rows k·block_rows ... of block k into `slot` "
                        "and block k + 1 into `1 - slot`, write back to the same rows, and "
                        "flip the slot once per step (lecture §3.2)")
        return None
    return None
