"""Tasks 5.1 masks and 5.2 classify and render."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import strategies as st

import reference.a5_splash_attention as ref
from graders.checking.compare import fmt_array
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.labs.a5_splash_attention.public.public_checks.common import MaskCase

from .common import A, _assert_exact, mask_cases

# --- Task 5.1 masks ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Call:
    """Arguments of one call, printed as the call itself (the feedback's failing input)."""

    func: str
    args: tuple
    kwargs: dict

    def __repr__(self) -> str:
        shown = [fmt_array(a) if isinstance(a, np.ndarray) else repr(a) for a in self.args]
        shown += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.func}({', '.join(shown)})"


@st.composite
def causal_calls(draw: st.DrawFn) -> Call:
    """causal_mask calls: lengths 1..24 (kv_len may be None), offsets -6..30."""
    q_len = draw(st.integers(1, 24))
    kv_len = draw(st.one_of(st.none(), st.integers(1, 24)))
    return Call("causal_mask", (q_len, kv_len), {"offset": draw(st.integers(-6, 30))})


@check(A, "5.1", 4, "causal_mask(q_len, kv_len, offset=...) is True exactly where "
                    "q + offset >= kv (bool, drawn lengths and offsets of either sign)")
def causal_values(s: Session) -> None:
    """Task 5.1: causal_mask(q_len, kv_len, offset=...) is True exactly where q + offset >= kv
    (bool, drawn lengths and offsets of either sign).
    """
    def body(call: Call) -> None:
        got = s.invoke("causal_mask", call.args, call.kwargs).value
        _assert_exact(got, ref.causal_mask(*call.args, **call.kwargs), "the causal mask")
    run_property(causal_calls(), body, max_examples=20)


@st.composite
def local_calls(draw: st.DrawFn) -> Call:
    """local_mask calls: windows with either side None or 0..26, kv_len None or 1..24."""
    q_len = draw(st.integers(1, 24))
    side = st.one_of(st.none(), st.integers(0, 26))
    kv_len = draw(st.one_of(st.none(), st.integers(1, 24)))
    return Call("local_mask", (q_len, (draw(side), draw(side)), kv_len), {})


@check(A, "5.1", 3, "local_mask(q_len, (left, right), kv_len) is True exactly where "
                    "q - left <= kv <= q + right (None = unbounded side)")
def local_values(s: Session) -> None:
    """Task 5.1: local_mask(q_len, (left, right), kv_len) is True exactly where q - left <= kv <=
    q + right (None = unbounded side).
    """
    def body(call: Call) -> None:
        q_len, window, kv_len = call.args
        got = s.invoke("local_mask", call.args).value
        expected = ref.local_mask(q_len, window, kv_len)
        try:
            _assert_exact(got, expected, "the local mask")
        except CheckFailure as failure:
            left, right = window
            strict = ref.local_mask(q_len, (None if left is None else left - 1,
                                            None if right is None else right - 1), kv_len)
            if np.array_equal(np.asarray(got), strict):
                failure.diagnosis = ("the window's edges are excluded: both bounds are "
                                     "inclusive, q - left <= kv <= q + right (lecture §6.1)")
            raise
    run_property(local_calls(), body, max_examples=20)


@st.composite
def segment_calls(draw: st.DrawFn) -> Call:
    """segment_mask calls: int32 ids in 0..3, kv ids None or their own list."""
    q_ids = np.asarray(draw(st.lists(st.integers(0, 3), min_size=1, max_size=20)), np.int32)
    kv = draw(st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=1, max_size=20)))
    return Call("segment_mask", (q_ids, None if kv is None else np.asarray(kv, np.int32)), {})


@check(A, "5.1", 3, "segment_mask(q_ids, kv_ids) is True exactly where the ids are equal, "
                    "and combines with the other masks through &")
def segment_values(s: Session) -> None:
    """Task 5.1: segment_mask(q_ids, kv_ids) is True exactly where the ids are equal, and
    combines with the other masks through &.
    """
    def body(call: Call) -> None:
        q_ids, kv_ids = call.args
        got = _assert_exact(s.invoke("segment_mask", (q_ids, kv_ids)).value,
                            ref.segment_mask(q_ids, kv_ids), "the document mask")
        causal = ref.causal_mask(got.shape[0], got.shape[1])
        _assert_exact(got & causal, ref.segment_mask(q_ids, kv_ids) & causal,
                      "segment_mask(...) & causal_mask(...)")
    run_property(segment_calls(), body, max_examples=15)


# --- Task 5.2 classify and render -----------------------------------------------------------

@check(A, "5.2", 5, "classify_blocks(mask, block_q, block_kv) gives int8 [nq, nkv] of 0 "
                    "(empty), 1 (partial), 2 (full) on drawn masks and tilings")
def classify_values(s: Session) -> None:
    """Task 5.2: classify_blocks(mask, block_q, block_kv) gives int8 [nq, nkv] of 0 (empty), 1
    (partial), 2 (full) on drawn masks and tilings.
    """
    def body(case: MaskCase) -> None:
        got = s.invoke("classify_blocks", (case.mask, case.block_q, case.block_kv)).value
        _assert_exact(got, ref.classify_blocks(case.mask, case.block_q, case.block_kv),
                      "the block kinds")
    run_property(mask_cases(), body, max_examples=20)


@check(A, "5.2", 3, "render_block_mask draws one line per q block with '·', 'P', 'F' "
                    "separated by single spaces")
def render_values(s: Session) -> None:
    """Task 5.2: render_block_mask draws one line per q block with '·', 'P', 'F' separated by
    single spaces.
    """
    def body(kinds: np.ndarray) -> None:
        got = s.invoke("render_block_mask", (kinds,)).value
        expected = ref.render_block_mask(kinds)
        if got != expected:
            raise CheckFailure("the block picture differs", expected=repr(expected),
                               got=repr(got))
    shapes = st.tuples(st.integers(1, 5), st.integers(1, 5))
    run_property(shapes.flatmap(lambda sh: st.lists(
        st.integers(0, 2), min_size=sh[0] * sh[1], max_size=sh[0] * sh[1]).map(
        lambda xs: np.asarray(xs, np.int8).reshape(sh))), body, max_examples=15)


_EX12_IDS = np.repeat([0, 1, 2], [1000, 2000, 1096])


@check(A, "5.2", 2, "worked answers: the causal L 8 picture in 2 x 2 blocks, the causal "
                    "(1024, 2048)-block grid, Ex12's three documents (lecture §6.1, §6.2, Ex12)")
def classify_worked(s: Session) -> None:
    """Task 5.2: worked answers: the causal L 8 picture in 2 x 2 blocks, the causal (1024,
    2048)-block grid, Ex12's three documents (lecture §6.1, §6.2, Ex12).
    """
    picture = "P · · ·\nF P · ·\nF F P ·\nF F F P"
    kinds = s.invoke("classify_blocks", (ref.causal_mask(8), 2, 2)).value
    kinds = _assert_exact(kinds, ref.classify_blocks(ref.causal_mask(8), 2, 2),
                          "the block kinds of causal_mask(8) in 2 x 2 blocks")
    got = s.invoke("render_block_mask", (kinds,)).value
    if got != picture:
        raise CheckFailure("the block picture of causal L 8 differs from the lecture's",
                           input="render_block_mask(classify_blocks(causal_mask(8), 2, 2))",
                           expected=repr(picture), got=repr(got))
    worked = [
        ("causal_mask(16), block_q = 4, block_kv = 8 (the lecture's causal 4096 with "
         "(1024, 2048) blocks, scaled by 1/256: the same tile grid)", ref.causal_mask(16), 4,
         8, [[1, 0], [1, 0], [2, 1], [2, 1]]),
        ("segment_mask(documents 1000/2000/1096), blocks 1024", ref.segment_mask(_EX12_IDS),
         1024, 1024, [[1, 1, 1, 0], [1, 2, 1, 0], [1, 1, 1, 1], [0, 0, 1, 2]]),
    ]
    for label, mask, bq, bkv, grid in worked:
        try:
            _assert_exact(s.invoke("classify_blocks", (mask, bq, bkv)).value,
                          np.asarray(grid, np.int8), "the block kinds")
        except CheckFailure as failure:
            failure.input = label
            raise
