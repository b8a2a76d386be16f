"""Checks of a4_flash_attention (lecture §5, §6.6): Tasks 4.1–4.8, 100 points.

Softmax states are ``(m, l, acc)``: the running maximum, the sum of
``exp(s - m)`` and the unnormalized weighted sum of values.  Inputs are drawn
with scores on three scales, including logits large enough (40..90) that a
softmax which does not subtract the running maximum overflows float32, and
with the edge cases of the handout's contract: masked (-inf) entries and rows
in online_softmax, empty states in the merge, rows whose scores all lie below
-87 (where float32 exp underflows), small soft caps with the causal mask, and
a Max-Logit-Estimate constant far above every score (which shows whether the
kernel uses it at all).

The Flash Attention kernel (4.3) is graded in isolation inside the grader's
pallas_call (``harness.py``): its values against dense float64
attention (``reference.dense_attention``), causal block skipping through the
trace's per-step ``kernel_reads`` of k_ref and v_ref. The wrapper (4.4) is
graded against what the student's own kernel computes in that standard call
(one fault, one charge), on its trace against the reference's pallas_call, and
on refusing k and v of another length than q.

The kernel's ``use_base2_exp`` option (lecture §6.6) is graded on the output and on the
final m scratch, which the harness copies out: the row maximum in base-2 units. The
micro-tiled kernel (4.7) is graded on values and on the trace's
``largest_intermediate`` (lecture §5.3): ``block_q × bkv_compute`` on drawn inputs and
at the lecture's sizes (an abstract run).

Task 4.8 (performance) measures the student's kernel, in Task 4.3's standard call, on a
small problem at the (block_q, block_kv, max_logit_const) their ``choose_flash_config()``
returns (in the worker, on data and on shapes: ``harness.choose_flash_config``), refuses
a configuration whose blocks, scratch and f32 score tiles exceed the TensorCore's VMEM
(lecture §5.3), predicts the full size here (``timing.py``) and compares it with the
fastest legal candidate for their kernel, whose work at the other candidates is
projected from the reference kernel's (``step_model.project``).

A "looks like" diagnosis is shown only when the failing output equals the
output of that modelled mistake on the failing input (``emulate`` runs the
kernel with the mistake in float32; the 4.1 and 4.2 models likewise).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import pallas_sim
import reference.a4_flash_attention as ref
import reference.dense_attention as dense
from graders.checks import measures, performance, step_model
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
from graders.checks.framework import CheckFailure, Session, check, describe_value, run_property
from graders.checks.strategies import Case, make_array, seeds
from graders.labs.a4_flash_attention.hidden import timing
from graders.labs.a4_flash_attention.hidden.diagnose import (
    ATTENTION_TOL,
    close_to,
    diagnose_base2_constant,
    diagnose_kv_heads,
    diagnose_masked,
    diagnose_output,
    diagnose_range,
    diagnose_trace,
    diagnose_traffic,
    emulate,
    matches_model,
    same_values,
)
from graders.labs.a4_flash_attention.public import worked
from graders.labs.a4_flash_attention.public.public_checks import mask_rows

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


def _compare_trace(got: list, expected: list, x: np.ndarray, block: int) -> None:
    rtol, atol = 1e-4, 1e-6
    for k, ((gm, gl), (em, el)) in enumerate(zip(got, expected, strict=True)):
        ok = (np.shape(gm) == np.shape(em) and np.shape(gl) == np.shape(el)
              and close_to(gm, em, rtol, atol) and close_to(gl, el, rtol, atol))
        if not ok:
            raise CheckFailure(f"the running (m, l) after block {k} is wrong",
                               expected=_fmt_trace(expected), got=_fmt_trace(got),
                               diagnosis=diagnose_trace(got, x, block))


@check(A, "4.1", 5, "worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), "
                    "block 2 (lecture §5.1)")
def online_softmax_worked(s: Session) -> None:
    """Task 4.1: worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), block 2
    (lecture §5.1).
    """
    rtol = worked.WORKED_RTOL
    for answer in worked.SOFTMAX_TRACES:
        x, block, trace = np.asarray(answer.x, dtype=np.float32), answer.block_size, answer.trace
        got_probs, got_trace = _unpack_softmax(s.invoke("online_softmax", (x, block)).value, x,
                                               block)
        label = f"x = {list(answer.x)}, block_size = {block}"
        for k, ((gm, gl), (em, el)) in enumerate(zip(got_trace, trace, strict=True)):
            if not (close_to(gm, em, rtol, 0) and close_to(gl, el, rtol, 0)):
                raise CheckFailure(f"the (m, l) pair after block {k} differs from the lecture's",
                                   input=label, expected=str(list(trace)),
                                   got=_fmt_trace(got_trace),
                                   diagnosis=diagnose_trace(got_trace, x, block))
        if answer.probs is not None:
            try:
                assert_close(got_probs, np.asarray(answer.probs), rtol, 0, what="softmax")
            except CheckFailure as failure:
                failure.input = label
                raise


@check(A, "4.1", 4, "online_softmax's probabilities equal the softmax over the last axis "
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


@check(A, "4.1", 3, "online_softmax's trace holds the running (m, l) after each block")
def online_softmax_trace(s: Session) -> None:
    """Task 4.1: online_softmax's trace holds the running (m, l) after each block."""
    def body(case: Case) -> None:
        x, block = case.args
        _, got = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        _, expected = ref.online_softmax(x, block)
        _compare_trace(got, list(expected), x, block)
    run_property(softmax_cases(), body, max_examples=25)


@dataclasses.dataclass(frozen=True)
class MaskedSoftmaxCase:
    """One online_softmax call on masked rows: ``x`` holds -inf entries (masked keys)."""

    x: np.ndarray
    block_size: int

    @property
    def args(self) -> tuple[np.ndarray, int]:
        return (self.x, self.block_size)

    def __repr__(self) -> str:
        values = np.array2string(np.asarray(self.x, np.float64), precision=4, separator=", ",
                                 max_line_width=10**6, threshold=10**6)
        return (f"x = {self.x.dtype.name}{list(self.x.shape)} {values}, "
                f"block_size = {self.block_size}")


@st.composite
def masked_softmax_cases(draw) -> MaskedSoftmaxCase:
    """Strategy: x ([n] or [rows, n], f32/f64) with -inf entries, the handout's masked rows:
    the first row's first block (at least) is all -inf and the second row is all -inf (one
    row: either); other rows have a -inf prefix, scattered -inf, only -inf or none."""
    rows = draw(st.one_of(st.none(), st.integers(1, 4)))
    block = draw(st.integers(1, 6))
    n = draw(st.integers(block + 1, block + 14))
    low, high = draw(st.sampled_from(SCALES))
    dtype = draw(st.sampled_from([F32, F64]))
    seed = draw(seeds)
    x = make_array((n,) if rows is None else (rows, n), dtype, seed, low=low, high=high)
    flat = x.reshape(-1, n)
    # Both masked kinds of the contract in every draw with two rows or more.
    mask_rows(draw, flat, block, seed)
    return MaskedSoftmaxCase(x, block)


@check(A, "4.1", 3, "masked rows (-inf entries): probability 0 at -inf, the empty state "
                    "m = -inf, l = 0 in the trace while a row has shown only -inf, "
                    "probabilities 0 for a row of only -inf (the handout's contract)")
def online_softmax_masked(s: Session) -> None:
    """Task 4.1: masked rows (-inf entries): probability 0 at -inf, the empty state m = -inf,
    l = 0 in the trace while a row has shown only -inf, probabilities 0 for a row of only -inf
    (the handout's contract).
    """
    def body(case: MaskedSoftmaxCase) -> None:
        x, block = case.args
        probs, got = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        want_probs, want_trace = ref.online_softmax(x, block)
        try:
            _compare_trace(got, list(want_trace), x, block)
            assert_close(probs, want_probs, 1e-4, 1e-7, what="probs")
        except CheckFailure as failure:
            if failure.diagnosis is None:
                failure.diagnosis = diagnose_masked(np.asarray(probs), got, case)
            raise
    run_property(masked_softmax_cases(), body, max_examples=15)


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
    """m, l and acc within float32's tolerance; an expected -inf (the m of an empty row)
    must be -inf, and NaN never matches."""
    rtol, atol = tolerance(F32)
    for g, e, name in zip(got, expected, ("m", "l", "acc"), strict=True):
        assert_close(g, np.asarray(e, np.float64), rtol * 5, atol, what=f"{name} of {what}",
                     same_nonfinite=True)


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


@check(A, "4.2", 3, "merge_attention_states equals the reference merge of two states over "
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


@check(A, "4.2", 2, "merge is commutative and associative: merge(a, b) = merge(b, a) and "
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


@check(A, "4.2", 2, "finalize_attention_state returns acc / l")
def finalize_values(s: Session) -> None:
    """Task 4.2: finalize_attention_state returns acc / l."""
    def body(case: Case) -> None:
        state = case.args[0]
        got = s.invoke("finalize_attention_state", (state,)).value
        assert_close(got, ref.finalize_attention_state(state), *tolerance(F32),
                     what="the normalized output")
    run_property(merge_cases().map(lambda c: Case((c.args[0],), {}, ("state",))), body,
                 max_examples=15)


@check(A, "4.2", 2, "finalize(merge(part 1, part 2)) equals softmax(scores) @ values over "
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


@dataclasses.dataclass(frozen=True)
class EmptyMergeCase:
    """Two states of the same rows where some rows are empty (m = -inf, l = 0, acc = 0)."""

    a: tuple[np.ndarray, np.ndarray, np.ndarray]
    b: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def args(self) -> tuple[tuple, tuple]:
        return (self.a, self.b)

    def __repr__(self) -> str:
        def one(state: tuple) -> str:
            m, l_sum, acc = state
            return (f"(m = {np.array2string(m.astype(np.float64), precision=4, separator=', ')}, "
                    f"l = {np.array2string(l_sum.astype(np.float64), precision=4, separator=', ')}"
                    f", acc = {fmt_array(acc)})")
        return f"state_a = {one(self.a)}, state_b = {one(self.b)}"


@st.composite
def empty_merge_cases(draw) -> EmptyMergeCase:
    """Strategy: two states over disjoint keys in which some rows are empty: the first row on
    both sides (two empty states), others on one side, on both, or on neither."""
    batch = draw(st.sampled_from([(), (2,)]))
    rows, dv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    states = []
    for _ in range(2):
        n = draw(st.integers(1, 6))
        low, high = draw(st.sampled_from(SCALES))
        scores = make_array((*batch, rows, n), F64, draw(seeds), low=low, high=high)
        states.append(list(_as_f32(_state(scores, make_array((*batch, n, dv), F64,
                                                              draw(seeds))))))
    kinds = ["both"] + draw(st.lists(st.sampled_from(["both", "a", "b", "none"]),
                                     min_size=rows - 1, max_size=rows - 1))
    for r, kind in enumerate(kinds):
        for side, state in zip("ab", states, strict=True):
            if kind in ("both", side):
                state[0][..., r] = -np.inf
                state[1][..., r] = 0.0
                state[2][..., r, :] = 0.0
    return EmptyMergeCase(tuple(states[0]), tuple(states[1]))


def _naive_merge(a: tuple, b: tuple) -> tuple[np.ndarray, ...]:
    """float64 merge that subtracts m = max(m_a, m_b) even when it is -inf (unguarded)."""
    m_a, l_a, acc_a = (np.asarray(t, np.float64) for t in a)
    m_b, l_b, acc_b = (np.asarray(t, np.float64) for t in b)
    m = np.maximum(m_a, m_b)
    with np.errstate(invalid="ignore"):
        w_a, w_b = np.exp(m_a - m), np.exp(m_b - m)
        return m, w_a * l_a + w_b * l_b, w_a[..., None] * acc_a + w_b[..., None] * acc_b


@check(A, "4.2", 1, "merging empty states (m = -inf, l = 0, acc = 0): two empty states give "
                    "the empty state without NaN, an empty state and a state S give S")
def merge_empty_states(s: Session) -> None:
    """Task 4.2: merging empty states (m = -inf, l = 0, acc = 0): two empty states give the
    empty state without NaN, an empty state and a state S give S.
    """
    def body(case: EmptyMergeCase) -> None:
        got = _unpack_state(s.invoke("merge_attention_states", case.args).value,
                            "merge_attention_states")
        try:
            _assert_state(got, ref.merge_attention_states(*case.args), "the merged state")
        except CheckFailure as failure:
            naive = _naive_merge(*case.args)
            if all(same_values(g, e, 1e-4, 1e-6) for g, e in zip(got, naive, strict=True)):
                failure.what = _without_nan_guess(failure.what)
                failure.diagnosis = (
                    "exp(-inf - (-inf)) is NaN: in a row that is empty on both sides "
                    "m = max(m_a, m_b) = -inf, and exp(m_a - m) subtracts -inf from -inf. Use 0 "
                    "in place of a -inf maximum: the weights are then exp(-inf) = 0 and the "
                    "row stays empty (handout, Task 4.2; lecture §5.1)")
            raise
    run_property(empty_merge_cases(), body, max_examples=10)


# --- shared by Tasks 4.3 and 4.4: drawn attention problems -----------------------------------

BF16 = np.dtype(ml_dtypes.bfloat16)
#: (rtol, atol) for attention outputs (|v| <= 4): f32 inputs keep ~1e-6 relative error through
#: the f32 sums; bf16 inputs leave room for p cast to bf16 before p @ v, as TPU kernels do.
#: Margin (in units of the exponent) kept inside the safe MLE range when the grader picks a
#: constant: exp(s - c) summed over L keys and multiplied by |v| <= 4 must stay finite too.
MLE_MARGIN = 4.0
#: (Hkv, H / Hkv) pairs drawn: no GQA, one kv head for all, and 1 < Hkv < H with H / Hkv
#: different from Hkv (6 = 2 x 3, 3 x 2), where h // (H // Hkv), h // Hkv and h % Hkv differ.
HEAD_GROUPS = [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 3), (3, 2)]
#: Block sizes drawn for block_q and block_kv: the handout asks only that they divide L, and
#: with even sizes kv_block·block_kv (even) never equals (q_block + 1)·block_q - 1 (odd), so
#: a skip test off by one at that boundary would go unseen without the odd ones.
BLOCKS = [8, 16, 32, 3, 5]
#: The "high" construction (Task 4.3, base 2 with MLE): every score is about
#: 2.375 · 12 · 12 = 342 (the other features as in "deep", so scores stay exact), and the
#: constant is just above the largest score. A base-2 kernel that subtracts that constant
#: in natural units computes exp2(342 · log2(e) - 343) = 2^150: float32 overflows.
HIGH_FEATURE, HIGH_SCALE = 12.0, 2.375
#: The "deep" construction (lecture §5.4's float32 limits): the even query rows score about
#: 0.875 · (-12 · 12) = -126 against every key, below ln(f32 tiny) = -87.3 and even below
#: -103.97, where float32 exp(s) is exactly 0; the odd rows score within about ±8. The
#: other features are multiples of 1/16 in [-0.5, 0.5], so every score is exact in float32
#: (a multiple of 2^-11 below 2^8) and the check measures the kernel, not rounding.
DEEP_FEATURE, DEEP_SCALE = 12.0, 0.875
#: A Max-Logit-Estimate constant far above every score (|s| < 60 in these draws): exp(s - c)
#: is exactly 0 for every key even in float64, so a kernel that subtracts it gets l = 0.
FAR_CONSTANT = 800.0


@dataclasses.dataclass(frozen=True)
class AttentionCase:
    """One drawn attention problem: q [H, L, d], k [Hkv, L, d], v [Hkv, L, dv] and the
    keyword arguments of the kernel (``kwargs``; ``sm_scale`` always set) or of the
    wrapper (``wrapper_kwargs``; ``sm_scale`` None means "use the default").
    ``deep``: q and k follow the deep construction (``DEEP_FEATURE``): "all", every score
    of the even query rows is far below -87; "first-tile", only their scores against the
    first kv tile are (the other keys score near 0); "high", every score is near 342
    (``HIGH_FEATURE``); "" for plain uniform draws."""

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
    deep: str = ""

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
        keys = {"all": f"k[..., 0] = {DEEP_FEATURE:g}",
                "first-tile": f"k[:, :block_kv, 0] = {DEEP_FEATURE:g}; k[:, block_kv:, 0] = 0"}
        where = {"all": "every score of the even query rows is below -100",
                 "first-tile": "the even query rows score below -100 against the first kv "
                               "tile, near 0 against the others"}
        rounded = ("q, k, v = rng.uniform(-4, 4, shape) in that order; q = np.round(2 * q) / "
                   "16; k = np.round(2 * k) / 16")
        if not self.deep:
            made = "q, k, v = rng.uniform(-4, 4, shape) in that order, cast to the dtype"
        elif self.deep == "high":
            made = (f"{rounded}; q[..., 0] = k[..., 0] = {HIGH_FEATURE:g} (every score near "
                    f"{HIGH_SCALE:g} · {HIGH_FEATURE * HIGH_FEATURE:g}); cast to the dtype")
        else:
            made = (f"{rounded}; {keys[self.deep]}; q[:, ::2, 0] = -{DEEP_FEATURE:g} "
                    f"({where[self.deep]}); cast to the dtype")
        parts = [f"q = {fmt_array(self.q)}, k = {fmt_array(self.k)}, v = {fmt_array(self.v)}"
                 f" (rng = np.random.default_rng({self.seed}); {made})",
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


#: Flavors of ``attention_cases``: "plain"; with ``options``: "mle" (large logits, a constant
#: from the safe range), "cap", "cap+mle", "large" (large logits, running max), "deep+mle"
#: (no mask; the even rows' first kv tile far below the rest, a constant from the safe range:
#: every exp(s - c) of that tile is 0 for those rows); and the single-purpose "deep" (rows
#: far below -87), "small-cap" (caps 1, 2, 5) and "far-constant" (max_logit_const =
#: FAR_CONSTANT); and "high+mle" (every score near 342, a constant 1 above the largest:
#: ``HIGH_FEATURE``).
OPTION_FLAVORS = ("mle", "cap", "cap+mle", "large", "deep+mle")


@st.composite
def attention_cases(draw, *, causal: bool | None = None, options: bool = False,
                    min_q_blocks: int = 1, default_scale: bool = False,
                    flavor: str | None = None) -> AttentionCase:
    """Drawn attention problems (Tasks 4.3/4.4).

    H 1-6 with a drawn GQA group (``HEAD_GROUPS``), blocks from ``BLOCKS`` (odd ones
    too: the handout asks only that they divide L), L a multiple of both
    blocks (two or more blocks per axis in many draws, at least ``min_q_blocks`` q
    blocks), d and dv 8-128, f32 or bf16, ``causal`` drawn unless given. ``options``
    also draws large logits, a soft cap and a Max-Logit-Estimate constant chosen inside
    the safe range of the drawn scores (None when there is none); ``flavor`` fixes one
    flavor instead (see ``OPTION_FLAVORS``). ``default_scale`` lets sm_scale be None
    (the wrapper's default).
    """
    if flavor is None:
        flavor = draw(st.sampled_from(OPTION_FLAVORS if options else ("plain",)))
    kv_heads, group = draw(st.sampled_from(HEAD_GROUPS))
    heads = kv_heads * group
    block_q = draw(st.sampled_from(BLOCKS))
    block_kv = draw(st.sampled_from(BLOCKS))
    unit = math.lcm(block_q, block_kv)
    least = max(1, -(-min_q_blocks * block_q // unit))
    if flavor == "deep+mle":  # a first kv tile and at least one more
        least = max(least, -(-2 * block_kv // unit))
    most = max(least, min(4, 128 // unit))
    length = unit * draw(st.integers(least, most))
    d, dv = draw(st.integers(8, 128)), draw(st.integers(8, 128))
    dtype = draw(st.sampled_from([F32, BF16]))
    is_causal = draw(st.booleans()) if causal is None else causal
    if flavor == "deep+mle":
        is_causal = False  # a causal row 0 would see only the deep tile
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-4, 4, (heads, length, d))
    k = rng.uniform(-4, 4, (kv_heads, length, d))
    v = rng.uniform(-4, 4, (kv_heads, length, dv)).astype(dtype)
    deep = {"deep": "all", "deep+mle": "first-tile", "high+mle": "high"}.get(flavor, "")
    if deep:
        q, k = np.round(2 * q) / 16, np.round(2 * k) / 16
    if deep == "high":
        q[..., 0], k[..., 0] = HIGH_FEATURE, HIGH_FEATURE
    elif deep:
        k[..., 0] = DEEP_FEATURE
        if deep == "first-tile":
            k[:, block_kv:, 0] = 0.0
        q[:, ::2, 0] = -DEEP_FEATURE
    q, k = q.astype(dtype), k.astype(dtype)
    large = flavor in ("mle", "large")
    logit_scale = 10.0 if large else draw(st.sampled_from([1.0, 0.25, 2.0]))
    sm_scale: float | None = (HIGH_SCALE if deep == "high" else DEEP_SCALE if deep
                              else round(logit_scale / math.sqrt(d), 6))
    if default_scale and logit_scale == 1.0 and not deep and draw(st.booleans()):
        sm_scale = None
    case = AttentionCase(q, k, v, sm_scale, is_causal, block_q, block_kv, None, None, seed,
                         deep)
    if flavor.startswith("cap"):
        case = dataclasses.replace(case, soft_cap=draw(st.sampled_from([20.0, 5.0, 50.0])))
    if flavor == "small-cap":
        case = dataclasses.replace(case, soft_cap=draw(st.sampled_from([1.0, 5.0, 2.0])))
    if flavor == "high+mle":  # an upper bound of the logits, inside the safe range
        case = dataclasses.replace(case, max_logit_const=round(
            float(np.max(case.scores())) + 1.0, 1))
    elif flavor.endswith("mle"):
        frac = draw(st.sampled_from([0.5, 0.1, 0.9, 0.3]))
        case = dataclasses.replace(
            case, max_logit_const=_safe_constant(case.scores(), length, frac))
    if flavor == "far-constant":
        case = dataclasses.replace(case, max_logit_const=FAR_CONSTANT)
    return case


# --- modelled mistakes: a "looks like" is shown only when the output matches one -------------



def _check_attention(got: object, case: AttentionCase, what: str, *,
                     kernel_out: object = None, wrapper: bool = False) -> None:
    """``got`` must equal dense float64 attention within the input dtype's tolerance; a
    wrapper's result must equal ``kernel_out`` (what the student's own kernel computes in
    the grader's standard call: one fault, one charge). The failure carries no
    diagnosis: ``_attention_property`` finds one for the shrunk example only."""
    tol = ATTENTION_TOL[case.q.dtype.name]
    if wrapper:
        arr = as_array(got, what)
        if arr.dtype != F32:
            raise CheckFailure("flash_attention must return float32 [H, L, dv] (its "
                               "docstring), whatever the input dtype", expected="float32",
                               got=arr.dtype.name,
                               hint="out_shape=jax.ShapeDtypeStruct((H, L, dv), jnp.float32), "
                                    "and return what pl.pallas_call returns")
        try:
            assert_close(got, np.asarray(kernel_out, np.float64), *tol, what=what,
                         same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "flash_attention", "flash_attention_kernel") \
                from None
        return
    assert_close(got, case.expected(), *tol, what=what)


def _attention_property(strategy: st.SearchStrategy,
                        body: Callable[[AttentionCase, dict[str, object]], None],
                        *, max_examples: int, wrapper: bool = False) -> None:
    """``run_property`` over attention cases. ``body(case, seen)`` stores what it compares in
    ``seen["output"]`` before comparing. The "looks like" of a failure is computed once,
    for the shrunk example hypothesis reports (each modelled mistake is an emulation of the
    kernel; ``emulate``), and only for a wrong value, not a wrong type or dtype."""
    seen: dict[str, object] = {}

    def run(case: AttentionCase) -> None:
        seen.clear()
        seen["case"] = case
        body(case, seen)

    try:
        run_property(strategy, run, max_examples=max_examples)
    except CheckFailure as failure:
        case = seen.get("case")
        if (failure.diagnosis is None and failure.status == "failed"
                and (" is wrong in " in failure.what or "differs from what your" in failure.what)
                and isinstance(case, AttentionCase) and failure.input == describe_value(case)):
            failure.diagnosis = diagnose_output(seen.get("output"), case, wrapper)
            if failure.diagnosis is not None:
                failure.what = _without_nan_guess(failure.what)
        raise


def _without_nan_guess(what: str) -> str:
    """``what`` without compare.assert_close's general remark on what NaN usually means, for
    a failure whose verified diagnosis says what it means here."""
    head, sep, _ = what.partition(" — NaN in the output usually means")
    return f"{head} (some of them NaN)" if sep else what


# --- Task 4.3 flash_attention_kernel --------------------------------------------------------

def _kernel_body(s: Session) -> Callable[[AttentionCase, dict[str, object]], None]:
    """Run the kernel in the grader's pallas_call and compare with dense attention."""
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        got = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4").value
        seen["output"] = got
        _check_attention(got, case, "the kernel's output")
    return body


@check(A, "4.3", 5, "flash_attention_kernel, run in the grader's pallas_call, equals dense "
                    "float64 attention (drawn heads, GQA groups, L, d, dv, blocks, f32/bf16, "
                    "sm_scale; no mask)")
def kernel_values(s: Session) -> None:
    """Task 4.3: flash_attention_kernel, run in the grader's pallas_call, equals dense float64
    attention (drawn heads, GQA groups, L, d, dv, blocks, f32/bf16, sm_scale; no mask).
    """
    _attention_property(attention_cases(causal=False), _kernel_body(s), max_examples=12)


@check(A, "4.3", 2, "rows whose scores all lie below -100 (exp underflows float32 to 0 there): "
                    "the kernel still returns their softmax, because m starts at -inf and "
                    "follows the row's own maximum (lecture §5.2, §5.4)")
def kernel_deep_rows(s: Session) -> None:
    """Task 4.3: rows whose scores all lie below -100 (exp underflows float32 to 0 there): the
    kernel still returns their softmax, because m starts at -inf and follows the row's own
    maximum (lecture §5.2, §5.4).
    """
    _attention_property(attention_cases(causal=False, flavor="deep"), _kernel_body(s),
                        max_examples=5)


@check(A, "4.3", 5, "with causal=True the kernel masks key position > query position "
                    "(positions from pl.program_id and the block sizes)")
def kernel_causal_values(s: Session) -> None:
    """Task 4.3: with causal=True the kernel masks key position > query position (positions from
    pl.program_id and the block sizes).
    """
    _attention_property(attention_cases(causal=True), _kernel_body(s), max_examples=10)


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
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        reply = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4")
        seen["output"] = reply.value
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
    _attention_property(attention_cases(causal=True, min_q_blocks=2), body, max_examples=8)


@check(A, "4.3", 4, "soft_cap and max_logit_const: scores capped at cap·tanh(s/cap), and a "
                    "constant from the safe range used instead of the running max (large "
                    "logits drawn)")
def kernel_options(s: Session) -> None:
    """Task 4.3: soft_cap and max_logit_const: scores capped at cap·tanh(s/cap), and a constant
    from the safe range used instead of the running max (large logits drawn).
    """
    _attention_property(attention_cases(options=True), _kernel_body(s), max_examples=14)


@check(A, "4.3", 3, "small soft caps (1, 2, 5) with causal=True: the cap comes before the mask, "
                    "so masked keys keep -inf (capping -inf would give them -cap and a weight)")
def kernel_small_caps_causal(s: Session) -> None:
    """Task 4.3: small soft caps (1, 2, 5) with causal=True: the cap comes before the mask, so
    masked keys keep -inf (capping -inf would give them -cap and a weight).
    """
    _attention_property(attention_cases(causal=True, flavor="small-cap"), _kernel_body(s),
                        max_examples=6)


@check(A, "4.3", 2, f"max_logit_const is really used: with c = {FAR_CONSTANT:g}, far above "
                    "every score, exp(s - c) is 0 for every key, so the output cannot be the "
                    "softmax that a kernel keeping the running maximum returns (lecture §5.4)")
def kernel_constant_is_used(s: Session) -> None:
    """Task 4.3: max_logit_const is really used: with c = 800, far above every score, exp(s - c)
    is 0 for every key, so the output cannot be the softmax that a kernel keeping the running
    maximum returns (lecture §5.4).
    """
    def body(case: AttentionCase) -> None:
        got = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4").value
        arr = as_array(got, "the kernel's output")
        expected = case.expected()
        if arr.shape != expected.shape:
            raise CheckFailure("the kernel's output has the wrong shape",
                               expected=f"shape {expected.shape}", got=f"shape {arr.shape}")
        tol = ATTENTION_TOL[case.q.dtype.name]
        running_max = emulate(case, constant=None)
        if matches_model(arr.astype(np.float64), running_max, tol):
            raise CheckFailure(
                "with max_logit_const the kernel still returns the exact softmax: the "
                "constant is not what it subtracts",
                expected=f"no row equal to the softmax: every exp(s - {FAR_CONSTANT:g}) is 0, "
                         "so l = 0 and each row is 0 / 0 (NaN), or whatever your code "
                         "returns for l = 0",
                got=f"the exact attention ({fmt_array(arr)}), as with the running maximum",
                diagnosis="max_logit_const is ignored: the kernel computes the running "
                          "maximum and rescales as without it. With a constant c, use m = c "
                          "from kv block 0 on, p = exp(s - c), and no rescale (alpha = 1): "
                          "that saves the row maximum and the rescale (lecture §5.4)")
    run_property(attention_cases(flavor="far-constant"), body, max_examples=4)


#: log2(e): under use_base2_exp the scores and m are kept times this (lecture §6.6).
LOG2_E = 1.0 / math.log(2.0)
#: (rtol, atol) of the final m against log2(e) · (row maximum of the scores): the scores
#: are exact products summed in float32 (bf16 inputs are exact in float32).
MAX_TOL = (1e-4, 1e-3)


def _between(m: np.ndarray, low: np.ndarray, high: np.ndarray) -> bool:
    """Every m lies in [low, high] up to ``MAX_TOL``: a running maximum taken after the mask
    is ``low``, one taken before it at most ``high``; both give the softmax."""
    rtol, atol = MAX_TOL
    with np.errstate(invalid="ignore"):
        return bool(np.all((m >= low - atol - rtol * np.abs(low))
                           & (m <= high + atol + rtol * np.abs(high))))


def _final_max(reply_value: object, case: AttentionCase) -> tuple[np.ndarray, np.ndarray]:
    """(output [H, L, dv], final m [H, L]) from the harness's ``with_max`` reply."""
    if not isinstance(reply_value, tuple | list) or len(reply_value) != 2:
        raise CheckFailure("the grader's call returned no m scratch", status="error",
                           internal=True)
    out, m = reply_value
    return as_array(out, "the kernel's output"), as_array(m, "the final m scratch")


@check(A, "4.3", 3, "use_base2_exp=True: the output is still softmax attention (causal or "
                    "not, and with max_logit_const near large logits, where the constant "
                    "must be in base-2 units too), and m holds the row maximum in base-2 "
                    "units, log2(e) · max s: scores pre-scaled by log2(e), exp2 in the "
                    "kernel (lecture §6.6)")
def kernel_base2(s: Session) -> None:
    """Task 4.3: use_base2_exp=True: the output is still softmax attention (causal or not), and
    m holds the row maximum in base-2 units, log2(e) · max s: scores pre-scaled by log2(e),
    exp2 in the kernel (lecture §6.6). Then with max_logit_const c just above scores near
    342 ("high+mle"): c must be converted too (m = c·log2(e)); exp2(s·log2(e) - c) would
    overflow float32 there.
    """
    def body(case: AttentionCase) -> None:
        reply = s.invoke("flash_attention_kernel", case.args,
                         {**case.kwargs, "use_base2_exp": True, "with_max": True},
                         harness="a4")
        got, m = _final_max(reply.value, case)
        try:
            _check_attention(got, case, "the kernel's output with use_base2_exp=True")
        except CheckFailure as failure:
            diagnosis = diagnose_base2_constant(got, case)
            if diagnosis is not None:
                failure.diagnosis, failure.what = diagnosis, _without_nan_guess(failure.what)
            raise
        if case.max_logit_const is not None:
            return  # m is the constant there (in base-2 units), or unused: values decide
        masked = case.scores().max(axis=-1)                           # [H, L], natural units
        unmasked = dataclasses.replace(case, causal=False).scores().max(axis=-1)
        if m.shape != masked.shape or _between(m, masked * LOG2_E, unmasked * LOG2_E):
            return
        natural = _between(m, masked, unmasked) and not np.allclose(masked, 0.0)
        raise CheckFailure(
            "with use_base2_exp=True the final m is not the row maximum in base-2 units",
            expected=f"m = log2(e) · max s per row: {fmt_array(masked * LOG2_E)}"
                     + ("" if not case.causal else " (or up to log2(e) · the row's maximum "
                        "before the causal mask)"),
            got=f"m = {fmt_array(m)}",
            diagnosis=("use_base2_exp is ignored: m is the row maximum of the natural-unit "
                       "scores, so the kernel still calls exp. Multiply the scaled (and "
                       "capped) scores by log2(e), keep m in those units and use jnp.exp2 "
                       "for p and alpha (lecture §6.6)") if natural else None)
    run_property(attention_cases(), body, max_examples=5)
    # With max_logit_const the constant must be in base-2 units too (m = c·log2(e)); the
    # values show it only where exp2(s·log2(e) - c) overflows: scores near 342.
    run_property(attention_cases(flavor="high+mle"), body, max_examples=3)


# --- Task 4.4 flash_attention ----------------------------------------------------------------

@check(A, "4.4", 8, "flash_attention(q, k, v, ...) computes what its kernel computes in the "
                     "grader's standard call (GQA, causal, default and drawn sm_scale, "
                     "soft_cap, max_logit_const), as float32 [H, L, dv]")
def wrapper_values(s: Session) -> None:
    """Task 4.4: flash_attention(q, k, v, ...) computes what its kernel computes in the
    grader's standard call (GQA, causal, default and drawn sm_scale, soft_cap,
    max_logit_const), as float32 [H, L, dv].
    """
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        reply = s.invoke("flash_attention", case.args, case.wrapper_kwargs, harness="a4")
        got, kernel_out = against_own_kernel(reply.value, "flash_attention",
                                             "flash_attention_kernel")
        if isinstance(got, np.ndarray):
            reply.own_call(0)  # the wrapper's own pallas_call computed it
        seen["output"] = got
        _check_attention(got, case, "flash_attention's result", kernel_out=kernel_out,
                         wrapper=True)
    _attention_property(attention_cases(options=True, default_scale=True), body,
                        max_examples=14, wrapper=True)


@check(A, "4.4", 2, "flash_attention(..., use_base2_exp=True) accepts the option, computes "
                    "what its kernel computes with it in the grader's standard call, and "
                    "passes it on: its pallas_call's work changes with the option as the "
                    "kernel's does (lecture §6.6)")
def wrapper_base2(s: Session) -> None:
    """Task 4.4: flash_attention(..., use_base2_exp=True) accepts the option and computes what
    its kernel computes with it in the grader's standard call (lecture §6.6). The values
    alone cannot show that the option reaches the kernel (base 2 gives the same softmax),
    so the op counts of the wrapper's own call are compared with the option on and off.
    """
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        reply = s.invoke("flash_attention", case.args,
                         {**case.wrapper_kwargs, "use_base2_exp": True}, harness="a4")
        got, kernel_out = against_own_kernel(reply.value, "flash_attention",
                                             "flash_attention_kernel")
        if isinstance(got, np.ndarray):
            reply.own_call(0)
        seen["output"] = got
        _check_attention(got, case, "flash_attention's result with use_base2_exp=True",
                         kernel_out=kernel_out, wrapper=True)
    _attention_property(attention_cases(default_scale=True), body, max_examples=8,
                        wrapper=True)
    _require_base2_forwarded(s)


#: The case on which the forwarding of use_base2_exp is observed: H 2, Hkv 1, L 32, d = dv
#: = 8, causal, blocks 16 (f32, seed 7).
def _forwarding_case() -> AttentionCase:
    rng = np.random.default_rng(7)
    q, k, v = (rng.uniform(-4, 4, shape).astype(F32)
               for shape in ((2, 32, 8), (1, 32, 8), (1, 32, 8)))
    return AttentionCase(q, k, v, None, True, 16, 16, None, None, 7)


def _work(call) -> dict[str, int]:
    """What the kernel computed over a whole call: each op count summed over the steps
    (``CallTrace.ops``; the order the steps ran in does not matter)."""
    return {} if call.ops is None else {key: call.ops.total(key) for key in call.ops.keys()}


def _require_base2_forwarded(s: Session) -> None:
    """The wrapper's own pallas_call must run the kernel with the use_base2_exp it was
    given: observed on the call it makes. The student's kernel in the grader's standard call
    does different work with the option on and off (the scores are multiplied by log2(e));
    the wrapper's call must differ the same way. A kernel whose work does not change (or
    that refuses the option) leaves nothing to observe: that is Task 4.3's to charge.

    Raises:
      CheckFailure: the wrapper's call does the same work with the option on and off.
    """
    case = _forwarding_case()
    kernel_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("flash_attention_kernel", case.args,
                             {**case.kwargs, "use_base2_exp": flag}, harness="a4")
        except CheckFailure as failure:
            if failure.status == "failed":
                return
            raise
        kernel_work[flag] = _work(reply.trace)
    if kernel_work[True] == kernel_work[False]:
        return
    wrapper_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("flash_attention", case.args,
                             {**case.wrapper_kwargs, "use_base2_exp": flag})
        except CheckFailure as failure:
            raise failure.copy(input=f"{case!r}, use_base2_exp = {flag}") from None
        wrapper_work[flag] = _work(reply.own_call())
    if wrapper_work[True] != wrapper_work[False]:
        return
    changed = sorted(key for key in set(kernel_work[True]) | set(kernel_work[False])
                     if kernel_work[True].get(key, 0) != kernel_work[False].get(key, 0))
    key = changed[0]
    raise CheckFailure(
        "use_base2_exp does not reach the kernel: flash_attention's pallas_call does the same "
        "work with use_base2_exp=True and False",
        input=repr(case),
        expected=f"the kernel's {key} change with the option, as in the grader's standard "
                 f"call: {kernel_work[False].get(key, 0)} -> {kernel_work[True].get(key, 0)}",
        got=f"{key} {wrapper_work[False].get(key, 0)} with either value",
        hint="pass use_base2_exp on to flash_attention_kernel (functools.partial(..., "
             "use_base2_exp=use_base2_exp)); accepting the keyword is not enough")


def _require_a_pallas_call(s: Session, q: np.ndarray) -> None:
    """The length check counts for a wrapper that computes through pallas_call (as a3's
    argument checks do): on k and v of q's length, what it returns must be its own
    pallas_call's output. A wrapper that raises there is charged by the other checks."""
    k, v = make_array((1, 32, 8), F32, 2), make_array((1, 32, 8), F32, 3)
    try:
        reply = s.invoke("flash_attention", (q, k, v),
                         {"causal": True, "block_q": 16, "block_kv": 16})
    except CheckFailure as failure:
        if failure.status == "failed":
            return
        raise
    try:
        reply.own_call()
    except CheckFailure as failure:
        raise failure.copy(input="q = f32[2, 32, 8], k = v = f32[1, 32, 8], causal = True, "
                                 "block_q = 16, block_kv = 16") from None


#: (kv_len, what a grid that follows q's length would do) for q of length 32 (Task 4.4's
#: decision).
_LENGTH_CASES = ((48, "silently ignore the last 16 keys"),
                 (16, "ask for kv blocks past the last of the 16 keys"))


@check(A, "4.4", 2, "flash_attention raises ValueError naming both lengths when k and v do "
                    "not have q's length L (kv_len != q_len is refused, the handout's "
                    "decision)")
def wrapper_length_error(s: Session) -> None:
    """Task 4.4: flash_attention raises ValueError naming both lengths when k and v do not have
    q's length L (kv_len != q_len is refused, the handout's decision).
    """
    q = make_array((2, 32, 8), F32, 1)
    _require_a_pallas_call(s, q)
    for kv_len, without in _LENGTH_CASES:
        k, v = make_array((1, kv_len, 8), F32, 2), make_array((1, kv_len, 8), F32, 3)
        label = (f"q = f32[2, 32, 8], k = v = f32[1, {kv_len}, 8], causal = True, "
                 "block_q = 16, block_kv = 16")
        expected = f"ValueError naming both lengths, 32 (q) and {kv_len} (k, v)"
        try:
            s.invoke("flash_attention", (q, k, v),
                     {"causal": True, "block_q": 16, "block_kv": 16})
        except CheckFailure as failure:
            if failure.status != "failed":
                raise
            if not failure.what.startswith("flash_attention raised ValueError"):
                raise failure.copy(what="flash_attention must raise ValueError when k and v "
                                        "do not have q's length", input=label,
                                   expected=expected, got=failure.what) from None
            message = failure.what.partition(": ")[2]
            if not (re.search(rf"\b{kv_len}\b", message) and re.search(r"\b32\b", message)):
                raise CheckFailure("the ValueError's message does not name both lengths",
                                   input=label, expected=expected, got=repr(message)) from None
        else:
            raise CheckFailure("flash_attention returned a result although k and v do not "
                               "have q's length", input=label, expected=expected,
                               got="a result", hint=f"a grid that follows q's length would "
                               f"{without}; the handout asks for a ValueError before any "
                               "pallas_call")


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
        # Verified: the shapes are the intended ones once a leading 1 is read as None.
        squeeze = [tuple(None if i == 0 and b == 1 else b for i, b in enumerate(op.block_shape))
                   for op in g_ops] == [tuple(op.block_shape) for op in e_ops]
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
                diagnosis = diagnose_kv_heads(np.asarray(g_ops[0].block_indices)[:, 0],
                                               np.asarray(g_op.block_indices)[:, 0],
                                               case.k.shape[0])
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


# --- Task 4.7 flash_attention_kernel_microtiled ----------------------------------------------

@dataclasses.dataclass(frozen=True)
class MicroCase:
    """A drawn attention problem (``base``: no soft cap, no constant) and the
    ``bkv_compute`` of the micro-tiled kernel (a proper divisor of ``base.block_kv``)."""

    base: AttentionCase
    bkv_compute: int

    @property
    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.base.args

    @property
    def kwargs(self) -> dict[str, object]:
        return {"sm_scale": self.base.scale, "causal": self.base.causal,
                "block_q": self.base.block_q, "block_kv": self.base.block_kv,
                "bkv_compute": self.bkv_compute}

    @property
    def intended(self) -> int:
        """Elements of the largest intermediate of a micro-tiled kernel: block_q · bkv_compute
        (the draws keep d and dv <= bkv_compute where this is graded)."""
        return self.base.block_q * self.bkv_compute

    def __repr__(self) -> str:
        return f"{self.base!r}, bkv_compute = {self.bkv_compute}"


@st.composite
def micro_cases(draw, *, causal: bool | None = None, narrow_heads: bool = False) -> MicroCase:
    """Drawn problems for Task 4.7: H 1-6 with a GQA group, block_q 8/16/32, block_kv
    16/32/64, bkv_compute 8/16/32 below block_kv (a divisor), L a multiple of both blocks
    (up to 128), f32 or bf16, ``causal`` drawn unless given; d and dv 4-48, or no larger
    than bkv_compute with ``narrow_heads`` (then the score tile is the largest array a
    micro-tiled kernel computes)."""
    kv_heads, group = draw(st.sampled_from(HEAD_GROUPS))
    heads = kv_heads * group
    block_q = draw(st.sampled_from([8, 16, 32]))
    block_kv = draw(st.sampled_from([32, 16, 64]))
    bkv_compute = draw(st.sampled_from([c for c in (8, 16, 32) if c < block_kv]))
    unit = math.lcm(block_q, block_kv)
    length = unit * draw(st.integers(1, max(1, min(3, 128 // unit))))
    top = bkv_compute if narrow_heads else 48
    d, dv = draw(st.integers(4, top)), draw(st.integers(4, top))
    dtype = draw(st.sampled_from([F32, BF16]))
    is_causal = draw(st.booleans()) if causal is None else causal
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-4, 4, (heads, length, d)).astype(dtype)
    k = rng.uniform(-4, 4, (kv_heads, length, d)).astype(dtype)
    v = rng.uniform(-4, 4, (kv_heads, length, dv)).astype(dtype)
    scale = round(draw(st.sampled_from([1.0, 0.25, 2.0])) / math.sqrt(d), 6)
    base = AttentionCase(q, k, v, scale, is_causal, block_q, block_kv, None, None, seed)
    return MicroCase(base, bkv_compute)


def _micro_values(s: Session, case: MicroCase) -> None:
    """Run the micro-tiled kernel in the grader's call and compare with dense attention."""
    got = s.invoke("flash_attention_kernel_microtiled", case.args, case.kwargs,
                   harness="a4").value
    _check_attention(got, case.base, "the micro-tiled kernel's output")


@check(A, "4.7", 2, "flash_attention_kernel_microtiled, run in the grader's pallas_call, equals "
                    "dense float64 attention (drawn heads, GQA, blocks, bkv_compute < block_kv, "
                    "f32/bf16; no mask)")
def microtiled_values(s: Session) -> None:
    """Task 4.7: flash_attention_kernel_microtiled, run in the grader's pallas_call, equals dense
    float64 attention (drawn heads, GQA, blocks, bkv_compute < block_kv, f32/bf16; no mask).
    """
    run_property(micro_cases(causal=False), lambda case: _micro_values(s, case),
                 max_examples=5)


@check(A, "4.7", 1, "with causal=True the micro-tiled kernel masks key position > query "
                    "position, counting the slice's offset inside the kv block")
def microtiled_causal_values(s: Session) -> None:
    """Task 4.7: with causal=True the micro-tiled kernel masks key position > query position,
    counting the slice's offset inside the kv block.
    """
    run_property(micro_cases(causal=True), lambda case: _micro_values(s, case),
                 max_examples=6)


def _largest_failure(largest: int, *, block_q: int, block_kv: int,
                     bkv_compute: int) -> CheckFailure:
    """The failure for a largest intermediate other than block_q · bkv_compute; the
    diagnosis "bkv_compute is ignored" only when it is exactly block_q · block_kv."""
    ignored = largest == block_q * block_kv
    return CheckFailure(
        "the largest array the kernel computes is not one [block_q, bkv_compute] tile",
        expected=f"largest intermediate {block_q} × {bkv_compute} = {block_q * bkv_compute} "
                 "elements",
        got=f"{largest} elements"
            + (f" = {block_q} × {block_kv}, a whole [block_q, block_kv] tile" if ignored else ""),
        diagnosis=("bkv_compute is ignored: the kernel scores the whole kv block at once, so "
                   "the largest intermediate is [block_q, block_kv] although the values are "
                   "right. Loop over the block bkv_compute keys at a time "
                   "(k_ref[pl.ds(start, bkv_compute), :]) and update m, l and acc after each "
                   "slice (lecture §5.3)") if ignored else None,
        hint=None if ignored else
        "the trace counts every array an op produces in the kernel (arithmetic, exp, casts, "
        "products; not ref loads or broadcast_to): keep per-row values as (block_q, 1) "
        "columns and score one slice of keys at a time")


@check(A, "4.7", 1, "micro-tiling: with d, dv <= bkv_compute, the largest array the kernel "
                    "computes (trace: largest_intermediate) is block_q × bkv_compute, not "
                    "block_q × block_kv, and the output is right (lecture §5.3)")
def microtiled_largest_intermediate(s: Session) -> None:
    """Task 4.7: micro-tiling: with d, dv <= bkv_compute, the largest array the kernel computes
    (trace: largest_intermediate) is block_q × bkv_compute, not block_q × block_kv, and the
    output is right (lecture §5.3).
    """
    def body(case: MicroCase) -> None:
        reply = s.invoke("flash_attention_kernel_microtiled", case.args,
                         {**case.kwargs, "report_largest": True}, harness="a4")
        value = reply.value
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise CheckFailure("the grader's call returned no trace figure", status="error",
                               internal=True)
        _check_attention(value[0], case.base, "the micro-tiled kernel's output")
        largest = int(value[1])
        if largest != case.intended:
            raise _largest_failure(largest, block_q=case.base.block_q,
                                   block_kv=case.base.block_kv, bkv_compute=case.bkv_compute)
    run_property(micro_cases(narrow_heads=True), body, max_examples=4)


@check(A, "4.7", 1, "worked answers at the lecture's sizes (shapes only, bf16, d 192, dv 128): "
                    "4096 × 4096 blocks with bkv_compute 1024 keep two f32 score tiles of "
                    "32 MiB instead of 128 MiB; 2048 × 2048 with bkv_compute 512, 8 MiB")
def microtiled_worked(s: Session) -> None:
    """Task 4.7: worked answers at the lecture's sizes (shapes only, bf16, d 192, dv 128): 4096 ×
    4096 blocks with bkv_compute 1024 keep two f32 score tiles of 32 MiB instead of 128 MiB;
    2048 × 2048 with bkv_compute 512, 8 MiB.
    """
    for (block_q, block_kv, bkv_compute), mib in worked.MICROTILED_MIB.items():
        length = max(block_q, block_kv)
        shapes = ([1, length, worked.HEAD_DIM], [1, length, worked.HEAD_DIM],
                  [1, length, worked.VALUE_DIM])
        where = (f"q, k = bf16[1, {length}, {worked.HEAD_DIM}], v = bf16[1, {length}, "
                 f"{worked.VALUE_DIM}] (shapes only), block_q = {block_q}, block_kv = "
                 f"{block_kv}, bkv_compute = {bkv_compute}, causal = False")
        try:
            largest = int(s.invoke(
                "flash_attention_kernel_microtiled", shapes,
                {"sm_scale": worked.HEAD_DIM ** -0.5, "causal": False, "block_q": block_q,
                 "block_kv": block_kv, "bkv_compute": bkv_compute,
                 "abstract_dtype": "bfloat16"}, harness="a4").value)
        except CheckFailure as failure:
            raise failure.copy(input=where) from None
        if largest != block_q * bkv_compute:
            failure = _largest_failure(largest, block_q=block_q, block_kv=block_kv,
                                       bkv_compute=bkv_compute)
            raise failure.copy(input=where) from None
        got_mib = worked.score_tile_mib(block_q, bkv_compute)
        if got_mib != mib:  # the worked table and its formula disagree: a grader bug
            raise CheckFailure(f"worked answer {mib} MiB != {got_mib} MiB", status="error",
                               internal=True)


# --- Task 4.8 choose_flash_config (performance) --------------------------------------------

#: Full points within this fraction above the fastest legal candidate's predicted time.
PERFORMANCE_RTOL = worked.PERFORMANCE_RTOL
#: Seconds the worker may take for the abstract run: the slowest candidate, 256 x 256
#: (32 768 grid steps, one head's slab copied to the others), takes about 0.3 s in-process.
PERFORMANCE_TIMEOUT = 30.0
_PERF_H, _PERF_L, _PERF_D = ref.PERFORMANCE_Q_SHAPE
_PERF_DV = ref.PERFORMANCE_V_SHAPE[2]
_PERF_LABEL = (f"bf16 q, k [{_PERF_H}, {_PERF_L}, {_PERF_D}], v [{_PERF_H}, {_PERF_L}, "
               f"{_PERF_DV}], non-causal, on one Ironwood TensorCore (lecture §5.3)")
#: One Ironwood TensorCore's peak bf16 FLOP/s (lecture §4.2), for the floor below.
PEAK_FLOPS = 1028.75e12
MiB = worked.MiB


@functools.lru_cache(maxsize=1)
def best_flash_candidate() -> tuple[tuple[int, int, float | None], float]:
    """(the fastest legal candidate, its predicted seconds), predicted with the reference.

    The search over all 50 candidates takes about two seconds, so its winner is kept in
    the reference (``ref.BEST_FLASH_CONFIG``, recomputed by tests/test_reference_a4.py);
    only its time is predicted here, once per grading process (a few ms).
    """
    config = tuple(ref.BEST_FLASH_CONFIG)
    return config, ref.predicted_flash_time(config)


def _validate_flash_config(reply: object) -> tuple[int, int, float | None]:
    """The chosen configuration from the harness's reply (plain data). Raises
    ``CheckFailure``: not (int, int, float or None), or outside the candidate sets."""
    if not isinstance(reply, dict) or not isinstance(reply.get("config"), list):
        got = reply.get("config") if isinstance(reply, dict) else repr(reply)
        raise CheckFailure("choose_flash_config() must return (block_q, block_kv, "
                           "max_logit_const): two ints and a float or None",
                           expected=f"e.g. (512, 512, None) or (512, 512, {worked.MLE_CONSTANT})",
                           got=str(got)[:200])
    values = reply["config"]
    sizes, constants = ref.FLASH_BLOCK_CANDIDATES, ref.FLASH_MLE_CANDIDATES
    if not (len(values) == 3 and type(values[0]) is int and type(values[1]) is int
            and values[0] in sizes and values[1] in sizes
            and (values[2] is None or type(values[2]) is float) and values[2] in constants):
        raise CheckFailure("choose_flash_config() returned a value outside the candidate sets",
                           expected=f"block_q and block_kv each one of {list(sizes)}; "
                                    f"max_logit_const None or {worked.MLE_CONSTANT}",
                           got=str(tuple(values))[:200])
    return values[0], values[1], values[2]


def _tiles_fit(config: tuple[int, int, float | None], record: step_model.StepRecord
               ) -> tuple[bool, int, int]:
    """(fits, bytes needed, capacity): the standard call's blocks and scratch, the
    kernel's run_scoped VMEM and two f32 tiles of the largest array it computes, within
    the TensorCore's 64 MiB (the rule of Task 4.8: the model allocates no intermediates)."""
    blocks, _ = timing.vmem(config)
    tiles = ref.SCORE_TILE_BYTES_PER_ELEMENT * record.largest_intermediate
    need, capacity = blocks + record.scoped_vmem_bytes + tiles, ref.flash_vmem_capacity()
    return need <= capacity, need, capacity


def _require_flash_fits(config: tuple[int, int, float | None]) -> None:
    """The chosen blocks and scratch fit the standard call's 32 MiB scoped VMEM."""
    if not timing.fits(config):
        used, limit = timing.vmem(config)
        raise CheckFailure(f"({config[0]}, {config[1]}) does not fit the 32 MiB scoped VMEM",
                           input=_PERF_LABEL, expected=f"at most {limit / MiB:.0f} MiB",
                           got=f"{used / MiB:.1f} MiB of blocks and scratch")


def _flash_verified(reply: dict, config: tuple[int, int, float | None], *, whose: str
                    ) -> step_model.StepRecord:
    """The student's kernel's per-step work at ``config``, measured concretely (values
    checked against dense float64 attention on the grader's sample, within
    ``timing.VALUE_RTOL`` of softmax · |v|) and equal to the abstract run's, with its
    score tiles within the VMEM.

    Raises:
      CheckFailure: it raised, computed wrong values, did different work on shapes only,
        ran fewer MXU FLOPs per step than its two block products, or its tiles do not fit.
    """
    key = timing.key(config)
    rows, cols = timing.sample_of(config)
    where = f"{whose} {config}"
    steps = timing.small_steps(config)
    concrete = step_model.parse_record((reply.get("concrete") or {}).get(key),
                                       num_steps=steps, sample_shape=(len(rows), len(cols)))
    if isinstance(concrete, step_model.KernelRaised):
        raise CheckFailure(f"your flash_attention_kernel raised in the grader's standard "
                           f"pallas_call at {where}", input=_PERF_LABEL, got=concrete.error)
    expected, magnitude = timing.expected_sample(config)
    got = concrete.sample.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - expected) <= timing.VALUE_RTOL * magnitude)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise CheckFailure(
            f"your flash_attention_kernel's output at {where} is wrong, so its time is not "
            "given (Task 4.3 grades the kernel's values)",
            input=_PERF_LABEL + f"; {len(rows)} × {len(cols)} output elements checked of "
                                f"one head of length {timing.small_length(config)}, seeded",
            expected=f"dense float64 attention within {timing.VALUE_RTOL:g}·(softmax · |v|); "
                     f"at query {rows[r]}, column {cols[c]}: {expected[r, c]:.6g}",
            got=f"{int(bad.sum())} of {bad.size} wrong; there: {got[r, c]:.6g}")
    abstract = step_model.parse_record((reply.get("abstract") or {}).get(key),
                                       num_steps=steps)
    if isinstance(abstract, step_model.KernelRaised):
        raise CheckFailure(f"your kernel raised on shapes only at {where} (it ran on data)",
                           input=_PERF_LABEL, got=abstract.error,
                           hint="a kernel's work must not depend on whether its blocks hold "
                                "values (pallas_sim.estimate runs the same kernel on shapes "
                                "only)")
    step_model.require_same_work(concrete, abstract, where=where, input=_PERF_LABEL)
    bq, bkv, _ = config
    step_model.require_step_flops(
        concrete, 2 * bq * bkv * (_PERF_D + _PERF_DV), input=_PERF_LABEL,
        message=f"your flash_attention_kernel at {where} does not compute its two block "
                "products: a step ran fewer MXU FLOPs than 2·block_q·block_kv·(d + dv)")
    ok, need, capacity = _tiles_fit(config, concrete)
    if not ok:
        raise CheckFailure(
            f"({bq}, {bkv}) does not fit the TensorCore's VMEM once the score tiles are "
            "counted",
            input=_PERF_LABEL,
            expected=f"blocks, scratch and score tiles within {capacity / MiB:.0f} MiB",
            got=f"{need / MiB:.1f} MiB, with two f32 tiles of the largest array your kernel "
                f"computes ({concrete.largest_intermediate} elements)",
            diagnosis="the f32 scores and their exp, [block_q, block_kv] each, live in VMEM "
                      "during a step (lecture §5.3: 128 MiB at 4096 x 4096; Task 4.7)")
    return concrete


def _flash_legal() -> list[tuple[int, int, float | None]]:
    """The candidates whose blocks and scratch fit the grader's call and whose score tiles,
    as the reference kernel computes them, fit the VMEM (the student's own needs are
    checked only at their choice, where their kernel runs)."""
    return [c for c in timing.all_candidates()
            if timing.fits(c) and _tiles_fit(c, timing.reference_record(c))[0]]


def projected_best(config: tuple[int, int, float | None], record: step_model.StepRecord
                   ) -> tuple[tuple[tuple[int, int, float | None], float], dict,
                              dict[tuple[int, int, float | None], step_model.StepRecord]]:
    """The fastest legal candidate for the student's kernel, its work measured (verified)
    only at the chosen ``config`` and projected elsewhere from the reference kernel's
    (``timing.projected``): ((candidate, seconds), the times computed, the records by
    candidate). At ``config`` the time is the measured record's own."""
    legal = _flash_legal()
    if config not in legal:
        legal.append(config)
    records = {c: timing.projected(c, config, record) for c in legal}
    found, seen = step_model.sweep_times(
        records, lambda c: timing.lower_bound(c, records[c]),
        lambda c: float(timing.full_timeline(c, records[c]).time_s))
    assert found is not None
    return found, seen, records


def _flash_measure(s: Session) -> dict:
    """The student's choice and their kernel's measured runs at it, concrete and abstract
    (one worker round trip per session; no other candidate is run). Raises
    ``CheckFailure``: the chooser raised."""
    kwargs = {"q_shape": ref.PERFORMANCE_Q_SHAPE, "v_shape": ref.PERFORMANCE_V_SHAPE,
              "chip": ref.PERFORMANCE_CHIP, "block_candidates": ref.FLASH_BLOCK_CANDIDATES,
              "mle_candidates": ref.FLASH_MLE_CANDIDATES, "problems": timing.problems(),
              "sweep": (), "concrete": ()}
    outcome = performance.invoke_once(s, "choose_flash_config", kwargs, harness="a4",
                                      timeout=PERFORMANCE_TIMEOUT)
    if isinstance(outcome, CheckFailure):
        raise outcome.copy(input=_PERF_LABEL)
    return outcome  # type: ignore[return-value]


def _flash_chosen_time(s: Session):
    """(reply, chosen config, its verified record, its full-size timeline)."""
    reply = _flash_measure(s)
    config = _validate_flash_config(reply)
    _require_flash_fits(config)
    record = _flash_verified(reply, config, whose="your configuration")
    return reply, config, record, timing.full_timeline(config, record)


def _choice_diagnosis(config, got_s: float, fastest, best_s: float,
                      seen: dict) -> str:
    """What is wrong with the choice, on the student's kernel's measured work, projected:
    MLE off at the same blocks, or the blocks."""
    bq, bkv, constant = config
    same_blocks = (bq, bkv, ref.FLASH_MLE_CANDIDATES[-1])
    changed = [f"{name} {want} instead of {have}" for name, want, have in
               (("block_q", fastest[0], bq), ("block_kv", fastest[1], bkv)) if want != have]
    blocks_text = (f"the fastest candidate on your kernel's measured work, projected, is "
                   f"{fastest} ({', '.join(changed)})")
    if constant is None and same_blocks in seen:
        mle_s = seen[same_blocks]
        if got_s > mle_s:
            mle = (f"MLE off costs {got_s / mle_s - 1:.0%} here: with max_logit_const "
                   f"{ref.FLASH_MLE_CANDIDATES[-1]:g} your kernel at the same blocks is "
                   f"predicted {mle_s * 1e3:.3f} ms (its measured work, projected; no row "
                   "maximum, no rescale; §5.4)")
            if mle_s <= best_s * (1 + PERFORMANCE_RTOL) or not changed:
                return mle
            # MLE alone does not reach the bar: the blocks are wrong too (both are named,
            # so that fixing one is not charged again for the other).
            return (f"{mle}; and the blocks are {step_model.ratio_text(mle_s, best_s)} even "
                    f"with MLE: {blocks_text}")
    if changed:
        return (f"{config} is {step_model.ratio_text(got_s, best_s)} than {fastest} on your "
                f"kernel's measured work, projected ({', '.join(changed)})")
    return (f"{config} is {step_model.ratio_text(got_s, best_s)} than {fastest} on your "
            "kernel's measured work, projected")


@check(A, "4.8", 3, "performance: choose_flash_config() returns a candidate (block_q, "
                    "block_kv, max_logit_const) at which your flash_attention_kernel, in the "
                    "grader's standard pallas_call, runs the lecture's attention with checked "
                    "values, its blocks, scratch and score tiles within the 64 MiB of VMEM")
def flash_config_fits(s: Session) -> None:
    """Task 4.8: performance: choose_flash_config() returns a candidate (block_q, block_kv,
    max_logit_const) at which your flash_attention_kernel, in the grader's standard
    pallas_call, runs the lecture's attention with checked values, its blocks, scratch and
    score tiles within the 64 MiB of VMEM.
    """
    _, _, _, line = _flash_chosen_time(s)
    measures.record(s, measures.PREDICTED_MS, line.time_s * 1e3)


@check(A, "4.8", 7, "performance: your configuration is predicted within 10 % of the best "
                    "candidate for your own kernel (every legal candidate, your kernel's work "
                    "measured per grid step at your configuration and projected onto the "
                    "others from the reference's, the full size predicted by the model; "
                    "lecture §5.3, §5.4)")
def flash_config_fast(s: Session) -> None:
    """Task 4.8: performance: your configuration is predicted within 10 % of the best
    candidate for your own kernel (every legal candidate, your kernel's work measured per
    grid step at your configuration and projected onto the others from the reference's,
    the full size predicted by the model; lecture §5.3, §5.4).
    """
    _, config, record, line = _flash_chosen_time(s)
    got_s = float(line.time_s)
    (fastest, best_s), seen, records = projected_best(config, record)
    if got_s <= best_s * (1 + PERFORMANCE_RTOL):
        return
    bq, bkv, constant = config
    same = (bq, bkv, ref.FLASH_MLE_CANDIDATES[-1])
    if constant is None and same in records and same not in seen:
        seen[same] = float(timing.full_timeline(same, records[same]).time_s)
    raise CheckFailure(
        f"your configuration {config} is predicted {step_model.ratio_text(got_s, best_s)} "
        f"than {fastest}, the best candidate for your own kernel", input=_PERF_LABEL,
        expected=f"at most {best_s * (1 + PERFORMANCE_RTOL) * 1e3:.3f} ms "
                 f"({PERFORMANCE_RTOL * 100:g} % above your kernel's {best_s * 1e3:.3f} ms "
                 f"at {fastest}, its work there projected from what it measured at your "
                 "configuration)",
        got=f"{got_s * 1e3:.3f} ms, MFU {line.mfu:.0%}",
        diagnosis=_choice_diagnosis(config, got_s, fastest, best_s, seen))
