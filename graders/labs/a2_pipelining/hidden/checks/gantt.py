"""Task 2.2 render_gantt."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import reference.a2_pipelining as ref
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case
from graders.labs.a2_pipelining.hidden.diagnose import truncated_gantt

from .common import CHART_ONE_BUFFER, CHART_TWO_BUFFERS, A, schedule_cases

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
