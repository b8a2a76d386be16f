"""Public checks of a4_flash_attention (lecture §5): worked answers and NumPy softmax oracles.

They draw from the same families as grading (checks.py), with plain
float64 NumPy as the oracle: masked (-inf) rows in online_softmax, empty states
in the merge, grouped-query attention with 1 < Hkv < H (so a wrong head mapping
fails here, not only in the grade), rows whose scores all lie below -100, small
soft caps with the causal mask, a Max-Logit-Estimate constant from the safe
range and one far above every score, k, v of another length than q, and odd block
sizes with the causal mask (a tile whose first key is its q block's last query). The
``use_base2_exp`` option (lecture §6.6: with a constant near large logits too, and passed
on by the wrapper) and the micro-tiled kernel of Task 4.7 (lecture §5.3: its largest
intermediate, read from the trace by the harness) are checked too.
"""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from graders.labs.a4_flash_attention.public import worked
from graders.student.public import (
    Api,
    Mismatch,
    StudentRaised,
    arrays,
    as_float_array,
    assert_close,
    describe,
    number,
    public_check,
    seeds,
)

A = "a4"
#: float32 limits of exp (lecture §5.4): ln(f32 max), ln(f32 smallest normal).
LN_F32_MAX, LN_F32_TINY = worked.LN_F32_MAX, worked.LN_F32_TINY


def _softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis in float64: 0 at -inf entries, 0 for a row of only -inf."""
    x = np.asarray(x, np.float64)
    top = x.max(axis=-1, keepdims=True)
    weights = np.exp(x - np.where(np.isneginf(top), 0.0, top))
    total = weights.sum(axis=-1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)


def _pairs(value: object, n_blocks: int) -> tuple[np.ndarray, list[tuple[np.ndarray, ...]]]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Mismatch("online_softmax must return (probs, trace)", got=type(value).__name__)
    probs, trace = value
    if not isinstance(trace, tuple | list) or len(trace) != n_blocks:
        count = len(trace) if isinstance(trace, tuple | list) else type(trace).__name__
        raise Mismatch("the trace must hold one (m, l) pair per block",
                       expected=f"{n_blocks} pairs", got=str(count))
    pairs = [(as_float_array(p[0], "m"), as_float_array(p[1], "l")) for p in trace]
    return as_float_array(probs, "probs"), pairs


def _same(got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float, what: str) -> None:
    """Like ``assert_close``, but an expected -inf must be -inf (the m of an empty row)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape:
        raise Mismatch(f"{what} has the wrong shape", expected=str(expected.shape),
                       got=str(got.shape))
    empty = np.isneginf(expected)
    if not np.array_equal(np.isneginf(got), empty):
        where = tuple(int(i) for i in np.argwhere(np.isneginf(got) != empty)[0])
        raise Mismatch(f"{what} differs at index {where}", expected=f"{expected[where]:.6g}",
                       got=f"{got[where]:.6g}")
    assert_close(np.where(empty, 0.0, got), np.where(empty, 0.0, expected), rtol=rtol,
                 atol=atol, what=what)


def _check_trace(pairs: list, x: np.ndarray, block: int) -> None:
    """After block k: m = max of the columns seen (-inf if all -inf), l = Σ exp(x - m) over
    them (0 while only -inf was seen)."""
    x64 = np.asarray(x, np.float64)
    for k, (m, l_sum) in enumerate(pairs):
        seen = x64[..., : (k + 1) * block]
        m_true = seen.max(axis=-1)
        shift = np.where(np.isneginf(m_true), 0.0, m_true)
        _same(m, m_true, rtol=1e-5, atol=1e-6, what=f"m after block {k}")
        assert_close(l_sum, np.exp(seen - shift[..., None]).sum(axis=-1), rtol=1e-4, atol=1e-6,
                     what=f"l after block {k}")


@public_check(A, "4.1", "worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), "
                        "block 2 (lecture §5.1)")
def online_softmax_worked(api: Api) -> None:
    """Task 4.1: worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), block 2
    (lecture §5.1).
    """
    rtol = worked.WORKED_RTOL
    for answer in worked.SOFTMAX_TRACES:
        x, trace = np.asarray(answer.x, np.float32), answer.trace
        _, got = _pairs(api.call("online_softmax", x, answer.block_size).value, len(trace))
        for k, ((gm, gl), (em, el)) in enumerate(zip(got, trace, strict=True)):
            if not (np.allclose(gm, em, rtol=rtol) and np.allclose(gl, el, rtol=rtol)):
                shown = ", ".join(f"({float(m):.5g}, {float(l):.5g})" for m, l in got)
                raise Mismatch(f"the (m, l) pair after block {k} differs from the lecture's",
                               input=f"x = {list(answer.x)}, block_size = {answer.block_size}",
                               expected=str(list(trace)), got=f"[{shown}]")


@st.composite
def softmax_cases(draw) -> dict:
    """Strategy: x ([n] or [rows, n], f32/f64, three logit scales) and a block size."""
    rows = draw(st.one_of(st.none(), st.integers(1, 4)))
    n = draw(st.integers(1, 24))
    low, high = draw(st.sampled_from([(-4.0, 4.0), (-30.0, 30.0), (40.0, 90.0)]))
    shape = (n,) if rows is None else (rows, n)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return {"x": arrays(shape, draw(seeds), low=low, high=high, dtype=dtype),
            "block_size": draw(st.integers(1, 8))}


@public_check(A, "4.1", "probabilities equal softmax(x) over the last axis; after block k the "
                        "trace holds m = max of the columns seen and l = Σ exp(x - m) over them")
def online_softmax_property(api: Api) -> None:
    """Task 4.1: probabilities equal softmax(x) over the last axis; after block k the trace holds
    m = max of the columns seen and l = Σ exp(x - m) over them.
    """
    def body(case: dict) -> None:
        x, block = case["x"], case["block_size"]
        probs, pairs = _pairs(api.call("online_softmax", x, block).value, -(-x.shape[-1] // block))
        assert_close(probs, _softmax(x), rtol=1e-4, atol=1e-7, what="probs")
        _check_trace(pairs, x, block)
    api.run_property(softmax_cases(), body)


@st.composite
def masked_softmax_cases(draw) -> dict:
    """Strategy: x with -inf entries (masked keys): the first row's first block all -inf, a
    row of only -inf when there are two rows or more, others drawn (prefix, scattered, none)."""
    rows = draw(st.one_of(st.none(), st.integers(1, 4)))
    block = draw(st.integers(1, 5))
    n = draw(st.integers(block + 1, block + 10))
    seed = draw(seeds)
    x = arrays((n,) if rows is None else (rows, n), seed,
               dtype=draw(st.sampled_from([np.float32, np.float64])))
    flat = x.reshape(-1, n)
    mask_rows(draw, flat, block, seed)
    return {"x": x, "block_size": block}


def mask_rows(draw: st.DrawFn, flat: np.ndarray, block: int, seed: int) -> None:
    """Put the handout's masked keys into ``flat`` ([rows, n] floats, changed in place):
    the first row gets a -inf prefix of at least ``block`` entries and the second row only
    -inf (one row: either); other rows a -inf prefix, scattered -inf (drawn from
    ``seed + 1``), only -inf or none. The hidden checks draw masked rows the same way."""
    n = flat.shape[1]
    first = ["prefix", "all"] if flat.shape[0] > 1 else [draw(st.sampled_from(["prefix", "all"]))]
    kinds = first + draw(st.lists(st.sampled_from(["prefix", "scatter", "all", "none"]),
                                  min_size=flat.shape[0] - len(first),
                                  max_size=flat.shape[0] - len(first)))
    scatter = np.random.default_rng(seed + 1).random(flat.shape) < 0.4
    for r, kind in enumerate(kinds):
        if kind == "prefix":
            flat[r, :draw(st.integers(block, n - 1))] = -np.inf
        elif kind == "scatter":
            flat[r, scatter[r]] = -np.inf
        elif kind == "all":
            flat[r] = -np.inf


@public_check(A, "4.1", "masked rows (-inf entries): probability 0 at -inf, m = -inf and l = 0 "
                        "while a row has shown only -inf, probabilities 0 for a row of only "
                        "-inf (the handout's 'Masked entries')")
def online_softmax_masked(api: Api) -> None:
    """Task 4.1: masked rows (-inf entries): probability 0 at -inf, m = -inf and l = 0 while a
    row has shown only -inf, probabilities 0 for a row of only -inf (the handout's 'Masked
    entries').
    """
    def body(case: dict) -> None:
        x, block = case["x"], case["block_size"]
        probs, pairs = _pairs(api.call("online_softmax", x, block).value, -(-x.shape[-1] // block))
        _check_trace(pairs, x, block)
        assert_close(probs, _softmax(x), rtol=1e-4, atol=1e-7, what="probs")
    api.run_property(masked_softmax_cases(), body)


def _state(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    m = scores.max(axis=-1)
    p = np.exp(scores - m[..., None])
    return m, p.sum(axis=-1), p @ values


@st.composite
def two_parts(draw) -> dict:
    """Strategy: scores and values of two disjoint key sets for the public merge check."""
    rows, dv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    scale = draw(st.sampled_from([4.0, 30.0]))
    parts = []
    for _ in range(2):
        n = draw(st.integers(1, 6))
        parts.append((arrays((rows, n), draw(seeds), low=-scale, high=scale, dtype=np.float64),
                      arrays((n, dv), draw(seeds), dtype=np.float64)))
    return {"parts": parts}


def _f32(state: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(a, np.float32) for a in state)


def _merged(api: Api, a: tuple, b: tuple) -> tuple[np.ndarray, ...]:
    value = api.call("merge_attention_states", a, b).value
    if not isinstance(value, tuple | list) or len(value) != 3:
        raise Mismatch("merge_attention_states must return a state (m, l, acc)",
                       got=type(value).__name__)
    return tuple(as_float_array(v, "the merged state") for v in value)


@public_check(A, "4.2", "merging the states of two disjoint key sets gives the state of all "
                        "keys, in either order")
def merge_property(api: Api) -> None:
    """Task 4.2: merging the states of two disjoint key sets gives the state of all keys, in
    either order.
    """
    def body(case: dict) -> None:
        (s1, v1), (s2, v2) = case["parts"]
        a, b = _f32(_state(s1, v1)), _f32(_state(s2, v2))
        whole = _state(np.concatenate([s1, s2], -1), np.concatenate([v1, v2], 0))
        for order, got in (("merge(a, b)", _merged(api, a, b)),
                           ("merge(b, a)", _merged(api, b, a))):
            for name, g, e in zip(("m", "l", "acc"), got, whole, strict=True):
                assert_close(g, e, rtol=1e-4, atol=1e-5, what=f"{name} of {order}")
    api.run_property(two_parts(), body)


@public_check(A, "4.2", "empty states (m = -inf, l = 0, acc = 0): merging two gives the empty "
                        "state without NaN, merging one with a state S gives S")
def merge_empty(api: Api) -> None:
    """Task 4.2: empty states (m = -inf, l = 0, acc = 0): merging two gives the empty state
    without NaN, merging one with a state S gives S.
    """
    def body(case: dict) -> None:
        scores, values = case["parts"][0]
        full = _f32(_state(scores, values))
        rows, dv = full[2].shape
        empty = (np.full(rows, -np.inf, np.float32), np.zeros(rows, np.float32),
                 np.zeros((rows, dv), np.float32))
        for label, a, b, want in (("merge(empty, empty)", empty, empty, empty),
                                  ("merge(empty, S)", empty, full, full),
                                  ("merge(S, empty)", full, empty, full)):
            got = _merged(api, a, b)
            try:
                for name, g, e in zip(("m", "l", "acc"), got, want, strict=True):
                    _same(g, e, rtol=1e-5, atol=1e-6, what=f"{name} of {label}")
            except Mismatch as failure:
                failure.input = f"{label} with S = {describe(full)}"
                raise
    api.run_property(two_parts(), body)


@public_check(A, "4.2", "finalize_attention_state returns acc / l")
def finalize_property(api: Api) -> None:
    """Task 4.2: finalize_attention_state returns acc / l."""
    def body(case: dict) -> None:
        scores, values = case["parts"][0]
        state = _f32(_state(scores, values))
        got = api.call("finalize_attention_state", state).value
        expected = state[2].astype(np.float64) / state[1].astype(np.float64)[..., None]
        assert_close(got, expected, rtol=1e-5, atol=1e-6, what="the normalized output")
    api.run_property(two_parts(), body)


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


@public_check(A, "4.4", "flash_attention(..., use_base2_exp=True) accepts the option and still "
                        "equals dense softmax attention (lecture §6.6)")
def flash_attention_base2(api: Api) -> None:
    """Task 4.4: flash_attention(..., use_base2_exp=True) accepts the option and still equals
    dense softmax attention (lecture §6.6).
    """
    def body(case: dict) -> None:
        got = api.call("flash_attention", case["q"], case["k"], case["v"],
                       **_kernel_options(case), use_base2_exp=True).value
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(got, dense_attention(case), rtol=rtol, atol=atol,
                     what="the attention output with use_base2_exp=True")
    api.run_property(attention_cases(), body, max_examples=2)


@public_check(A, "4.4", "flash_attention passes use_base2_exp on to flash_attention_kernel "
                        "unchanged (True and False; the values alone cannot show it, base 2 "
                        "gives the same softmax; lecture §6.6)")
def flash_attention_forwards_base2(api: Api) -> None:
    """Task 4.4: flash_attention passes use_base2_exp on to flash_attention_kernel unchanged,
    as the handout asks of soft_cap, max_logit_const and use_base2_exp (lecture §6.6). The
    values cannot show it (base 2 gives the same softmax), so ``public_harness``'s
    ``flash_attention`` runs the wrapper with a spy in the kernel's place that records the
    options of the first step (the student's kernel does not run: a Task 4.3 mistake cannot
    fail this check). A wrapper that never calls ``flash_attention_kernel`` by that name
    leaves nothing to observe and passes here.
    """
    q, k, v = arrays((2, 32, 8), 1), arrays((1, 32, 8), 2), arrays((1, 32, 8), 3)
    for flag in (True, False):
        label = (f"q = f32[2, 32, 8], k = v = f32[1, 32, 8], causal = True, block_q = "
                 f"block_kv = 16, use_base2_exp = {flag}")
        seen = api.kernel(HARNESS, "flash_attention", q, k, v, causal=True, block_q=16,
                          block_kv=16, use_base2_exp=flag)
        if not isinstance(seen, dict) or not seen.get("reached"):
            return
        if bool(seen.get("value")) != flag:
            got = (f"use_base2_exp={seen.get('value')}" if seen.get("given")
                   else "no use_base2_exp keyword (its default, False)")
            raise Mismatch("use_base2_exp does not reach the kernel: flash_attention must "
                           "pass it on to flash_attention_kernel unchanged", input=label,
                           expected=f"flash_attention_kernel(..., use_base2_exp={flag})",
                           got=f"flash_attention_kernel called with {got}")


@st.composite
def micro_cases(draw, *, causal: bool | None = None) -> dict:
    """Strategy for Task 4.7: ``attention_cases``' plain family with block_kv 16 or 32 and a
    bkv_compute of 4 or 8 below it; d and dv (4 or 8) never exceed bkv_compute, so the
    largest array a micro-tiled kernel computes is its [block_q, bkv_compute] score tile."""
    case = draw(attention_cases(causal=causal))
    block_kv = draw(st.sampled_from([16, 32]))
    length = max(case["block_q"], block_kv) * draw(st.integers(1, 2))
    heads, kv_heads = case["q"].shape[0], case["k"].shape[0]
    d = case["q"].shape[-1]
    dv = case["v"].shape[-1]
    bkv_compute = max(d, dv, draw(st.sampled_from([4, 8])))
    dtype = case["q"].dtype
    q = arrays((heads, length, d), draw(seeds), dtype=np.float64).astype(dtype)
    k = arrays((kv_heads, length, d), draw(seeds), dtype=np.float64).astype(dtype)
    v = arrays((kv_heads, length, dv), draw(seeds)).astype(dtype)
    case.update(q=q, k=k, v=v, block_kv=block_kv, bkv_compute=bkv_compute)
    return case


def _micro_options(case: dict) -> dict:
    return {key: case[key] for key in ("sm_scale", "causal", "block_q", "block_kv",
                                       "bkv_compute")}


@public_check(A, "4.7", "flash_attention_kernel_microtiled, run through your flash_attention's "
                        "pallas_call in place of Task 4.3's kernel, equals "
                        "dense softmax attention, causal or not (lecture §5.3)")
def microtiled_values(api: Api) -> None:
    """Task 4.7: flash_attention_kernel_microtiled, run through your flash_attention's
    pallas_call in place of Task 4.3's kernel (``public_harness``), equals dense
    softmax attention, causal or not (lecture §5.3).
    """
    def body(case: dict) -> None:
        got = run_kernel(api, "flash_attention_kernel_microtiled", case,
                         **_micro_options(case))["out"]
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(got, dense_attention(case), rtol=rtol, atol=atol,
                     what="the micro-tiled kernel's output")
    api.run_property(micro_cases(), body, max_examples=4)


@public_check(A, "4.7", "micro-tiling: the largest array the kernel computes (the trace's "
                        "largest_intermediate) is block_q × bkv_compute, not block_q × "
                        "block_kv (lecture §5.3)")
def microtiled_largest(api: Api) -> None:
    """Task 4.7: micro-tiling: the largest array the kernel computes (the trace's
    largest_intermediate) is block_q × bkv_compute, not block_q × block_kv (lecture §5.3).
    """
    def body(case: dict) -> None:
        largest = run_kernel(api, "flash_attention_kernel_microtiled", case,
                             **_micro_options(case))["largest"]
        block_q, block_kv, bkv = case["block_q"], case["block_kv"], case["bkv_compute"]
        if int(largest) != block_q * bkv:
            whole = " — the whole kv block at once: bkv_compute is ignored" if (
                int(largest) == block_q * block_kv) else ""
            raise Mismatch("the largest intermediate is not one [block_q, bkv_compute] tile",
                           expected=f"{block_q} × {bkv} = {block_q * bkv} elements",
                           got=f"{int(largest)} elements{whole}")
    api.run_property(micro_cases(), body, max_examples=3)


def _estimate_flash(api: Api, config: tuple) -> dict:
    """``public_harness.choose_flash_config`` at ``config`` (block_q, block_kv,
    max_logit_const): the student's own flash_attention there through
    ``pallas_sim.estimate`` (the lecture's shapes, bf16, one v7 TensorCore). Blocks that do
    not fit VMEM are the choice's fault; anything else the run raises comes from the
    student's flash_attention or its kernel, and the failure says the check depends on
    Tasks 4.4 and 4.3 (the grade times the kernel in its own call, so a wrapper mistake
    costs the grade's 4.8 nothing)."""
    try:
        return api.kernel(HARNESS, "choose_flash_config", q_shape=worked.Q_SHAPE,
                          v_shape=worked.V_SHAPE, chip="v7",
                          block_candidates=worked.FLASH_BLOCK_CANDIDATES,
                          mle_candidates=worked.FLASH_MLE_CANDIDATES, at=config)
    except StudentRaised as raised:
        if raised.error_type == "VmemOOMError":
            raise
        raise raised.copy(what=f"{raised.what} (this check times your configuration "
                               f"through your flash_attention and its kernel: it depends on "
                               f"Task 4.4 and Task 4.3, fix those first)") from None


@public_check(A, "4.8", "performance: choose_flash_config() returns (block_q, block_kv, "
                        "max_logit_const) from the candidate sets at which your own "
                        "flash_attention runs the lecture's attention with blocks, scratch and "
                        "score tiles within 64 MiB of VMEM, predicted (pallas_sim.estimate) "
                        "within 10 % of your own flash_attention at the lecture's best "
                        "configuration")
def flash_config(api: Api) -> None:
    """Task 4.8: performance: choose_flash_config() returns (block_q, block_kv,
    max_logit_const) from the candidate sets at which your own flash_attention runs the
    lecture's attention with blocks, scratch and score tiles within 64 MiB of VMEM, predicted
    (pallas_sim.estimate) within 10 % of your own flash_attention at the lecture's best
    configuration (the grade's bar is the best candidate for your kernel: it may be lower).
    """
    reply = api.kernel(HARNESS, "choose_flash_config", q_shape=worked.Q_SHAPE,
                       v_shape=worked.V_SHAPE, chip="v7",
                       block_candidates=worked.FLASH_BLOCK_CANDIDATES,
                       mle_candidates=worked.FLASH_MLE_CANDIDATES, estimate=False)
    config = reply.get("config")
    if not isinstance(config, list):
        raise Mismatch("choose_flash_config() must return (block_q, block_kv, "
                       "max_logit_const): two ints and a float or None",
                       expected=f"e.g. (512, 512, None) or (512, 512, {worked.MLE_CONSTANT})",
                       got=str(config))
    sizes = worked.FLASH_BLOCK_CANDIDATES
    if (config[0] not in sizes or config[1] not in sizes
            or config[2] not in worked.FLASH_MLE_CANDIDATES):
        raise Mismatch("a value outside the candidate sets",
                       expected=f"block_q, block_kv each one of {list(sizes)}; "
                                f"max_logit_const None or {worked.MLE_CONSTANT}",
                       got=str(tuple(config)))
    calls = _estimate_flash(api, tuple(config))["calls"]
    if len(calls) != 1:
        raise Mismatch("your flash_attention should make one pallas_call (this check times "
                       "your configuration through it: it depends on Task 4.4, fix that "
                       "first)", expected="1 pallas_call", got=f"{len(calls)} calls")
    call = calls[0]
    need = call["vmem_bytes"] + 2 * 4 * call["largest_intermediate"]
    if need > worked.VMEM_CAPACITY:
        raise Mismatch("the blocks, scratch and two f32 score tiles do not fit VMEM "
                       "(lecture §5.3)", expected="at most 64 MiB",
                       got=f"{need / worked.MiB:.1f} MiB")
    got_ms = call["time_s"] * 1e3
    best = tuple(worked.FLASH_BEST_CONFIG)
    if (tuple(config) == best
            or got_ms <= worked.FLASH_FASTEST_MS * (1 + worked.PERFORMANCE_RTOL)):
        return
    # A correct kernel slower than the reference is held to its own time at the lecture's
    # best configuration, not to the reference's time (the grade compares with your kernel).
    at_best = _estimate_flash(api, best)
    best_ms = at_best["calls"][0]["time_s"] * 1e3 if len(at_best.get("calls") or []) == 1 \
        else worked.FLASH_FASTEST_MS
    limit_ms = best_ms * (1 + worked.PERFORMANCE_RTOL)
    if got_ms > limit_ms:
        raise Mismatch(f"your configuration {tuple(config)} is predicted more than 10 % "
                       f"slower than your own flash_attention at {best}",
                       expected=f"at most {limit_ms:.4f} ms ({best}: {best_ms:.4f} ms)",
                       got=f"{got_ms:.4f} ms (MFU {call['mfu']:.0%})")
