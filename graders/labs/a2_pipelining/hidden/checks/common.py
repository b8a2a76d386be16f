"""Shared by the a2 hidden checks: constants and drawn durations."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.checking.strategies import Case
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
