"""Checks of a4_flash_attention (lecture §5): Tasks 4.1–4.6, 100 points.

Softmax states are ``(m, l, acc)``: the running maximum, the sum of
``exp(s - m)`` and the unnormalized weighted sum of values.  Inputs are drawn
with scores on three scales, including logits large enough (40..90) that a
softmax which does not subtract the running maximum overflows float32.

The Flash Attention kernel (4.3) is graded in isolation inside the grader's
pallas_call (``graders/harnesses/a4.py``) and the wrapper (4.4) end to end;
values are compared with dense float64 attention (``reference.dense_attention``),
the wrapper's trace with the reference's pallas_call, and causal block
skipping through the trace's per-step ``kernel_reads`` of k_ref and v_ref.
"""

from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import pallas_sim
import reference.a4_flash_attention as ref
import reference.dense_attention as dense
from graders.checks.compare import (
    against_own_kernel,
    as_array,
    as_finite_number,
    assert_close,
    assert_equal_int,
    fmt_array,
    kernel_mismatch,
    tolerance,
)
from graders.checks.framework import CheckFailure, Session, check, run_property
from graders.checks.strategies import Case, make_array, seeds

A = "a4"
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
SCALES = [(-4.0, 4.0), (-30.0, 30.0), (40.0, 90.0)]


# --- Task 4.1 online_softmax ---------------------------------------------------------------

@st.composite
def softmax_cases(draw) -> Case:
    """Strategy: x ([n] or [rows, n], f32/f64, three logit scales) and a block size."""
    rows = draw(st.one_of(st.none(), st.integers(1, 5)))
    n = draw(st.integers(1, 40))
    block = draw(st.integers(1, 12))
    low, high = draw(st.sampled_from(SCALES))
    dtype = draw(st.sampled_from([F32, F64]))
    shape = (n,) if rows is None else (rows, n)
    x = make_array(shape, dtype, draw(seeds), low=low, high=high)
    return Case((x, block), {}, ("x", "block_size"))


def _unpack_softmax(value: object, x: np.ndarray, block: int) -> tuple[np.ndarray, list]:
    """Split online_softmax's reply into (probs, [(m, l), ...]) or fail clearly."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise CheckFailure("online_softmax must return a pair (probs, trace)",
                           expected="(probs, trace)", got=_kind(value))
    probs, trace = value
    if not isinstance(trace, (tuple, list)):
        raise CheckFailure("the trace must be a list of (m, l) pairs", expected="a list",
                           got=_kind(trace))
    n_blocks = -(-x.shape[-1] // block)
    if len(trace) != n_blocks:
        raise CheckFailure("the trace must hold one (m, l) pair per block",
                           expected=f"{n_blocks} pairs (cdiv({x.shape[-1]}, {block}))",
                           got=f"{len(trace)} entries")
    pairs = []
    for k, pair in enumerate(trace):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise CheckFailure(f"trace entry {k} must be an (m, l) pair", expected="(m, l)",
                               got=_kind(pair))
        pairs.append((as_array(pair[0], f"m of block {k}"), as_array(pair[1], f"l of block {k}")))
    return as_array(probs, "probs"), pairs


def _kind(v: object) -> str:
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)} items"
    return fmt_array(v) if isinstance(v, np.ndarray) else type(v).__name__


def _fmt_trace(pairs: list) -> str:
    def one(a: np.ndarray) -> str:
        a = np.asarray(a, dtype=np.float64)
        return f"{a.item():.5g}" if a.size == 1 else np.array2string(a, precision=4,
                                                                     separator=", ")
    shown = [f"({one(m)}, {one(l)})" for m, l in pairs[:6]]
    return "[" + ", ".join(shown) + (", ...]" if len(pairs) > 6 else "]")


def _trace_without_rescale(x: np.ndarray, block: int) -> list:
    """The trace of the classic mistake: l += Σ exp(block − m_new) with no exp(m_old − m_new)."""
    x = x.astype(np.float64)
    m = np.full(x.shape[:-1], -np.inf)
    l = np.zeros(x.shape[:-1])
    out = []
    for start in range(0, x.shape[-1], block):
        blk = x[..., start:start + block]
        m = np.maximum(m, blk.max(axis=-1))
        l = l + np.exp(blk - m[..., None]).sum(axis=-1)
        out.append((m.copy(), l.copy()))
    return out


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    try:
        return np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                           atol=atol)
    except (TypeError, ValueError):
        return False


def _compare_trace(got: list, expected: list, x: np.ndarray, block: int) -> None:
    rtol, atol = 1e-4, 1e-6
    for k, ((gm, gl), (em, el)) in enumerate(zip(got, expected, strict=True)):
        ok = (np.shape(gm) == np.shape(em) and np.shape(gl) == np.shape(el)
              and _close(gm, em, rtol, atol) and _close(gl, el, rtol, atol))
        if not ok:
            raise CheckFailure(f"the running (m, l) after block {k} is wrong",
                               expected=_fmt_trace(expected), got=_fmt_trace(got),
                               diagnosis=_diagnose_trace(got, x, block))


def _diagnose_trace(got: list, x: np.ndarray, block: int) -> str | None:
    """Name the known mistake the trace matches, if any."""
    mistake = _trace_without_rescale(x, block)
    if all(_close(g[1], m[1], 1e-4, 1e-6) for g, m in zip(got, mistake, strict=True)):
        return "l is not rescaled by exp(m_old - m_new) when the maximum grows (lecture §5.1)"
    return None


@check(A, "4.1", 5, "worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), "
                    "block 2 (lecture §5.1)")
def online_softmax_worked(s: Session) -> None:
    """Task 4.1: worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), block 2
    (lecture §5.1).
    """
    worked = [
        ((1, 3, 2, 5, 0, 4), [(3, 1.1353), (5, 1.2034), (5, 1.5781)], None),
        ((2, 0, 4, 1), [(2, 1.1353), (4, 1.2034)], (0.1125, 0.0152, 0.8310, 0.0414)),
    ]
    for xs, trace, probs in worked:
        x = np.asarray(xs, dtype=np.float32)
        got_probs, got_trace = _unpack_softmax(s.invoke("online_softmax", (x, 2)).value, x, 2)
        label = f"x = {list(xs)}, block_size = 2"
        for k, ((gm, gl), (em, el)) in enumerate(zip(got_trace, trace, strict=True)):
            if not (_close(gm, em, 5e-3, 0) and _close(gl, el, 5e-3, 0)):
                raise CheckFailure(f"the (m, l) pair after block {k} differs from the lecture's",
                                   input=label, expected=str(trace), got=_fmt_trace(got_trace),
                                   diagnosis=_diagnose_trace(got_trace, x, 2))
        if probs is not None:
            try:
                assert_close(got_probs, np.asarray(probs), 5e-3, 0, what="softmax")
            except CheckFailure as failure:
                failure.input = label
                raise


@check(A, "4.1", 5, "online_softmax's probabilities equal the softmax over the last axis "
                    "(drawn [n] and [rows, n] inputs, blocks that do not divide n, large logits)")
def online_softmax_probs(s: Session) -> None:
    """Task 4.1: online_softmax's probabilities equal the softmax over the last axis (drawn [n]
    and [rows, n] inputs, blocks that do not divide n, large logits).
    """
    def body(case: Case) -> None:
        x, block = case.args
        probs, _ = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        expected, _ = ref.online_softmax(x, block)
        assert_close(probs, expected, 1e-4, 1e-7, what="probs")
    run_property(softmax_cases(), body, max_examples=25)


@check(A, "4.1", 5, "online_softmax's trace holds the running (m, l) after each block")
def online_softmax_trace(s: Session) -> None:
    """Task 4.1: online_softmax's trace holds the running (m, l) after each block."""
    def body(case: Case) -> None:
        x, block = case.args
        _, got = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        _, expected = ref.online_softmax(x, block)
        _compare_trace(got, list(expected), x, block)
    run_property(softmax_cases(), body, max_examples=25)


# --- Task 4.2 merge and finalize -----------------------------------------------------------

def _state(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """(m, l, acc) of one key set, in float64 (dense, no blocks)."""
    m = scores.max(axis=-1)
    p = np.exp(scores - m[..., None])
    return m, p.sum(axis=-1), np.einsum("...rn,...nd->...rd", p, values)


@st.composite
def split_rows(draw, parts: int = 2) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """Scores and values of ``parts`` disjoint key sets of the same query rows."""
    batch = draw(st.sampled_from([(), (2,)]))
    rows, dv = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    scores, values = [], []
    for _ in range(parts):
        n = draw(st.integers(1, 8))
        low, high = draw(st.sampled_from(SCALES))
        scores.append(make_array((*batch, rows, n), F64, draw(seeds), low=low, high=high))
        values.append(make_array((*batch, n, dv), F64, draw(seeds)))
    desc = ", ".join(f"part {i}: scores {fmt_array(sc)}" for i, sc in enumerate(scores))
    return scores, values, desc


def _as_f32(state: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(a, np.float32) for a in state)


def _unpack_state(value: object, what: str) -> tuple[np.ndarray, ...]:
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise CheckFailure(f"{what} must return a state (m, l, acc)", expected="(m, l, acc)",
                           got=_kind(value))
    return tuple(as_array(v, f"{name} of the merged state")
                 for v, name in zip(value, ("m", "l", "acc"), strict=True))


def _assert_state(got: tuple[np.ndarray, ...], expected: tuple[np.ndarray, ...],
                  what: str) -> None:
    rtol, atol = tolerance(F32)
    for g, e, name in zip(got, expected, ("m", "l", "acc"), strict=True):
        assert_close(g, np.asarray(e, np.float64), rtol * 5, atol, what=f"{name} of {what}")


def _assert_same_merge(got: tuple[np.ndarray, ...], other: tuple[np.ndarray, ...],
                       got_label: str, other_label: str, diagnosis: str) -> None:
    """Two of the student's own merges must agree; label both sides by their call."""
    try:
        _assert_state(got, other, got_label)
    except CheckFailure as failure:
        raise failure.copy(
            what=f"{got_label} and {other_label} disagree (both are your merge)",
            expected=f"{other_label}: {failure.expected}",
            got=f"{got_label}: {failure.got}", diagnosis=diagnosis) from None


@st.composite
def merge_cases(draw) -> Case:
    """Strategy: two softmax states (m, l, acc) over disjoint key sets of the same rows."""
    scores, values, desc = draw(split_rows(2))
    a, b = (_as_f32(_state(sc, v)) for sc, v in zip(scores, values, strict=True))
    return Case((a, b), {}, ("state_a", "state_b"))


@check(A, "4.2", 5, "merge_attention_states equals the reference merge of two states over "
                    "disjoint keys")
def merge_values(s: Session) -> None:
    """Task 4.2: merge_attention_states equals the reference merge of two states over disjoint
    keys.
    """
    def body(case: Case) -> None:
        got = _unpack_state(s.invoke("merge_attention_states", case.args).value,
                            "merge_attention_states")
        _assert_state(got, ref.merge_attention_states(*case.args), "the merged state")
    run_property(merge_cases(), body, max_examples=20)


@st.composite
def three_states(draw) -> Case:
    """Strategy: three states over disjoint key sets, for the merge algebra."""
    scores, values, _ = draw(split_rows(3))
    states = tuple(_as_f32(_state(sc, v)) for sc, v in zip(scores, values, strict=True))
    return Case(states, {}, ("a", "b", "c"))


@check(A, "4.2", 4, "merge is commutative and associative: merge(a, b) = merge(b, a) and "
                    "merge(merge(a, b), c) = merge(a, merge(b, c))")
def merge_algebra(s: Session) -> None:
    """Task 4.2: merge is commutative and associative: merge(a, b) = merge(b, a) and
    merge(merge(a, b), c) = merge(a, merge(b, c)).
    """
    def merge(x: tuple, y: tuple) -> tuple[np.ndarray, ...]:
        return _unpack_state(s.invoke("merge_attention_states", (x, y)).value,
                             "merge_attention_states")

    def body(case: Case) -> None:
        a, b, c = case.args
        ab, ba = merge(a, b), merge(b, a)
        _assert_same_merge(ba, ab, "merge(b, a)", "merge(a, b)",
                           "the merge treats its two arguments differently")
        left = merge(ab, c)
        right = merge(a, merge(b, c))
        _assert_same_merge(right, left, "merge(a, merge(b, c))", "merge(merge(a, b), c)",
                           "merging in a different order gives a different state")
    run_property(three_states(), body, max_examples=10)


@check(A, "4.2", 3, "finalize_attention_state returns acc / l")
def finalize_values(s: Session) -> None:
    """Task 4.2: finalize_attention_state returns acc / l."""
    def body(case: Case) -> None:
        state = case.args[0]
        got = s.invoke("finalize_attention_state", (state,)).value
        assert_close(got, ref.finalize_attention_state(state), *tolerance(F32),
                     what="the normalized output")
    run_property(merge_cases().map(lambda c: Case((c.args[0],), {}, ("state",))), body,
                 max_examples=15)


@check(A, "4.2", 3, "finalize(merge(part 1, part 2)) equals softmax(scores) @ values over "
                    "all keys (lecture §5.1)")
def merge_end_to_end(s: Session) -> None:
    """Task 4.2: finalize(merge(part 1, part 2)) equals softmax(scores) @ values over all keys
    (lecture §5.1).
    """
    def body(draw: tuple) -> None:
        scores, values, desc = draw
        a, b = (_as_f32(_state(sc, v)) for sc, v in zip(scores, values, strict=True))
        merged = s.invoke("merge_attention_states", (a, b)).value
        out = s.invoke("finalize_attention_state", (tuple(merged) if isinstance(
            merged, (list, tuple)) else merged,)).value
        full = np.concatenate(scores, axis=-1)
        p = np.exp(full - full.max(axis=-1, keepdims=True))
        expected = np.einsum("...rn,...nd->...rd", p / p.sum(axis=-1, keepdims=True),
                             np.concatenate(values, axis=-2))
        try:
            assert_close(out, expected, 1e-4, 1e-5, what="attention over all keys")
        except CheckFailure as failure:
            failure.input = desc
            raise
    run_property(split_rows(2), body, max_examples=15)


# --- shared by Tasks 4.3 and 4.4: drawn attention problems -----------------------------------

BF16 = np.dtype(ml_dtypes.bfloat16)
#: (rtol, atol) for attention outputs (|v| <= 4): f32 inputs keep ~1e-6 relative error through
#: the f32 sums; bf16 inputs leave room for p cast to bf16 before p @ v, as TPU kernels do.
ATTENTION_TOL = {F32.name: (1e-4, 1e-4), BF16.name: (2e-2, 3e-2)}
#: Margin (in units of the exponent) kept inside the safe MLE range when the grader picks a
#: constant: exp(s - c) summed over L keys and multiplied by |v| <= 4 must stay finite too.
MLE_MARGIN = 4.0


@dataclasses.dataclass(frozen=True)
class AttentionCase:
    """One drawn attention problem: q [H, L, d], k [Hkv, L, d], v [Hkv, L, dv] and the
    keyword arguments of the kernel (``kwargs``; ``sm_scale`` always set) or of the
    wrapper (``wrapper_kwargs``; ``sm_scale`` None means "use the default")."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    sm_scale: float | None
    causal: bool
    block_q: int
    block_kv: int
    soft_cap: float | None
    max_logit_const: float | None
    seed: int

    @property
    def scale(self) -> float:
        """The scale actually applied: sm_scale, or 1/sqrt(d) by default."""
        return 1.0 / math.sqrt(self.q.shape[-1]) if self.sm_scale is None else self.sm_scale

    @property
    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (self.q, self.k, self.v)

    @property
    def kwargs(self) -> dict[str, object]:
        return {"sm_scale": self.scale, "causal": self.causal, "block_q": self.block_q,
                "block_kv": self.block_kv, "soft_cap": self.soft_cap,
                "max_logit_const": self.max_logit_const}

    @property
    def wrapper_kwargs(self) -> dict[str, object]:
        return {"causal": self.causal, "sm_scale": self.sm_scale, "block_q": self.block_q,
                "block_kv": self.block_kv, "soft_cap": self.soft_cap,
                "max_logit_const": self.max_logit_const}

    def scores(self) -> np.ndarray:
        """float64 [H, L, L] scaled, capped, masked scores (dense reference)."""
        return dense.attention_scores(self.q, self.k, sm_scale=self.scale, causal=self.causal,
                                      soft_cap=self.soft_cap)

    def expected(self) -> np.ndarray:
        """float64 [H, L, dv]: dense attention, the value every check compares with."""
        return dense.dense_attention(self.q, self.k, self.v, sm_scale=self.scale,
                                     causal=self.causal, soft_cap=self.soft_cap)

    def __repr__(self) -> str:
        parts = [f"q = {fmt_array(self.q)}, k = {fmt_array(self.k)}, v = {fmt_array(self.v)}"
                 f" (rng = np.random.default_rng({self.seed}); q, k, v = rng.uniform(-4, 4, "
                 "shape) in that order, cast to the dtype)",
                 f"sm_scale = {'None (1/sqrt(d))' if self.sm_scale is None else self.sm_scale}",
                 f"causal = {self.causal}", f"block_q = {self.block_q}",
                 f"block_kv = {self.block_kv}"]
        if self.soft_cap is not None:
            parts.append(f"soft_cap = {self.soft_cap}")
        if self.max_logit_const is not None:
            parts.append(f"max_logit_const = {self.max_logit_const}")
        return ", ".join(parts)


def _safe_constant(scores: np.ndarray, length: int, frac: float) -> float | None:
    """A constant inside the safe MLE range of ``scores`` (with margins), or None."""
    low, high = ref.mle_safe_range(*dense.score_extremes(scores))
    low += math.log(4.0 * length) + MLE_MARGIN
    high -= MLE_MARGIN
    if not low < high:
        return None
    return round(low + frac * (high - low), 2)


@st.composite
def attention_cases(draw, *, causal: bool | None = None, options: bool = False,
                    min_q_blocks: int = 1, default_scale: bool = False) -> AttentionCase:
    """Drawn attention problems (Tasks 4.3/4.4).

    H 1-4 with a drawn GQA group, blocks 8/16/32, L a multiple of both blocks
    (two or more blocks per axis in many draws, at least ``min_q_blocks`` q blocks),
    d and dv 8-128, f32 or bf16, ``causal`` drawn unless given.  ``options``
    also draws large logits, a soft cap and a Max-Logit-Estimate constant
    chosen inside the safe range of the drawn scores (None when there is none).
    ``default_scale`` lets sm_scale be None (the wrapper's default).
    """
    kv_heads = draw(st.sampled_from([1, 2]))
    group = draw(st.sampled_from([1, 2, 4] if kv_heads == 1 else [2, 1]))
    heads = kv_heads * group
    block_q = draw(st.sampled_from([8, 16, 32]))
    block_kv = draw(st.sampled_from([8, 16, 32]))
    unit = math.lcm(block_q, block_kv)
    least = max(1, -(-min_q_blocks * block_q // unit))
    most = max(least, min(4, 128 // unit))
    length = unit * draw(st.integers(least, most))
    d, dv = draw(st.integers(8, 128)), draw(st.integers(8, 128))
    dtype = draw(st.sampled_from([F32, BF16]))
    is_causal = draw(st.booleans()) if causal is None else causal
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-4, 4, (heads, length, d)).astype(dtype)
    k = rng.uniform(-4, 4, (kv_heads, length, d)).astype(dtype)
    v = rng.uniform(-4, 4, (kv_heads, length, dv)).astype(dtype)
    # Options: "mle" = large logits (up to ~150) with a constant from the safe range;
    # "cap" = a soft cap; "cap+mle" = both; "large" = large logits, running max.
    flavor = draw(st.sampled_from(["mle", "cap", "cap+mle", "large"] if options else ["plain"]))
    large = flavor in ("mle", "large")
    logit_scale = 10.0 if large else draw(st.sampled_from([1.0, 0.25, 2.0]))
    sm_scale: float | None = round(logit_scale / math.sqrt(d), 6)
    if default_scale and logit_scale == 1.0 and draw(st.booleans()):
        sm_scale = None
    case = AttentionCase(q, k, v, sm_scale, is_causal, block_q, block_kv, None, None, seed)
    if flavor.startswith("cap"):
        case = dataclasses.replace(case, soft_cap=draw(st.sampled_from([20.0, 5.0, 50.0])))
    if flavor.endswith("mle"):
        frac = draw(st.sampled_from([0.5, 0.1, 0.9, 0.3]))
        case = dataclasses.replace(
            case, max_logit_const=_safe_constant(case.scores(), length, frac))
    return case


def _blocked_mistake(case: AttentionCase, *, rescale_l: bool = True,
                     rescale_acc: bool = True) -> np.ndarray:
    """float64 output of the online algorithm over kv blocks with a rescale left out.

    Rows are independent, so only the kv blocking matters.  Used to name the
    mistake when a submission's output matches it.
    """
    scores = case.scores()
    values = np.asarray(case.v, np.float64)[dense.kv_head_of(case.q.shape[0], case.v.shape[0])]
    heads, length, _ = scores.shape
    m = np.full((heads, length, 1), -np.inf)
    l_sum = np.zeros((heads, length, 1))
    acc = np.zeros((heads, length, values.shape[-1]))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for start in range(0, length, case.block_kv):
            s = scores[:, :, start:start + case.block_kv]
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            alpha = np.where(np.isneginf(m), 0.0, np.exp(m - m_new))
            p = np.where(np.isneginf(s), 0.0, np.exp(s - m_new))
            l_sum = (alpha if rescale_l else 1.0) * l_sum + p.sum(axis=-1, keepdims=True)
            acc = (alpha if rescale_acc else 1.0) * acc + p @ values[:, start:start + case.block_kv]
            m = m_new
        return acc / l_sum


def _shifted_causal(case: AttentionCase, shift: int) -> np.ndarray:
    """Dense attention whose causal mask hides key j > i + shift (shift -1: the diagonal
    too, +1: one key past the diagonal visible)."""
    scores = dense.attention_scores(case.q, case.k, sm_scale=case.scale, causal=False,
                                    soft_cap=case.soft_cap)
    length = scores.shape[-1]
    hidden = np.arange(length)[None, :] > np.arange(length)[:, None] + shift
    scores = np.where(hidden, -np.inf, scores)
    values = np.asarray(case.v, np.float64)[dense.kv_head_of(case.q.shape[0], case.v.shape[0])]
    with np.errstate(invalid="ignore"):
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return np.einsum("hij,hjd->hid", w / w.sum(axis=-1, keepdims=True), values)


def _matches(got: np.ndarray, candidate: np.ndarray, tol: tuple[float, float]) -> bool:
    """True when ``got`` equals ``candidate`` within ``tol`` wherever the candidate is finite
    (and the candidate differs from nothing-in-particular: at least one finite value)."""
    got = np.asarray(got, np.float64)
    finite = np.isfinite(candidate)
    if got.shape != candidate.shape or not finite.any():
        return False
    with np.errstate(invalid="ignore"):
        close = np.abs(got - candidate) <= tol[1] + tol[0] * np.abs(candidate)
    return bool(close[finite].all())


def _diagnose_attention(got: np.ndarray, case: AttentionCase, tol: tuple[float, float],
                        *, wrapper: bool = False) -> str | None:
    """Name the known mistake the output looks like (lecture §5.2-5.4), if any."""
    got = np.asarray(got, np.float64)
    if got.shape != case.expected().shape:
        return None
    if case.causal and np.isnan(got).any() and _matches(got, _shifted_causal(case, -1), tol):
        return ("causal mask off by one: the diagonal is masked too, so query 0 sees no key "
                "at all (NaN) and every other query misses its own key; mask key > query, "
                "not key >= query (lecture §5.2)")
    if np.isnan(got).any():
        nan_rows = np.isnan(got).any(axis=-1)                   # [H, L]
        if case.causal and not nan_rows.all():
            n_kv = case.q.shape[1] // case.block_kv
            last_start = (n_kv - 1) * case.block_kv
            q_block_of_row = np.arange(case.q.shape[1]) // case.block_q
            skipped_last = (q_block_of_row + 1) * case.block_q - 1 < last_start
            if np.array_equal(nan_rows.any(axis=0), skipped_last):
                return ("NaN exactly in the q blocks whose LAST kv block is fully masked: the "
                        "output is written inside the causal pl.when, so for these blocks it "
                        "is never written. Do the final acc / l in its own "
                        "pl.when(kv block == last) (lecture §5.2)")
        return ("NaN in the output: the scratch buffers start poisoned (NaN), so m, l and acc "
                "must be initialized at kv block 0 (pl.when(pl.program_id(2) == 0)) before "
                "they are read; or the output block was never written (lecture §5.2)")
    mistakes = [
        ((False, False), "the rescale exp(m_prev - m_new) is missing: when a later kv block "
                         "raises the row maximum, l and acc must be multiplied by "
                         "alpha = exp(m_prev - m_new) before the new block is added "
                         "(lecture §5.2)"),
        ((True, False), "the rescale exp(m_prev - m_new) is applied to l but not to acc: acc "
                        "was accumulated relative to the old maximum and must be multiplied by "
                        "alpha too (lecture §5.2)"),
        ((False, True), "the rescale exp(m_prev - m_new) is applied to acc but not to l "
                        "(lecture §5.2)"),
    ]
    if case.max_logit_const is None:
        for (rescale_l, rescale_acc), text in mistakes:
            if _matches(got, _blocked_mistake(case, rescale_l=rescale_l,
                                              rescale_acc=rescale_acc), tol):
                return text
    if case.causal:
        for shift, text in ((-1, "the diagonal is masked too (a query must see its own key: "
                                 "mask key > query, not key >= query)"),
                            (1, "one key past the diagonal is visible (mask key > query, "
                                "not key > query + 1)")):
            if _matches(got, _shifted_causal(case, shift), tol):
                return f"causal mask off by one: {text} (lecture §5.2)"
        if _matches(got, dataclasses.replace(case, causal=False).expected(), tol):
            return "the causal mask is not applied (causal=True was ignored)"
    elif _matches(got, dataclasses.replace(case, causal=True).expected(), tol):
        return "a causal mask was applied although causal=False"
    if case.soft_cap is not None and _matches(
            got, dataclasses.replace(case, soft_cap=None).expected(), tol):
        return "soft_cap is ignored: scaled scores must become cap·tanh(s / cap) (lecture §6)"
    for scale, text in ((1.0, "the scores are not multiplied by sm_scale"),
                        (case.scale ** 2, "sm_scale is applied twice")):
        if scale != case.scale and _matches(
                got, dataclasses.replace(case, sm_scale=scale).expected(), tol):
            return text
    if wrapper:
        if case.sm_scale is None and _matches(
                got, dataclasses.replace(case, sm_scale=1.0).expected(), tol):
            return "sm_scale=None must default to 1/sqrt(d)"
        heads, kv_heads = case.q.shape[0], case.k.shape[0]
        if 1 < kv_heads < heads:
            wrong = np.arange(heads) % kv_heads
            k_bad, v_bad = case.k[wrong], case.v[wrong]
            other = dense.dense_attention(case.q, k_bad, v_bad, sm_scale=case.scale,
                                          causal=case.causal, soft_cap=case.soft_cap)
            if _matches(got, other, tol):
                return ("query head h reads kv head h % Hkv; with grouped-query attention it "
                        "must read kv head h // (H // Hkv) (lecture §5.2)")
    return None


def _check_attention(got: object, case: AttentionCase, what: str, *,
                     wrapper: bool = False, kernel_out: object = None) -> None:
    """``got`` must equal dense float64 attention within the input dtype's tolerance; a
    wrapper's result must equal ``kernel_out`` (what the student's own kernel computes in
    the grader's standard call) when there is one (issue 12: one fault, one charge)."""
    tol = ATTENTION_TOL[case.q.dtype.name]
    if wrapper and kernel_out is not None:
        try:
            assert_close(got, np.asarray(kernel_out, np.float64), *tol, what=what,
                         same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "flash_attention", "flash_attention_kernel") \
                from None
        return
    expected = case.expected()
    try:
        assert_close(got, expected, *tol, what=what)
    except CheckFailure as failure:
        if failure.diagnosis is None:
            arr = np.asarray(got) if isinstance(got, np.ndarray) else None
            if arr is not None and arr.dtype.kind in "fV":
                failure.diagnosis = _diagnose_attention(arr.astype(np.float64), case, tol,
                                                        wrapper=wrapper)
        raise


def _mle_failure(failure: CheckFailure, case: AttentionCase, got: np.ndarray) -> CheckFailure:
    """Explain a non-finite output under a safe Max-Logit-Estimate constant (lecture §5.4)."""
    max_logit, min_row_max = dense.score_extremes(case.scores())
    low, high = ref.mle_safe_range(max_logit, min_row_max)
    kind = "overflowed (inf/NaN)" if not np.isfinite(got).all() else "went wrong"
    failure.diagnosis = (
        f"exp(s - c) {kind}: the constant your kernel subtracted was outside the safe range. "
        f"For these scores (largest {max_logit:.4g}, smallest row maximum {min_row_max:.4g}) "
        f"mle_safe_range gives ({low:.4g}, {high:.4g}), and the grader passed "
        f"max_logit_const = {case.max_logit_const}, inside it. Subtract exactly that constant "
        "from the scaled (and capped) scores, use it as m from kv block 0 on, and do not "
        "rescale (Task 4.5, lecture §5.4)")
    return failure


# --- Task 4.3 flash_attention_kernel --------------------------------------------------------

def _check_with_mle_diagnosis(s: Session, func: str, case: AttentionCase, *,
                              wrapper: bool) -> None:
    """Call ``func`` on ``case`` and compare with dense attention.  A non-finite output under
    a safe max_logit_const, where the same call without the constant is finite, is
    reported as a constant outside the safe range (lecture §5.4)."""
    def call(c: AttentionCase) -> tuple[object, object]:
        """(result, the student's kernel's output in the standard call, for a wrapper)."""
        if wrapper:
            reply = s.invoke(func, c.args, c.wrapper_kwargs, harness="a4")
            out, kernel_out = against_own_kernel(reply.value, func, "flash_attention_kernel")
            if isinstance(out, np.ndarray):
                reply.own_call(0)  # the wrapper's own pallas_call computed it
            return out, kernel_out
        return s.invoke(func, c.args, c.kwargs, harness="a4").value, None

    got, kernel_out = call(case)
    what = "flash_attention's result" if wrapper else "the kernel's output"
    if wrapper:
        arr = as_array(got, what)
        if arr.dtype != F32:
            raise CheckFailure("flash_attention must return float32", expected="float32",
                               got=arr.dtype.name)
    try:
        _check_attention(got, case, what, wrapper=wrapper, kernel_out=kernel_out)
    except CheckFailure as failure:
        arr = np.asarray(got) if isinstance(got, np.ndarray) else None
        if (case.max_logit_const is not None and arr is not None and arr.dtype.kind in "fV"
                and not np.isfinite(arr.astype(np.float64)).all()):
            again, _ = call(dataclasses.replace(case, max_logit_const=None))
            if isinstance(again, np.ndarray) and np.isfinite(
                    np.asarray(again, np.float64)).all():
                raise _mle_failure(failure, case, arr.astype(np.float64)) from None
        raise


def _kernel_values(s: Session, cases: st.SearchStrategy, max_examples: int) -> None:
    def body(case: AttentionCase) -> None:
        _check_with_mle_diagnosis(s, "flash_attention_kernel", case, wrapper=False)
    run_property(cases, body, max_examples=max_examples)


@check(A, "4.3", 10, "flash_attention_kernel, run in the grader's pallas_call, equals dense "
                     "float64 attention (drawn heads, GQA groups, L, d, dv, blocks, f32/bf16, "
                     "sm_scale; no mask)")
def kernel_values(s: Session) -> None:
    """Task 4.3: flash_attention_kernel, run in the grader's pallas_call, equals dense float64
    attention (drawn heads, GQA groups, L, d, dv, blocks, f32/bf16, sm_scale; no mask).
    """
    _kernel_values(s, attention_cases(causal=False), max_examples=15)


@check(A, "4.3", 6, "with causal=True the kernel masks key position > query position "
                    "(positions from pl.program_id and the block sizes)")
def kernel_causal_values(s: Session) -> None:
    """Task 4.3: with causal=True the kernel masks key position > query position (positions from
    pl.program_id and the block sizes).
    """
    _kernel_values(s, attention_cases(causal=True), max_examples=12)


def _step_blocks(call) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(head, q block, kv block) of every step of the harness's call, int64 [steps] each.

    Read from the block indices of q (h, i, 0) and k (h // group, j, 0) rather than from
    the grid, because the worker may visit the parallel axes in a shuffled order.
    """
    q_idx = np.asarray(call.role("in")[0].block_indices, np.int64)
    k_idx = np.asarray(call.role("in")[1].block_indices, np.int64)
    return q_idx[:, 0], q_idx[:, 1], k_idx[:, 1]


def _fully_masked(q_blocks: np.ndarray, kv_blocks: np.ndarray, block_q: int,
                  block_kv: int) -> np.ndarray:
    """bool [steps]: the whole causal (block_q, block_kv) tile of the step is masked."""
    return kv_blocks * block_kv > (q_blocks + 1) * block_q - 1


@check(A, "4.3", 6, "with causal=True, grid steps whose tile is fully masked do no work: the "
                    "kernel does not read k_ref or v_ref there (trace: kernel_reads per step), "
                    "and the output is still correct")
def kernel_causal_skipping(s: Session) -> None:
    """Task 4.3: with causal=True, grid steps whose tile is fully masked do no work: the kernel
    does not read k_ref or v_ref there (trace: kernel_reads per step), and the output is still
    correct.
    """
    def body(case: AttentionCase) -> None:
        reply = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4")
        _check_attention(reply.value, case, "the kernel's output")
        call = reply.trace
        heads, q_blocks, kv_blocks = _step_blocks(call)
        masked = _fully_masked(q_blocks, kv_blocks, case.block_q, case.block_kv)
        for op, label in zip(call.role("in")[1:3], ("k_ref", "v_ref"), strict=True):
            reads = np.asarray(op.kernel_reads)
            if reads.shape != masked.shape:
                raise CheckFailure("the trace has no per-step reads of the kernel's inputs",
                                   status="error", internal=True)
            wasted = masked & (reads > 0)
            if wasted.any():
                at = int(np.argmax(wasted))
                first = (int(heads[at]), int(q_blocks[at]), int(kv_blocks[at]))
                raise CheckFailure(
                    f"the kernel reads {label} at {int(wasted.sum())} of {int(masked.sum())} "
                    "grid steps whose tile is fully masked",
                    expected=f"no reads of k_ref or v_ref at the {int(masked.sum())} fully "
                             "masked steps",
                    got=f"{label} read at step (head, q block, kv block) = {first}, where "
                        f"kv block {first[2]} starts at key {first[2] * case.block_kv} after "
                        f"the last query {(first[1] + 1) * case.block_q - 1} of q block "
                        f"{first[1]}",
                    diagnosis="fully masked blocks are not skipped: put the whole update "
                              "(scores, exp, p @ v) under pl.when(kv_block * block_kv <= "
                              "(q_block + 1) * block_q - 1), and keep the initialization and "
                              "the final division in their own pl.when (lecture §5.2, §6)")
    run_property(attention_cases(causal=True, min_q_blocks=2), body, max_examples=10)


@check(A, "4.3", 8, "soft_cap and max_logit_const: scores capped at cap·tanh(s/cap), and a "
                    "constant from the safe range used instead of the running max (large "
                    "logits drawn; an overflow is reported as a constant outside the safe "
                    "range)")
def kernel_options(s: Session) -> None:
    """Task 4.3: soft_cap and max_logit_const: scores capped at cap·tanh(s/cap), and a constant
    from the safe range used instead of the running max (large logits drawn; an overflow is
    reported as a constant outside the safe range).
    """
    _kernel_values(s, attention_cases(options=True), max_examples=16)


# --- Task 4.4 flash_attention ----------------------------------------------------------------

@check(A, "4.4", 12, "flash_attention(q, k, v, ...) equals dense float64 attention end to end "
                     "(GQA, causal, default and drawn sm_scale, soft_cap, max_logit_const; "
                     "float32 [H, L, dv])")
def wrapper_values(s: Session) -> None:
    """Task 4.4: flash_attention(q, k, v, ...) equals dense float64 attention end to end (GQA,
    causal, default and drawn sm_scale, soft_cap, max_logit_const; float32 [H, L, dv]).
    """
    def body(case: AttentionCase) -> None:
        _check_with_mle_diagnosis(s, "flash_attention", case, wrapper=True)
    run_property(attention_cases(options=True, default_scale=True), body, max_examples=15)


def _fmt_blocks(call) -> str:
    return ", ".join(str(tuple(op.block_shape)) for op in call.operands
                     if op.role in ("in", "out"))


def _compare_flash_trace(got: list, expected: list, case: AttentionCase) -> None:
    """The student's pallas_call must be the intended one (Task 4.4's trace discipline)."""
    if len(got) != 1:
        raise CheckFailure("flash_attention should make exactly one pallas_call",
                           expected="1 pallas_call", got=f"{len(got)} pallas_calls")
    g, e = got[0], expected[0]
    heads, length, _ = case.q.shape
    n_q = length // case.block_q
    if tuple(g.grid) != tuple(e.grid):
        raise CheckFailure("the grid is not (H, L / block_q, L / block_kv)",
                           expected=str(e.grid), got=str(g.grid),
                           hint="heads first, then query blocks, and the kv blocks LAST: they "
                                "are the reduction into the scratch accumulators")
    if tuple(g.dimension_semantics) != tuple(e.dimension_semantics):
        raise CheckFailure("the dimension semantics differ from the intended ones",
                           expected=str(e.dimension_semantics), got=str(g.dimension_semantics),
                           hint="pltpu.CompilerParams(dimension_semantics=('parallel', "
                                "'parallel', 'arbitrary')): the kv axis is a sequential "
                                "reduction")
    g_ops = [op for op in g.operands if op.role in ("in", "out")]
    e_ops = [op for op in e.operands if op.role in ("in", "out")]
    if [op.block_shape for op in g_ops] != [op.block_shape for op in e_ops]:
        squeeze = any(1 in tuple(op.block_shape)[:1] for op in g_ops)
        raise CheckFailure(
            "the BlockSpecs' block shapes (q, k, v, o) differ from the intended ones",
            expected=_fmt_blocks(e), got=_fmt_blocks(g),
            diagnosis=("the head dimension must be squeezed with None, not kept as 1: the "
                       "kernel's refs are 2-D (block, features)") if squeeze else None)
    for name, g_op, e_op in zip(("q", "k", "v", "o"), g_ops, e_ops, strict=True):
        if not np.array_equal(g_op.block_indices, e_op.block_indices):
            bad = int(np.argmax(np.any(np.asarray(g_op.block_indices)
                                       != np.asarray(e_op.block_indices), axis=1)))
            diagnosis = None
            if name in ("k", "v") and np.array_equal(g_op.block_indices[:, 1:],
                                                     e_op.block_indices[:, 1:]):
                diagnosis = ("query head h must read kv head h // (H // Hkv): consecutive "
                             "query heads share one kv head (GQA, lecture §5.2)")
            raise CheckFailure(
                f"the {name} block of grid step #{bad} (in visiting order) is not the "
                "intended one",
                expected=f"block index {tuple(int(x) for x in e_op.block_indices[bad])}",
                got=f"block index {tuple(int(x) for x in g_op.block_indices[bad])}",
                diagnosis=diagnosis)
    out = g.role("out")
    if len(out) != 1 or out[0].dma_count != heads * n_q:
        raise CheckFailure("the output is not written back once per (head, q block)",
                           expected=f"{heads * n_q} write-backs (H {heads} x {n_q} q blocks)",
                           got=f"{sum(op.dma_count for op in out)} write-backs")
    g_scr = [(tuple(op.shape), op.dtype) for op in g.role("scratch")]
    e_scr = [(tuple(op.shape), op.dtype) for op in e.role("scratch")]
    if g_scr != e_scr:
        raise CheckFailure("the scratch buffers differ from m, l f32 (block_q, 128) and acc "
                           "f32 (block_q, dv)", expected=str(e_scr), got=str(g_scr))
    if g.dma_count != e.dma_count or g.vmem_bytes != e.vmem_bytes:
        raise CheckFailure("DMA count or VMEM bytes differ from the intended call",
                           expected=f"{e.dma_count} DMAs, {e.vmem_bytes} B of VMEM",
                           got=f"{g.dma_count} DMAs, {g.vmem_bytes} B of VMEM")
    if not g.vmem_bytes <= g.vmem_limit_bytes:
        raise CheckFailure("the call uses more VMEM than its limit",
                           expected=f"at most {g.vmem_limit_bytes} B", got=f"{g.vmem_bytes} B")


@check(A, "4.4", 8, "flash_attention's pallas_call is the intended one: grid (H, L/block_q, "
                    "L/block_kv), semantics (parallel, parallel, arbitrary), squeezed head "
                    "dims, kv head h // group, one write-back per (head, q block), scratch "
                    "shapes, DMAs and VMEM")
def wrapper_trace(s: Session) -> None:
    """Task 4.4: flash_attention's pallas_call is the intended one: grid (H, L/block_q,
    L/block_kv), semantics (parallel, parallel, arbitrary), squeezed head dims, kv head h //
    group, one write-back per (head, q block), scratch shapes, DMAs and VMEM.
    """
    def body(case: AttentionCase) -> None:
        reply = s.invoke("flash_attention", case.args, case.wrapper_kwargs)
        reply.own_call()  # the checked call must be the one that computed the result
        with pallas_sim.trace() as recorded:
            ref.flash_attention(*case.args, **case.wrapper_kwargs)
        _compare_flash_trace(reply.traces, recorded.calls, case)
    run_property(attention_cases(causal=False), body, max_examples=8)


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


def _diagnose_range(got: tuple[float, float], max_logit: float, min_row_max: float) -> str | None:
    ln_max = float(np.log(np.finfo(np.float32).max))
    ln_tiny = float(np.log(np.finfo(np.float32).tiny))
    if math.isclose(got[1], min_row_max + ln_max, rel_tol=1e-6, abs_tol=1e-6):
        return ("the upper end uses ln(f32 max) = 88.72; the underflow margin is "
                "-ln(f32 smallest normal) = 87.34 (lecture §5.4)")
    if math.isclose(got[0], max_logit + ln_tiny, rel_tol=1e-6, abs_tol=1e-6) or math.isclose(
            got[1], max_logit - ln_max, rel_tol=1e-6, abs_tol=1e-6):
        return "low and high are swapped or built from the wrong score"
    return None


@check(A, "4.5", 2, "worked answer (Ex10): scores in [-30, 40] give about (-48.7, 57.3)")
def mle_worked(s: Session) -> None:
    """Task 4.5: worked answer (Ex10): scores in [-30, 40] give about (-48.7, 57.3)."""
    got = _unpack_range(s.invoke("mle_safe_range", (40.0, -30.0)).value)
    if not (math.isclose(got[0], -48.7, rel_tol=5e-3) and math.isclose(got[1], 57.3,
                                                                         rel_tol=5e-3)):
        raise CheckFailure("the safe range differs from the lecture's", input="(40.0, -30.0)",
                           expected="about (-48.7, 57.3)", got=f"({got[0]:.4g}, {got[1]:.4g})",
                           diagnosis=_diagnose_range(got, 40.0, -30.0))


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
                               diagnosis=_diagnose_range(got, *case.args))

    @st.composite
    def extremes(draw) -> Case:
        top = draw(st.floats(-200, 200, allow_nan=False).map(lambda x: round(x, 3)))
        spread = draw(st.floats(0, 300, allow_nan=False).map(lambda x: round(x, 3)))
        return Case((top, top - spread), {}, ("max_logit", "min_row_max"))
    run_property(extremes(), body, max_examples=20)


# --- Task 4.6 traffic and work ----------------------------------------------------------------

_WORKED_TRAFFIC = [
    ("flash_attention_hbm_bytes", (128, 4096, 192, 128, 1024), 1728 * 2**20,
     "1728 MiB = Q 192 MiB + 4 q blocks x (K 192 + V 128) MiB + O 256 MiB"),
    ("flash_attention_hbm_bytes", (128, 4096, 192, 128, 2048), 1088 * 2**20,
     "1088 MiB = Q 192 MiB + 2 q blocks x (K 192 + V 128) MiB + O 256 MiB"),
    ("xla_attention_hbm_bytes", (128, 4096, 192, 128), 99 * 2**28,
     "24.75 GiB = f32 scores 8 GiB x 3 (written once, read twice) + Q, K, V, O 0.75 GiB"),
    ("attention_flops", (128, 4096, 192, 128), 2 * 128 * 4096**2 * 320,
     "1.3744e12 = 2·H·L²·(d + dv)"),
]


@check(A, "4.6", 6, "worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048), XLA "
                    "24.75 GiB, 1.3744e12 FLOPs (lecture §5.2)")
def traffic_worked(s: Session) -> None:
    """Task 4.6: worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048), XLA 24.75
    GiB, 1.3744e12 FLOPs (lecture §5.2).
    """
    for func, args, expected, why in _WORKED_TRAFFIC:
        got = s.invoke(func, args).value
        try:
            assert_equal_int(got, expected, func)
        except CheckFailure as failure:
            failure.input = f"{func}{args}"
            failure.expected = f"{expected} ({why})"
            failure.diagnosis = _diagnose_traffic(func, args, {}, got)
            raise


def _diagnose_traffic(func: str, args: tuple, kwargs: dict, got: object) -> str | None:
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        return None
    got = int(got)
    if func == "flash_attention_hbm_bytes":
        heads, length, d, dv, block_q = args
        in_b, out_b = kwargs.get("in_bytes", 2), kwargs.get("out_bytes", 4)
        once = heads * length * ((2 * d + dv) * in_b + dv * out_b)
        if got == once:
            return ("K and V are read once per query block (every q block sweeps all keys), "
                    "not once in total")
        floor_blocks = length // block_q
        if length % block_q and got == once + (floor_blocks - 1) * heads * length * (d + dv) * in_b:
            return "the last, shorter q block also reads all of K and V: use cdiv(L, block_q)"
    if func == "xla_attention_hbm_bytes":
        heads, length, d, dv = args
        s_b = kwargs.get("score_bytes", 4)
        rest = got - ref.xla_attention_hbm_bytes(heads, length, d, dv, **kwargs)
        if rest in (-heads * length * length * s_b, -2 * heads * length * length * s_b):
            return "the scores are written once and read twice: three passes over [H, L, L]"
    return None


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
                  "out_bytes": draw(st.sampled_from([2, 4]))}
    return Case((heads, length, d, dv, block_q), kwargs, ("H", "L", "d", "dv", "block_q"))


@check(A, "4.6", 4, "flash_attention_hbm_bytes equals the reference on drawn sizes (block_q "
                    "need not divide L; in_bytes/out_bytes)")
def flash_traffic_property(s: Session) -> None:
    """Task 4.6: flash_attention_hbm_bytes equals the reference on drawn sizes (block_q need not
    divide L; in_bytes/out_bytes).
    """
    def body(case: Case) -> None:
        got = s.invoke("flash_attention_hbm_bytes", case.args, case.kwargs).value
        try:
            assert_equal_int(got, ref.flash_attention_hbm_bytes(*case.args, **case.kwargs),
                             "flash_attention_hbm_bytes")
        except CheckFailure as failure:
            failure.diagnosis = _diagnose_traffic("flash_attention_hbm_bytes", case.args,
                                                  case.kwargs, got)
            raise
    run_property(traffic_cases(), body, max_examples=20)


@check(A, "4.6", 5, "xla_attention_hbm_bytes and attention_flops equal the reference on drawn "
                    "sizes")
def xla_traffic_property(s: Session) -> None:
    """Task 4.6: xla_attention_hbm_bytes and attention_flops equal the reference on drawn sizes."""
    def body(case: Case) -> None:
        args = case.args[:4]
        kwargs = ({"in_bytes": case.kwargs["in_bytes"], "out_bytes": case.kwargs["out_bytes"],
                   "score_bytes": case.kwargs["out_bytes"]} if case.kwargs else {})
        got = s.invoke("xla_attention_hbm_bytes", args, kwargs).value
        try:
            assert_equal_int(got, ref.xla_attention_hbm_bytes(*args, **kwargs),
                             "xla_attention_hbm_bytes")
        except CheckFailure as failure:
            failure.input = f"H, L, d, dv = {args}" + (f", {kwargs}" if kwargs else "")
            failure.diagnosis = _diagnose_traffic("xla_attention_hbm_bytes", args, kwargs, got)
            raise
        flops = s.invoke("attention_flops", args).value
        try:
            assert_equal_int(flops, ref.attention_flops(*args), "attention_flops")
        except CheckFailure as failure:
            failure.input = f"H, L, d, dv = {args}"
            raise
    run_property(traffic_cases(), body, max_examples=20)
