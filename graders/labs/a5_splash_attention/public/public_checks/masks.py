"""Tasks 5.1 masks and 5.2 classify and render."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Api, Mismatch, describe, public_check

from .common import A, MaskCase, _kinds, _same, mask_cases

# -- Task 5.1 ------------------------------------------------------------------------------------

@public_check(A, "5.1", "masks equal their formulas: q + offset >= kv; q - left <= kv <= "
                        "q + right; equal segment ids")
def masks_property(api: Api) -> None:
    """Task 5.1: masks equal their formulas: q + offset >= kv; q - left <= kv <= q + right; equal
    segment ids.
    """
    @st.composite
    def cases(draw) -> dict:
        side = st.one_of(st.none(), st.integers(0, 26))
        return {"q": draw(st.integers(1, 24)), "kv": draw(st.one_of(st.none(),
                                                                    st.integers(1, 24))),
                "offset": draw(st.integers(-6, 30)), "window": (draw(side), draw(side)),
                "ids": draw(st.lists(st.integers(0, 3), min_size=1, max_size=20)),
                "kv_ids": draw(st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=1,
                                                             max_size=20)))}

    def body(case: dict) -> None:
        kv_len = case["q"] if case["kv"] is None else case["kv"]
        q = np.arange(case["q"])[:, None]
        kv = np.arange(kv_len)[None, :]
        _same(api.call("causal_mask", case["q"], case["kv"], offset=case["offset"]).value,
              q + case["offset"] >= kv, "causal_mask", dtype=True)
        left, right = case["window"]
        expected = np.ones((case["q"], kv_len), bool)
        if left is not None:
            expected &= q - left <= kv
        if right is not None:
            expected &= kv <= q + right
        _same(api.call("local_mask", case["q"], case["window"], case["kv"]).value, expected,
              "local_mask", dtype=True)
        ids = np.asarray(case["ids"], np.int32)
        kv_ids = ids if case["kv_ids"] is None else np.asarray(case["kv_ids"], np.int32)
        _same(api.call("segment_mask", ids, None if case["kv_ids"] is None else kv_ids).value,
              ids[:, None] == kv_ids[None, :], "segment_mask", dtype=True)

    fixed = {"q": 5, "kv": 7, "offset": -2, "window": (1, 2), "ids": [0, 0, 1, 1, 2],
             "kv_ids": [0, 1, 1, 2, 2, 2, 0]}  # kv_len and kv ids of their own
    try:
        body(fixed)
    except Mismatch as failure:
        failure.input = describe(fixed)
        raise
    api.run_property(cases(), body)


# -- Task 5.2 ------------------------------------------------------------------------------------

def _causal(length: int) -> np.ndarray:
    return np.tril(np.ones((length, length), bool))


@public_check(A, "5.2", "worked answers: causal L 8, block 2 renders as P/F/· rows; causal "
                        "4096 with blocks (1024, 2048) is [[1,0],[1,0],[2,1],[2,1]] "
                        "(lecture §6.1, §6.2)")
def classify_worked(api: Api) -> None:
    """Task 5.2: worked answers: causal L 8, block 2 renders as P/F/· rows; causal 4096 with
    blocks (1024, 2048) is [[1,0],[1,0],[2,1],[2,1]] (lecture §6.1, §6.2).
    """
    blocks = api.call("classify_blocks", _causal(8), 2, 2).value
    picture = api.call("render_block_mask", np.asarray(blocks)).value
    expected = "P · · ·\nF P · ·\nF F P ·\nF F F P"
    if picture != expected:
        raise Mismatch("the causal picture differs", input="causal L 8, blocks (2, 2)",
                       expected="\n" + expected, got="\n" + str(picture))
    _same(api.call("classify_blocks", _causal(4096), 1024, 2048).value,
          np.array([[1, 0], [1, 0], [2, 1], [2, 1]]), "classify_blocks(causal 4096)")


@public_check(A, "5.2", "classify_blocks gives int8 0 (empty) / 1 (partial) / 2 (full) per tile "
                        "and render_block_mask draws '·' / 'P' / 'F' joined by spaces, on drawn "
                        "masks and tilings")
def classify_property(api: Api) -> None:
    """Task 5.2: classify_blocks gives int8 0 (empty) / 1 (partial) / 2 (full) per tile and
    render_block_mask draws '·' / 'P' / 'F' joined by spaces, on drawn masks and tilings.
    """
    def body(case: MaskCase) -> None:
        expected = _kinds(case.mask, case.block_q, case.block_kv)
        got = api.call("classify_blocks", case.mask, case.block_q, case.block_kv).value
        _same(got, expected, "classify_blocks", dtype=True)
        picture = "\n".join(" ".join("·PF"[kind] for kind in row) for row in expected)
        drawn = api.call("render_block_mask", expected).value
        if drawn != picture:
            raise Mismatch("render_block_mask differs", expected=repr(picture), got=repr(drawn))
    api.run_property(mask_cases(), body)
