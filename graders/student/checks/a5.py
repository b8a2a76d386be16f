"""Public checks of a5_splash_attention (lecture §6): mask formulas and the worked answers."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Api, Mismatch, number, public_check

A = "a5"
FIELDS = ("active_rows", "active_cols", "block_mask", "mask_next", "partial_mask_blocks",
          "bounds_start", "bounds_end")


def _same(got: object, expected: np.ndarray, what: str) -> None:
    array = np.asarray(got)
    if array.shape != expected.shape or not np.array_equal(array, expected):
        raise Mismatch(f"{what} differs", expected=np.array2string(expected),
                       got=np.array2string(array))


@public_check(A, "5.1", "masks equal their formulas: q + offset >= kv; q - left <= kv <= "
                        "q + right; equal segment ids")
def masks_property(api: Api) -> None:
    """Task 5.1: masks equal their formulas: q + offset >= kv; q - left <= kv <= q + right; equal
    segment ids.
    """
    @st.composite
    def cases(draw) -> dict:
        return {"q": draw(st.integers(1, 12)), "kv": draw(st.integers(1, 12)),
                "offset": draw(st.integers(-4, 4)),
                "window": (draw(st.one_of(st.none(), st.integers(0, 4))),
                           draw(st.one_of(st.none(), st.integers(0, 4)))),
                "ids": draw(st.lists(st.integers(0, 2), min_size=1, max_size=12))}

    def body(case: dict) -> None:
        q = np.arange(case["q"])[:, None]
        kv = np.arange(case["kv"])[None, :]
        _same(api.call("causal_mask", case["q"], case["kv"], offset=case["offset"]).value,
              q + case["offset"] >= kv, "causal_mask")
        left, right = case["window"]
        expected = np.ones((case["q"], case["kv"]), bool)
        if left is not None:
            expected &= q - left <= kv
        if right is not None:
            expected &= kv <= q + right
        _same(api.call("local_mask", case["q"], case["window"], case["kv"]).value, expected,
              "local_mask")
        ids = np.asarray(case["ids"])
        _same(api.call("segment_mask", ids).value, ids[:, None] == ids[None, :],
              "segment_mask")
    api.run_property(cases(), body)


def _causal(length: int) -> np.ndarray:
    return np.tril(np.ones((length, length), bool))


@public_check(A, "5.2", "worked answers: causal L 8, block 2 renders as P/F/· rows; causal "
                        "4096 with blocks (1024, 2048) is [[1,0],[1,0],[2,1],[2,1]] (lecture §6.2)")
def classify_worked(api: Api) -> None:
    """Task 5.2: worked answers: causal L 8, block 2 renders as P/F/· rows; causal 4096 with
    blocks (1024, 2048) is [[1,0],[1,0],[2,1],[2,1]] (lecture §6.2).
    """
    blocks = api.call("classify_blocks", _causal(8), 2, 2).value
    picture = api.call("render_block_mask", np.asarray(blocks)).value
    expected = "P · · ·\nF P · ·\nF F P ·\nF F F P"
    if picture != expected:
        raise Mismatch("the causal picture differs", input="causal L 8, blocks (2, 2)",
                       expected="\n" + expected, got="\n" + str(picture))
    _same(api.call("classify_blocks", _causal(4096), 1024, 2048).value,
          np.array([[1, 0], [1, 0], [2, 1], [2, 1]]), "classify_blocks(causal 4096)")


@public_check(A, "5.3", "worked answer: causal 4096, blocks (1024, 2048) (lecture §6.3)")
def mask_info_worked(api: Api) -> None:
    """Task 5.3: worked answer: causal 4096, blocks (1024, 2048) (lecture §6.3)."""
    info = api.call("build_mask_info", _causal(4096), 1024, 2048).value
    T, F = True, False
    expected = {"active_rows": [0, 1, 2, 2, 3, 3], "active_cols": [0, 0, 0, 1, 0, 1],
                "block_mask": [1, 1, 2, 1, 2, 1], "mask_next": [0, 1, 0, 0, 1, 1],
                "bounds_start": [T, T, T, F, T, F], "bounds_end": [T, T, F, T, F, T]}
    for index, name in enumerate(FIELDS):
        value = getattr(info, name) if hasattr(info, name) else (
            info[index] if isinstance(info, tuple | list) and len(info) == 7 else None)
        if value is None:
            raise Mismatch(f"the MaskInfo has no field {name}", got=type(info).__name__)
        if name == "partial_mask_blocks":
            if np.asarray(value).shape != (2, 1024, 2048):
                raise Mismatch("there must be 2 distinct partial patterns",
                               expected="(2, 1024, 2048)", got=str(np.asarray(value).shape))
            continue
        _same(np.asarray(value).astype(int), np.asarray(expected[name]).astype(int), name)


@public_check(A, "5.5", "worked answer: causal 4096, block 1024: 10 active blocks, 6 full, "
                        "4 partial, 1 pattern of 1 MiB (lecture §6.3, Ex11)")
def stats_worked(api: Api) -> None:
    """Task 5.5: worked answer: causal 4096, block 1024: 10 active blocks, 6 full, 4 partial, 1
    pattern of 1 MiB (lecture §6.3, Ex11).
    """
    got = api.call("mask_stats", _causal(4096), 1024, 1024).value
    expected = {"num_blocks": 16, "num_active": 10, "num_partial": 4, "num_full": 6,
                "num_patterns": 1, "pattern_bytes": 1 << 20}
    if not isinstance(got, dict):
        raise Mismatch("mask_stats must return a dict", got=type(got).__name__)
    wrong = {k: got.get(k) for k, v in expected.items() if got.get(k) != v}
    if wrong or not np.isclose(number(got.get("compute_saving", 0),
                                      "mask_stats['compute_saving']"), 1.6):
        raise Mismatch("mask_stats differs from the lecture's", expected=str(expected),
                       got=str(got))
