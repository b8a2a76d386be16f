"""Public checks of a2_pipelining (lecture §3): worked answers and the schedule recurrence;
for Task 2.5 the values and the DMA schedule in the trace of a few fixed calls.

Pipelines come from the families grading draws from: durations in eighths (zeros, ties, long
and short blocks, or one pair repeated), given as lists or arrays, 1-6 buffers, and chart
widths of 1-80 cells.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from graders.labs.a2_pipelining.public import worked
from graders.student.public import (
    Api,
    Mismatch,
    arrays,
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
    for answer in worked.SCHEDULES:
        d, c, n = answer.dma, answer.compute, answer.n_blocks
        buffers, total = answer.n_buffers, int(answer.total)
        _, comp = _pair(api.call("pipeline_schedule", [d] * n, [c] * n, buffers).value)
        if comp.shape != (n, 2) or not np.isclose(comp[-1, 1], total):
            raise Mismatch("the total time differs from the lecture's",
                           input=f"{n} blocks, dma {d:g}, compute {c:g}, "
                                 f"n_buffers = {buffers}",
                           expected=str(total), got=str(comp[-1, 1] if comp.size else comp))


#: Durations in eighths (exact in binary): zeros, short and long round values are common.
_EIGHTHS = st.one_of(st.sampled_from([0, 4, 8, 16, 24, 96]), st.integers(0, 160))


class Pipeline(dict):
    """dma_times, compute_times and n_buffers of one drawn pipeline."""

    def __repr__(self) -> str:
        def show(times: object) -> str:
            values = np.asarray(times, dtype=np.float64).tolist()
            text = "[" + ", ".join(f"{t:g}" for t in values[:12]) + (
                f", ... ({len(values)} blocks)]" if len(values) > 12 else "]")
            return f"np.array({text})" if isinstance(times, np.ndarray) else text
        return (f"dma_times = {show(self['dma_times'])}, compute_times = "
                f"{show(self['compute_times'])}, n_buffers = {self['n_buffers']}")


@st.composite
def pipelines(draw, max_blocks: int = 32) -> Pipeline:
    """Strategy: DMA and compute durations (multiples of 1/8: zeros, ties, long and short
    blocks, or one pair repeated), as lists or float64 arrays, and 1-6 buffers."""
    if draw(st.booleans()):
        pairs = draw(st.lists(st.tuples(_EIGHTHS, _EIGHTHS), min_size=1, max_size=max_blocks))
    else:
        pairs = [draw(st.tuples(_EIGHTHS, _EIGHTHS))] * draw(st.integers(1, max_blocks))
    dma, compute = [d / 8 for d, _ in pairs], [c / 8 for _, c in pairs]
    if draw(st.booleans()):
        dma, compute = np.asarray(dma), np.asarray(compute)
    return Pipeline(dma_times=dma, compute_times=compute, n_buffers=draw(st.integers(1, 6)))


@public_check(A, "2.1", "every interval follows the one-engine, n-buffer recurrence")
def schedule_property(api: Api) -> None:
    """Task 2.1: every interval follows the one-engine, n-buffer recurrence."""
    def body(case: Pipeline) -> None:
        dma, comp = _pair(api.call("pipeline_schedule", case["dma_times"],
                                   case["compute_times"], case["n_buffers"]).value)
        e_dma, e_comp = schedule(case["dma_times"], case["compute_times"], case["n_buffers"])
        assert_close(dma, e_dma, rtol=1e-9, atol=1e-9, what="dma_intervals")
        assert_close(comp, e_comp, rtol=1e-9, atol=1e-9, what="compute_intervals")
    api.run_property(pipelines(), body)


def chart(dma: np.ndarray, comp: np.ndarray, width: int) -> str:
    """The Gantt chart of docs/student-api.md, Task 2.2, as a table: cell c of a row shows the
    digit k % 10 of the last block k with round(start·width/T) <= c < round(end·width/T)
    (rounding half to even, as Python's ``round``), or a space."""
    total = comp[-1, 1]
    cell = np.arange(width)
    rows = []
    for intervals in (dma, comp):
        first = np.rint(intervals[:, 0] * width / total)[:, None]
        last = np.rint(intervals[:, 1] * width / total)[:, None]
        covered = (first <= cell) & (cell < last)  # [blocks, width]
        owner = len(intervals) - 1 - covered[::-1].argmax(axis=0)
        rows.append("".join(str(k % 10) if hit else " "
                            for k, hit in zip(owner, covered.any(axis=0), strict=True)))
    return f"DMA     |{rows[0]}|\ncompute |{rows[1]}|"


@public_check(A, "2.2", "each row has width cells; block k fills cells round(start·width/T) up "
                        "to round(end·width/T) with the digit k % 10 (drawn schedules and "
                        "widths)")
def gantt_property(api: Api) -> None:
    """Task 2.2: each row has width cells; block k fills cells round(start·width/T) up to
    round(end·width/T) with the digit k % 10 (drawn schedules and widths).
    """
    class GanttCase(tuple):
        def __repr__(self) -> str:
            return f"the schedule of {self[0]!r}; width = {self[1]}"

    @st.composite
    def cases(draw) -> GanttCase:
        return GanttCase((draw(pipelines(max_blocks=24)), draw(st.integers(1, 80))))

    def body(example: GanttCase) -> None:
        case, width = example
        dma, comp = schedule(case["dma_times"], case["compute_times"], case["n_buffers"])
        if comp[-1, 1] <= 0:
            return  # T = 0: no chart is defined
        expected = chart(dma, comp, width)
        got = api.call("render_gantt", dma, comp, width=width).value
        if got != expected:
            raise Mismatch("the chart differs", expected="\n" + expected, got="\n" + str(got),
                           input=repr(example))

    # Twelve blocks: from block 10 on the digit is k % 10.
    body(GanttCase((Pipeline(dma_times=[0.5] * 12, compute_times=[1.0] * 12, n_buffers=2), 60)))
    api.run_property(cases(), body)


@public_check(A, "2.3", "worked answers: 6 blocks, DMA 1, compute 2: utilization 12/18 with 1 "
                        "buffer, 12/13 with 2 (lecture §3.1)")
def utilization_worked(api: Api) -> None:
    """Task 2.3: worked answers: 6 blocks, DMA 1, compute 2: utilization 12/18 with 1 buffer,
    12/13 with 2 (lecture §3.1).
    """
    for answer in worked.SIX_BLOCKS:
        buffers, expected = answer.n_buffers, answer.utilization
        got = api.call("pipeline_utilization", [answer.dma] * answer.n_blocks,
                       [answer.compute] * answer.n_blocks, buffers).value
        if not np.isclose(number(got, "pipeline_utilization's result"), expected, rtol=1e-9):
            raise Mismatch("the utilization differs", input=f"n_buffers = {buffers}",
                           expected=f"{expected:.6f}", got=repr(got))


@public_check(A, "2.4", "worked answer: 4 MiB per step, compute 2.087 µs, utilization 0.234 → "
                        "about 614 GB/s (lecture §3.2)")
def bandwidth_worked(api: Api) -> None:
    """Task 2.4: worked answer: 4 MiB per step, compute 2.087 µs, utilization 0.234 → about 614
    GB/s (lecture §3.2).
    """
    answer = worked.BANDWIDTH
    got = api.call("effective_bandwidth", answer.bytes_per_step, answer.compute_time,
                   answer.utilization).value
    if not np.isclose(number(got, "effective_bandwidth's result"), answer.bandwidth, rtol=5e-3):
        raise Mismatch("the bandwidth differs from the lecture's",
                       expected="≈ 6.138e11 B/s", got=repr(got))


@public_check(A, "2.3", "utilization = Σ compute / end of the last compute step of the "
                        "schedule, on drawn pipelines; 1.0 when the pipeline takes no time")
def utilization_property(api: Api) -> None:
    """Task 2.3: utilization = Σ compute / end of the last compute step of the schedule, on
    drawn pipelines; 1.0 when the pipeline takes no time.
    """
    got = api.call("pipeline_utilization", [0.0, 0.0], [0.0, 0.0], 2).value
    if number(got, "pipeline_utilization's result") != 1.0:
        raise Mismatch("a pipeline that takes no time counts as fully used",
                       input="dma_times = [0.0, 0.0], compute_times = [0.0, 0.0], n_buffers = 2",
                       expected="1.0", got=repr(got))

    def body(case: Pipeline) -> None:
        _, comp = schedule(case["dma_times"], case["compute_times"], case["n_buffers"])
        total = comp[-1, 1]
        expected = 1.0 if total == 0 else float(np.sum(case["compute_times"]) / total)
        got = number(api.call("pipeline_utilization", case["dma_times"],
                              case["compute_times"], case["n_buffers"]).value,
                     "pipeline_utilization's result")
        if not np.isclose(got, expected, rtol=1e-9, atol=1e-12):
            raise Mismatch("the utilization differs", expected=f"{expected:.6g}",
                           got=f"{got:.6g}")
    api.run_property(pipelines(), body)


@public_check(A, "2.4", "bandwidth = bytes / d with d = c·(1/u - 1), on drawn bytes, compute "
                        "times and utilizations")
def bandwidth_property(api: Api) -> None:
    """Task 2.4: bandwidth = bytes / d with d = c·(1/u - 1), on drawn bytes, compute times and
    utilizations.
    """
    cases = st.tuples(st.integers(1, 2**40).map(float),
                      st.sampled_from([1e-9, 2.087e-6, 1e-3, 1.0, 250.0]),
                      st.integers(1, 99).map(lambda p: p / 100))

    def body(args: tuple[float, float, float]) -> None:
        size, compute, u = args
        expected = size / (compute * (1.0 / u - 1.0))
        got = number(api.call("effective_bandwidth", size, compute, u).value,
                     "effective_bandwidth's result")
        if not np.isclose(got, expected, rtol=1e-9):
            raise Mismatch("the bandwidth differs",
                           input=f"bytes_per_step = {size:g}, compute_time = {compute:g}, "
                                 f"utilization = {u:g}",
                           expected=f"{expected:.6g}", got=f"{got:.6g}")
    api.run_property(cases, body)


#: Task 2.5 inputs: (rows, cols, dtype name, scale, block_rows); one single-step call.
_SCALE_CASES = ((32, 128, "float32", 2.0, 8), (48, 256, "bfloat16", -0.5, 16),
                (8, 128, "float32", 1.5, 8))


@public_check(A, "2.5", "double_buffered_scale returns x * scale; its trace shows one fetch and "
                        "one write-back per block, at most two copies (the first fetch, the "
                        "last write-back) with nothing computed between start() and wait(), "
                        "and four blocks of VMEM (lecture §3.2)")
def double_buffer_schedule(api: Api) -> None:
    """Task 2.5: double_buffered_scale returns x * scale; its trace shows one fetch and one
    write-back per block, at most two copies (the first fetch, the last write-back) with nothing
    computed between start() and wait(), and four blocks of VMEM (lecture §3.2).
    """
    for seed, (rows, cols, dtype, scale, block_rows) in enumerate(_SCALE_CASES):
        x = arrays((rows, cols), seed,
                   dtype=np.float32 if dtype == "float32" else ml_dtypes.bfloat16)
        label = f"x = {dtype}[{rows}, {cols}], scale = {scale}, block_rows = {block_rows}"
        result = api.call("double_buffered_scale", x, scale, block_rows=block_rows)
        tol = 1e-6 if dtype == "float32" else 1.6e-2
        try:
            assert_close(result.value, x.astype(np.float64) * scale, rtol=tol, atol=tol,
                         what="output")
        except Mismatch as mismatch:
            mismatch.input = label
            raise
        if not result.traces:
            raise Mismatch("no pallas_call ran", input=label, expected="one pl.pallas_call",
                           got="none")
        call = result.traces[-1]
        steps = rows // block_rows
        if call.manual_dma_count != 2 * steps:
            raise Mismatch("one fetch and one write-back per block", input=label,
                           expected=f"{2 * steps} manual DMAs",
                           got=f"{call.manual_dma_count} manual DMAs")
        exposed = call.ops["manual_dma_exposed_count"].tolist() if call.ops is not None else []
        if sum(exposed) > 2:
            raise Mismatch("copies waited with nothing computed since their start() (start() "
                           "immediately followed by wait()?)", input=label,
                           expected="at most 2 in all (the first fetch, the last write-back)",
                           got=f"per grid step: {exposed}")
        block_bytes = block_rows * cols * x.dtype.itemsize
        if call.vmem_bytes != 4 * block_bytes:
            raise Mismatch("VMEM is not two input and two result slots", input=label,
                           expected=f"{4 * block_bytes} B", got=f"{call.vmem_bytes} B")

