"""Tasks 4.5 mle_safe_range and 4.6 traffic and work."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import reference.a4_flash_attention as ref
from graders.checking.compare import as_finite_number, assert_equal_int
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case
from graders.labs.a4_flash_attention.hidden.diagnose import diagnose_range, diagnose_traffic
from graders.labs.a4_flash_attention.public import worked

from .common import A
from .softmax import _kind

# --- Task 4.5 mle_safe_range ------------------------------------------------------------------

def _unpack_range(value: object) -> tuple[float, float]:
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or not all(isinstance(x, (int, float, np.integer, np.floating)) for x in value)):
        raise CheckFailure("mle_safe_range must return a pair of floats (low, high)",
                           expected="(low, high)", got=_kind(value) if isinstance(
                               value, (tuple, list)) else type(value).__name__)
    low = as_finite_number(value[0], "low of mle_safe_range's (low, high)",
                           expected="finite ends of the open interval")
    high = as_finite_number(value[1], "high of mle_safe_range's (low, high)",
                            expected="finite ends of the open interval")
    return low, high


@check(A, "4.5", 2, "worked answer (Ex10): scores in [-30, 40] give about (-48.7, 57.3)")
def mle_worked(s: Session) -> None:
    """Task 4.5: worked answer (Ex10): scores in [-30, 40] give about (-48.7, 57.3)."""
    args, (low, high) = worked.MLE_ARGS, worked.MLE_SAFE_RANGE
    got = _unpack_range(s.invoke("mle_safe_range", args).value)
    if not (math.isclose(got[0], low, rel_tol=worked.WORKED_RTOL)
            and math.isclose(got[1], high, rel_tol=worked.WORKED_RTOL)):
        raise CheckFailure("the safe range differs from the lecture's", input=str(args),
                           expected=f"about ({low}, {high})",
                           got=f"({got[0]:.4g}, {got[1]:.4g})",
                           diagnosis=diagnose_range(got, *args))


@check(A, "4.5", 3, "mle_safe_range equals the reference on drawn score extremes")
def mle_property(s: Session) -> None:
    """Task 4.5: mle_safe_range equals the reference on drawn score extremes."""
    def body(case: Case) -> None:
        got = _unpack_range(s.invoke("mle_safe_range", case.args).value)
        want = ref.mle_safe_range(*case.args)
        if not all(math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-5)
                   for g, w in zip(got, want, strict=True)):
            raise CheckFailure("the safe range is wrong", expected=f"({want[0]:.6g}, "
                               f"{want[1]:.6g})", got=f"({got[0]:.6g}, {got[1]:.6g})",
                               diagnosis=diagnose_range(got, *case.args))

    @st.composite
    def extremes(draw) -> Case:
        top = draw(st.floats(-200, 200, allow_nan=False).map(lambda x: round(x, 3)))
        spread = draw(st.floats(0, 300, allow_nan=False).map(lambda x: round(x, 3)))
        return Case((top, top - spread), {}, ("max_logit", "min_row_max"))
    run_property(extremes(), body, max_examples=20)


# --- Task 4.6 traffic and work ----------------------------------------------------------------

@check(A, "4.6", 2, "worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048), XLA "
                    "24.75 GiB, 1.3744e12 FLOPs (lecture §5.2)")
def traffic_worked(s: Session) -> None:
    """Task 4.6: worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048), XLA 24.75
    GiB, 1.3744e12 FLOPs (lecture §5.2).
    """
    for answer in worked.TRAFFIC:
        got = s.invoke(answer.func, answer.args).value
        try:
            assert_equal_int(got, answer.value, answer.func)
        except CheckFailure as failure:
            failure.input = f"{answer.func}{answer.args}"
            failure.expected = f"{answer.value} ({answer.why})"
            failure.diagnosis = diagnose_traffic(answer.func, answer.args, {}, got)
            raise


@st.composite
def traffic_cases(draw) -> Case:
    """Strategy: (H, L, d, dv, block_q) for the HBM-traffic and FLOP models of Task 4.6."""
    heads = draw(st.integers(1, 256))
    length = draw(st.integers(1, 16384))
    d, dv = draw(st.integers(1, 512)), draw(st.integers(1, 512))
    block_q = draw(st.one_of(st.sampled_from([128, 512, 1024, 2048]), st.integers(1, 4096)))
    kwargs = {}
    if draw(st.booleans()):
        kwargs = {"in_bytes": draw(st.sampled_from([1, 2, 4])),
                  "out_bytes": draw(st.sampled_from([2, 4])),
                  "score_bytes": draw(st.sampled_from([2, 4]))}
    return Case((heads, length, d, dv, block_q), kwargs, ("H", "L", "d", "dv", "block_q"))


def _flash_sizes(case: Case) -> dict[str, int]:
    """The byte sizes flash_attention_hbm_bytes takes (no scores reach HBM)."""
    return {k: v for k, v in case.kwargs.items() if k in ("in_bytes", "out_bytes")}


@check(A, "4.6", 2, "flash_attention_hbm_bytes equals the reference on drawn sizes (block_q "
                    "need not divide L; in_bytes/out_bytes)")
def flash_traffic_property(s: Session) -> None:
    """Task 4.6: flash_attention_hbm_bytes equals the reference on drawn sizes (block_q need not
    divide L; in_bytes/out_bytes).
    """
    def body(case: Case) -> None:
        sizes = _flash_sizes(case)
        got = s.invoke("flash_attention_hbm_bytes", case.args, sizes).value
        try:
            assert_equal_int(got, ref.flash_attention_hbm_bytes(*case.args, **sizes),
                             "flash_attention_hbm_bytes")
        except CheckFailure as failure:
            failure.input = f"H, L, d, dv, block_q = {case.args}" + (f", {sizes}" if sizes else "")
            failure.diagnosis = diagnose_traffic("flash_attention_hbm_bytes", case.args,
                                                  sizes, got)
            raise
    run_property(traffic_cases(), body, max_examples=20)


@check(A, "4.6", 1, "xla_attention_hbm_bytes and attention_flops equal the reference on drawn "
                    "sizes")
def xla_traffic_property(s: Session) -> None:
    """Task 4.6: xla_attention_hbm_bytes and attention_flops equal the reference on drawn sizes."""
    def body(case: Case) -> None:
        args = case.args[:4]
        kwargs = case.kwargs
        got = s.invoke("xla_attention_hbm_bytes", args, kwargs).value
        try:
            assert_equal_int(got, ref.xla_attention_hbm_bytes(*args, **kwargs),
                             "xla_attention_hbm_bytes")
        except CheckFailure as failure:
            failure.input = f"H, L, d, dv = {args}" + (f", {kwargs}" if kwargs else "")
            failure.diagnosis = diagnose_traffic("xla_attention_hbm_bytes", args, kwargs, got)
            raise
        flops = s.invoke("attention_flops", args).value
        try:
            assert_equal_int(flops, ref.attention_flops(*args), "attention_flops")
        except CheckFailure as failure:
            failure.input = f"H, L, d, dv = {args}"
            raise
    run_property(traffic_cases(), body, max_examples=20)
