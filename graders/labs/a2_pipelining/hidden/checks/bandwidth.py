"""Task 2.4 effective_bandwidth."""

from __future__ import annotations

import math

from hypothesis import strategies as st

import reference.a2_pipelining as ref
from graders.checking.compare import as_finite_number
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.labs.a2_pipelining.hidden.diagnose import diagnose_bandwidth
from graders.labs.a2_pipelining.public import worked

from .common import WORKED_RTOL, A

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
