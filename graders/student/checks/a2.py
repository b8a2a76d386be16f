"""Public checks of a2_pipelining (lecture §3): worked answers and the schedule recurrence."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import (
    Api,
    Mismatch,
    as_float_array,
    assert_close,
    number,
    public_check,
)

A = "a2"


def schedule(d: list[float], c: list[float], buffers: int) -> tuple[np.ndarray, np.ndarray]:
    """The student API's model: DMA k starts at max(end of DMA k-1, end of compute
    k-buffers); compute k at max(end of DMA k, end of compute k-1)."""
    n = len(d)
    dma, comp = np.zeros((n, 2)), np.zeros((n, 2))
    for k in range(n):
        start = max(dma[k - 1, 1] if k else 0.0, comp[k - buffers, 1] if k >= buffers else 0.0)
        dma[k] = (start, start + d[k])
        begin = max(dma[k, 1], comp[k - 1, 1] if k else 0.0)
        comp[k] = (begin, begin + c[k])
    return dma, comp


def _pair(value: object) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Mismatch("pipeline_schedule must return (dma_intervals, compute_intervals)",
                       got=type(value).__name__)
    return as_float_array(value[0], "dma_intervals"), as_float_array(value[1],
                                                                      "compute_intervals")


@public_check(A, "2.1", "worked answers: 6 blocks, DMA 1, compute 2: 18 with 1 buffer, 13 with "
                        "2; DMA 3, compute 1, 100 blocks: 400 and 301 (lecture §3.1)")
def schedule_worked(api: Api) -> None:
    """Task 2.1: worked answers: 6 blocks, DMA 1, compute 2: 18 with 1 buffer, 13 with 2; DMA 3,
    compute 1, 100 blocks: 400 and 301 (lecture §3.1).
    """
    for d, c, n, totals in ((1.0, 2.0, 6, (18, 13)), (3.0, 1.0, 100, (400, 301))):
        for buffers, total in zip((1, 2), totals, strict=True):
            _, comp = _pair(api.call("pipeline_schedule", [d] * n, [c] * n, buffers).value)
            if comp.shape != (n, 2) or not np.isclose(comp[-1, 1], total):
                raise Mismatch("the total time differs from the lecture's",
                               input=f"{n} blocks, dma {d:g}, compute {c:g}, "
                                     f"n_buffers = {buffers}",
                               expected=str(total), got=str(comp[-1, 1] if comp.size else comp))


@st.composite
def pipelines(draw) -> dict:
    """Strategy: DMA and compute durations (zeros and ties included) and a buffer count."""
    n = draw(st.integers(1, 8))
    times = st.floats(0, 5, allow_nan=False).map(lambda t: round(t, 2))
    return {"dma_times": draw(st.lists(times, min_size=n, max_size=n)),
            "compute_times": draw(st.lists(times, min_size=n, max_size=n)),
            "n_buffers": draw(st.integers(1, 4))}


@public_check(A, "2.1", "every interval follows the one-engine, n-buffer recurrence")
def schedule_property(api: Api) -> None:
    """Task 2.1: every interval follows the one-engine, n-buffer recurrence."""
    def body(case: dict) -> None:
        dma, comp = _pair(api.call("pipeline_schedule", case["dma_times"],
                                   case["compute_times"], case["n_buffers"]).value)
        e_dma, e_comp = schedule(case["dma_times"], case["compute_times"], case["n_buffers"])
        assert_close(dma, e_dma, rtol=1e-9, atol=1e-9, what="dma_intervals")
        assert_close(comp, e_comp, rtol=1e-9, atol=1e-9, what="compute_intervals")
    api.run_property(pipelines(), body)


@public_check(A, "2.2", "each row has width cells; block k fills cells round(start·width/T) up "
                        "to round(end·width/T) with the digit k % 10")
def gantt_property(api: Api) -> None:
    """Task 2.2: each row has width cells; block k fills cells round(start·width/T) up to
    round(end·width/T) with the digit k % 10.
    """
    def body(case: dict) -> None:
        dma, comp = schedule(case["dma_times"], case["compute_times"], case["n_buffers"])
        total = comp[-1, 1]
        if total <= 0:
            return
        rows = []
        for intervals in (dma, comp):
            cells = [" "] * 54
            for k, (start, end) in enumerate(intervals):
                for cell in range(round(start * 54 / total), round(end * 54 / total)):
                    cells[cell] = str(k % 10)
            rows.append("".join(cells))
        expected = f"DMA     |{rows[0]}|\ncompute |{rows[1]}|"
        got = api.call("render_gantt", dma, comp).value
        if got != expected:
            raise Mismatch("the chart differs", expected="\n" + expected, got="\n" + str(got))
    api.run_property(pipelines(), body)


@public_check(A, "2.3", "worked answers: 6 blocks, DMA 1, compute 2: utilization 12/18 with 1 "
                        "buffer, 12/13 with 2 (lecture §3.1)")
def utilization_worked(api: Api) -> None:
    """Task 2.3: worked answers: 6 blocks, DMA 1, compute 2: utilization 12/18 with 1 buffer,
    12/13 with 2 (lecture §3.1).
    """
    for buffers, expected in ((1, 12 / 18), (2, 12 / 13)):
        got = api.call("pipeline_utilization", [1.0] * 6, [2.0] * 6, buffers).value
        if not np.isclose(number(got, "pipeline_utilization's result"), expected, rtol=1e-9):
            raise Mismatch("the utilization differs", input=f"n_buffers = {buffers}",
                           expected=f"{expected:.6f}", got=repr(got))


@public_check(A, "2.4", "worked answer: 4 MiB per step, compute 2.087 µs, utilization 0.234 → "
                        "about 614 GB/s (lecture §3.2)")
def bandwidth_worked(api: Api) -> None:
    """Task 2.4: worked answer: 4 MiB per step, compute 2.087 µs, utilization 0.234 → about 614
    GB/s (lecture §3.2).
    """
    got = api.call("effective_bandwidth", 4 * 2**20, 2.087e-6, 0.234).value
    if not np.isclose(number(got, "effective_bandwidth's result"), 613.8e9, rtol=5e-3):
        raise Mismatch("the bandwidth differs from the lecture's",
                       expected="≈ 6.138e11 B/s", got=repr(got))
