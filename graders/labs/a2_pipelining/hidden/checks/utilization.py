"""Task 2.3 pipeline_utilization."""

from __future__ import annotations

import math

import numpy as np

import reference.a2_pipelining as ref
from graders.checking.compare import as_finite_number
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case
from graders.labs.a2_pipelining.hidden.diagnose import close_times
from graders.labs.a2_pipelining.public import worked

from .common import STEP_COMPUTE, STEP_DMA, STEPS, WORKED_RTOL, A, schedule_cases
from .schedule import _intervals

# --- Task 2.3 pipeline_utilization ---------------------------------------------------------

def _utilization(s: Session, dma, compute, buffers: int, label: str) -> float:
    got = s.invoke("pipeline_utilization", (dma, compute, buffers)).value
    return as_finite_number(got, "pipeline_utilization's result", expected="a float in [0, 1]",
                            input=label)


def _closed_form(dma, compute) -> float:
    """Utilization by the double-buffer shortcut d_0 + Σ max(d_k, c_k-1) + c_last (a mistake
    when n_buffers != 2 or durations vary)."""
    d, c = np.asarray(dma, np.float64), np.asarray(compute, np.float64)
    total = d[0] + float(np.sum(np.maximum(d[1:], c[:-1]))) + c[-1]
    return 1.0 if total == 0 else float(c.sum() / total)


def _own_schedule_diagnosis(s: Session, got: float, dma, compute, buffers: int
                            ) -> str | None:
    """When ``got`` is the utilization of the student's own pipeline_schedule on this input
    and that schedule is wrong here, say so (Task 2.3 depends on Task 2.1): the utilization
    follows the schedule, the mistake is in the schedule. Verified on this input: their
    pipeline_schedule is run on it in the worker. None otherwise (also when it raises or
    returns something that is not a schedule)."""
    try:
        dma_iv, comp_iv = _intervals(s.invoke("pipeline_schedule", (dma, compute, buffers)).value,
                                     len(dma))
    except CheckFailure as failure:
        if failure.status in ("failed", "not started"):
            return None
        raise
    want_dma, want_comp = ref.pipeline_schedule(dma, compute, buffers)
    if close_times(dma_iv, want_dma) and close_times(comp_iv, want_comp):
        return None
    finish = float(comp_iv[-1, 1])
    own = 1.0 if finish == 0 else float(np.sum(comp_iv[:, 1] - comp_iv[:, 0])) / finish
    if not math.isclose(got, own, rel_tol=1e-9, abs_tol=1e-12):
        return None
    return (f"this is the utilization of the schedule your pipeline_schedule returns here "
            f"(its last compute step ends at {finish:.6g}, the model's at "
            f"{float(want_comp[-1, 1]):.6g}): pipeline_utilization follows the schedule, and "
            "the schedule is wrong (Task 2.1); fix pipeline_schedule first")


def _expect_utilization(got: float, expected: float, label: str, dma, compute,
                        rtol: float, atol: float = 0.0, shown: str | None = None, *,
                        s: Session | None = None, buffers: int | None = None) -> None:
    """``got`` must equal ``expected``; the failure's diagnosis is, first, the student's own
    wrong schedule when ``got`` follows it (``_own_schedule_diagnosis``, with ``s`` and
    ``buffers``), else a modelled formula mistake whose value ``got`` is."""
    if math.isclose(got, expected, rel_tol=rtol, abs_tol=atol):
        return
    diagnosis = None
    d, c = np.asarray(dma, np.float64), np.asarray(compute, np.float64)
    busy = float(c.sum() + d.sum())
    if s is not None and buffers is not None:
        diagnosis = _own_schedule_diagnosis(s, got, dma, compute, buffers)
    if diagnosis is not None:
        pass
    elif math.isclose(got, _closed_form(dma, compute), rel_tol=1e-9, abs_tol=1e-12):
        diagnosis = ("this is the double-buffer shortcut d + Σ max(d, c) + c, which ignores "
                     "n_buffers and varying durations; compute the schedule instead "
                     "(lecture §3.1, §3.3)")
    elif busy > 0 and math.isclose(got, float(c.sum()) / busy, rel_tol=1e-9, abs_tol=1e-12):
        diagnosis = ("this is the single-buffered utilization Σc / (Σd + Σc), whatever "
                     "n_buffers is: with more slots copies overlap computation; compute the "
                     "schedule instead (lecture §3.1)")
    raise CheckFailure("the utilization is wrong", input=label,
                       expected=shown or f"{expected:.6g}", got=f"{got:.6g}",
                       diagnosis=diagnosis)


@check(A, "2.3", 3, "worked answer: the bf16 1024³ step (DMA 1.138 µs, compute 2.087 µs) over "
                    "504 steps with one buffer uses the MXU 64.72 % of the time")
def utilization_worked_single(s: Session) -> None:
    """Task 2.3: worked answer: the bf16 1024³ step (DMA 1.138 µs, compute 2.087 µs) over 504
    steps with one buffer uses the MXU 64.72 % of the time.
    """
    dma, compute = [STEP_DMA] * STEPS, [STEP_COMPUTE] * STEPS
    label = "504 steps of DMA 1.138e-6 s and compute 2.087e-6 s, n_buffers = 1"
    got = _utilization(s, dma, compute, 1, label)
    _expect_utilization(got, 0.6472, label, dma, compute, WORKED_RTOL, shown="0.6472 (64.72 %)",
                        s=s, buffers=1)


@check(A, "2.3", 3, "worked answers: double-buffered, the same steps reach 99.89 %; with the "
                    "measured 6.833 µs copies the cap is 30.55 % (lecture §3.2)")
def utilization_worked_double(s: Session) -> None:
    """Task 2.3: worked answers: double-buffered, the same steps reach 99.89 %; with the measured
    6.833 µs copies the cap is 30.55 % (lecture §3.2).
    """
    for dma_time, expected in ((STEP_DMA, 0.9989), (6.833e-6, 0.3055)):
        dma, compute = [dma_time] * STEPS, [STEP_COMPUTE] * STEPS
        label = f"504 steps of DMA {dma_time:.4g} s and compute 2.087e-6 s, n_buffers = 2"
        got = _utilization(s, dma, compute, 2, label)
        _expect_utilization(got, expected, label, dma, compute, WORKED_RTOL,
                            shown=f"{expected} ({expected:.2%})", s=s, buffers=2)


#: The lecture's stochastic experiment: compute 1.0, DMA ~ max(0, N(0.8, 1.0)) (lecture §3.3).
STOCHASTIC_SEED, STOCHASTIC_BLOCKS = 0, 10_000
STOCHASTIC_LECTURE = worked.STOCHASTIC_UTILIZATION
STOCHASTIC_TOL = 0.025  # ± 2.5 percentage points: the lecture's figures depend on its draw


def stochastic_durations() -> tuple[np.ndarray, np.ndarray]:
    """The fixed draw the stochastic check uses: 10,000 blocks, seed 0."""
    rng = np.random.default_rng(STOCHASTIC_SEED)
    dma = np.maximum(0.0, rng.normal(0.8, 1.0, size=STOCHASTIC_BLOCKS))
    return dma, np.ones(STOCHASTIC_BLOCKS)


@check(A, "2.3", 3, "worked answer: random copy times (mean 0.8, sd 1.0, compute 1.0) give "
                    "about 76 / 87 / 92 % with 2 / 3 / 4 buffers (lecture §3.3)")
def utilization_stochastic(s: Session) -> None:
    """Task 2.3: worked answer: random copy times (mean 0.8, sd 1.0, compute 1.0) give about 76 /
    87 / 92 % with 2 / 3 / 4 buffers (lecture §3.3).
    """
    dma, compute = stochastic_durations()
    for buffers, lecture in STOCHASTIC_LECTURE.items():
        label = (f"{STOCHASTIC_BLOCKS} blocks, DMA = max(0, N(0.8, 1.0)) drawn by "
                 f"np.random.default_rng({STOCHASTIC_SEED}).normal, compute 1.0, "
                 f"n_buffers = {buffers}")
        got = _utilization(s, dma, compute, buffers, label)
        expected = ref.pipeline_utilization(dma, compute, buffers)
        _expect_utilization(got, expected, label, dma, compute, 1e-9,
                            shown=f"{expected:.4f} (the lecture: about {lecture:.1%})",
                            s=s, buffers=buffers)
        if abs(expected - lecture) > STOCHASTIC_TOL:  # pragma: no cover - a grader bug
            raise AssertionError(f"reference utilization {expected} is not near {lecture}")


@check(A, "2.3", 6, "pipeline_utilization equals the reference's on drawn durations "
                    "(including all-zero durations, which give 1.0)")
def utilization_matches_reference(s: Session) -> None:
    """Task 2.3: pipeline_utilization equals the reference's on drawn durations (including all-
    zero durations, which give 1.0).
    """
    zero_label = "dma_times = [0.0, 0.0], compute_times = [0.0, 0.0], n_buffers = 2"
    got = _utilization(s, [0.0, 0.0], [0.0, 0.0], 2, zero_label)
    _expect_utilization(got, 1.0, zero_label, [0.0, 0.0], [0.0, 0.0], 0.0,
                        shown="1.0 (a pipeline that takes no time counts as fully used)",
                        s=s, buffers=2)

    def body(case: Case) -> None:
        got = _utilization(s, *case.args, repr(case))
        _expect_utilization(got, ref.pipeline_utilization(*case.args), repr(case),
                            case.args[0], case.args[1], 1e-9, 1e-12, s=s,
                            buffers=case.args[2])
    run_property(schedule_cases(), body, max_examples=25)
