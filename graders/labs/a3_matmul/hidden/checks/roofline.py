"""Task 3.4 roofline."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import reference.a3_matmul as ref
from graders.checking.compare import as_finite_number
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case
from graders.labs.a3_matmul.hidden.diagnose import diagnose_block
from graders.labs.a3_matmul.public import worked

from .common import HBM_BANDWIDTH, PEAK_FLOPS, WORKED_RTOL, A

# --- Task 3.4 roofline ---------------------------------------------------------------------

def _number(s: Session, func: str, args: tuple, kwargs: dict, label: str) -> float:
    got = s.invoke(func, args, kwargs).value
    return as_finite_number(got, f"{func}'s result", expected="a finite number", input=label)


@check(A, "3.4", 4, "arithmetic_intensity(b, dtype_bytes) = b / dtype_bytes: 256 for b = 512 "
                    "and 512 for b = 1024 in bf16 (lecture §4.2)")
def intensity(s: Session) -> None:
    """Task 3.4: arithmetic_intensity(b, dtype_bytes) = b / dtype_bytes: 256 for b = 512 and 512
    for b = 1024 in bf16 (lecture §4.2).
    """
    cases = [(512, 2), (1024, 2)] + [(b, d) for b in (8, 100, 2048) for d in (1, 4)]
    for block, dtype_bytes in cases:
        label = f"block = {block}, dtype_bytes = {dtype_bytes}"
        got = _number(s, "arithmetic_intensity", (block, dtype_bytes), {}, label)
        expected = ref.arithmetic_intensity(block, dtype_bytes)
        if not math.isclose(got, expected, rel_tol=1e-12):
            diagnosis = None
            if math.isclose(got, block / 2, rel_tol=1e-12):
                diagnosis = "dtype_bytes is ignored"
            raise CheckFailure("the arithmetic intensity is wrong", input=label,
                               expected=f"{expected:g} FLOP/B (2b³ FLOPs / 2·b²·dtype_bytes B)",
                               got=f"{got:g}", diagnosis=diagnosis)


def _block(s: Session, args: tuple, kwargs: dict, label: str) -> int:
    got = s.invoke("min_compute_bound_block", args, kwargs).value
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        raise CheckFailure("min_compute_bound_block must return an int", input=label,
                           expected="an int", got=f"{got!r} ({type(got).__name__})")
    return int(got)


@check(A, "3.4", 4, "worked answers: Ironwood's balance point is about 279 FLOP/B, so the "
                    "smallest compute-bound bf16 block is 560 (559 without the multiple of 8) "
                    "(lecture §4.2, Ex5)")
def min_block_worked(s: Session) -> None:
    """Task 3.4: worked answers: Ironwood's balance point is about 279 FLOP/B, so the smallest
    compute-bound bf16 block is 560 (559 without the multiple of 8) (lecture §4.2, Ex5).
    """
    for multiple, expected in worked.MIN_BLOCK.items():
        kwargs = {"dtype_bytes": 2, "multiple_of": multiple}
        label = f"peak_flops = 1028.75e12, hbm_bandwidth = 3685.5e9, multiple_of = {multiple}"
        got = _block(s, (PEAK_FLOPS, HBM_BANDWIDTH), kwargs, label)
        if got != expected:
            raise CheckFailure("the smallest compute-bound block is wrong", input=label,
                               expected=str(expected), got=str(got),
                               diagnosis=diagnose_block(got, PEAK_FLOPS, HBM_BANDWIDTH, 2,
                                                         multiple))


@st.composite
def roofline_cases(draw) -> Case:
    """Arguments of min_compute_bound_block: peaks 0.25e12-1000e12 FLOP/s, bandwidths
    5e9-4000e9 B/s, dtype sizes 1/2/4 B, multiples 1/8/16/128."""
    peak = draw(st.integers(1, 4000)) * 1e12 / 4
    bandwidth = draw(st.integers(1, 800)) * 1e10 / 2
    dtype_bytes = draw(st.sampled_from([1, 2, 4]))
    multiple = draw(st.sampled_from([1, 8, 16, 128]))
    return Case((peak, bandwidth), {"dtype_bytes": dtype_bytes, "multiple_of": multiple},
                ("peak_flops", "hbm_bandwidth"))


@check(A, "3.4", 4, "min_compute_bound_block equals the reference's on drawn peaks, bandwidths, "
                    "dtype sizes and multiples, including bounds that fall exactly on a "
                    "multiple (strictly greater: the next multiple)")
def min_block_property(s: Session) -> None:
    """Task 3.4: min_compute_bound_block equals the reference's on drawn peaks, bandwidths, dtype
    sizes and multiples, including ties: where peak / bandwidth · dtype_bytes is exactly a
    multiple, that block's intensity equals the balance point and is not strictly greater,
    so the answer is the next multiple (the handout).
    """
    def body(case: Case) -> None:
        got = _block(s, case.args, case.kwargs, repr(case))
        # Drawn peaks and bandwidths are whole numbers of FLOP/s and B/s, so the bound
        # b > peak / bandwidth · dtype_bytes is exact: a bound on a multiple (a tie) is one,
        # not a float rounding, and the handout's "strictly greater" decides it.
        expected = ref.min_compute_bound_block(*case.args, **case.kwargs)
        if got != expected:
            raise CheckFailure("the smallest compute-bound block is wrong",
                               expected=str(expected), got=str(got),
                               diagnosis=diagnose_block(got, *case.args, **case.kwargs))
    for case in TIE_CASES:  # drawn examples need not include a tie, so these always run
        try:
            body(case)
        except CheckFailure as failure:
            if failure.input is None:
                failure.input = repr(case)
            raise
    run_property(roofline_cases(), body, max_examples=20)


#: Arguments of min_compute_bound_block whose bound falls exactly on a multiple (peak /
#: bandwidth · dtype_bytes = 1000, 512, 250): the block there has an intensity equal to the
#: balance point, which is not strictly greater (the handout), so the answer is the next
#: multiple: 1008, 640, 251.
TIE_CASES = tuple(Case((peak, bandwidth), {"dtype_bytes": size, "multiple_of": multiple},
                       ("peak_flops", "hbm_bandwidth"))
                  for peak, bandwidth, size, multiple in ((1000e12, 4000e9, 4, 8),
                                                          (512e12, 2000e9, 2, 128),
                                                          (250e12, 1000e9, 1, 1)))


def _time(s: Session, args: tuple, kwargs: dict, label: str) -> float:
    return _number(s, "ideal_matmul_time", args, kwargs, label)


@check(A, "3.4", 4, "worked answers: the full matmul ideally takes 1.147 ms with 512-blocks "
                    "(4032 steps) and 1.052 ms with 1024-blocks (504 steps) (lecture §4.2)")
def ideal_time_worked(s: Session) -> None:
    """Task 3.4: worked answers: the full matmul ideally takes 1.147 ms with 512-blocks (4032
    steps) and 1.052 ms with 1024-blocks (504 steps) (lecture §4.2).
    """
    m, n, k = worked.SHAPE
    for block, ms in worked.IDEAL_MS.items():
        kwargs = {"peak_flops": PEAK_FLOPS, "hbm_bandwidth": HBM_BANDWIDTH}
        label = f"M = {m}, N = {n}, K = {k}, block = {block}, Ironwood"
        got = _time(s, (*worked.SHAPE, block), kwargs, label)
        if not math.isclose(got, ms * 1e-3, rel_tol=WORKED_RTOL):
            diagnosis = None
            steps = (m // block) * (n // block) * (k // block)
            if math.isclose(got, steps * 2 * block**3 / PEAK_FLOPS, rel_tol=1e-6):
                diagnosis = ("only the compute time is counted; a step takes the longer of its "
                             "compute and its copies (512-blocks are copy-bound)")
            raise CheckFailure("the ideal time is wrong", input=label,
                               expected=f"{ms} ms ({ms * 1e-3:.4g} s)", got=f"{got:.4g} s",
                               diagnosis=diagnosis)


@st.composite
def time_cases(draw) -> Case:
    """Arguments of ideal_matmul_time: (M, N, K, block) with dimensions multiples of the
    block (the other case is undefined by the API), hardware as in roofline_cases."""
    block = draw(st.sampled_from([128, 256, 512, 1024, 2048]))
    m, n, k = (block * draw(st.integers(1, 16)) for _ in range(3))
    kwargs = {"peak_flops": draw(st.integers(1, 4000)) * 1e12 / 4,
              "hbm_bandwidth": draw(st.integers(1, 800)) * 1e10 / 2,
              "dtype_bytes": draw(st.sampled_from([1, 2, 4]))}
    return Case((m, n, k, block), kwargs, ("M", "N", "K", "block"))


@check(A, "3.4", 4, "ideal_matmul_time equals the reference's on drawn shapes (multiples of "
                    "the block), peaks, bandwidths and dtype sizes")
def ideal_time_property(s: Session) -> None:
    """Task 3.4: ideal_matmul_time equals the reference's on drawn shapes (multiples of the
    block), peaks, bandwidths and dtype sizes.
    """
    def body(case: Case) -> None:
        got = _time(s, case.args, case.kwargs, repr(case))
        expected = ref.ideal_matmul_time(*case.args, **case.kwargs)
        if not math.isclose(got, expected, rel_tol=1e-9):
            raise CheckFailure("the ideal time is wrong", expected=f"{expected:.6g} s",
                               got=f"{got:.6g} s")
    run_property(time_cases(), body, max_examples=20)
