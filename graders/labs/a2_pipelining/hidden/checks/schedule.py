"""Task 2.1 pipeline_schedule."""

from __future__ import annotations

import math

import numpy as np

import reference.a2_pipelining as ref
from graders.checking.compare import as_array, fmt_array, require_finite
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case
from graders.labs.a2_pipelining.hidden.diagnose import TIME_TOL, close_times, diagnose_schedule
from graders.labs.a2_pipelining.public import worked

from .common import A, schedule_cases

# --- Task 2.1 pipeline_schedule ------------------------------------------------------------

def _intervals(value: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Split the reply into two float64 [n, 2] arrays or fail clearly."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise CheckFailure("pipeline_schedule must return a pair (dma_intervals, "
                           "compute_intervals)", expected="a pair of [n, 2] arrays",
                           got=_kind(value))
    out = []
    for part, name in zip(value, ("dma_intervals", "compute_intervals"), strict=True):
        arr = as_array(part, name)
        if arr.shape != (n, 2):
            raise CheckFailure(f"{name} has the wrong shape", expected=f"shape ({n}, 2): one "
                               "(start, end) row per block", got=f"shape {arr.shape}")
        times = arr.astype(np.float64)
        require_finite(times, name, expected="finite (start, end) times for every block")
        out.append(times)
    return out[0], out[1]


def _kind(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return fmt_array(value) if isinstance(value, np.ndarray) else type(value).__name__


def _fmt_rows(a: np.ndarray, limit: int = 8) -> str:
    rows = [f"({s:g}, {e:g})" for s, e in np.asarray(a, np.float64)[:limit].tolist()]
    more = f", ... ({len(a)} rows)" if len(a) > limit else ""
    return "[" + ", ".join(rows) + more + "]"



@check(A, "2.1", 8, "worked answers: 6 blocks (DMA 1, compute 2) end at 18 with one buffer "
                     "and 13 with two; Ex3 (d 3, c 1, 100 blocks) ends at 400 and 301")
def schedule_worked(s: Session) -> None:
    """Task 2.1: worked answers: 6 blocks (DMA 1, compute 2) end at 18 with one buffer and 13
    with two; Ex3 (d 3, c 1, 100 blocks) ends at 400 and 301.
    """
    for answer in worked.SCHEDULES:
        d, c, n = answer.dma, answer.compute, answer.n_blocks
        buffers, total = answer.n_buffers, answer.total
        label = f"dma_times = [{d:g}] * {n}, compute_times = [{c:g}] * {n}, n_buffers = {buffers}"
        case = Case(([d] * n, [c] * n, buffers), {}, ("dma_times", "compute_times", "n_buffers"))
        got = _intervals(s.invoke("pipeline_schedule", case.args).value, n)
        if not math.isclose(got[1][-1, 1], total, rel_tol=1e-9):
            raise CheckFailure("the last compute step ends at the wrong time", input=label,
                               expected=f"{total:g}", got=f"{got[1][-1, 1]:g}",
                               diagnosis=diagnose_schedule(got, case))


@check(A, "2.1", 15, "pipeline_schedule's intervals equal the reference's on drawn durations "
                     "(zeros, equal, long and short blocks; 1-64 blocks, 1-6 buffers)")
def schedule_matches_reference(s: Session) -> None:
    """Task 2.1: pipeline_schedule's intervals equal the reference's on drawn durations (zeros,
    equal, long and short blocks; 1-64 blocks, 1-6 buffers).
    """
    def body(case: Case) -> None:
        dma, compute, _ = case.args
        got = _intervals(s.invoke("pipeline_schedule", case.args).value, len(dma))
        expected = ref.pipeline_schedule(*case.args)
        for g, e, name in zip(got, expected, ("DMA", "compute"), strict=True):
            if not close_times(g, e):
                k = int(np.argmax(np.any(~np.isclose(g, e, rtol=TIME_TOL, atol=TIME_TOL),
                                         axis=1)))
                raise CheckFailure(
                    f"the {name} interval of block {k} differs from the reference",
                    expected=f"{name} intervals {_fmt_rows(e)}",
                    got=f"{name} intervals {_fmt_rows(g)}",
                    diagnosis=diagnose_schedule(got, case))
    run_property(schedule_cases(), body, max_examples=30)


def _broken_invariant(dma_iv: np.ndarray, comp_iv: np.ndarray, case: Case) -> str | None:
    """The first rule of the model the student's own schedule breaks, else None.

    Every rule is written as "fail unless it holds" (``not (a >= b)``), so a NaN or an
    infinite time breaks the first rule it meets instead of passing all of them.
    """
    dma, compute, buffers = case.args
    d, c = np.asarray(dma, np.float64), np.asarray(compute, np.float64)
    for name, rows in (("DMA", dma_iv), ("compute", comp_iv)):
        bad = ~np.isfinite(rows)
        if bad.any():
            k = int(np.argwhere(bad)[0][0])
            return (f"the {name} interval of block {k} is ({rows[k, 0]:g}, {rows[k, 1]:g}): "
                    "NaN and infinite times are no times at all")
    slack = TIME_TOL * (1 + float(np.max(comp_iv[:, 1], initial=0.0)))
    for k in range(len(d)):
        ds, de = dma_iv[k]
        cs, ce = comp_iv[k]
        if not (ds >= -slack and cs >= -slack):
            return f"block {k} starts before time 0"
        if not abs((de - ds) - d[k]) <= slack:
            return f"DMA {k} lasts {de - ds:g} but its duration is {d[k]:g}"
        if not abs((ce - cs) - c[k]) <= slack:
            return f"compute {k} lasts {ce - cs:g} but its duration is {c[k]:g}"
        if not cs >= de - slack:
            return f"compute {k} starts at {cs:g}, before DMA {k} has finished at {de:g}"
        if k and not ds >= dma_iv[k - 1, 1] - slack:
            return (f"DMA {k} starts at {ds:g} while DMA {k - 1} runs until "
                    f"{dma_iv[k - 1, 1]:g}: there is one DMA engine, copies cannot overlap")
        if k and not cs >= comp_iv[k - 1, 1] - slack:
            return (f"compute {k} starts at {cs:g} while compute {k - 1} runs until "
                    f"{comp_iv[k - 1, 1]:g}")
        if k >= buffers and not ds >= comp_iv[k - buffers, 1] - slack:
            return (f"DMA {k} starts at {ds:g}, before compute {k - buffers} frees its slot at "
                    f"{comp_iv[k - buffers, 1]:g}: more than n_buffers = {buffers} blocks would "
                    "be in VMEM at once")
    return None


@check(A, "2.1", 7, "pipeline_schedule obeys the model's rules: durations kept, one DMA at a "
                     "time, compute k after DMA k, at most n_buffers blocks resident")
def schedule_invariants(s: Session) -> None:
    """Task 2.1: pipeline_schedule obeys the model's rules: durations kept, one DMA at a time,
    compute k after DMA k, at most n_buffers blocks resident.
    """
    def body(case: Case) -> None:
        got = _intervals(s.invoke("pipeline_schedule", case.args).value, len(case.args[0]))
        broken = _broken_invariant(*got, case)
        if broken is not None:
            raise CheckFailure(f"the schedule breaks a rule of the model: {broken}",
                               got=f"DMA {_fmt_rows(got[0])}\ncompute {_fmt_rows(got[1])}",
                               diagnosis=diagnose_schedule(got, case))
    run_property(schedule_cases(), body, max_examples=25)
