"""Checks of a4_flash_attention (lecture §5).  Graded so far: Tasks 4.1–4.2.

Softmax states are ``(m, l, acc)``: the running maximum, the sum of
``exp(s - m)`` and the unnormalized weighted sum of values.  Inputs are drawn
with scores on three scales, including logits large enough (40..90) that a
softmax which does not subtract the running maximum overflows float32.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import reference.a4_flash_attention as ref
from graders.checks.compare import as_array, assert_close, fmt_array, tolerance
from graders.checks.framework import CheckFailure, Session, check, run_property
from graders.checks.strategies import Case, make_array, seeds

A = "a4"
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
SCALES = [(-4.0, 4.0), (-30.0, 30.0), (40.0, 90.0)]


# --- Task 4.1 online_softmax ---------------------------------------------------------------

@st.composite
def softmax_cases(draw) -> Case:
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
    def body(case: Case) -> None:
        x, block = case.args
        probs, _ = _unpack_softmax(s.invoke("online_softmax", case.args).value, x, block)
        expected, _ = ref.online_softmax(x, block)
        assert_close(probs, expected, 1e-4, 1e-7, what="probs")
    run_property(softmax_cases(), body, max_examples=25)


@check(A, "4.1", 5, "online_softmax's trace holds the running (m, l) after each block")
def online_softmax_trace(s: Session) -> None:
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


@st.composite
def merge_cases(draw) -> Case:
    scores, values, desc = draw(split_rows(2))
    a, b = (_as_f32(_state(sc, v)) for sc, v in zip(scores, values, strict=True))
    return Case((a, b), {}, ("state_a", "state_b"))


@check(A, "4.2", 5, "merge_attention_states equals the reference merge of two states over "
                    "disjoint keys")
def merge_values(s: Session) -> None:
    def body(case: Case) -> None:
        got = _unpack_state(s.invoke("merge_attention_states", case.args).value,
                            "merge_attention_states")
        _assert_state(got, ref.merge_attention_states(*case.args), "the merged state")
    run_property(merge_cases(), body, max_examples=20)


@st.composite
def three_states(draw) -> Case:
    scores, values, _ = draw(split_rows(3))
    states = tuple(_as_f32(_state(sc, v)) for sc, v in zip(scores, values, strict=True))
    return Case(states, {}, ("a", "b", "c"))


@check(A, "4.2", 4, "merge is commutative and associative: merge(a, b) = merge(b, a) and "
                    "merge(merge(a, b), c) = merge(a, merge(b, c))")
def merge_algebra(s: Session) -> None:
    def merge(x: tuple, y: tuple) -> tuple[np.ndarray, ...]:
        return _unpack_state(s.invoke("merge_attention_states", (x, y)).value,
                             "merge_attention_states")

    def body(case: Case) -> None:
        a, b, c = case.args
        ab, ba = merge(a, b), merge(b, a)
        try:
            _assert_state(ba, ab, "merge(b, a) compared with merge(a, b)")
        except CheckFailure as failure:
            failure.diagnosis = "the merge treats its two arguments differently"
            raise
        left = merge(ab, c)
        right = merge(a, merge(b, c))
        _assert_state(right, left, "merge(a, merge(b, c)) compared with merge(merge(a, b), c)")
    run_property(three_states(), body, max_examples=10)


@check(A, "4.2", 3, "finalize_attention_state returns acc / l")
def finalize_values(s: Session) -> None:
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
