"""Task 4.2 merge and finalize."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

import reference.a4_flash_attention as ref
from graders.checking.compare import as_array, assert_close, fmt_array, tolerance
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import Case, make_array, seeds
from graders.labs.a4_flash_attention.hidden.diagnose import same_values

from .common import F32, F64, SCALES, A, _without_nan_guess
from .softmax import _kind

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
