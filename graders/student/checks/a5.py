"""Public checks of a5_splash_attention (lecture §6): worked answers and plain oracles.

Masks are checked against their definitions, tile kinds against ``any`` /
``all`` over each tile, MaskInfo against the lecture's arrays and against the
rule that the dense mask can be rebuilt from it, and the Splash kernel against
dense float64 masked attention over a hand-written table (the lecture's
causal example at a small size). Nothing here builds a MaskInfo: that is the
student's Task 5.3.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Api, Mismatch, arrays, assert_close, public_check, seeds

A = "a5"
FIELDS = ("active_rows", "active_cols", "block_mask", "mask_next", "partial_mask_blocks",
          "bounds_start", "bounds_end")


def _bool_array(value: object, what: str, shape: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype != np.bool_ or array.shape != shape:
        raise Mismatch(f"{what} must be a bool array of shape {shape}",
                       got=f"{array.dtype.name}{list(array.shape)}")
    return array


def _same(got: np.ndarray, expected: np.ndarray, what: str, label: str) -> None:
    if not np.array_equal(got, expected):
        where = tuple(int(i) for i in np.argwhere(got != expected)[0])
        raise Mismatch(f"{what} differs at {where}", input=label,
                       expected=str(expected[where]), got=str(got[where]))


@st.composite
def mask_calls(draw) -> dict:
    q_len = draw(st.integers(1, 12))
    kv_len = draw(st.integers(1, 12))
    side = st.one_of(st.none(), st.integers(0, 13))
    return {"q_len": q_len, "kv_len": kv_len, "offset": draw(st.integers(-4, 14)),
            "window": (draw(side), draw(side)),
            "ids": np.asarray(draw(st.lists(st.integers(0, 2), min_size=q_len,
                                            max_size=q_len)), np.int32)}


@public_check(A, "5.1", "causal, local and document masks equal their definitions "
                        "(q + offset >= kv; q - left <= kv <= q + right; equal ids)")
def masks_by_definition(api: Api) -> None:
    def body(case: dict) -> None:
        q_len, kv_len, offset, window = (case[k] for k in ("q_len", "kv_len", "offset",
                                                           "window"))
        q = np.arange(q_len)[:, None]
        kv = np.arange(kv_len)[None, :]
        got = _bool_array(api.call("causal_mask", q_len, kv_len, offset=offset).value,
                          "causal_mask", (q_len, kv_len))
        _same(got, q + offset >= kv, "causal_mask",
              f"causal_mask({q_len}, {kv_len}, offset={offset})")
        left, right = window
        want = ((left is None) | (q - (left or 0) <= kv)) & (
            (right is None) | (kv <= q + (right or 0)))
        got = _bool_array(api.call("local_mask", q_len, window, kv_len).value, "local_mask",
                          (q_len, kv_len))
        _same(got, want, "local_mask", f"local_mask({q_len}, {window}, {kv_len})")
        ids = case["ids"]
        got = _bool_array(api.call("segment_mask", ids).value, "segment_mask", (q_len, q_len))
        _same(got, ids[:, None] == ids[None, :], "segment_mask",
              f"segment_mask({ids.tolist()})")
    api.run_property(mask_calls(), body)


@st.composite
def tiled_masks(draw) -> dict:
    bq, bkv = draw(st.sampled_from([1, 2, 3, 4])), draw(st.sampled_from([1, 2, 4]))
    nq, nkv = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds))
    mask = rng.random((nq * bq, nkv * bkv)) < draw(st.sampled_from([0.2, 0.6, 0.95]))
    return {"mask": mask, "block_q": bq, "block_kv": bkv}


@public_check(A, "5.2", "classify_blocks is 0 / 1 / 2 where a tile has no / some / only True "
                        "entries (int8); the causal L 8 picture in 2 x 2 blocks (lecture §6.1)")
def classify_by_definition(api: Api) -> None:
    def body(case: dict) -> None:
        mask, bq, bkv = case["mask"], case["block_q"], case["block_kv"]
        tiles = mask.reshape(mask.shape[0] // bq, bq, mask.shape[1] // bkv, bkv)
        want = np.where(tiles.all(axis=(1, 3)), 2, np.where(tiles.any(axis=(1, 3)), 1, 0))
        got = np.asarray(api.call("classify_blocks", mask, bq, bkv).value)
        if got.dtype != np.int8 or got.shape != want.shape:
            raise Mismatch("classify_blocks must return int8 [nq, nkv]",
                           expected=f"int8{list(want.shape)}",
                           got=f"{got.dtype.name}{list(got.shape)}")
        _same(got, want, "the tile kinds", f"block_q = {bq}, block_kv = {bkv}")
    api.run_property(tiled_masks(), body)
    causal8 = np.tri(8, dtype=bool)
    kinds = api.call("classify_blocks", causal8, 2, 2).value
    picture = api.call("render_block_mask", np.asarray(kinds)).value
    want = "P · · ·\nF P · ·\nF F P ·\nF F F P"
    if picture != want:
        raise Mismatch("the causal L 8 picture differs from the lecture's",
                       expected=repr(want), got=repr(picture))


def _mask_info(api: Api, mask: np.ndarray, bq: int, bkv: int) -> dict[str, np.ndarray]:
    value = api.call("build_mask_info", mask, bq, bkv).value
    if not isinstance(value, tuple | list) or len(value) != len(FIELDS):
        raise Mismatch("build_mask_info must return the handout's MaskInfo",
                       got=type(value).__name__)
    return {name: np.asarray(v) for name, v in zip(FIELDS, value, strict=True)}


@public_check(A, "5.3", "worked answer: causal 4096 with (1024, 2048) blocks gives the "
                        "lecture's arrays and 2 patterns (lecture §6.2)")
def mask_info_worked(api: Api) -> None:
    info = _mask_info(api, np.tri(4096, dtype=bool), 1024, 2048)
    T, F = True, False
    worked = {"active_rows": [0, 1, 2, 2, 3, 3], "active_cols": [0, 0, 0, 1, 0, 1],
              "block_mask": [1, 1, 2, 1, 2, 1], "mask_next": [0, 1, 0, 0, 1, 1],
              "bounds_start": [T, T, T, F, T, F], "bounds_end": [T, T, F, T, F, T]}
    for name, values in worked.items():
        if info[name].tolist() != values:
            raise Mismatch(f"MaskInfo.{name} differs from the lecture's",
                           input="build_mask_info(causal_mask(4096), 1024, 2048)",
                           expected=str(values), got=str(info[name].tolist()))
    if info["partial_mask_blocks"].shape != (2, 1024, 2048):
        raise Mismatch("4 partial tiles but only 2 distinct patterns",
                       expected="(2, 1024, 2048)", got=str(info["partial_mask_blocks"].shape))


@public_check(A, "5.3", "the dense mask rebuilt from MaskInfo equals the input; tiles in "
                        "row-major order; bounds mark the first / last tile of each q row")
def mask_info_rebuilds_the_mask(api: Api) -> None:
    def body(case: dict) -> None:
        mask, bq, bkv = case["mask"], case["block_q"], case["block_kv"]
        mask[np.arange(mask.shape[0]), 0] = True  # every query row sees a key
        info = _mask_info(api, mask, bq, bkv)
        rows, cols = info["active_rows"], info["active_cols"]
        order = rows.astype(np.int64) * (mask.shape[1] // bkv) + cols
        if (np.diff(order) <= 0).any():
            raise Mismatch("active tiles must be listed in row-major order, each once",
                           got=f"rows {rows.tolist()}, cols {cols.tolist()}")
        rebuilt = np.zeros_like(mask)
        patterns = info["partial_mask_blocks"]
        for r, c, kind, n in zip(rows, cols, info["block_mask"], info["mask_next"],
                                 strict=True):
            if kind != 2 and not 0 <= n < len(patterns):
                raise Mismatch("mask_next of a partial tile must name a stored pattern",
                               expected=f"0 .. {len(patterns) - 1}", got=str(n))
            tile = np.ones((bq, bkv), bool) if kind == 2 else patterns[n]
            rebuilt[r * bq:(r + 1) * bq, c * bkv:(c + 1) * bkv] = tile
        _same(rebuilt, mask, "the mask rebuilt from MaskInfo", f"block_q = {bq}, "
              f"block_kv = {bkv}")
        first = np.r_[True, rows[1:] != rows[:-1]]
        last = np.r_[rows[1:] != rows[:-1], True]
        for name, want in (("bounds_start", first), ("bounds_end", last)):
            if info[name].tolist() != want.tolist():
                raise Mismatch(f"MaskInfo.{name} must mark the first / last active tile of "
                               "each q row", expected=str(want.tolist()),
                               got=str(info[name].tolist()))
    api.run_property(tiled_masks(), body)


def _dense_attention(q, k, v, mask, scale) -> np.ndarray:
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hqk,hkd->hqd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))


def _lecture_table() -> tuple[np.ndarray, tuple]:
    """The lecture's causal 4096 / (1024, 2048) table at L 16 with (4, 8) blocks."""
    causal = np.tri(16, dtype=bool)
    patterns = np.stack([causal[0:4, 0:8], causal[4:8, 0:8]])
    fields = (np.array([0, 1, 2, 2, 3, 3], np.int32), np.array([0, 0, 0, 1, 0, 1], np.int32),
              np.array([1, 1, 2, 1, 2, 1], np.int8), np.array([0, 1, 0, 0, 1, 1], np.int32),
              patterns, np.array([1, 1, 1, 0, 1, 0], bool), np.array([1, 1, 0, 1, 0, 1], bool))
    return causal, fields


@public_check(A, "5.4", "the kernel, run over the lecture's causal table (scaled to L 16, "
                        "blocks (4, 8)), equals dense float64 masked attention")
def kernel_on_the_lecture_table(api: Api) -> None:
    causal, fields = _lecture_table()

    def body(seed: int) -> None:
        q, k, v = (arrays((2, 16, 8), seed + n, low=-2, high=2) for n in range(3))
        got = api.kernel("a5", "splash_attention_kernel", q, k, v, fields, 0.5)
        assert_close(got, _dense_attention(q, k, v, causal, 0.5), rtol=2e-4, atol=2e-5,
                     what="the kernel's attention output")
    api.run_property(seeds, body, max_examples=5)


@public_check(A, "5.4", "splash_attention over your build_mask_info of a causal mask & a "
                        "window equals dense float64 masked attention")
def wrapper_end_to_end(api: Api) -> None:
    def body(seed: int) -> None:
        mask = np.tri(32, dtype=bool) & ~np.tri(32, k=-13, dtype=bool)  # window (12, 0)
        info = _mask_info(api, mask, 8, 4)
        q, k, v = (arrays((2, 32, 8), seed + n, low=-2, high=2) for n in range(3))
        got, _ = api.kernel("a5", "splash_attention", q, k, v,
                            tuple(info[name] for name in FIELDS), None)
        assert_close(got, _dense_attention(q, k, v, mask, 8 ** -0.5), rtol=2e-4, atol=2e-5,
                     what="splash_attention's output")
    api.run_property(seeds, body, max_examples=3)


@public_check(A, "5.5", "worked answers: Ex11 (causal 4096, blocks 1024: 10 active, 6 full, "
                        "4 partial, 1 pattern of 1 MiB) and causal L 512 in 64-blocks")
def stats_worked(api: Api) -> None:
    worked = [(4096, 1024, {"num_blocks": 16, "num_active": 10, "num_partial": 4,
                            "num_full": 6, "num_patterns": 1, "pattern_bytes": 2**20}),
              (512, 64, {"num_blocks": 64, "num_active": 36, "num_partial": 8,
                         "num_full": 28, "num_patterns": 1, "pattern_bytes": 4096})]
    for length, block, want in worked:
        got = api.call("mask_stats", np.tri(length, dtype=bool), block, block).value
        if not isinstance(got, dict):
            raise Mismatch("mask_stats must return a dict", got=type(got).__name__)
        shown = {key: got.get(key) for key in want}
        if shown != want or abs(float(got.get("compute_saving", 0)) - want["num_blocks"]
                                / want["num_active"]) > 1e-9:
            raise Mismatch("mask_stats differs from the lecture's counts",
                           input=f"causal_mask({length}), blocks {block}",
                           expected=str(want), got=str(got))
