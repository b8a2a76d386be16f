"""The lecture's worked answers of a2_pipelining (lecture §3.1, §3.2, Exercise 3), as data.

Read by the hidden checks (``checks.py``), the public checks (``public_checks.py``)
and the tests of the reference and the solution (``tests/reference/test_reference_a2_a3.py``),
so each number is written once. Durations are plain numbers in any time unit
(seconds where a bandwidth is computed); bandwidths in bytes per second.
Imports nothing but the standard library (it ships with the public checks).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ScheduleAnswer:
    """``n_blocks`` blocks, each copied in ``dma`` and computed in ``compute``, with
    ``n_buffers`` slots: the last compute step ends at ``total`` (Task 2.1) and the
    utilization is ``n_blocks * compute / total`` (Task 2.3)."""

    dma: float
    compute: float
    n_blocks: int
    n_buffers: int
    total: float

    @property
    def utilization(self) -> float:
        """Compute time over the total time."""
        return self.n_blocks * self.compute / self.total


@dataclass(frozen=True, kw_only=True)
class BandwidthAnswer:
    """Task 2.4 (lecture §3.2): a measured ``utilization`` of a step moving
    ``bytes_per_step`` bytes and computing for ``compute_time`` seconds means an
    effective bandwidth of about ``bandwidth`` B/s (copies of ``dma_time`` seconds)."""

    bytes_per_step: int
    compute_time: float
    utilization: float
    bandwidth: float
    dma_time: float


#: Task 2.1 (lecture §3.1): 6 blocks, DMA 1, compute 2: 18 with one buffer, 13 with two.
SIX_BLOCKS: tuple[ScheduleAnswer, ...] = (
    ScheduleAnswer(dma=1.0, compute=2.0, n_blocks=6, n_buffers=1, total=18.0),
    ScheduleAnswer(dma=1.0, compute=2.0, n_blocks=6, n_buffers=2, total=13.0),
)
#: Task 2.1 (Exercise 3): DMA 3, compute 1, 100 blocks: 400 with one buffer, 301 with two.
EXERCISE_3: tuple[ScheduleAnswer, ...] = (
    ScheduleAnswer(dma=3.0, compute=1.0, n_blocks=100, n_buffers=1, total=400.0),
    ScheduleAnswer(dma=3.0, compute=1.0, n_blocks=100, n_buffers=2, total=301.0),
)
#: Every worked schedule, in lecture order.
SCHEDULES: tuple[ScheduleAnswer, ...] = SIX_BLOCKS + EXERCISE_3

#: Task 2.2 (lecture §3.1): the charts of SIX_BLOCKS at width 54, by n_buffers.
CHART_WIDTH = 54
CHARTS: dict[int, str] = {
    1: ("DMA     |000      111      222      333      444      555      |\n"
        "compute |   000000   111111   222222   333333   444444   555555|"),
    2: ("DMA     |00001111    22222    3333    4444    55555            |\n"
        "compute |    00000000111111111222222223333333344444444455555555|"),
}

#: Task 2.4 (lecture §3.2): 4 MiB per step, compute 2.087 µs, measured 23.4 % → ≈ 614 GB/s.
BANDWIDTH = BandwidthAnswer(bytes_per_step=4 * 2**20, compute_time=2.087e-6, utilization=0.234,
                            bandwidth=613.8e9, dma_time=6.833e-6)

#: Task 2.3 (lecture §3.1): utilization with 2, 3 and 4 buffers when copy times are drawn
#: from max(0, N(0.8, 1.0)) and compute takes 1.0 (the lecture's own draw).
STOCHASTIC_UTILIZATION: dict[int, float] = {2: 0.760, 3: 0.867, 4: 0.916}
