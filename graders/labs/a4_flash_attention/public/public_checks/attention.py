"""Tasks 4.3 and 4.4: attention against dense NumPy."""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from graders.student.public import (
    Api,
    Mismatch,
    StudentRaised,
    arrays,
    as_float_array,
    assert_close,
    public_check,
    seeds,
)

from .common import LN_F32_MAX, LN_F32_TINY, A
from .softmax import _softmax

# --- Tasks 4.3 and 4.4: attention against dense NumPy ----------------------------------------

#: (H, Hkv): no GQA, one kv head shared by all, and 1 < Hkv < H with H / Hkv != Hkv, where
#: h // (H // Hkv), h // Hkv and h % Hkv pick different kv heads.
HEADS = [(1, 1), (2, 1), (4, 2), (6, 2), (6, 3)]
#: The constant of the "far" family: far above every score, exp(s - c) = 0 even in float64.
FAR_CONSTANT = 800.0
BF16 = np.dtype(ml_dtypes.bfloat16)
#: (rtol, atol) of the attention output by input dtype (the grader's: bf16 leaves room for p
#: cast to bf16 before p @ v).
TOL = {"float32": (1e-4, 1e-4), "bfloat16": (2e-2, 3e-2)}
#: (block_q, block_kv) of the "odd" family, each with L = lcm(block_q, block_kv): odd sizes
#: (the handout asks only that the blocks divide L) give a tile whose first key is its q
#: block's last query, kv_block·block_kv = (q_block + 1)·block_q - 1: (q block, kv block)
#: (1, 1), (1, 3), (2, 1) and (1, 3); with even sizes an even product never equals an odd one.
ODD_BLOCKS = [(3, 5), (5, 3), (3, 8), (8, 5)]
#: The "high-mle" family: feature 0 of q and k is 12 and sm_scale 2.375, so every score is
#: about 2.375 · 144 = 342, with a constant just above the largest (lecture §6.6: in base 2
#: the constant must be c·log2(e) too; exp2(342·log2(e) - 343) = 2^150 overflows float32).
HIGH_FEATURE, HIGH_SCALE = 12.0, 2.375


@st.composite
def attention_cases(draw, *, causal: bool | None = None, flavor: str = "plain") -> dict:
    """Strategy: small f32 q, k, v (GQA head counts from ``HEADS``) and the kernel's options.

    ``flavor``: "plain" (sm_scale 1/sqrt(d)); "deep" (the even query rows score about -126
    against every key: below -87, where float32 exp underflows); "small-cap" (soft caps 1,
    2, 5); "cap" (soft caps 5, 20); "mle" (large logits with a Max-Logit-Estimate constant
    high in the safe range of Task 4.5, where a kv tile of some row can lie entirely
    below c - 104); "mle-deep" (no mask; the even query rows score about -126 against the
    first kv tile and near 0 against the others, with a constant from the safe range: that
    whole tile underflows for those rows); "far" (max_logit_const = 800); "odd" (the block
    sizes of ``ODD_BLOCKS``, L their least common multiple); "high-mle" (every score near
    342, ``HIGH_FEATURE``, and max_logit_const 1 above the largest). Inputs are f32 or bf16.
    """
    heads, kv_heads = draw(st.sampled_from(HEADS))
    block_q, block_kv = draw(st.sampled_from([8, 16])), draw(st.sampled_from([8, 16]))
    length = max(block_q, block_kv) * draw(st.integers(1, 2))
    if flavor == "odd":
        block_q, block_kv = draw(st.sampled_from(ODD_BLOCKS))
        length = math.lcm(block_q, block_kv)
    if flavor == "mle-deep":
        causal, length = False, max(length, 2 * block_kv)
    dtype = draw(st.sampled_from([np.dtype(np.float32), BF16]))
    d, dv = draw(st.sampled_from([4, 8])), draw(st.sampled_from([4, 8]))
    q = arrays((heads, length, d), draw(seeds), dtype=np.float64)
    k = arrays((kv_heads, length, d), draw(seeds), dtype=np.float64)
    v = arrays((kv_heads, length, dv), draw(seeds))
    case: dict = {"causal": draw(st.booleans()) if causal is None else causal,
                  "block_q": block_q, "block_kv": block_kv, "sm_scale": 1 / math.sqrt(d),
                  "soft_cap": None, "max_logit_const": None}
    if flavor == "high-mle":  # exact scores: multiples of 1/16 and 12, times 19/8
        q, k = np.round(2 * q) / 16, np.round(2 * k) / 16
        q[..., 0] = k[..., 0] = HIGH_FEATURE
        case["sm_scale"] = HIGH_SCALE
    elif flavor in ("deep", "mle-deep"):
        q, k = np.round(2 * q) / 16, np.round(2 * k) / 16
        k[..., 0], q[:, ::2, 0] = 12.0, -12.0
        if flavor == "mle-deep":
            k[:, block_kv:, 0] = 0.0
        case["sm_scale"] = 0.875
    elif flavor == "small-cap":
        case["soft_cap"] = draw(st.sampled_from([1.0, 2.0, 5.0]))
    elif flavor == "cap":
        case["soft_cap"] = draw(st.sampled_from([5.0, 20.0]))
    elif flavor == "mle":
        case["sm_scale"] = 10 / math.sqrt(d)
    elif flavor == "far":
        case["max_logit_const"] = FAR_CONSTANT
    case.update(q=q.astype(dtype), k=k.astype(dtype), v=v.astype(dtype))
    if flavor in ("mle", "mle-deep"):
        case["max_logit_const"] = _safe_constant(case)
    elif flavor == "high-mle":  # an upper bound of the logits, inside the safe range
        case["max_logit_const"] = round(float(_scores(case).max()) + 1.0, 1)
    return case


def _scores(case: dict) -> np.ndarray:
    """float64 [H, L, L]: scaled, capped and masked scores; query head h reads kv head
    h // (H // Hkv)."""
    group = case["q"].shape[0] // case["k"].shape[0]
    k64 = np.repeat(case["k"].astype(np.float64), group, axis=0)
    scores = case["q"].astype(np.float64) @ k64.transpose(0, 2, 1) * case["sm_scale"]
    if case["soft_cap"] is not None:
        scores = case["soft_cap"] * np.tanh(scores / case["soft_cap"])
    if case["causal"]:
        length = scores.shape[-1]
        scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    return scores


def dense_attention(case: dict) -> np.ndarray:
    """softmax(scores) @ v per head in float64 (the plain oracle of Tasks 4.3 and 4.4)."""
    group = case["q"].shape[0] // case["k"].shape[0]
    v64 = np.repeat(case["v"].astype(np.float64), group, axis=0)
    return _softmax(_scores(case)) @ v64


def _safe_constant(case: dict) -> float | None:
    """A constant at 80 % of the safe Max-Logit-Estimate range of the case's scores (Task
    4.5), kept a few units inside it (the sum over L keys times |v| <= 4 must stay finite),
    or None when there is no such range."""
    scores = _scores(case)
    low = scores.max() - LN_F32_MAX + math.log(4 * scores.shape[-1]) + 4
    high = scores.max(axis=-1).min() - LN_F32_TINY - 4
    return round(low + 0.8 * (high - low), 2) if low < high else None


def _kernel_options(case: dict) -> dict:
    return {key: case[key] for key in ("sm_scale", "causal", "block_q", "block_kv", "soft_cap",
                                       "max_logit_const")}


#: The harness the public checks run (``public_harness.py``: the kernels through the
#: student's own flash_attention, never the grader's standard call).
HARNESS = "a4_public"


def run_kernel(api: Api, func: str, case: dict, **options: object) -> dict:
    """``public_harness.<func>`` on the case: the student's kernel through their own
    flash_attention. Raises ``Mismatch`` (saying the check depends on Task 4.4) when the
    wrapper's pallas_call is not Task 4.4's, so that the kernel is not blamed for it (a
    wrapper that is still a stub raises NotImplementedError naming Task 4.4, which
    ``pallas-lab check`` reports as such)."""
    reply = api.kernel(HARNESS, func, case["q"], case["k"], case["v"], **options)
    if not isinstance(reply, dict) or "out" not in reply:
        raise Mismatch(f"the run of {func} gave no output", got=type(reply).__name__)
    if reply.get("problem"):
        raise Mismatch(f"this check runs your kernel through your flash_attention (Task 4.4), "
                       f"and {reply['problem']}: it depends on Task 4.4, fix that first")
    return reply


def _kernel_against_dense(api: Api, strategy: st.SearchStrategy, max_examples: int) -> None:
    def body(case: dict) -> None:
        got = run_kernel(api, "flash_attention_kernel", case, **_kernel_options(case))["out"]
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(got, dense_attention(case), rtol=rtol, atol=atol,
                     what="the attention output")
    api.run_property(strategy, body, max_examples=max_examples)


@public_check(A, "4.3", "flash_attention_kernel, run through your flash_attention's (head, q "
                        "block, kv block) pallas_call, equals dense softmax attention (GQA; no "
                        "mask)")
def flash_kernel_values(api: Api) -> None:
    """Task 4.3: flash_attention_kernel, run through your flash_attention's (head, q block, kv
    block) pallas_call (``public_harness``), equals dense softmax attention (GQA; no mask).
    """
    _kernel_against_dense(api, attention_cases(causal=False), 3)


@public_check(A, "4.3", "with causal=True the kernel masks key position > query position and "
                        "still gets the skipped tiles right (GQA)")
def flash_kernel_causal(api: Api) -> None:
    """Task 4.3: with causal=True the kernel masks key position > query position and still gets
    the skipped tiles right (GQA).
    """
    _kernel_against_dense(api, attention_cases(causal=True), 6)


@public_check(A, "4.3", "with causal=True the kernel reads neither k_ref nor v_ref at the grid "
                        "steps whose tile is fully masked (pl.when around the update; the "
                        "trace's kernel_reads, lecture §5.2)")
def flash_kernel_skips(api: Api) -> None:
    """Task 4.3: with causal=True the kernel reads neither k_ref nor v_ref at the grid steps
    whose tile is fully masked (pl.when around the update; the trace's kernel_reads of the
    call the kernel ran in, lecture §5.2).
    """
    def body(case: dict) -> None:
        masked, wasted = run_kernel(api, "flash_attention_kernel", case,
                                    **_kernel_options(case))["masked_reads"]
        if wasted:
            raise Mismatch(f"the kernel reads k_ref or v_ref at {wasted} of {masked} fully "
                           "masked grid steps", expected="no reads there: skip the update with "
                           "pl.when when the tile's first key comes after its last query",
                           got=f"{wasted} steps with reads")
    # L of two blocks or more, so that some tile lies wholly above the diagonal
    api.run_property(attention_cases(causal=True).filter(
        lambda c: c["q"].shape[1] >= 2 * max(c["block_q"], c["block_kv"])), body,
        max_examples=3)


@public_check(A, "4.3", "causal with odd block sizes (3, 5; the handout asks only that they "
                        "divide L): a tile whose first key is its q block's last query is "
                        "not skipped (lecture §5.2)")
def flash_kernel_odd_blocks(api: Api) -> None:
    """Task 4.3: causal with odd block sizes (3, 5; the handout asks only that they divide L):
    a tile whose first key is its q block's last query, kv_block·block_kv = (q_block + 1)·
    block_q - 1, holds one visible key and is not skipped (lecture §5.2). The output equals
    dense softmax attention, and the kernel reads k_ref or v_ref at every step whose tile
    holds a visible key (the trace's kernel_reads). With even sizes such a tile never occurs,
    so a skip test off by one there passes every other check.
    """
    def body(case: dict) -> None:
        reply = run_kernel(api, "flash_attention_kernel", case, **_kernel_options(case))
        skipped = reply.get("visible_skips") or []
        block_q, block_kv = case["block_q"], case["block_kv"]
        note = ""
        if skipped:
            i, j = skipped[0]
            first, last = j * block_kv, (i + 1) * block_q - 1
            note = (f"the kernel skips {len(skipped)} tile(s) that hold visible keys, first "
                    f"(q block {i}, kv block {j}): its first key {first} is not after query "
                    f"{last}, the last of q block {i}")
        rtol, atol = TOL[case["q"].dtype.name]
        try:
            assert_close(reply["out"], dense_attention(case), rtol=rtol, atol=atol,
                         what="the attention output")
        except Mismatch as failure:
            if note:
                failure.what = f"{failure.what}: {note}"
            raise
        if note:
            raise Mismatch(note[0].upper() + note[1:], expected="k_ref and v_ref read at "
                           "every step whose tile holds a visible key: skip only when "
                           "kv_block·block_kv > (q_block + 1)·block_q - 1",
                           got=f"neither read at {len(skipped)} such tile(s)")
    api.run_property(attention_cases(causal=True, flavor="odd"), body, max_examples=3)


@public_check(A, "4.3", "rows whose scores all lie below -100 (float32 exp underflows there) "
                        "still get their softmax: m starts at -inf, not 0 (lecture §5.2, §5.4)")
def flash_kernel_deep_rows(api: Api) -> None:
    """Task 4.3: rows whose scores all lie below -100 (float32 exp underflows there) still get
    their softmax: m starts at -inf, not 0 (lecture §5.2, §5.4).
    """
    _kernel_against_dense(api, attention_cases(causal=False, flavor="deep"), 3)


@public_check(A, "4.3", "small soft caps (1, 2, 5) with the causal mask: cap first, then mask, "
                        "so masked keys keep -inf (lecture §5.4)")
def flash_kernel_small_caps(api: Api) -> None:
    """Task 4.3: small soft caps (1, 2, 5) with the causal mask: cap first, then mask, so masked
    keys keep -inf (lecture §5.4).
    """
    _kernel_against_dense(api, attention_cases(causal=True, flavor="small-cap"), 4)


@public_check(A, "4.3", "soft caps 5 and 20, and large logits with a max_logit_const from the "
                        "safe range of Task 4.5 (lecture §5.4)")
def flash_kernel_options(api: Api) -> None:
    """Task 4.3: soft caps 5 and 20, and large logits with a max_logit_const from the safe range
    of Task 4.5 (lecture §5.4).
    """
    _kernel_against_dense(api, attention_cases(flavor="cap"), 2)
    _kernel_against_dense(api, attention_cases(flavor="mle"), 2)
    _kernel_against_dense(api, attention_cases(flavor="mle-deep"), 2)


@public_check(A, "4.3", "max_logit_const is used: with c = 800, far above every score, every "
                        "exp(s - c) is 0, so the output cannot be the softmax (lecture §5.4)")
def flash_kernel_constant_used(api: Api) -> None:
    """Task 4.3: max_logit_const is used: with c = 800, far above every score, every exp(s - c)
    is 0, so the output cannot be the softmax (lecture §5.4).
    """
    def body(case: dict) -> None:
        with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 is what c = 800 gives
            got = as_float_array(run_kernel(api, "flash_attention_kernel", case,
                                            **_kernel_options(case))["out"], "the output")
        expected = dense_attention(case)
        if got.shape == expected.shape and np.allclose(got, expected, rtol=1e-4, atol=1e-4):
            raise Mismatch("with max_logit_const = 800 the kernel still returns the exact "
                           "softmax: it keeps the running maximum instead of the constant",
                           expected="every exp(s - 800) = 0, so l = 0 and rows of 0 / 0 (NaN)",
                           got="the exact attention")
    api.run_property(attention_cases(flavor="far"), body, max_examples=2)


#: log2(e): with use_base2_exp the kernel keeps scores and m times this (lecture §6.6).
LOG2_E = 1.0 / math.log(2.0)


@public_check(A, "4.3", "use_base2_exp=True: still softmax attention, and the final m is the "
                        "row maximum times log2(e) (scores pre-scaled, exp2; lecture §6.6)")
def flash_kernel_base2(api: Api) -> None:
    """Task 4.3: use_base2_exp=True: still softmax attention, and the final m is the row maximum
    times log2(e) (scores pre-scaled, exp2; lecture §6.6).
    """
    def body(case: dict) -> None:
        got = run_kernel(api, "flash_attention_kernel", case, **_kernel_options(case),
                         use_base2_exp=True)
        out, m = got["out"], got["m"]
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(out, dense_attention(case), rtol=rtol, atol=atol,
                     what="the attention output with use_base2_exp=True")
        assert_close(m, _scores(case).max(axis=-1) * LOG2_E, rtol=1e-4, atol=1e-3,
                     what="the final m (row maximum in base-2 units, log2(e) · max s)")
    # No mask: a running maximum taken before or after the mask would differ there.
    api.run_property(attention_cases(causal=False), body, max_examples=3)


@public_check(A, "4.3", "use_base2_exp=True with max_logit_const c just above scores near 342: "
                        "still softmax attention, c taken in base-2 units too (c·log2(e)); "
                        "exp2(s·log2(e) - c) would overflow float32 (lecture §6.6)")
def flash_kernel_base2_constant(api: Api) -> None:
    """Task 4.3: use_base2_exp=True with max_logit_const c just above scores near 342: still
    softmax attention, because c is taken in base-2 units too (c·log2(e), as the scores);
    exp2(s·log2(e) - c) = exp(s - c·ln 2) would overflow float32 there (lecture §6.6). With
    smaller logits the unconverted constant gives the same softmax, so only values this
    large show it.
    """
    def body(case: dict) -> None:
        got = run_kernel(api, "flash_attention_kernel", case, **_kernel_options(case),
                         use_base2_exp=True)
        rtol, atol = TOL[case["q"].dtype.name]
        constant = case["max_logit_const"]
        try:
            with np.errstate(invalid="ignore", over="ignore"):
                assert_close(got["out"], dense_attention(case), rtol=rtol, atol=atol,
                             what="the attention output with use_base2_exp=True and "
                                  f"max_logit_const = {constant:g}")
        except Mismatch as failure:
            m = np.asarray(got.get("m"), np.float64)
            if m.size and np.allclose(m, constant, rtol=1e-6, atol=1e-3):
                failure.what = (f"{failure.what}: the m scratch holds c = {constant:g} "
                                f"itself, not c·log2(e) = {constant * LOG2_E:.6g}; the "
                                "constant is not converted to base-2 units")
            raise
    api.run_property(attention_cases(flavor="high-mle"), body, max_examples=2)


@public_check(A, "4.4", "flash_attention equals dense softmax attention (causal or not, GQA "
                        "with 1 < Hkv < H, soft cap, max_logit_const) and returns float32")
def flash_attention_values(api: Api) -> None:
    """Task 4.4: flash_attention equals dense softmax attention (causal or not, GQA with
    1 < Hkv < H, soft cap, max_logit_const) and returns float32.
    """
    def body(case: dict) -> None:
        options = _kernel_options(case)
        if case["sm_scale"] == 1 / math.sqrt(case["q"].shape[-1]):
            options["sm_scale"] = None  # the default, 1/sqrt(d)
        got = api.call("flash_attention", case["q"], case["k"], case["v"], **options).value
        dtype = getattr(got, "dtype", None)
        if dtype != np.float32:
            raise Mismatch("flash_attention must return float32 [H, L, dv] whatever the input "
                           "dtype", expected="float32", got=str(dtype))
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(got, dense_attention(case), rtol=rtol, atol=atol,
                     what="the attention output")
    api.run_property(st.one_of(attention_cases(), attention_cases(flavor="cap"),
                               attention_cases(flavor="mle")), body, max_examples=6)


@public_check(A, "4.4", "causal flash_attention: at the grid steps whose tile is fully masked "
                        "the kernel reads neither k_ref nor v_ref (the trace's kernel_reads; "
                        "needs Task 4.3's skipping)")
def flash_attention_skips(api: Api) -> None:
    """Task 4.4: causal flash_attention: at the grid steps whose tile is fully masked the kernel
    reads neither k_ref nor v_ref (the trace's kernel_reads; needs Task 4.3's skipping).
    """
    def body(case: dict) -> None:
        result = api.call("flash_attention", case["q"], case["k"], case["v"], causal=True,
                          block_q=case["block_q"], block_kv=case["block_kv"])
        if not result.traces:
            raise Mismatch("flash_attention made no pallas_call", expected="one pallas_call",
                           got="none")
        call = result.traces[-1]
        inputs = [op for op in call.operands if op.role == "in"]
        if len(inputs) < 3 or len(call.grid) != 3:
            raise Mismatch("the pallas_call is not the (H, L/block_q, L/block_kv) one with "
                           "inputs q, k, v", got=f"grid {tuple(call.grid)}, {len(inputs)} inputs")
        q_block = np.asarray(inputs[0].block_indices)[:, 1]
        kv_block = np.arange(call.num_steps) % call.grid[2]  # kv is the innermost axis
        masked = kv_block * case["block_kv"] > (q_block + 1) * case["block_q"] - 1
        for op, name in zip(inputs[1:3], ("k_ref", "v_ref"), strict=True):
            wasted = masked & (np.asarray(op.kernel_reads) > 0)
            if wasted.any():
                step = int(np.argmax(wasted))
                raise Mismatch(f"the kernel reads {name} at {int(wasted.sum())} of "
                               f"{int(masked.sum())} fully masked grid steps",
                               expected="no reads there (pl.when around the update)",
                               got=f"a read at step #{step}: q block {int(q_block[step])}, kv "
                                   f"block {int(kv_block[step])}")
    api.run_property(attention_cases(causal=True), body, max_examples=3)


def _raised(api: Api, func: str, *args: object, **kwargs: object) -> str | None:
    """"Type: message" of what the student's ``func`` raised, or None when it returned
    (either Api reports the student's own raise as ``StudentRaised``; anything else, a
    timeout or a crash, goes on)."""
    try:
        api.call(func, *args, **kwargs)
    except StudentRaised as exc:
        return f"{exc.error_type}: {exc.message}"
    return None


@public_check(A, "4.4", "flash_attention raises ValueError naming both lengths when k and v "
                        "do not have q's length L")
def flash_attention_lengths(api: Api) -> None:
    """Task 4.4: flash_attention raises ValueError naming both lengths when k and v do not have
    q's length L.
    """
    q = arrays((2, 32, 8), 1)
    for kv_len in (48, 16):
        k, v = arrays((1, kv_len, 8), 2), arrays((1, kv_len, 8), 3)
        label = f"q = f32[2, 32, 8], k = v = f32[1, {kv_len}, 8], block_q = block_kv = 16"
        expected = f"ValueError naming 32 and {kv_len}"
        raised = _raised(api, "flash_attention", q, k, v, causal=True, block_q=16,
                         block_kv=16)
        if raised is None:
            raise Mismatch("flash_attention returned a result although k and v do not have "
                           "q's length", input=label, expected=expected, got="a result")
        message = raised.partition(": ")[2]
        if not (raised.startswith("ValueError") and re.search(rf"\b{kv_len}\b", message)
                and re.search(r"\b32\b", message)):
            raise Mismatch("flash_attention must raise ValueError naming both lengths",
                           input=label, expected=expected, got=raised[:300])
