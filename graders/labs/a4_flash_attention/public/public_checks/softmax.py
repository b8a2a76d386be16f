"""Tasks 4.1 online_softmax and 4.2 merge and finalize."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.labs.a4_flash_attention.public import worked
from graders.student.public import (
    Api,
    Mismatch,
    arrays,
    as_float_array,
    assert_close,
    describe,
    public_check,
    seeds,
)

from .common import A


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
