"""Tasks 4.5 mle_safe_range and 4.6 traffic."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from graders.labs.a4_flash_attention.public import worked
from graders.student.public import Api, Mismatch, number, public_check

from .common import A


@public_check(A, "4.5", "worked answer: scores in [-30, 40] → safe constants in about "
                        "(-48.7, 57.3) (lecture §5.4)")
def mle_worked(api: Api) -> None:
    """Task 4.5: worked answer: scores in [-30, 40] → safe constants in about (-48.7, 57.3)
    (lecture §5.4).
    """
    got = api.call("mle_safe_range", *worked.MLE_ARGS).value
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise Mismatch("mle_safe_range must return (low, high)", got=repr(got)[:200])
    low, high = number(got[0], "low"), number(got[1], "high")
    want_low, want_high = worked.MLE_SAFE_RANGE
    if not (math.isclose(low, want_low, rel_tol=worked.WORKED_RTOL)
            and math.isclose(high, want_high, rel_tol=worked.WORKED_RTOL)):
        raise Mismatch("the safe range differs from the lecture's", input=str(worked.MLE_ARGS),
                       expected=f"about ({want_low}, {want_high})",
                       got=f"({low:.4g}, {high:.4g})")


@public_check(A, "4.6", "worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048); "
                        "XLA 24.75 GiB; 1.3744e12 FLOPs (lecture §5.2)")
def traffic_worked(api: Api) -> None:
    """Task 4.6: worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048); XLA 24.75
    GiB; 1.3744e12 FLOPs (lecture §5.2).
    """
    for answer in worked.TRAFFIC:
        got = api.call(answer.func, *answer.args).value
        if got != answer.value:
            raise Mismatch(f"{answer.func} differs from the lecture's", input=f"{answer.args}",
                           expected=f"{answer.value} ({answer.why})", got=repr(got))


@public_check(A, "4.6", "the traffic formulas at drawn shapes and byte widths: Flash reads Q "
                        "once and K, V once per q block and writes O; XLA writes the scores "
                        "once and reads them twice; FLOPs 2·H·L²·(d + dv) (lecture §5.2)")
def traffic_formulas(api: Api) -> None:
    """Task 4.6: the traffic formulas of the task at drawn shapes and byte widths (the
    worked answers use the default widths only, so a width that is ignored passes them)."""
    @st.composite
    def shapes(draw) -> dict:
        return {"H": draw(st.integers(1, 64)), "L": draw(st.integers(1, 8192)),
                "d": draw(st.sampled_from([64, 128, 192])),
                "dv": draw(st.sampled_from([64, 128])),
                "block_q": draw(st.sampled_from([128, 512, 1000, 2048])),
                "in_bytes": draw(st.sampled_from([1, 2, 4])),
                "score_bytes": draw(st.sampled_from([2, 4])),
                "out_bytes": draw(st.sampled_from([2, 4]))}

    def body(c: dict) -> None:
        heads, length, d, dv = c["H"], c["L"], c["d"], c["dv"]
        per_head_in = length * c["in_bytes"]
        expected = {
            "flash_attention_hbm_bytes": heads * per_head_in * (
                d + math.ceil(length / c["block_q"]) * (d + dv))
            + heads * length * dv * c["out_bytes"],
            "xla_attention_hbm_bytes": heads * (3 * c["score_bytes"] * length ** 2
                                                + per_head_in * (d + d + dv)
                                                + length * dv * c["out_bytes"]),
            "attention_flops": 2 * heads * length ** 2 * (d + dv)}
        calls = {
            "flash_attention_hbm_bytes": api.call(
                "flash_attention_hbm_bytes", heads, length, d, dv, c["block_q"],
                in_bytes=c["in_bytes"], out_bytes=c["out_bytes"]),
            "xla_attention_hbm_bytes": api.call(
                "xla_attention_hbm_bytes", heads, length, d, dv, in_bytes=c["in_bytes"],
                score_bytes=c["score_bytes"], out_bytes=c["out_bytes"]),
            "attention_flops": api.call("attention_flops", heads, length, d, dv)}
        for func, result in calls.items():
            if result.value != expected[func]:
                raise Mismatch(f"{func} differs from the formula of the task",
                               expected=str(expected[func]), got=repr(result.value))
    api.run_property(shapes(), body)
