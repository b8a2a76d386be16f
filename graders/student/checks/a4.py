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
    number,
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
    """Task 4.1: worked answers: x = (1, 3, 2, 5, 0, 4) and Ex7 x = (2, 0, 4, 1), block 2
    (lecture §5.1).
    """
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
    """Strategy: x ([n] or [rows, n], f32/f64, three logit scales) and a block size."""
    rows = draw(st.one_of(st.none(), st.integers(1, 4)))
    n = draw(st.integers(1, 24))
    low, high = draw(st.sampled_from([(-4.0, 4.0), (40.0, 90.0)]))
    shape = (n,) if rows is None else (rows, n)
    return {"x": arrays(shape, draw(seeds), low=low, high=high),
            "block_size": draw(st.integers(1, 8))}


@public_check(A, "4.1", "probabilities equal softmax(x) over the last axis; after block k the "
                        "trace holds m = max of the columns seen and l = Σ exp(x - m) over them")
def online_softmax_property(api: Api) -> None:
    """Task 4.1: probabilities equal softmax(x) over the last axis; after block k the trace holds
    m = max of the columns seen and l = Σ exp(x - m) over them.
    """
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


@st.composite
def attention_cases(draw) -> dict:
    """Strategy: small q, k, v (and GQA head counts) for the public attention check."""
    heads, group = draw(st.sampled_from([(1, 1), (2, 1), (2, 2)]))
    block_q, block_kv = draw(st.sampled_from([8, 16])), draw(st.sampled_from([8, 16]))
    length = max(block_q, block_kv) * draw(st.integers(1, 2))
    d, dv = draw(st.sampled_from([4, 8])), draw(st.sampled_from([4, 8]))
    return {"q": arrays((heads, length, d), draw(seeds)),
            "k": arrays((heads // group, length, d), draw(seeds)),
            "v": arrays((heads // group, length, dv), draw(seeds)),
            "causal": draw(st.booleans()), "block_q": block_q, "block_kv": block_kv}


def dense_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) v per head, query head h reading kv head h // group."""
    group = q.shape[0] // k.shape[0]
    k64, v64 = (np.repeat(a.astype(np.float64), group, axis=0) for a in (k, v))
    scores = q.astype(np.float64) @ k64.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if causal:
        length = q.shape[1]
        scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    return _softmax(scores) @ v64


@public_check(A, "4.4", "flash_attention equals dense softmax attention (causal or not, GQA)")
def flash_attention_values(api: Api) -> None:
    """Task 4.4: flash_attention equals dense softmax attention (causal or not, GQA)."""
    def body(case: dict) -> None:
        got = api.call("flash_attention", case["q"], case["k"], case["v"],
                       causal=case["causal"], block_q=case["block_q"],
                       block_kv=case["block_kv"])
        expected = dense_attention(case["q"], case["k"], case["v"], case["causal"])
        assert_close(got.value, expected, rtol=1e-4, atol=1e-5, what="the attention output")
    api.run_property(attention_cases(), body, max_examples=5)


@public_check(A, "4.5", "worked answer: scores in [-30, 40] → safe constants in about "
                        "(-48.7, 57.3) (lecture §5.3)")
def mle_worked(api: Api) -> None:
    """Task 4.5: worked answer: scores in [-30, 40] → safe constants in about (-48.7, 57.3)
    (lecture §5.3).
    """
    got = api.call("mle_safe_range", 40.0, -30.0).value
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise Mismatch("mle_safe_range must return (low, high)", got=repr(got)[:200])
    low, high = number(got[0], "low"), number(got[1], "high")
    if not (abs(low + 48.72) < 0.1 and abs(high - 57.34) < 0.1):
        raise Mismatch("the safe range differs from the lecture's",
                       expected="(-48.7, 57.3)", got=f"({low:.4g}, {high:.4g})")


@public_check(A, "4.6", "worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048); "
                        "XLA 24.75 GiB; 1.3744e12 FLOPs (lecture §5.2)")
def traffic_worked(api: Api) -> None:
    """Task 4.6: worked answers: Flash 1728 MiB (block_q 1024) and 1088 MiB (2048); XLA 24.75
    GiB; 1.3744e12 FLOPs (lecture §5.2).
    """
    MiB, GiB = 1 << 20, 1 << 30
    cases = [("flash_attention_hbm_bytes", (128, 4096, 192, 128, 1024), 1728 * MiB),
             ("flash_attention_hbm_bytes", (128, 4096, 192, 128, 2048), 1088 * MiB),
             ("xla_attention_hbm_bytes", (128, 4096, 192, 128), int(24.75 * GiB)),
             ("attention_flops", (128, 4096, 192, 128), 2 * 128 * 4096**2 * 320)]
    for func, args, expected in cases:
        got = api.call(func, *args).value
        if got != expected:
            raise Mismatch(f"{func} differs from the lecture's", input=f"{args}",
                           expected=str(expected), got=repr(got))


@public_check(A, "4.3", "flash_attention_kernel in the standard (head, q block, kv block) "
                        "pallas_call equals dense softmax attention")
def flash_kernel_values(api: Api) -> None:
    """Task 4.3: flash_attention_kernel in the standard (head, q block, kv block) pallas_call
    equals dense softmax attention.
    """
    def body(case: dict) -> None:
        got = api.kernel("a4", "flash_attention_kernel", case["q"], case["k"], case["v"],
                         sm_scale=1 / np.sqrt(case["q"].shape[-1]), causal=case["causal"],
                         block_q=case["block_q"], block_kv=case["block_kv"])
        expected = dense_attention(case["q"], case["k"], case["v"], case["causal"])
        assert_close(got, expected, rtol=1e-4, atol=1e-5, what="the attention output")
    api.run_property(attention_cases(), body, max_examples=5)
