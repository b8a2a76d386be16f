"""Public checks of a5_splash_attention (lecture §6): mask formulas, plain-loop oracles and the
worked answers.

The masks are drawn from the families grading draws from (causal with offsets, local windows
aligned with the blocks and not, documents, random masks with no empty query row, full masks,
and ``&`` combinations), with block sizes that differ per axis. The oracles are written here
in plain loops over tiles: no reference code.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
from hypothesis import strategies as st

from graders.assignments import load_harness
from graders.labs.a5_splash_attention.public import worked
from graders.student.public import (
    Api,
    Mismatch,
    StudentRaised,
    arrays,
    as_float_array,
    assert_close,
    describe,
    number,
    public_check,
    seeds,
)

A = "a5"
#: log2(e): base-2 units are natural units times this (lecture §6.6).
LOG2_E = 1.0 / math.log(2.0)
FIELDS = ("active_rows", "active_cols", "block_mask", "mask_next", "partial_mask_blocks",
          "bounds_start", "bounds_end")
DTYPES = {"active_rows": np.int32, "active_cols": np.int32, "block_mask": np.int8,
          "mask_next": np.int32, "partial_mask_blocks": np.bool_, "bounds_start": np.bool_,
          "bounds_end": np.bool_}
KINDS = ("causal", "local", "documents", "random", "full", "causal & local",
         "causal & documents", "local & documents")


def _same(got: object, expected: np.ndarray, what: str, *, dtype: bool = False) -> None:
    array = np.asarray(got)
    if array.shape != expected.shape or not np.array_equal(array, expected):
        raise Mismatch(f"{what} differs", expected=np.array2string(expected),
                       got=np.array2string(array))
    if dtype and array.dtype != expected.dtype:
        raise Mismatch(f"{what} has the wrong dtype", expected=expected.dtype.name,
                       got=array.dtype.name)


# -- drawn masks ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class MaskCase:
    """A drawn mask: ``mask`` bool [q_len, kv_len], ``block_q``, ``block_kv`` and the
    ``recipe`` that made it (what a failure prints)."""

    mask: np.ndarray
    block_q: int
    block_kv: int
    recipe: str

    def __repr__(self) -> str:
        return f"mask = {self.recipe}, block_q = {self.block_q}, block_kv = {self.block_kv}"


def window_side(draw: st.DrawFn, length: int, block: int) -> int | None:
    """One side of a drawn local window: None, a block-aligned width, or any width up to
    ``length`` (the hidden checks draw windows the same way)."""
    return draw(st.one_of(st.none(), st.integers(0, length // block).map(lambda n: n * block),
                          st.integers(0, length)))


@st.composite
def mask_cases(draw: st.DrawFn, *, square: bool = False, blocks: tuple[int, ...] = (1, 2, 4, 8),
               max_len: int = 32, kinds: tuple[str, ...] = KINDS) -> MaskCase:
    """A mask in which every query row sees at least one key, with its block sizes."""
    bq, bkv = draw(st.sampled_from(blocks)), draw(st.sampled_from(blocks))
    kind = draw(st.sampled_from(kinds))
    if square or kind not in ("causal", "random", "full"):
        unit = math.lcm(bq, bkv)
        q_len = kv_len = unit * draw(st.integers(1, max(1, max_len // unit)))
    else:
        q_len = bq * draw(st.integers(1, max(1, max_len // bq)))
        kv_len = bkv * draw(st.integers(1, max(1, max_len // bkv)))
    q_pos, kv_pos = np.arange(q_len)[:, None], np.arange(kv_len)[None, :]
    mask, recipe = np.ones((q_len, kv_len), bool), []
    for part in kind.split(" & "):
        if part == "causal":
            offset = draw(st.integers(0, kv_len)) if "&" not in kind else 0
            mask &= q_pos + offset >= kv_pos
            recipe.append(f"causal ({q_len}, {kv_len}, offset {offset})")
        elif part == "local":
            left, right = window_side(draw, q_len, bkv), window_side(draw, q_len, bkv)
            if left is not None:
                mask &= q_pos - left <= kv_pos
            if right is not None:
                mask &= kv_pos <= q_pos + right
            recipe.append(f"local ({q_len}, window ({left}, {right}))")
        elif part == "documents":
            cuts = sorted(draw(st.sets(st.integers(1, max(1, q_len - 1)), max_size=4))
                          ) if q_len > 1 else []
            sizes = np.diff([0, *cuts, q_len])
            ids = np.repeat(np.arange(len(sizes)), sizes)
            mask &= ids[:, None] == ids[None, :]
            recipe.append("documents " + "/".join(str(int(n)) for n in sizes))
        elif part == "random":
            seed, density = draw(seeds), draw(st.sampled_from([0.1, 0.5, 0.9]))
            rng = np.random.default_rng(seed)
            drawn = rng.random((q_len, kv_len)) < density
            empty = np.flatnonzero(~drawn.any(axis=1))
            drawn[empty, rng.integers(0, kv_len, size=len(empty))] = True
            mask &= drawn
            recipe.append(f"random [{q_len}, {kv_len}] (seed {seed}, density {density})")
        else:
            recipe.append(f"all True [{q_len}, {kv_len}]")
    return MaskCase(mask, bq, bkv, " & ".join(recipe))


# -- plain-loop oracles ------------------------------------------------------------------------

def _tiles(mask: np.ndarray, bq: int, bkv: int):
    """(q block, kv block, tile) of every tile, row-major."""
    for r in range(mask.shape[0] // bq):
        for c in range(mask.shape[1] // bkv):
            yield r, c, mask[r * bq:(r + 1) * bq, c * bkv:(c + 1) * bkv]


def _kinds(mask: np.ndarray, bq: int, bkv: int) -> np.ndarray:
    kinds = np.zeros((mask.shape[0] // bq, mask.shape[1] // bkv), np.int8)
    for r, c, tile in _tiles(mask, bq, bkv):
        kinds[r, c] = 2 if tile.all() else (1 if tile.any() else 0)
    return kinds


def mask_info(mask: np.ndarray, bq: int, bkv: int) -> dict[str, np.ndarray]:
    """The MaskInfo of docs/student-api.md, Task 5.3, field by field, by plain loops."""
    rows, cols, kinds, own, patterns = [], [], [], [], []
    for r, c, tile in _tiles(mask, bq, bkv):
        if not tile.any():
            continue
        rows.append(r)
        cols.append(c)
        if tile.all():
            kinds.append(2)
            own.append(-1)
            continue
        kinds.append(1)
        same = [n for n, pattern in enumerate(patterns) if np.array_equal(pattern, tile)]
        own.append(same[0] if same else len(patterns))
        if not same:
            patterns.append(tile)
    partial = [g for g, n in enumerate(own) if n >= 0]
    nxt = []
    for g in range(len(rows)):
        later = [p for p in partial if p >= g] or partial[:1]
        nxt.append(own[later[0]] if later else 0)
    starts = [g == 0 or rows[g] != rows[g - 1] for g in range(len(rows))]
    ends = [g == len(rows) - 1 or rows[g] != rows[g + 1] for g in range(len(rows))]
    values = {"active_rows": rows, "active_cols": cols, "block_mask": kinds, "mask_next": nxt,
              "partial_mask_blocks": patterns if patterns else np.zeros((0, bq, bkv), bool),
              "bounds_start": starts, "bounds_end": ends}
    return {name: np.asarray(values[name], DTYPES[name]) for name in FIELDS}


def _fields(value: object) -> dict[str, np.ndarray]:
    """The seven MaskInfo fields of what build_mask_info returned."""
    out = {}
    for index, name in enumerate(FIELDS):
        field = getattr(value, name, None)
        if field is None and isinstance(value, tuple | list) and len(value) == 7:
            field = value[index]
        if field is None:
            raise Mismatch(f"the MaskInfo has no field {name}", got=type(value).__name__)
        out[name] = np.asarray(field)
    return out


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray,
              scale: float) -> np.ndarray:
    """Dense masked softmax attention in float64, [H, L, dv]."""
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hqk,hkd->hqd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))


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


# -- Task 5.3 ------------------------------------------------------------------------------------

@public_check(A, "5.3", "worked answer: causal 4096, blocks (1024, 2048) (lecture §6.2)")
def mask_info_worked(api: Api) -> None:
    """Task 5.3: worked answer: causal 4096, blocks (1024, 2048) (lecture §6.2)."""
    info = _fields(api.call("build_mask_info", _causal(4096), 1024, 2048).value)
    T, F = True, False
    expected = {"active_rows": [0, 1, 2, 2, 3, 3], "active_cols": [0, 0, 0, 1, 0, 1],
                "block_mask": [1, 1, 2, 1, 2, 1], "mask_next": [0, 1, 0, 0, 1, 1],
                "bounds_start": [T, T, T, F, T, F], "bounds_end": [T, T, F, T, F, T]}
    for name in FIELDS:
        value = info[name]
        if name == "partial_mask_blocks":
            if value.shape != (2, 1024, 2048):
                raise Mismatch("there must be 2 distinct partial patterns",
                               expected="(2, 1024, 2048)", got=str(value.shape))
            continue
        _same(value.astype(int), np.asarray(expected[name]).astype(int), name)


@public_check(A, "5.3", "build_mask_info equals a plain loop over the tiles field by field "
                        "(values and dtypes) on drawn masks")
def mask_info_property(api: Api) -> None:
    """Task 5.3: build_mask_info equals a plain loop over the tiles field by field (values and
    dtypes) on drawn masks.
    """
    def body(case: MaskCase) -> None:
        got = _fields(api.call("build_mask_info", case.mask, case.block_q,
                               case.block_kv).value)
        expected = mask_info(case.mask, case.block_q, case.block_kv)
        for name in FIELDS:
            _same(got[name], expected[name], f"MaskInfo.{name}", dtype=True)
    api.run_property(mask_cases(), body)


@public_check(A, "5.3", "build_mask_info raises ValueError naming the block that does not "
                        "divide its length, or the first query row with no visible key")
def mask_info_errors(api: Api) -> None:
    """Task 5.3: build_mask_info raises ValueError naming the block that does not divide its
    length, or the first query row with no visible key.
    """
    blind = _causal(8)
    blind[[3, 6]] = False
    for args, label, names in (((_causal(12), 8, 4), "causal L 12, block_q = 8", "block_q"),
                               ((_causal(12), 4, 5), "causal L 12, block_kv = 5", "block_kv"),
                               ((blind, 4, 4), "causal L 8 with rows 3 and 6 cleared", "3")):
        try:
            api.call("build_mask_info", *args)
        except StudentRaised as error:
            if error.error_type != "ValueError":
                raise
            message = f"ValueError: {error.message}"
            if not re.search(rf"(?<![\w.]){names}(?![\w.])", message):
                raise Mismatch("the ValueError's message does not name what is wrong",
                               input=label, expected=f"a message naming {names}",
                               got=message) from None
            continue
        raise Mismatch("build_mask_info must raise ValueError", input=label,
                       expected="ValueError", got="a result")


# -- Task 5.4 ------------------------------------------------------------------------------------

@st.composite
def splash_cases(draw) -> dict:
    """q, k, v f32 [H, L, d|dv] (H 1-2, d 4/8/16, dv 4/8), a square drawn mask with blocks
    2/4/8 and its MaskInfo fields, sm_scale or None (1/sqrt(d))."""
    case = draw(mask_cases(square=True, blocks=(2, 4, 8), max_len=32))
    heads, length = draw(st.integers(1, 2)), case.mask.shape[0]
    d, dv = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8]))
    q, k = (arrays((heads, length, d), draw(seeds), low=-2, high=2) for _ in range(2))
    v = arrays((heads, length, dv), draw(seeds), low=-2, high=2)
    return {"q": q, "k": k, "v": v, "case": case,
            "sm_scale": draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))}


def _splash_fields(case: MaskCase) -> tuple:
    """MaskInfo fields as the standard call takes them: at least one stored pattern."""
    info = mask_info(case.mask, case.block_q, case.block_kv)
    if info["partial_mask_blocks"].shape[0] == 0:
        info["partial_mask_blocks"] = np.ones((1, case.block_q, case.block_kv), bool)
    return tuple(info[name] for name in FIELDS)


#: The harness the public checks run (``public_harness.py``: the student's own wrappers,
#: recorded; never the grader's standard call).
HARNESS = "a5_public"
#: The order of the six scalar-prefetch arrays (the handout's, Task 5.4).
PREFETCH_ORDER: tuple[str, ...] = load_harness(HARNESS).PREFETCH_ORDER


def _check_prefetch(recorded: object, case: MaskCase) -> None:
    """The wrapper's one pallas_call got the six MaskInfo arrays as int32 scalar-prefetch
    arguments, in the order of the task."""
    info = mask_info(case.mask, case.block_q, case.block_kv)
    if not isinstance(recorded, tuple | list) or len(recorded) != 1:
        raise Mismatch("splash_attention must make exactly one pallas_call",
                       got=f"{len(recorded) if isinstance(recorded, tuple | list) else '?'}")
    arrays_ = list(recorded[0])
    if len(arrays_) != 6:
        raise Mismatch("the call must prefetch six arrays (num_scalar_prefetch=6)",
                       expected="6", got=str(len(arrays_)))
    for n, (name, got) in enumerate(zip(PREFETCH_ORDER, arrays_, strict=True)):
        want = info[name].astype(np.int32)
        got = np.asarray(got)
        if got.dtype != np.int32 or not np.array_equal(got, want):
            raise Mismatch(f"scalar-prefetch argument {n} must be {name} as int32 (order: "
                           f"{', '.join(PREFETCH_ORDER)})", input=repr(case),
                           expected=f"int32 {want.tolist()}",
                           got=f"{got.dtype.name} {got.tolist()}")


def _splash_label(example: dict) -> str:
    shapes = ", ".join(f"{n} = f32{list(example[n].shape)}" for n in "qkv")
    return f"{shapes}, {example['case']!r}, sm_scale = {example['sm_scale']!r}"


@public_check(A, "5.4", "splash_attention (with your splash_attention_kernel) equals dense "
                        "masked attention (documents 3/5, then drawn masks); it prefetches the "
                        "six MaskInfo arrays as int32 in the task's order (lecture §6.3)")
def splash_values(api: Api) -> None:
    """Task 5.4: splash_attention (with your splash_attention_kernel) equals dense masked
    attention (documents 3/5, then drawn masks); it prefetches the six MaskInfo arrays as
    int32 in the task's order (lecture §6.3). The kernel runs in the student's own call
    (``public_harness.splash_attention``), not in the grader's standard one.
    """
    def body(example: dict) -> None:
        q, k, v, case = example["q"], example["k"], example["v"], example["case"]
        scale = 1 / math.sqrt(q.shape[-1]) if example["sm_scale"] is None \
            else example["sm_scale"]
        expected = attention(q, k, v, case.mask, scale)
        fields = _splash_fields(case)
        label = _splash_label(example)
        reply = api.kernel(HARNESS, "splash_attention", q, k, v, fields, example["sm_scale"])
        out, recorded = (reply[0], reply[1]) if isinstance(reply, tuple | list) and len(
            reply) == 3 else (reply, None)
        try:
            assert_close(out, expected, rtol=2e-4, atol=2e-5, what="splash_attention's output")
        except Mismatch as failure:
            failure.input = label
            raise
        _check_prefetch(recorded, case)

    # Document 2 starts inside q block 1: row 3 sees no key of its first active tile, which
    # is where -inf scores without care give exp(-inf - (-inf)) = NaN.
    ids = np.repeat([0, 1], [3, 5])
    documents = MaskCase(ids[:, None] == ids[None, :], 2, 2, "documents 3/5")
    body({"q": arrays((1, 8, 4), 1, low=-2, high=2), "k": arrays((1, 8, 4), 2, low=-2, high=2),
          "v": arrays((1, 8, 4), 3, low=-2, high=2), "case": documents, "sm_scale": None})
    api.run_property(splash_cases(), body, max_examples=8)



#: (rtol, atol) within which a kernel's final m must lie between its two row maxima.
MAX_TOL = (1e-4, 1e-3)


def row_maxima(q: np.ndarray, k: np.ndarray, mask: np.ndarray, scale: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """float64 [H, L] row maxima of the scaled scores q·kᵀ·scale over the visible keys
    (``mask`` bool [L, L]) and over all keys: a running maximum taken after the mask is the
    first, one taken before it at most the second; both give the softmax (lecture §5.1)."""
    s = np.einsum("hid,hjd->hij", q.astype(np.float64), k.astype(np.float64)) * scale
    return np.where(mask, s, -np.inf).max(axis=-1), s.max(axis=-1)


def between(m: np.ndarray, low: np.ndarray, high: np.ndarray) -> bool:
    """Whether ``m`` has ``low``'s shape and lies in [low, high] within ``MAX_TOL``."""
    rtol, atol = MAX_TOL
    if np.shape(m) != np.shape(low):
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all((m >= low - atol - rtol * np.abs(low))
                           & (m <= high + atol + rtol * np.abs(high))))


def _base2_max(m: object, q: np.ndarray, k: np.ndarray, mask: np.ndarray, scale: float,
               label: str) -> None:
    """The kernel's final m ([H, L]) is in base-2 units: log2(e) times a row maximum of
    ``row_maxima`` (lecture §6.6)."""
    masked, unmasked = row_maxima(q, k, mask, scale)
    got = as_float_array(m, "the final m")
    if not between(got, masked * LOG2_E, unmasked * LOG2_E):
        raise Mismatch("with use_base2_exp=True the final m is not the row maximum in base-2 "
                       "units (log2(e) times the largest visible scaled score)", input=label,
                       expected=describe(masked * LOG2_E), got=describe(got))


@public_check(A, "5.4", "use_base2_exp=True: splash_attention still equals dense masked "
                        "attention and its kernel's final m is in base-2 units (scores "
                        "pre-scaled by log2(e), exp2; lecture §6.6)")
def splash_base2(api: Api) -> None:
    """Task 5.4: use_base2_exp=True: splash_attention still equals dense masked attention and
    its kernel's final m (read by ``public_harness.splash_attention`` at each q row's last
    tile) is in base-2 units (scores pre-scaled by log2(e), exp2; lecture §6.6).
    """
    def body(example: dict) -> None:
        q, k, v, case = example["q"], example["k"], example["v"], example["case"]
        scale = 1 / math.sqrt(q.shape[-1]) if example["sm_scale"] is None \
            else example["sm_scale"]
        expected = attention(q, k, v, case.mask, scale)
        fields = _splash_fields(case)
        reply = api.kernel(HARNESS, "splash_attention", q, k, v, fields, example["sm_scale"],
                           use_base2_exp=True)
        out, m = (reply[0], reply[2]) if isinstance(reply, tuple | list) and len(
            reply) == 3 else (reply, None)
        try:
            assert_close(out, expected, rtol=2e-4, atol=2e-5,
                         what="splash_attention's output with use_base2_exp=True")
        except Mismatch as failure:
            failure.input = _splash_label(example)
            raise
        _base2_max(m, q, k, case.mask, scale, _splash_label(example))
    api.run_property(splash_cases(), body, max_examples=3)


# -- Task 5.5 ------------------------------------------------------------------------------------

@public_check(A, "5.5", "worked answer: causal 4096, block 1024: 10 active blocks, 6 full, "
                        "4 partial, 1 pattern (lecture Ex11)")
def stats_worked(api: Api) -> None:
    """Task 5.5: worked answer: causal 4096, block 1024: 10 active blocks, 6 full, 4 partial, 1
    pattern (lecture Ex11).
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


@public_check(A, "5.5", "mask_stats counts tiles and patterns as a plain loop does, with "
                        "pattern_bytes = patterns · block_q · block_kv and compute_saving = "
                        "num_blocks / num_active")
def stats_property(api: Api) -> None:
    """Task 5.5: mask_stats counts tiles and patterns as a plain loop does, with pattern_bytes =
    patterns · block_q · block_kv and compute_saving = num_blocks / num_active.
    """
    def body(case: MaskCase) -> None:
        mask, bq, bkv = case.mask, case.block_q, case.block_kv
        kinds = _kinds(mask, bq, bkv)
        patterns = mask_info(mask, bq, bkv)["partial_mask_blocks"].shape[0]
        active = int((kinds > 0).sum())
        expected = {"num_blocks": kinds.size, "num_active": active,
                    "num_partial": int((kinds == 1).sum()), "num_full": int((kinds == 2).sum()),
                    "num_patterns": patterns, "pattern_bytes": patterns * bq * bkv}
        got = api.call("mask_stats", mask, bq, bkv).value
        if not isinstance(got, dict):
            raise Mismatch("mask_stats must return a dict", got=type(got).__name__)
        wrong = {key: got.get(key) for key, value in expected.items() if got.get(key) != value}
        saving = number(got.get("compute_saving"), "mask_stats['compute_saving']")
        if wrong or not np.isclose(saving, kinds.size / active, rtol=1e-9):
            raise Mismatch("mask_stats differs", expected=describe(
                {**expected, "compute_saving": kinds.size / active}), got=describe(got))
    api.run_property(mask_cases(), body)


# -- Task 5.6 ------------------------------------------------------------------------------------

def _rule(q_pos: np.ndarray, kv_pos: np.ndarray, ids: np.ndarray, causal: bool,
          window: tuple | None) -> np.ndarray:
    """The dense mask of Task 5.6's rule, written as the handout states it."""
    q, kv = q_pos[:, None], kv_pos[None, :]
    mask = ids[:, None] == ids[None, :]
    if causal:
        mask &= q >= kv
    if window is not None:
        if window[0] is not None:
            mask &= q - window[0] <= kv
        if window[1] is not None:
            mask &= kv <= q + window[1]
    return mask


@st.composite
def computed_cases(draw) -> dict:
    """A Task 5.6 call: causal / local / documents or their &, blocks 2/4/8, L <= 32, queries
    at positions 0..L-1 or shifted after the keys (causal kinds), H 1-2, d 4/8, dv 4/8."""
    bq, bkv = draw(st.sampled_from((2, 4, 8))), draw(st.sampled_from((2, 4, 8)))
    length = math.lcm(bq, bkv) * draw(st.integers(1, max(1, 32 // math.lcm(bq, bkv))))
    parts = set(draw(st.sets(st.sampled_from(["causal", "local", "documents"]), min_size=1)))
    every = np.arange(length, dtype=np.int32)
    kwargs: dict = {}
    offset = draw(st.integers(0, length)) if "causal" in parts else 0
    if offset:
        kwargs["q_positions"] = every + offset
    causal = "causal" in parts
    if causal:
        kwargs["causal"] = True
    window = None
    if "local" in parts:
        left = window_side(draw, length, bkv)
        window = (None if left is None else max(left, offset),
                  None if causal else window_side(draw, length, bkv))
        kwargs["window"] = window
    ids = np.zeros(length, np.int32)
    if "documents" in parts:
        cuts = sorted(draw(st.sets(st.integers(1, max(1, length - 1)), max_size=3)))
        ids = np.repeat(np.arange(len(cuts) + 1), np.diff([0, *cuts, length])).astype(np.int32)
        kwargs["q_segment_ids"] = ids
    heads, d, dv = draw(st.integers(1, 2)), draw(st.sampled_from([4, 8])), draw(
        st.sampled_from([4, 8]))
    q, k = (arrays((heads, length, d), draw(seeds), low=-2, high=2) for _ in range(2))
    v = arrays((heads, length, dv), draw(seeds), low=-2, high=2)
    mask = _rule(every + offset, every, ids, causal, window)
    recipe = " & ".join(sorted(parts)) + (f", queries shifted by {offset}" if offset else "")
    return {"q": q, "k": k, "v": v, "kwargs": kwargs,
            "case": MaskCase(mask, bq, bkv, f"{recipe} ({describe(kwargs)})")}


def _no_mask_argument(calls: object, case: MaskCase) -> None:
    """No argument of the wrapper's pallas_calls is a bool array or the stored patterns (as
    integers); float arguments are q, k and v, whatever their shape."""
    patterns = mask_info(case.mask, case.block_q, case.block_kv)["partial_mask_blocks"]
    if not isinstance(calls, tuple | list) or not calls:
        raise Mismatch("splash_attention_computed_mask must make a pallas_call")
    for n, arguments in enumerate(calls):
        for a, (shape, dtype, values) in enumerate(arguments):
            same = (values is not None and patterns.size and np.size(values) == patterns.size
                    and np.squeeze(values).ndim >= 2 and np.array_equal(
                        np.asarray(values).reshape(patterns.shape).astype(bool), patterns))
            if dtype == "bool" or same:
                raise Mismatch("an argument of the call carries mask bits (lecture §6.6: "
                               "compute each partial tile's mask from positions and ids)",
                               input=repr(case), expected="q, k, v and per-token int32 arrays",
                               got=f"argument {a} of pallas_call {n}: {dtype}{list(shape)}"
                                   + (" = partial_mask_blocks" if same else ""))


@public_check(A, "5.6", "splash_attention_computed_mask equals dense masked attention (causal, "
                        "local, documents, their &, queries shifted after the keys) and hands "
                        "its call no mask: not partial_mask_blocks, no bool array; the lecture's "
                        "causal L 16384 / 1024 scaled by 1/8 (lecture §6.6)")
def computed_mask_values(api: Api) -> None:
    """Task 5.6: splash_attention_computed_mask equals dense masked attention (causal, local,
    documents, their &, queries shifted after the keys) and hands its call no mask: not
    partial_mask_blocks, no bool array; the lecture's causal L 16384 / 1024 scaled by 1/8
    (lecture §6.6).
    """
    def body(example: dict) -> None:
        q, k, v, case = example["q"], example["k"], example["v"], example["case"]
        fields = tuple(mask_info(case.mask, case.block_q, case.block_kv)[name]
                       for name in FIELDS)
        reply = api.kernel(HARNESS, "splash_attention_computed_mask", q, k, v, fields,
                           example["kwargs"])
        out, calls = (reply[0], reply[1]) if isinstance(reply, tuple | list) and len(
            reply) == 2 else (reply, None)
        scale = example["kwargs"].get("sm_scale", 1 / math.sqrt(q.shape[-1]))
        try:
            assert_close(out, attention(q, k, v, case.mask, scale), rtol=2e-4, atol=2e-5,
                         what="splash_attention_computed_mask's output")
        except Mismatch as failure:
            failure.input = repr(case)
            raise
        _no_mask_argument(calls, case)

    length, block = worked.LENGTH // worked.SCALE, worked.BLOCK // worked.SCALE
    every = np.arange(length, dtype=np.int32)
    causal = MaskCase(_rule(every, every, np.zeros(length, np.int32), True, None), block, block,
                      f"causal L {length}, blocks {block} (the lecture's L {worked.LENGTH} / "
                      f"{worked.BLOCK} scaled by 1/{worked.SCALE}: "
                      f"{worked.SAVED[0].patterns} stored pattern to leave in HBM)")
    body({"q": arrays((1, length, 8), 1, low=-2, high=2),
          "k": arrays((1, length, 8), 2, low=-2, high=2),
          "v": arrays((1, length, 8), 3, low=-2, high=2), "kwargs": {"causal": True},
          "case": causal})
    api.run_property(computed_cases(), body, max_examples=8)


# -- Task 5.7 ------------------------------------------------------------------------------------

@public_check(A, "5.7", "performance: choose_splash_blocks(mask_kind) returns (block_q, block_kv) "
                        "from the candidate set for the causal, local and document masks at "
                        "L 8192, at which your own splash_attention runs within the 32 MiB "
                        "scoped VMEM, predicted (pallas_sim.estimate) within 10 % of your own "
                        "splash_attention at the lecture's best blocks (the grade compares "
                        "with every candidate)")
def splash_blocks(api: Api) -> None:
    """Task 5.7: performance: choose_splash_blocks(mask_kind) returns (block_q, block_kv) from
    the candidate set for the causal, local and document masks at L 8192, at which your own
    splash_attention runs within the 32 MiB scoped VMEM, predicted (pallas_sim.estimate)
    within 10 % of your own splash_attention at the lecture's best blocks (the grade
    compares with every candidate: sweep them yourself to be sure).
    """
    length = worked.PERF_LENGTH
    ids = np.repeat(np.arange(len(worked.PERF_DOCUMENTS)), worked.PERF_DOCUMENTS)
    rows, cols = np.arange(length)[:, None], np.arange(length)[None, :]
    masks = {"causal": rows >= cols,
             "local": (rows >= cols) & (cols >= rows - worked.PERF_WINDOW),
             "document": ids[:, None] == ids[None, :]}
    shape = dict(length=length, heads=worked.PERF_HEADS, head_dim=worked.PERF_HEAD_DIM,
                 value_dim=worked.PERF_VALUE_DIM, chip="v7",
                 candidates=worked.PERF_BLOCK_CANDIDATES)
    for kind in worked.PERF_MASKS:
        label = f"choose_splash_blocks({kind!r}), L {length}"
        blocks = api.call("choose_splash_blocks", kind).value
        if not (isinstance(blocks, tuple | list) and len(blocks) == 2
                and all(isinstance(b, int | np.integer) and not isinstance(b, bool)
                        for b in blocks)):
            raise Mismatch("choose_splash_blocks must return a tuple of two ints "
                           "(block_q, block_kv)", input=label, expected="e.g. (512, 512)",
                           got=repr(blocks))
        if not all(b in worked.PERF_BLOCK_CANDIDATES for b in blocks):
            raise Mismatch("a block size outside the candidate set", input=label,
                           expected=f"each one of {list(worked.PERF_BLOCK_CANDIDATES)}",
                           got=str(tuple(blocks)))
        blocks = [int(b) for b in blocks]
        got_ms, mfu = _own_time(api, kind, masks[kind], tuple(blocks), label, shape, at=None)
        best = tuple(worked.PERF_BEST_BLOCKS[kind])
        if best == tuple(blocks):
            continue
        best_ms, _ = _own_time(api, kind, masks[kind], best, label, shape, at=best)
        if got_ms > best_ms * (1 + worked.PERFORMANCE_RTOL):
            raise Mismatch(f"your blocks {tuple(blocks)} for the {kind} mask are predicted "
                           f"more than 10 % slower than your own splash_attention at {best}",
                           input=label, expected=f"at most {best_ms * 1.1:.4f} ms ({best}: "
                           f"{best_ms:.4f} ms)", got=f"{got_ms:.4f} ms (MFU {mfu:.0%})")


def _own_time(api: Api, kind: str, mask: np.ndarray, blocks: tuple, label: str, shape: dict,
              *, at: tuple | None) -> tuple[float, float]:
    """(predicted ms, MFU) of the student's splash_attention at ``blocks`` over ``mask``."""
    info = mask_info(mask, int(blocks[0]), int(blocks[1]))
    try:
        reply = api.kernel(HARNESS, "choose_splash_blocks", kind,
                           tuple(info[name] for name in FIELDS), **shape, at=at)
    except StudentRaised as raised:
        if raised.error_type == "VmemOOMError":
            raise raised.copy(input=label, diagnosis="the double-buffered q, k, v, "
                              "pattern and output blocks exceed 32 MiB") from None
        raise
    calls = reply.get("calls") or []
    if len(calls) != 1 or calls[0]["vmem_bytes"] > worked.PERF_SCOPED_VMEM:
        raise Mismatch("your splash_attention should make one pallas_call within the "
                       "scoped VMEM", input=f"{label} at {blocks}",
                       expected="1 pallas_call, at most 32 MiB",
                       got=", ".join(f"{c['vmem_bytes'] / 2**20:.1f} MiB" for c in calls)
                       or "no pallas_call")
    return calls[0]["time_s"] * 1e3, calls[0]["mfu"]
