"""Public checks of a4_flash_attention (lecture §5): worked answers and NumPy softmax oracles."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import (
    Api,
    Mismatch,
    arrays,
    as_float_array,
    assert_close,
    public_check,
    seeds,
)

A = "a4"


def _softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


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


@public_check(A, "4.1", "worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), "
                        "block 2 (lecture §5.1)")
def online_softmax_worked(api: Api) -> None:
    worked = [((1, 3, 2, 5, 0, 4), [(3, 1.1353), (5, 1.2034), (5, 1.5781)]),
              ((2, 0, 4, 1), [(2, 1.1353), (4, 1.2034)])]
    for xs, trace in worked:
        x = np.asarray(xs, np.float32)
        _, got = _pairs(api.call("online_softmax", x, 2).value, len(trace))
        for k, ((gm, gl), (em, el)) in enumerate(zip(got, trace, strict=True)):
            if not (np.allclose(gm, em, rtol=5e-3) and np.allclose(gl, el, rtol=5e-3)):
                shown = ", ".join(f"({float(m):.5g}, {float(l):.5g})" for m, l in got)
                raise Mismatch(f"the (m, l) pair after block {k} differs from the lecture's",
                               input=f"x = {list(xs)}, block_size = 2", expected=str(trace),
                               got=f"[{shown}]")


@st.composite
def softmax_cases(draw) -> dict:
    rows = draw(st.one_of(st.none(), st.integers(1, 4)))
    n = draw(st.integers(1, 24))
    low, high = draw(st.sampled_from([(-4.0, 4.0), (40.0, 90.0)]))
    shape = (n,) if rows is None else (rows, n)
    return {"x": arrays(shape, draw(seeds), low=low, high=high),
            "block_size": draw(st.integers(1, 8))}


@public_check(A, "4.1", "probabilities equal softmax(x) over the last axis; after block k the "
                        "trace holds m = max of the columns seen and l = Σ exp(x - m) over them")
def online_softmax_property(api: Api) -> None:
    def body(case: dict) -> None:
        x, block = case["x"], case["block_size"]
        n_blocks = -(-x.shape[-1] // block)
        probs, pairs = _pairs(api.call("online_softmax", x, block).value, n_blocks)
        assert_close(probs, _softmax(x), rtol=1e-4, atol=1e-7, what="probs")
        x64 = x.astype(np.float64)
        for k, (m, l) in enumerate(pairs):
            seen = x64[..., : (k + 1) * block]
            m_true = seen.max(axis=-1)
            assert_close(m, m_true, rtol=1e-5, atol=1e-6, what=f"m after block {k}")
            assert_close(l, np.exp(seen - m_true[..., None]).sum(axis=-1), rtol=1e-4,
                         atol=1e-6, what=f"l after block {k}")
    api.run_property(softmax_cases(), body)


def _state(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    m = scores.max(axis=-1)
    p = np.exp(scores - m[..., None])
    return m, p.sum(axis=-1), p @ values


@st.composite
def two_parts(draw) -> dict:
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
    def body(case: dict) -> None:
        (s1, v1), (s2, v2) = case["parts"]
        a, b = _f32(_state(s1, v1)), _f32(_state(s2, v2))
        whole = _state(np.concatenate([s1, s2], -1), np.concatenate([v1, v2], 0))
        for order, got in (("merge(a, b)", _merged(api, a, b)),
                           ("merge(b, a)", _merged(api, b, a))):
            for name, g, e in zip(("m", "l", "acc"), got, whole, strict=True):
                assert_close(g, e, rtol=1e-4, atol=1e-5, what=f"{name} of {order}")
    api.run_property(two_parts(), body)


@public_check(A, "4.2", "finalize_attention_state returns acc / l")
def finalize_property(api: Api) -> None:
    def body(case: dict) -> None:
        scores, values = case["parts"][0]
        state = _f32(_state(scores, values))
        got = api.call("finalize_attention_state", state).value
        expected = state[2].astype(np.float64) / state[1].astype(np.float64)[..., None]
        assert_close(got, expected, rtol=1e-5, atol=1e-6, what="the normalized output")
    api.run_property(two_parts(), body)
