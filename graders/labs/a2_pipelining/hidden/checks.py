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
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import reference.a2_pipelining as ref
from graders.checks.compare import (
    as_array,
    as_finite_number,
    assert_close,
    fmt_array,
    require_finite,
    tolerance,
)
from graders.checks.framework import CheckFailure, Session, check, run_property
from graders.checks.strategies import BF16, F32, Case, make_array
from graders.labs.a2_pipelining.hidden.diagnose import (
    ANTI_PATTERN,
    SINGLE_BUFFER,
    TIME_TOL,
    close_times,
    diagnose_bandwidth,
    diagnose_blocks,
    diagnose_raised,
    diagnose_schedule,
    truncated_gantt,
)
from graders.labs.a2_pipelining.public import worked

A = "a2"
MiB = 1 << 20
PEAK_FLOPS, HBM_BANDWIDTH = 1028.75e12, 3685.5e9  # one Ironwood TensorCore
#: One step of the bf16 1024³ matmul: two 2 MiB input blocks, 2·1024³ FLOPs (lecture §3.2).
STEP_BYTES = 4 * MiB
STEP_DMA = STEP_BYTES / HBM_BANDWIDTH
STEP_COMPUTE = 2 * 1024**3 / PEAK_FLOPS
STEPS = 504  # (4096/1024)·(18432/1024)·(7168/1024)
WORKED_RTOL = 5e-3

#: The lecture's two charts for 6 blocks, DMA 1, compute 2, width 54 (lecture §3.1).
CHART_ONE_BUFFER, CHART_TWO_BUFFERS = worked.CHARTS[1], worked.CHARTS[2]


# --- drawn durations -----------------------------------------------------------------------

#: Durations in eighths: zeros, short and long round values are common, anything up to 20
#: can occur.
eighths = st.one_of(st.sampled_from([0, 4, 8, 16, 24, 96]), st.integers(0, 160))


def durations(*, max_blocks: int = 64) -> st.SearchStrategy[tuple[list[float], list[float]]]:
    """(dma_times, compute_times) of one drawn pipeline, as lists of floats: either one
    (dma, compute) pair per block, or the same pair repeated (a list of pairs shrinks by
    dropping blocks, which keeps the smallest failing input short)."""
    def unzip(pairs: list[tuple[int, int]]) -> tuple[list[float], list[float]]:
        return [d / 8 for d, _ in pairs], [c / 8 for _, c in pairs]

    def repeat(spec: tuple[int, int, int]) -> tuple[list[float], list[float]]:
        d, c, n = spec
        return [d / 8] * n, [c / 8] * n

    return st.one_of(
        st.lists(st.tuples(eighths, eighths), min_size=1, max_size=max_blocks).map(unzip),
        st.tuples(eighths, eighths, st.integers(1, max_blocks)).map(repeat),
    )


@st.composite
def schedule_cases(draw, *, max_blocks: int = 64, max_buffers: int = 6) -> Case:
    """Arguments of pipeline_schedule / pipeline_utilization: (dma_times, compute_times,
    n_buffers), the sequences as lists or float64 arrays, 1 <= n_buffers <= max_buffers."""
    dma, compute = draw(durations(max_blocks=max_blocks))
    buffers = draw(st.integers(1, max_buffers))
    if draw(st.booleans()):  # sequences may be lists or arrays
        dma, compute = np.asarray(dma), np.asarray(compute)
    return Case((dma, compute, buffers), {}, ("dma_times", "compute_times", "n_buffers"))


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


# --- Task 2.2 render_gantt -----------------------------------------------------------------


def _compare_chart(got: object, expected: str, dma_iv: np.ndarray, comp_iv: np.ndarray,
                   width: int) -> None:
    if not isinstance(got, str):
        raise CheckFailure("render_gantt must return a str", expected="a str of two lines",
                           got=type(got).__name__)
    if got == expected:
        return
    diagnosis = None
    got_lines, want_lines = got.split("\n"), expected.split("\n")
    if len(got_lines) != 2:
        what = f"the chart has {len(got_lines)} lines, not 2 joined by '\\n'"
    elif [len(line) for line in got_lines] != [len(line) for line in want_lines]:
        what = (f"the rows have {[len(line) for line in got_lines]} characters, not "
                f"{[len(line) for line in want_lines]} (label, width = {width} cells, '|')")
    else:
        row = 0 if got_lines[0] != want_lines[0] else 1
        col = next(i for i, (a, b) in enumerate(zip(got_lines[row], want_lines[row],
                                                    strict=True)) if a != b)
        what = (f"the {('DMA', 'compute')[row]} row differs from character {col} on "
                f"({got_lines[row][col]!r} instead of {want_lines[row][col]!r})")
    if got == truncated_gantt(dma_iv, comp_iv, width):
        diagnosis = ("cell boundaries are truncated with int(); use Python's round(t * width / T)"
                     " (lecture §3.1)")
    raise CheckFailure(what, expected=expected, got=got, diagnosis=diagnosis)


@check(A, "2.2", 4, "worked answer: the lecture's single-buffered chart (6 blocks, DMA 1, "
                    "compute 2, width 54), character for character")
def gantt_worked_single(s: Session) -> None:
    """Task 2.2: worked answer: the lecture's single-buffered chart (6 blocks, DMA 1, compute 2,
    width 54), character for character.
    """
    dma_iv, comp_iv = ref.pipeline_schedule([1.0] * 6, [2.0] * 6, 1)
    got = s.invoke("render_gantt", (dma_iv, comp_iv), {"width": 54}).value
    try:
        _compare_chart(got, CHART_ONE_BUFFER, dma_iv, comp_iv, 54)
    except CheckFailure as failure:
        failure.input = "the schedule of 6 blocks, DMA 1, compute 2, n_buffers 1; width = 54"
        raise


@check(A, "2.2", 4, "worked answer: the lecture's double-buffered chart (total time 13, "
                    "width 54), character for character")
def gantt_worked_double(s: Session) -> None:
    """Task 2.2: worked answer: the lecture's double-buffered chart (total time 13, width 54),
    character for character.
    """
    dma_iv, comp_iv = ref.pipeline_schedule([1.0] * 6, [2.0] * 6, 2)
    got = s.invoke("render_gantt", (dma_iv, comp_iv), {"width": 54}).value
    try:
        _compare_chart(got, CHART_TWO_BUFFERS, dma_iv, comp_iv, 54)
    except CheckFailure as failure:
        failure.input = "the schedule of 6 blocks, DMA 1, compute 2, n_buffers 2; width = 54"
        raise


@st.composite
def gantt_cases(draw) -> tuple[np.ndarray, np.ndarray, int, str]:
    """A reference schedule with a positive total time, a width, and its description."""
    case = draw(schedule_cases(max_blocks=24, max_buffers=4))
    dma, compute, buffers = case.args
    if not np.any(np.asarray(dma)) and not np.any(np.asarray(compute)):  # T = 0: no chart
        case = Case(([1.0] * len(dma), compute, buffers), {}, case.names)
    dma_iv, comp_iv = ref.pipeline_schedule(*case.args)
    width = draw(st.integers(1, 80))
    return dma_iv, comp_iv, width, f"the schedule of {case!r}; width = {width}"


@check(A, "2.2", 12, "render_gantt equals the reference's chart on drawn schedules and widths")
def gantt_matches_reference(s: Session) -> None:
    """Task 2.2: render_gantt equals the reference's chart on drawn schedules and widths."""
    def body(example: tuple) -> None:
        dma_iv, comp_iv, width, label = example
        got = s.invoke("render_gantt", (dma_iv, comp_iv), {"width": width}).value
        try:
            _compare_chart(got, ref.render_gantt(dma_iv, comp_iv, width=width), dma_iv,
                           comp_iv, width)
        except CheckFailure as failure:
            failure.input = label
            raise
    run_property(gantt_cases(), body, max_examples=25)


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


# --- Task 2.4 effective_bandwidth ----------------------------------------------------------

def _bandwidth(s: Session, args: tuple, label: str) -> float:
    got = s.invoke("effective_bandwidth", args).value
    return as_finite_number(got, "effective_bandwidth's result",
                            expected="a finite float (bytes per time unit)", input=label)


@check(A, "2.4", 5, "worked answer: 4 MiB per step, compute 2.087 µs, measured 23.4 % → DMA "
                    "≈ 6.83 µs, about 614 GB/s (lecture §3.2)")
def bandwidth_worked(s: Session) -> None:
    """Task 2.4: worked answer: 4 MiB per step, compute 2.087 µs, measured 23.4 % → DMA ≈ 6.83
    µs, about 614 GB/s (lecture §3.2).
    """
    answer = worked.BANDWIDTH
    args = (float(answer.bytes_per_step), answer.compute_time, answer.utilization)
    label = (f"bytes_per_step = {answer.bytes_per_step}, compute_time = {answer.compute_time}, "
             f"utilization = {answer.utilization}")
    got = _bandwidth(s, args, label)
    if not math.isclose(got, answer.bandwidth, rel_tol=WORKED_RTOL):
        raise CheckFailure("the effective bandwidth is wrong", input=label,
                           expected=f"about {answer.bandwidth:.4g} B/s (d ≈ "
                                    f"{answer.dma_time:.4g} s)", got=f"{got:.4g}",
                           diagnosis=diagnose_bandwidth(got, *args))


@check(A, "2.4", 5, "effective_bandwidth equals the reference's on drawn bytes, compute times "
                    "and utilizations")
def bandwidth_matches_reference(s: Session) -> None:
    """Task 2.4: effective_bandwidth equals the reference's on drawn bytes, compute times and
    utilizations.
    """
    cases = st.tuples(
        st.integers(1, 2**40).map(float),
        st.sampled_from([1e-9, 2.087e-6, 1e-3, 1.0, 250.0]),
        st.integers(1, 99).map(lambda p: p / 100),
    )

    def body(args: tuple) -> None:
        label = (f"bytes_per_step = {args[0]:g}, compute_time = {args[1]:g}, "
                 f"utilization = {args[2]:g}")
        got = _bandwidth(s, args, label)
        expected = ref.effective_bandwidth(*args)
        if not math.isclose(got, expected, rel_tol=1e-9):
            raise CheckFailure("the effective bandwidth is wrong", input=label,
                               expected=f"{expected:.6g}", got=f"{got:.6g}",
                               diagnosis=diagnose_bandwidth(got, *args))
    run_property(cases, body, max_examples=20)


# --- Task 2.5 double_buffered_scale --------------------------------------------------------
#
# Values are compared with the reference. The schedule is read from the trace of the
# student's own pallas_call: ``manual_dma_count`` / ``manual_dma_bytes`` (the copies the
# kernel made), ``ops["manual_dma_exposed_count"]`` per step (copies with no computation
# counted between their start() and their wait(): the slides' anti-pattern), the operands'
# memory spaces, and ``vmem_bytes`` (the VMEM slots of the scratch). A copy never waited
# raises UnwaitedDMAError in the simulator and a wait with nothing in flight raises
# PallasSimError; the diagnoses below read those messages, so each is shown only on the
# input where it happened (lecture §3.2).

SCALES = (2.0, -0.5, 1.5, 3.0)


@st.composite
def scale_cases(draw) -> Case:
    """x (M, N) f32 or bf16 with 1-6 blocks of 8 or 16 rows and N of 128 or 256 columns,
    a scale from SCALES, block_rows."""
    block_rows = draw(st.sampled_from([8, 16]))
    steps = draw(st.integers(1, 6))
    cols = draw(st.sampled_from([128, 256]))
    dtype = draw(st.sampled_from([F32, BF16]))
    x = make_array((steps * block_rows, cols), dtype, draw(st.integers(0, 2**16)))
    return Case((x, draw(st.sampled_from(SCALES))), {"block_rows": block_rows},
                ("x", "scale"))


#: Fixed inputs for the schedule checks: several steps, both dtypes, one single-step call.
SCHEDULE_CASES = (
    Case((make_array((64, 128), F32, 1), 2.0), {"block_rows": 8}, ("x", "scale")),
    Case((make_array((48, 256), BF16, 2), -0.5), {"block_rows": 16}, ("x", "scale")),
    Case((make_array((8, 128), F32, 3), 1.5), {"block_rows": 8}, ("x", "scale")),
)


def _invoke_scale(s: Session, case: Case):
    """The student's call on ``case``; a raise gets its diagnosis."""
    try:
        return s.invoke("double_buffered_scale", case.args, case.kwargs)
    except CheckFailure as failure:
        raise diagnose_raised(failure) from None


@check(A, "2.5", 10, "double_buffered_scale returns x * scale from its own pallas_call on drawn "
                     "arrays (f32 and bf16, 1-6 blocks of 8 or 16 rows, 128 or 256 columns)")
def scale_values(s: Session) -> None:
    """Task 2.5: double_buffered_scale returns x * scale from its own pallas_call on drawn arrays
    (f32 and bf16, 1-6 blocks of 8 or 16 rows, 128 or 256 columns).
    """
    def body(case: Case) -> None:
        reply = _invoke_scale(s, case)
        reply.own_call()
        x, scale = case.args
        expected = ref.double_buffered_scale(x, scale, **case.kwargs)
        rtol, atol = tolerance(x.dtype)
        try:
            assert_close(reply.value, expected, rtol, atol)
        except CheckFailure as failure:
            if isinstance(reply.value, np.ndarray):
                failure.diagnosis = diagnose_blocks(reply.value, case)
            raise
    run_property(scale_cases(), body, max_examples=12)


def _plan(case: Case) -> dict[str, int]:
    x, _ = case.args
    return ref.double_buffer_plan(x.shape, x.dtype, case.kwargs["block_rows"])


@check(A, "2.5", 10, "the trace shows the overlap: one fetch and one write-back per block, and "
                     "every copy but the first fetch and the last write-back has computation "
                     "between its start() and its wait(); two VMEM slots per direction")
def scale_overlap(s: Session) -> None:
    """Task 2.5: the trace shows the overlap: one fetch and one write-back per block, and every
    copy but the first fetch and the last write-back has computation between its start() and
    its wait(); two VMEM slots per direction.
    """
    for case in SCHEDULE_CASES:
        plan = _plan(case)
        try:
            call = _invoke_scale(s, case).own_call()
        except CheckFailure as failure:
            failure.input = repr(case)
            raise
        steps = plan["steps"]
        if call.manual_dma_count != plan["copies"]:
            raise CheckFailure(
                "the kernel does not move each block with one DMA in and one DMA out",
                input=repr(case),
                expected=f"{plan['copies']} manual DMAs ({steps} fetches, {steps} write-backs)",
                got=f"{call.manual_dma_count} manual DMAs",
                hint="leave x and the output in HBM (pl.ANY) and copy each (block_rows, N) "
                     "block with pltpu.make_async_copy")
        exposed = call.ops["manual_dma_exposed_count"] if call.ops is not None else None
        total = int(exposed.sum()) if exposed is not None else plan["copies"]
        if total > plan["exposed"]:
            per_step = exposed.tolist() if exposed is not None else "not recorded"
            diagnosis = ANTI_PATTERN if steps > 1 and total >= steps else None
            raise CheckFailure(
                f"{total} of the {plan['copies']} copies had nothing computed between their "
                "start() and their wait()",
                input=repr(case),
                expected=f"at most {plan['exposed']}: the first fetch (nothing to compute yet) "
                         "and the last write-back (nothing left to compute)",
                got=f"copies with no overlap, per grid step: {per_step}",
                diagnosis=diagnosis)
        slots = call.vmem_bytes // plan["block_bytes"]
        if slots < 4:
            raise CheckFailure(
                "the kernel has fewer than two VMEM slots per direction",
                input=repr(case),
                expected=f"4 blocks of VMEM scratch ({plan['vmem_bytes']} B): two input and "
                         "two result slots",
                got=f"{call.vmem_bytes} B of VMEM ({slots} block(s))",
                diagnosis=SINGLE_BUFFER.format(slots=slots))


@check(A, "2.5", 5, "x and the output stay in HBM (pl.ANY) and move only by the kernel's own "
                    "DMAs; grid (M // block_rows,), not 'parallel'; VMEM within four blocks")
def scale_memory(s: Session) -> None:
    """Task 2.5: x and the output stay in HBM (pl.ANY) and move only by the kernel's own DMAs;
    grid (M // block_rows,), not 'parallel'; VMEM within four blocks.
    """
    for case in SCHEDULE_CASES:
        plan = _plan(case)
        try:
            call = _invoke_scale(s, case).own_call()
        except CheckFailure as failure:
            failure.input = repr(case)
            raise
        moved = [op for op in call.operands if op.role in ("in", "out") and op.memory_space
                 != "any"]
        if moved or call.dma_count:
            names = ", ".join(f"{op.name} ({op.memory_space})" for op in moved) or "none"
            raise CheckFailure(
                "pallas_call copies blocks itself: an operand is not left in HBM",
                input=repr(case), expected="x and the output with memory_space=pl.ANY, "
                "0 automatic DMAs", got=f"operands outside HBM: {names}; {call.dma_count} "
                "automatic DMAs",
                hint="in_specs=[pl.BlockSpec(memory_space=pl.ANY)], "
                     "out_specs=pl.BlockSpec(memory_space=pl.ANY)")
        if tuple(call.grid) != (plan["steps"],):
            raise CheckFailure("the grid is not one step per block", input=repr(case),
                               expected=f"grid ({plan['steps']},)", got=f"grid {call.grid}")
        if "parallel" in tuple(call.dimension_semantics or ()):
            raise CheckFailure(
                "the grid axis is 'parallel'", input=repr(case), expected="('arbitrary',)",
                got=str(tuple(call.dimension_semantics)),
                hint="the slot in SMEM carries from one step to the next, so the steps must "
                     "run in order on one core: dimension_semantics=('arbitrary',)")
        if call.vmem_bytes > plan["vmem_bytes"]:
            raise CheckFailure(
                "VMEM over the budget of four blocks", input=repr(case),
                expected=f"at most {plan['vmem_bytes']} B (two input and two result slots of "
                         f"{plan['block_bytes']} B)",
                got=f"{call.vmem_bytes} B")
        if call.manual_dma_bytes != plan["dma_bytes"]:
            raise CheckFailure(
                "the kernel's DMAs do not move x once in and once out", input=repr(case),
                expected=f"{plan['dma_bytes']} B", got=f"{call.manual_dma_bytes} B")
