"""Checks of a5_splash_attention (lecture §6): Tasks 5.1–5.7, 100 points.

Masks are drawn by kind (causal with offsets, local windows aligned and not
aligned with the blocks, documents of drawn lengths, random masks with no
empty query row, full masks, and ``&`` combinations) with block shapes that
differ on the two axes; each prints as the recipe that made it.  The
MaskInfo builder (Task 5.3) is compared with the reference field by field
and checked on its invariants, so the feedback names the field or invariant
that is wrong.  The Splash kernel (Task 5.4) runs in the grader's standard
pallas_call over the reference's MaskInfo, and the wrapper end to end; both
are compared with dense float64 masked attention, and the wrapper's trace
with the reference's.  The computed-mask variant (Task 5.6) is graded through
its wrapper only (a kernel that still takes the stored patterns has another
signature, and its values must still count): values against dense masked
attention, positions read from the call's arguments, and no argument of its
pallas_call that carries mask bits and moves from HBM.

Task 5.7 (performance) asks the student's ``choose_splash_blocks(mask_kind)`` for the
blocks of each of three masks at L 8192 and times their *kernel* in the grader's standard
Splash call (``splash_timing``; docs/performance-model.md, Task 5.7): the worker measures
it on small problems holding every step class of the masks (``harness.choose_splash_blocks``:
on shapes at every legal candidate, and on data, values checked here, at each choice), the
trusted side maps the counts onto its own full-size trace and compares the choice's time
with the fastest legal candidate's for the same kernel.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import weakref
from collections.abc import Callable

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

import pallas_sim
import reference.a5_splash_attention as ref
from graders.checks import measures, performance, step_model
from graders.checks.compare import (
    against_own_kernel,
    as_array,
    as_finite_number,
    assert_close,
    assert_equal_int,
    fmt_array,
    kernel_mismatch,
    nonfinite_kind,
)
from graders.checks.framework import CheckFailure, Session, check, run_property
from graders.checks.strategies import make_array, seeds
from graders.labs.a5_splash_attention.hidden import splash_timing
from graders.labs.a5_splash_attention.hidden.diagnose import (
    SPLASH_ATOL,
    SPLASH_RTOL,
    diagnose_kernel,
    explains,
    pattern_diagnosis,
)
from graders.labs.a5_splash_attention.public.public_checks import (
    DTYPES,
    KINDS,
    LOG2_E,
    PREFETCH_ORDER,
    MaskCase,
    between,
    row_maxima,
    window_side,
)

A = "a5"
FIELDS = ref.MaskInfo._fields
FIELD_DTYPES = DTYPES


# --- drawn masks ---------------------------------------------------------------------------

def _documents(draw: st.DrawFn, length: int) -> tuple[np.ndarray, str]:
    cuts = sorted(draw(st.sets(st.integers(1, max(1, length - 1)), max_size=4))
                  ) if length > 1 else []
    bounds = [0, *cuts, length]
    sizes = [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
    ids = np.repeat(np.arange(len(sizes)), sizes)
    return ids, "segment_mask(documents of lengths " + "/".join(map(str, sizes)) + ")"


@st.composite
def mask_cases(draw: st.DrawFn, *, square: bool = False, blocks: tuple[int, ...] = (1, 2, 4, 8),
               max_len: int = 48, kinds: tuple[str, ...] = KINDS) -> MaskCase:
    """A mask in which every query row sees at least one key, with its block sizes."""
    bq, bkv = draw(st.sampled_from(blocks)), draw(st.sampled_from(blocks))
    kind = draw(st.sampled_from(kinds))
    if square or kind not in ("causal", "random", "full"):
        unit = math.lcm(bq, bkv)
        q_len = kv_len = unit * draw(st.integers(1, max(1, max_len // unit)))
    else:
        q_len = bq * draw(st.integers(1, max(1, max_len // bq)))
        kv_len = bkv * draw(st.integers(1, max(1, max_len // bkv)))
    parts: list[tuple[np.ndarray, str]] = []
    for part in kind.split(" & "):
        if part == "causal":
            offset = draw(st.integers(0, kv_len)) if "&" not in kind else 0
            shape = f"{q_len}" if q_len == kv_len else f"{q_len}, {kv_len}"
            parts.append((ref.causal_mask(q_len, kv_len, offset=offset),
                          f"causal_mask({shape}, offset={offset})"))
        elif part == "local":
            window = (window_side(draw, q_len, bkv), window_side(draw, q_len, bkv))
            parts.append((ref.local_mask(q_len, window), f"local_mask({q_len}, {window})"))
        elif part == "documents":
            ids, text = _documents(draw, q_len)
            parts.append((ref.segment_mask(ids), text))
        elif part == "full":
            parts.append((np.ones((q_len, kv_len), bool), f"all True [{q_len}, {kv_len}]"))
        else:
            seed = draw(seeds)
            density = draw(st.sampled_from([0.1, 0.5, 0.9]))
            rng = np.random.default_rng(seed)
            mask = rng.random((q_len, kv_len)) < density
            empty = np.flatnonzero(~mask.any(axis=1))
            mask[empty, rng.integers(0, kv_len, size=len(empty))] = True
            parts.append((mask, f"random [{q_len}, {kv_len}] (seed {seed}, density {density}, "
                                "one key added to each empty row)"))
    mask = parts[0][0]
    for extra, _ in parts[1:]:
        mask = mask & extra
    return MaskCase(mask, bq, bkv, " & ".join(text for _, text in parts))


# --- comparisons ---------------------------------------------------------------------------

def _assert_exact(got: object, expected: np.ndarray, what: str, *, check_dtype: bool = True
                  ) -> np.ndarray:
    """Shape, dtype (when asked) and every value must equal ``expected``."""
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise CheckFailure(f"{what} has the wrong shape", expected=f"shape {expected.shape} "
                           f"({fmt_array(expected)})",
                           got=f"shape {arr.shape} ({fmt_array(arr)})")
    if check_dtype and arr.dtype != expected.dtype:
        raise CheckFailure(f"{what} has the wrong dtype", expected=expected.dtype.name,
                           got=arr.dtype.name)
    if not np.array_equal(arr, expected):
        bad = np.argwhere(arr != expected)
        first = tuple(int(i) for i in bad[0]) if bad.size else ()
        raise CheckFailure(f"{what} is wrong in {len(bad)} of {expected.size} entries",
                           expected=f"{fmt_array(expected)}; at {first}: "
                                    f"{expected[first].item()!r}",
                           got=f"{fmt_array(arr)}; at {first}: {arr[first].item()!r}")
    return arr


def _mask_info_fields(value: object) -> list[np.ndarray]:
    """The seven MaskInfo arrays of a reply (a NamedTuple arrives as a tuple)."""
    if not isinstance(value, (tuple, list)) or len(value) != len(FIELDS):
        raise CheckFailure("build_mask_info must return the handout's MaskInfo NamedTuple",
                           expected=f"MaskInfo with the {len(FIELDS)} fields "
                                    f"{', '.join(FIELDS)}",
                           got=f"{type(value).__name__}" + (
                               f" of {len(value)} items" if isinstance(value, tuple | list)
                               else ""))
    return [as_array(v, f"MaskInfo.{name}") for v, name in zip(value, FIELDS, strict=True)]


def _dense_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray,
                     scale: float) -> np.ndarray:
    """Masked softmax attention in float64, [H, L, dv]."""
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hqk,hkd->hqd", p / p.sum(axis=-1, keepdims=True), v.astype(np.float64))


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


# --- Task 5.3 build_mask_info ----------------------------------------------------------------


def _compare_fields(got: list[np.ndarray], expected: ref.MaskInfo, case: MaskCase) -> None:
    g, e = got[FIELDS.index("partial_mask_blocks")], expected.partial_mask_blocks
    partial_tiles = int((np.asarray(expected.block_mask) == 1).sum())
    if g.ndim == 3 and g.shape[1:] == e.shape[1:] and g.shape[0] > partial_tiles:
        raise CheckFailure(
            "MaskInfo.partial_mask_blocks holds more patterns than the mask has partial tiles",
            expected=f"{_count(e.shape[0], 'distinct pattern')} (at most one per partial "
                     f"tile: {partial_tiles})", got=_count(g.shape[0], "pattern"))
    if g.ndim == 3 and g.shape[1:] == e.shape[1:] and g.shape[0] != e.shape[0]:
        more = g.shape[0] > e.shape[0]
        diagnosis = pattern_diagnosis(g, case)
        raise CheckFailure(
            "MaskInfo.partial_mask_blocks " + ("stores a pattern more than once" if more
                                               else "merges tiles whose contents differ"),
            expected=f"{e.shape[0]} distinct patterns", got=f"{g.shape[0]} patterns",
            diagnosis=diagnosis)
    for name, g in zip(FIELDS, got, strict=True):
        _assert_exact(g, getattr(expected, name), f"MaskInfo.{name}")


@check(A, "5.3", 8, "build_mask_info equals the reference field by field (values, dtypes, "
                    "order) on drawn masks, including block shapes that differ per axis")
def mask_info_fields(s: Session) -> None:
    """Task 5.3: build_mask_info equals the reference field by field (values, dtypes, order) on
    drawn masks, including block shapes that differ per axis.
    """
    def body(case: MaskCase) -> None:
        value = s.invoke("build_mask_info", (case.mask, case.block_q, case.block_kv)).value
        got = _mask_info_fields(value)
        expected = ref.build_mask_info(case.mask, case.block_q, case.block_kv)
        try:
            _compare_fields(got, expected, case)
        except CheckFailure as failure:
            if failure.diagnosis is None:
                failure.diagnosis = _diagnose_info(got, case)
            raise
    run_property(mask_cases(), body, max_examples=20)


def _count(n: int, noun: str) -> str:
    """``1 pattern``, ``3 patterns``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _fmt_list(values: np.ndarray, limit: int = 16) -> str:
    """At most ``limit`` entries of a 1-D array, then how many there are."""
    shown = np.asarray(values)[:limit].tolist()
    more = f", ... ({len(values)} entries)" if len(values) > limit else ""
    return "[" + ", ".join(map(str, shown)) + more + "]"


def _pattern_keys(patterns: np.ndarray) -> list[bytes]:
    """One hashable key per pattern: equal contents give equal keys (bool patterns as they
    are, anything else as float64 with -0.0 folded into 0.0), in linear time."""
    flat = patterns.reshape(len(patterns), int(np.prod(patterns.shape[1:])))
    flat = flat if flat.dtype == np.bool_ else flat.astype(np.float64) + 0.0
    flat = np.ascontiguousarray(flat)
    return [row.tobytes() for row in flat]


def _broken_invariant(got: list[np.ndarray], case: MaskCase) -> tuple[str, str, str] | None:
    """(invariant, expected, got) of the first invariant ``got`` breaks, else None.

    The work is linear in the reply: counts larger than the input allows (more tiles than
    the mask has, more patterns than it has partial tiles) are refused before any loop,
    and patterns are compared by hashing their contents, never pairwise.
    """
    info = dict(zip(FIELDS, got, strict=True))
    mask, bq, bkv = case.mask, case.block_q, case.block_kv
    nq, nkv = mask.shape[0] // bq, mask.shape[1] // bkv
    one_d = [n for n in FIELDS if n != "partial_mask_blocks"]
    lengths = {n: info[n].shape for n in one_d}
    if len({shape for shape in lengths.values()}) != 1 or info["active_rows"].ndim != 1:
        return ("the six per-tile arrays are 1-D of one length A", "equal lengths",
                str(lengths))
    for name in one_d:
        kind = nonfinite_kind(info[name])
        if kind is not None:
            return (f"{name} holds whole numbers (tile indices, kinds, flags)",
                    "finite integers", f"{kind} in {name}")
    patterns = info["partial_mask_blocks"]
    if patterns.ndim != 3 or patterns.shape[1:] != (bq, bkv):
        return ("partial_mask_blocks is [P, block_q, block_kv]", f"[P, {bq}, {bkv}]",
                str(patterns.shape))
    tiles = mask.reshape(nq, bq, nkv, bkv).transpose(0, 2, 1, 3)
    n_partial = int((tiles.any(axis=(2, 3)) & ~tiles.all(axis=(2, 3))).sum())
    if len(info["active_rows"]) > nq * nkv:
        return ("at most one entry per tile of the mask",
                f"at most {nq * nkv} active tiles ({nq} x {nkv} tiles)",
                f"{len(info['active_rows'])} entries")
    if len(patterns) > n_partial:
        return ("partial_mask_blocks holds at most one pattern per partial tile",
                f"at most {_count(n_partial, 'pattern')} (the mask has "
                f"{_count(n_partial, 'partial tile')})", _count(len(patterns), "pattern"))
    rows, cols = info["active_rows"].astype(np.int64), info["active_cols"].astype(np.int64)
    kinds, nxt = info["block_mask"].astype(np.int64), info["mask_next"].astype(np.int64)
    starts, ends = info["bounds_start"].astype(bool), info["bounds_end"].astype(bool)
    if ((rows < 0) | (rows >= nq) | (cols < 0) | (cols >= nkv)).any():
        return ("active_rows / active_cols are tile indices", f"rows < {nq}, cols < {nkv}",
                f"rows {_fmt_list(rows)}, cols {_fmt_list(cols)}")
    order = rows * nkv + cols
    if (np.diff(order) <= 0).any():
        g = int(np.argmax(np.diff(order) <= 0)) + 1
        return ("active tiles are listed in row-major (q block, kv block) order, each once",
                f"after tile ({rows[g - 1]}, {cols[g - 1]}) a tile later in row-major order",
                f"tile ({rows[g]}, {cols[g]}) at position {g}")
    covered = np.zeros((nq, nkv), bool)
    covered[rows, cols] = True
    missing = np.argwhere(tiles.any(axis=(2, 3)) & ~covered)
    if missing.size:
        return ("every non-empty tile is listed", "all non-empty tiles",
                f"tile {tuple(int(i) for i in missing[0])} is missing")
    first = np.r_[True, rows[1:] != rows[:-1]] if len(rows) else rows.astype(bool)
    last = np.r_[rows[1:] != rows[:-1], True] if len(rows) else rows.astype(bool)
    if not np.array_equal(starts, first):
        return ("bounds_start marks the first active tile of each q row of tiles",
                _fmt_list(first), _fmt_list(starts))
    if not np.array_equal(ends, last):
        return ("bounds_end marks the last active tile of each q row of tiles",
                _fmt_list(last), _fmt_list(ends))
    seen: dict[bytes, int] = {}
    for a, key in enumerate(_pattern_keys(patterns)):
        if key in seen:
            return ("partial patterns are distinct", "no pattern stored twice",
                    f"patterns {seen[key]} and {a} are equal")
        seen[key] = a
    own = np.full(len(rows), -1)
    for g, (r, c, kind) in enumerate(zip(rows, cols, kinds, strict=True)):
        tile = tiles[r, c]
        if not tile.any():
            return ("each active tile is non-empty", "only tiles with a True entry",
                    f"tile ({r}, {c}) at position {g} has none")
        if kind == 2:
            if not tile.all():
                return ("a tile marked full (block_mask 2) is all True",
                        f"tile ({r}, {c}) kind {1 if tile.any() else 0}", "kind 2")
            continue
        if kind != 1 or tile.all():
            return ("block_mask is 1 for partial tiles and 2 for full ones",
                    f"tile ({r}, {c}): {2 if tile.all() else 1}", f"{kind}")
        if not 0 <= nxt[g] < len(patterns) or not np.array_equal(patterns[nxt[g]], tile):
            return ("mask_next of a partial tile points at its own pattern",
                    f"a pattern equal to tile ({r}, {c})",
                    f"mask_next[{g}] = {nxt[g]}, a different pattern"
                    if 0 <= nxt[g] < len(patterns) else f"mask_next[{g}] = {nxt[g]}")
        own[g] = nxt[g]
    used = sorted(set(own[own >= 0].tolist()))
    if used != list(range(len(patterns))):
        return ("every stored pattern belongs to some partial tile",
                f"{len(used)} patterns", f"{len(patterns)} patterns")
    partial_at = np.flatnonzero(own >= 0)
    full_at = np.flatnonzero(kinds == 2)
    if partial_at.size:
        following = np.searchsorted(partial_at, full_at, side="left")
        want = own[partial_at[np.where(following < partial_at.size, following, 0)]]
    else:
        want = np.zeros(full_at.size, np.int64)
    wrong = np.flatnonzero(nxt[full_at] != want)
    if wrong.size:
        g, expected_next = int(full_at[wrong[0]]), int(want[wrong[0]])
        return ("mask_next of a full tile is the pattern of the next partial tile "
                "(wrapping to the first; 0 with no partial tile)",
                f"mask_next[{g}] = {expected_next}", f"mask_next[{g}] = {nxt[g]}")
    rebuilt = np.zeros_like(tiles)
    for r, c, kind, n in zip(rows, cols, kinds, nxt, strict=True):
        rebuilt[r, c] = True if kind == 2 else patterns[n]
    if not np.array_equal(rebuilt, tiles):
        where = tuple(int(i) for i in np.argwhere(rebuilt != tiles)[0])
        return ("the dense mask rebuilt from MaskInfo equals the input",
                f"tile {where[:2]} element {where[2:]} = {bool(tiles[where])}",
                f"{bool(rebuilt[where])}")
    return None


def _diagnose_info(got: list[np.ndarray], case: MaskCase) -> str | None:
    try:
        broken = _broken_invariant(got, case)
    except (ValueError, IndexError, TypeError):
        return None
    if broken is None:
        return None
    return f"broken invariant: {broken[0]}"


@check(A, "5.3", 7, "MaskInfo invariants: tiles in row-major order, bounds per q row, the "
                    "dense mask rebuilt from MaskInfo equals the input, distinct patterns, "
                    "mask_next rules")
def mask_info_invariants(s: Session) -> None:
    """Task 5.3: MaskInfo invariants: tiles in row-major order, bounds per q row, the dense mask
    rebuilt from MaskInfo equals the input, distinct patterns, mask_next rules.
    """
    def body(case: MaskCase) -> None:
        value = s.invoke("build_mask_info", (case.mask, case.block_q, case.block_kv)).value
        got = _mask_info_fields(value)
        try:
            broken = _broken_invariant(got, case)
        except (ValueError, IndexError, TypeError) as exc:
            raise CheckFailure("MaskInfo cannot be read as the handout defines it",
                               got=f"{type(exc).__name__}: {exc}") from None
        if broken is not None:
            invariant, expected, got_text = broken
            raise CheckFailure(f"MaskInfo invariant broken: {invariant}", expected=expected,
                               got=got_text)
    run_property(mask_cases(), body, max_examples=20)


_WORKED_INFO = {
    "active_rows": [0, 1, 2, 2, 3, 3], "active_cols": [0, 0, 0, 1, 0, 1],
    "block_mask": [1, 1, 2, 1, 2, 1], "mask_next": [0, 1, 0, 0, 1, 1],
    "bounds_start": [True, True, True, False, True, False],
    "bounds_end": [True, True, False, True, False, True],
}


def _counts(fields: list[np.ndarray]) -> tuple[int, int, int, int]:
    info = dict(zip(FIELDS, fields, strict=True))
    kinds = np.asarray(info["block_mask"])
    return (len(kinds), int((kinds == 2).sum()), int((kinds == 1).sum()),
            int(np.shape(info["partial_mask_blocks"])[0]))


@check(A, "5.3", 5, "worked answers: causal 4096 with (1024, 2048) blocks (every array), Ex11, "
                    "Ex12, causal L 512 in 64-blocks (lecture §6.2)")
def mask_info_worked(s: Session) -> None:
    """Task 5.3: worked answers: causal 4096 with (1024, 2048) blocks (every array), Ex11, Ex12,
    causal L 512 in 64-blocks (lecture §6.2).
    """
    mask = ref.causal_mask(4096)
    got = _mask_info_fields(s.invoke("build_mask_info", (mask, 1024, 2048)).value)
    label = "build_mask_info(causal_mask(4096), 1024, 2048)"
    for name, g in zip(FIELDS, got, strict=True):
        if name == "partial_mask_blocks":
            expected = np.stack([mask[:1024, :2048], mask[1024:2048, :2048]])
            what = "MaskInfo.partial_mask_blocks (2 patterns: tiles (0,0)/(2,1) and (1,0)/(3,1))"
        else:
            expected = np.asarray(_WORKED_INFO[name], FIELD_DTYPES[name])
            what = f"MaskInfo.{name}"
        try:
            _assert_exact(g, expected, what)
        except CheckFailure as failure:
            failure.input = label
            raise
    worked = [
        ("Ex11: causal_mask(4096), blocks 1024", ref.causal_mask(4096), 1024, (10, 6, 4, 1)),
        ("Ex12: documents 1000/2000/1096, blocks 1024", ref.segment_mask(_EX12_IDS), 1024,
         (12, 2, 10, None)),
        ("causal_mask(512), blocks 64", ref.causal_mask(512), 64, (36, 28, 8, 1)),
    ]
    for label, m, b, (active, full, partial, patterns) in worked:
        counts = _counts(_mask_info_fields(s.invoke("build_mask_info", (m, b, b)).value))
        want = (active, full, partial, counts[3] if patterns is None else patterns)
        if counts != want:
            raise CheckFailure("the active / full / partial tile counts differ from the lecture's",
                               input=label,
                               expected=f"{active} active, {full} full, {partial} partial"
                                        + ("" if patterns is None else f", {patterns} pattern(s)"),
                               got=f"{counts[0]} active, {counts[1]} full, {counts[2]} partial, "
                                   f"{counts[3]} pattern(s)")


def _expect_value_error(s: Session, args: tuple, label: str, must_name: list[str],
                        why: str) -> None:
    try:
        s.invoke("build_mask_info", args)
    except CheckFailure as failure:
        if failure.status != "failed" or not failure.what.startswith("build_mask_info raised"):
            raise
        message = failure.what
        if "raised ValueError" not in message:
            raise CheckFailure(f"build_mask_info should raise ValueError {why}", input=label,
                               expected="ValueError", got=message.removeprefix(
                                   "build_mask_info raised "), traceback=failure.traceback
                               ) from None
        missing = [word for word in must_name if not re.search(rf"(?<![\w.]){re.escape(word)}"
                                                               rf"(?![\w.])", message)]
        if missing:
            raise CheckFailure("the ValueError's message does not name what is wrong",
                               input=label, expected=f"a message naming {', '.join(must_name)}",
                               got=message.removeprefix("build_mask_info raised ")) from None
        return
    raise CheckFailure(f"build_mask_info should raise ValueError {why}", input=label,
                       expected="ValueError", got="no error")


@st.composite
def bad_inputs(draw: st.DrawFn) -> tuple:
    """(args, label, words the message must contain, why) of one bad call."""
    case = draw(mask_cases(blocks=(2, 4, 8), max_len=32))
    q_len, kv_len = case.mask.shape
    if draw(st.booleans()):
        axis = draw(st.sampled_from(["block_q", "block_kv"]))
        length = q_len if axis == "block_q" else kv_len
        bad = draw(st.integers(2, length + 3).filter(lambda b, n=length: n % b != 0))
        bq, bkv = (bad, case.block_kv) if axis == "block_q" else (case.block_q, bad)
        return ((case.mask, bq, bkv), f"{case.recipe}, block_q = {bq}, block_kv = {bkv}",
                [axis, str(bad)], f"when {axis}={bad} does not divide its length {length}")
    rows = sorted(draw(st.sets(st.integers(0, q_len - 1), min_size=1, max_size=3)))
    mask = case.mask.copy()
    mask[rows] = False
    return ((mask, case.block_q, case.block_kv),
            f"{case.recipe} with rows {rows} cleared, block_q = {case.block_q}, "
            f"block_kv = {case.block_kv}", [str(rows[0])],
            f"when query row {rows[0]} (the first such row) attends to no key")


@check(A, "5.3", 5, "bad input raises ValueError naming the problem: a block size that does "
                    "not divide its length, a query row with no visible key (the first one)")
def mask_info_errors(s: Session) -> None:
    """Task 5.3: bad input raises ValueError naming the problem: a block size that does not
    divide its length, a query row with no visible key (the first one).
    """
    def body(example: tuple) -> None:
        args, label, words, why = example
        _expect_value_error(s, args, label, words, why)
    run_property(bad_inputs(), body, max_examples=12)


# --- Task 5.4 the Splash kernel and wrapper --------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SplashCase:
    """q, k, v [H, L, d|dv], a mask and its reference MaskInfo."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    case: MaskCase
    sm_scale: float | None
    seeds: tuple[int, int, int] = (0, 0, 0)

    @property
    def info(self) -> ref.MaskInfo:
        return ref.build_mask_info(self.case.mask, self.case.block_q, self.case.block_kv)

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.q.shape[-1]) if self.sm_scale is None else self.sm_scale

    def __repr__(self) -> str:
        arrays = ", ".join(
            f"{name} = f32{list(a.shape)} uniform in [-2, 2) (seed {seed})"
            for name, a, seed in zip("qkv", (self.q, self.k, self.v), self.seeds, strict=True))
        return f"{arrays}, {self.case!r}, sm_scale = {self.sm_scale!r}"


@st.composite
def splash_cases(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> SplashCase:
    """Square masks of ``kinds`` (L <= 32, blocks 2/4/8), H 1-2, d 4/8/16, dv 4/8, f32 inputs."""
    case = draw(mask_cases(square=True, blocks=(2, 4, 8), max_len=32, kinds=kinds))
    heads = draw(st.integers(1, 2))
    d, dv = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8]))
    length = case.mask.shape[0]
    drawn = (draw(seeds), draw(seeds), draw(seeds))
    q, k, v = (make_array((heads, length, n), np.dtype(np.float32), seed, low=-2, high=2)
               for n, seed in zip((d, d, dv), drawn, strict=True))
    scale = draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))
    return SplashCase(q, k, v, case, scale, drawn)


def _kernel_fields(info: ref.MaskInfo) -> tuple:
    """MaskInfo arrays for the grader's pallas_call, with at least one stored pattern."""
    patterns = info.partial_mask_blocks
    if patterns.shape[0] == 0:
        patterns = np.ones((1, *patterns.shape[1:]), bool)
    return tuple(info._replace(partial_mask_blocks=patterns))


#: Tolerance of the Splash outputs (float32 kernel against float64 attention).

#: The finite stand-in for a masked score in the models of correct arithmetic (the
#: solution's -0.7 x float32 max): exp of it minus any finite maximum is 0, never NaN.


def _check_output(got: object, c: SplashCase, what: str, fields: tuple,
                  also: Callable[[], tuple[tuple[object, tuple], ...]] | None = None) -> None:
    """``got`` equals dense float64 masked attention; on failure the diagnosis is the
    modelled kernel mistake (``KERNEL_MISTAKES``) that computes ``got`` from ``fields``,
    the MaskInfo arrays the kernel was handed, and, when ``also`` is given, each of the
    other runs (output, arrays) it returns (``diagnose_kernel``)."""
    expected = _dense_attention(c.q, c.k, c.v, c.case.mask, c.scale)
    try:
        assert_close(got, expected, SPLASH_RTOL, SPLASH_ATOL, what=what)
    except CheckFailure as failure:
        failure.diagnosis = diagnose_kernel(got, c, fields, expected,
                                            also() if also is not None else ())
        raise


@check(A, "5.4", 8, "splash_attention_kernel, run in the grader's pallas_call over the "
                     "reference MaskInfo, equals dense float64 masked attention")
def kernel_values(s: Session) -> None:
    """Task 5.4: splash_attention_kernel, run in the grader's pallas_call over the reference
    MaskInfo, equals dense float64 masked attention.
    """
    def body(c: SplashCase) -> None:
        fields = _kernel_fields(c.info)
        got = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                       harness="a5").value
        _check_output(got, c, "the kernel's attention output", fields)
    run_property(splash_cases(), body, max_examples=12)


@check(A, "5.4", 4, "the kernel applies mask_ref only where block_mask == 1 (full tiles are "
                    "given an all-False pattern and must ignore it)")
def kernel_masks_only_partial(s: Session) -> None:
    """Task 5.4: the kernel applies mask_ref only where block_mask == 1 (full tiles are given an
    all-False pattern and must ignore it).
    """
    def body(c: SplashCase) -> None:
        info = c.info
        full = info.block_mask == 2
        assume(full.any())
        blocks = info.partial_mask_blocks
        poisoned = np.concatenate([blocks, np.zeros((1, *blocks.shape[1:]), bool)])
        nxt = np.where(full, len(blocks), info.mask_next).astype(np.int32)
        fields = tuple(info._replace(partial_mask_blocks=poisoned, mask_next=nxt))
        got = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                       harness="a5").value

        def real_run() -> tuple[tuple[object, tuple], ...]:
            # The same kernel over the true MaskInfo: a mistake that matches the run with
            # all-False full-tile patterns (masking full tiles, or re-initialising at every
            # tile, which agree there on many masks) must match this one too.
            real = _kernel_fields(info)
            try:
                out = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, real, c.scale),
                               harness="a5").value
            except CheckFailure:
                return ()
            return ((out, real),)

        _check_output(got, c, "the kernel's attention output", fields, also=real_run)
    run_property(splash_cases(kinds=("causal", "full", "local & documents", "causal & local")),
                 body, max_examples=8)


def _wrapper_reply(s: Session, c: SplashCase, record_only: bool = False,
                   with_kernel: bool = False):
    """(reply, the wrapper's output, its prefetch arrays, (the student's kernel's output in
    the standard call or None, what it raised or None))."""
    kernel_fields = _kernel_fields(c.info) if with_kernel else None
    reply = s.invoke("splash_attention", (c.q, c.k, c.v, tuple(c.info), c.sm_scale,
                                          record_only, kernel_fields), harness="a5")
    value = reply.value
    if not isinstance(value, (tuple, list)) or len(value) != 4:
        raise CheckFailure("internal grader error: the a5 harness replied oddly",
                           status="error", internal=True)
    return reply, value[0], value[1], (value[2], value[3])


@check(A, "5.4", 6, "splash_attention(q, k, v, mask_info) equals dense float64 masked "
                    "attention (drawn masks, heads, head sizes, sm_scale or its default)")
def wrapper_values(s: Session) -> None:
    """Task 5.4: splash_attention(q, k, v, mask_info) equals dense float64 masked attention
    (drawn masks, heads, head sizes, sm_scale or its default).
    """
    def body(c: SplashCase) -> None:
        reply, out, _, kernel = _wrapper_reply(s, c, with_kernel=True)
        _, kernel_out = against_own_kernel((out, *kernel), "splash_attention",
                                           "splash_attention_kernel")
        try:
            assert_close(out, np.asarray(kernel_out, np.float64), SPLASH_RTOL, SPLASH_ATOL,
                         what="splash_attention's output", same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "splash_attention",
                                  "splash_attention_kernel") from None
        reply.own_call(0)  # its own pallas_call over the active tiles computed it
        if np.asarray(out).dtype != np.float32:
            raise CheckFailure("splash_attention's output has the wrong dtype",
                               expected="float32", got=np.asarray(out).dtype.name)
    run_property(splash_cases(), body, max_examples=12)


_OPERANDS = ("q", "k", "v", "mask", "output")


def _compare_splash_trace(got: list, expected: list) -> None:
    if len(got) != 1:
        raise CheckFailure("splash_attention should make exactly one pallas_call",
                           expected="1 pallas_call", got=f"{len(got)} pallas_calls")
    g, e = got[0], expected[0]
    if tuple(g.grid) != tuple(e.grid):
        raise CheckFailure("the grid should be (heads, number of active tiles)",
                           expected=str(tuple(e.grid)), got=str(tuple(g.grid)))
    if tuple(g.dimension_semantics) != tuple(e.dimension_semantics):
        raise CheckFailure("the dimension semantics differ", expected=str(e.dimension_semantics),
                           got=str(g.dimension_semantics))
    g_pre = [op for op in g.operands if op.role == "prefetch"]
    e_pre = [op for op in e.operands if op.role == "prefetch"]
    if len(g_pre) != len(e_pre):
        raise CheckFailure("the call should use PrefetchScalarGridSpec(num_scalar_prefetch=6)",
                           expected=f"{len(e_pre)} scalar-prefetch arrays",
                           got=f"{len(g_pre)}")
    g_ops = [op for op in g.operands if op.role in ("in", "out")]
    e_ops = [op for op in e.operands if op.role in ("in", "out")]
    if len(g_ops) != len(e_ops):
        raise CheckFailure("the call should have inputs q, k, v, mask and one output",
                           expected=f"{len(e_ops)} operands", got=f"{len(g_ops)} operands")
    for label, go, eo in zip(_OPERANDS, g_ops, e_ops, strict=True):
        if tuple(go.block_shape) != tuple(eo.block_shape):
            raise CheckFailure(f"the {label} block shape differs", expected=str(eo.block_shape),
                               got=str(go.block_shape))
        if not np.array_equal(go.block_indices, eo.block_indices):
            step = int(np.argmax(np.any(go.block_indices != eo.block_indices, axis=1))) \
                if go.block_indices.shape == eo.block_indices.shape else 0
            raise CheckFailure(f"the {label} block chosen by the index map differs",
                               expected=f"{tuple(eo.block_indices[step].tolist())} at step {step}",
                               got=(f"{tuple(go.block_indices[step].tolist())}"
                                    if go.block_indices.shape == eo.block_indices.shape
                                    else f"{go.block_indices.shape[0]} steps"))
        if go.dma_count != eo.dma_count:
            hint = {"k": "fetch a K/V block only when the active column changes",
                    "v": "fetch a K/V block only when the active column changes",
                    "output": "write an output block back once per (head, q row of tiles)",
                    "mask": "a full tile's mask_next names the next partial pattern, so the "
                            "mask block does not change"}.get(label)
            raise CheckFailure(f"the {label} operand makes a different number of DMAs",
                               expected=str(eo.dma_count), got=str(go.dma_count), hint=hint)
    if g.vmem_bytes != e.vmem_bytes or g.smem_bytes != e.smem_bytes:
        raise CheckFailure("the VMEM / SMEM bytes differ (scratch m, l f32 (block_q, 128), "
                           "acc f32 (block_q, dv); six int32 [A] prefetch arrays)",
                           expected=f"VMEM {e.vmem_bytes} B, SMEM {e.smem_bytes} B",
                           got=f"VMEM {g.vmem_bytes} B, SMEM {g.smem_bytes} B")


@check(A, "5.4", 5, "splash_attention's pallas_call: grid (H, A), semantics, blocks chosen "
                    "through the prefetched table, K/V fetched only when the column changes, "
                    "one write-back per q row, VMEM/SMEM bytes")
def wrapper_trace(s: Session) -> None:
    """Task 5.4: splash_attention's pallas_call: grid (H, A), semantics, blocks chosen through
    the prefetched table, K/V fetched only when the column changes, one write-back per q row,
    VMEM/SMEM bytes.
    """
    def body(c: SplashCase) -> None:
        reply, _, _, _ = _wrapper_reply(s, c)
        reply.own_call(0)  # the checked call must be the one that computed the result
        with pallas_sim.trace() as t:
            ref.splash_attention(c.q, c.k, c.v, c.info, sm_scale=c.sm_scale)
        _compare_splash_trace(reply.traces, t.calls)
    run_property(splash_cases(), body, max_examples=8)


@check(A, "5.4", 3, "the six scalar-prefetch arrays handed to pallas_call are int32 and in "
                    "the order active_rows, active_cols, mask_next, bounds_start, bounds_end, "
                    "block_mask")
def wrapper_prefetch(s: Session) -> None:
    """Task 5.4: the six scalar-prefetch arrays handed to pallas_call are int32 and in the order
    active_rows, active_cols, mask_next, bounds_start, bounds_end, block_mask.
    """
    def body(c: SplashCase) -> None:
        _, _, recorded, _ = _wrapper_reply(s, c, record_only=True)
        if not isinstance(recorded, (list, tuple)) or len(recorded) != 1:
            raise CheckFailure("splash_attention should make exactly one pallas_call",
                               expected="1", got=str(len(recorded)))
        arrays = list(recorded[0])
        if len(arrays) != 6:
            raise CheckFailure("the call should prefetch six arrays "
                               "(PrefetchScalarGridSpec(num_scalar_prefetch=6))",
                               expected="6", got=str(len(arrays)))
        info = c.info
        want = [np.asarray(getattr(info, name)).astype(np.int32) for name in PREFETCH_ORDER]
        for n, (name, got, exp) in enumerate(zip(PREFETCH_ORDER, arrays, want, strict=True)):
            got = np.asarray(got)
            if got.shape == exp.shape and np.array_equal(got, exp) and got.dtype == np.int32:
                continue
            same = [other for other, e in zip(PREFETCH_ORDER, want, strict=True)
                    if got.shape == e.shape and np.array_equal(got, e)]
            diagnosis = None
            if same and name not in same:
                diagnosis = (f"prefetch argument {n} holds {' or '.join(same)}; the kernel "
                             f"expects {name} there (order: {', '.join(PREFETCH_ORDER)})")
            elif np.array_equal(got, exp):
                diagnosis = "the values are right; convert them with .astype(np.int32)"
            raise CheckFailure(f"scalar-prefetch argument {n} should be {name} as int32",
                               expected=fmt_array(exp), got=fmt_array(got), diagnosis=diagnosis)
    run_property(splash_cases(), body, max_examples=6)


# --- Task 5.4: use_base2_exp (lecture §6.6) ---------------------------------------------------

@check(A, "5.4", 2, "splash_attention_kernel with use_base2_exp=True: the output is still "
                    "masked attention, and the final m is the row maximum times log2(e) "
                    "(scores pre-scaled, exp2; lecture §6.6)")
def kernel_base2(s: Session) -> None:
    """Task 5.4: splash_attention_kernel with use_base2_exp=True: the output is still masked
    attention, and the final m is the row maximum times log2(e) (scores pre-scaled, exp2;
    lecture §6.6).
    """
    def body(c: SplashCase) -> None:
        fields = _kernel_fields(c.info)
        value = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                         {"use_base2_exp": True, "with_max": True}, harness="a5").value
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise CheckFailure("internal grader error: the a5 harness replied oddly",
                               status="error", internal=True)
        _check_output(value[0], c, "the kernel's attention output with use_base2_exp=True",
                      fields)
        m = np.asarray(value[1], np.float64)
        masked, unmasked = row_maxima(c.q, c.k, c.case.mask, c.scale)
        if between(m, masked * LOG2_E, unmasked * LOG2_E):
            return
        natural = between(m, masked, unmasked)
        raise CheckFailure(
            "with use_base2_exp=True the final m is not the row maximum in base-2 units",
            expected=f"m = log2(e) · (the row's largest visible score): "
                     f"{fmt_array(masked * LOG2_E)}",
            got=f"m = {fmt_array(m)}",
            diagnosis=("use_base2_exp is ignored: m is the row maximum in natural units, so "
                       "the kernel still calls exp. Multiply the scaled scores by log2(e) "
                       "before masking, keep m in those units and use jnp.exp2 for p and "
                       "alpha (lecture §6.6)") if natural else None)
    run_property(splash_cases(), body, max_examples=6)


@check(A, "5.4", 2, "splash_attention(..., use_base2_exp=True) accepts the option, computes "
                    "what its kernel computes with it in the grader's standard call, and "
                    "passes it on: its pallas_call's work changes with the option as the "
                    "kernel's does (lecture §6.6)")
def wrapper_base2(s: Session) -> None:
    """Task 5.4: splash_attention(..., use_base2_exp=True) accepts the option and computes what
    its kernel computes with it in the grader's standard call (lecture §6.6). The values
    alone cannot show that the option reaches the kernel (base 2 gives the same softmax),
    so the op counts of the wrapper's own call are compared with the option on and off.
    """
    def body(c: SplashCase) -> None:
        reply = s.invoke("splash_attention", (c.q, c.k, c.v, tuple(c.info), c.sm_scale, False,
                                              _kernel_fields(c.info)),
                         {"use_base2_exp": True}, harness="a5")
        value = reply.value
        if not isinstance(value, (tuple, list)) or len(value) != 4:
            raise CheckFailure("internal grader error: the a5 harness replied oddly",
                               status="error", internal=True)
        out = value[0]
        _, kernel_out = against_own_kernel((out, value[2], value[3]), "splash_attention",
                                           "splash_attention_kernel")
        try:
            assert_close(out, np.asarray(kernel_out, np.float64), SPLASH_RTOL, SPLASH_ATOL,
                         what="splash_attention's output with use_base2_exp=True",
                         same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "splash_attention",
                                  "splash_attention_kernel") from None
        reply.own_call(0)
    run_property(splash_cases(), body, max_examples=4)
    _require_base2_forwarded(s)


def _forwarding_case() -> SplashCase:
    """The case on which the forwarding of use_base2_exp is observed: causal_mask(16) in
    4-blocks, one head, d 8, dv 4 (f32, seeds 7, 8, 9)."""
    q, k, v = (make_array((1, 16, n), np.dtype(np.float32), seed, low=-2, high=2)
               for n, seed in ((8, 7), (8, 8), (4, 9)))
    return SplashCase(q, k, v, MaskCase(ref.causal_mask(16), 4, 4, "causal_mask(16)"), None,
                      (7, 8, 9))


def _work(call) -> dict[str, int]:
    """What the kernel computed over a whole call: each op count summed over the steps."""
    return {} if call.ops is None else {key: call.ops.total(key) for key in call.ops.keys()}


def _require_base2_forwarded(s: Session) -> None:
    """The wrapper's own pallas_call must run the kernel with the use_base2_exp it was
    given, observed on the call it makes: the student's kernel in the grader's standard call
    does different work with the option on and off (the scores times log2(e)), and the
    wrapper's call must differ too. A kernel whose work does not change, or that refuses the
    option, leaves nothing to observe here (its own base-2 check charges it).

    Raises:
      CheckFailure: the wrapper's call does the same work with the option on and off.
    """
    c = _forwarding_case()
    fields = _kernel_fields(c.info)
    kernel_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                             {"use_base2_exp": flag}, harness="a5")
        except CheckFailure as failure:
            if failure.status == "failed":
                return
            raise
        kernel_work[flag] = _work(reply.trace)
    if kernel_work[True] == kernel_work[False]:
        return
    wrapper_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("splash_attention", (c.q, c.k, c.v, tuple(c.info), c.sm_scale,
                                                  False, None),
                             {"use_base2_exp": flag}, harness="a5")
            wrapper_work[flag] = _work(reply.own_call(0))
        except CheckFailure as failure:
            raise failure.copy(input=f"{c!r}, use_base2_exp = {flag}") from None
    if wrapper_work[True] != wrapper_work[False]:
        return
    key = sorted(k for k in set(kernel_work[True]) | set(kernel_work[False])
                 if kernel_work[True].get(k, 0) != kernel_work[False].get(k, 0))[0]
    raise CheckFailure(
        "use_base2_exp does not reach the kernel: splash_attention's pallas_call does the "
        "same work with use_base2_exp=True and False",
        input=repr(c),
        expected=f"the kernel's {key} change with the option, as in the grader's standard "
                 f"call: {kernel_work[False].get(key, 0)} -> {kernel_work[True].get(key, 0)}",
        got=f"{key} {wrapper_work[False].get(key, 0)} with either value",
        hint="pass use_base2_exp on to splash_attention_kernel (functools.partial(..., "
             "use_base2_exp=use_base2_exp)); accepting the keyword is not enough")


# --- Task 5.5 mask_stats ---------------------------------------------------------------------

_INT_STATS = ("num_blocks", "num_active", "num_partial", "num_full", "num_patterns",
              "pattern_bytes")


def _compare_stats(got: object, expected: dict, label: str | None = None) -> None:
    if not isinstance(got, dict):
        raise CheckFailure("mask_stats must return a dict", expected="a dict",
                           got=type(got).__name__, input=label)
    for key in _INT_STATS:
        if key not in got:
            raise CheckFailure(f"mask_stats has no entry {key!r}", expected=str(expected),
                               got=str(got), input=label)
        try:
            assert_equal_int(got[key], int(expected[key]), f"mask_stats[{key!r}]")
        except CheckFailure as failure:
            failure.input = label
            raise
    saving = as_finite_number(got.get("compute_saving"), "mask_stats['compute_saving']",
                              expected=f"{expected['compute_saving']:.6g} "
                                       "(num_blocks / num_active)", input=label)
    if not math.isclose(saving, expected["compute_saving"], rel_tol=1e-9):
        raise CheckFailure("mask_stats['compute_saving'] should be num_blocks / num_active",
                           expected=f"{expected['compute_saving']:.6g}",
                           got=repr(got.get("compute_saving")), input=label)


@check(A, "5.5", 3, "mask_stats equals the reference's counts, pattern bytes and saving on "
                    "drawn masks")
def stats_values(s: Session) -> None:
    """Task 5.5: mask_stats equals the reference's counts, pattern bytes and saving on drawn
    masks.
    """
    def body(case: MaskCase) -> None:
        got = s.invoke("mask_stats", (case.mask, case.block_q, case.block_kv)).value
        _compare_stats(got, ref.mask_stats(case.mask, case.block_q, case.block_kv))
    run_property(mask_cases(), body, max_examples=15)


@check(A, "5.5", 2, "worked answers: Ex11 (scaled to L 1024 / block 256); causal L 512 in "
                    "64-blocks; the lecture's L 16384 / block 1024 pattern counts (causal 1, "
                    "causal & window 2048 2), scaled to L 2048 / block 128 / window 256")
def stats_worked(s: Session) -> None:
    """Task 5.5: worked answers: Ex11 (scaled to L 1024 / block 256); causal L 512 in 64-blocks;
    the lecture's L 16384 / block 1024 pattern counts (causal 1, causal & window 2048 2),
    scaled to L 2048 / block 128 / window 256.
    """
    causal2k = ref.causal_mask(2048)
    worked = [
        ("Ex11 scaled by 1/4: causal_mask(1024), blocks 256", ref.causal_mask(1024), 256,
         {"num_blocks": 16, "num_active": 10, "num_partial": 4, "num_full": 6,
          "num_patterns": 1, "pattern_bytes": 256 * 256}),
        ("causal_mask(512), blocks 64", ref.causal_mask(512), 64,
         {"num_blocks": 64, "num_active": 36, "num_partial": 8, "num_full": 28,
          "num_patterns": 1, "pattern_bytes": 4096}),
        ("causal_mask(2048), blocks 128 (L 16384 / 1024 scaled by 1/8: one pattern)",
         causal2k, 128, {"num_blocks": 256, "num_active": 136, "num_partial": 16,
                         "num_full": 120, "num_patterns": 1, "pattern_bytes": 128 * 128}),
        ("causal_mask(2048) & local_mask(2048, (256, None)), blocks 128 (window 2048 at "
         "L 16384 scaled by 1/8: two patterns)", causal2k & ref.local_mask(2048, (256, None)),
         128, {"num_blocks": 256, "num_active": 45, "num_partial": 30, "num_full": 15,
               "num_patterns": 2, "pattern_bytes": 2 * 128 * 128}),
    ]
    for label, mask, b, numbers in worked:
        expected = {**numbers, "compute_saving": numbers["num_blocks"] / numbers["num_active"]}
        _compare_stats(s.invoke("mask_stats", (mask, b, b)).value, expected, label)


# --- Task 5.6 masks computed in the kernel ---------------------------------------------------

from graders.labs.a5_splash_attention.public import worked  # noqa: E402  (Task 5.6's worked answer)
from reference.dense_attention import masked_dense_attention  # noqa: E402

#: The mask families of Task 5.6 (lecture §6.1, §6.4): each rule alone and their ``&``.
COMPUTED_KINDS = ("causal", "local", "documents", "causal & local", "causal & documents",
                  "local & documents", "causal & local & documents")


@dataclasses.dataclass(frozen=True)
class ComputedCase:
    """q, k, v f32 [H, L, d|dv], the keyword arguments of the Task 5.6 call, the dense
    mask they describe and its tiling; ``recipe`` prints the rule."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    kwargs: dict
    mask: np.ndarray
    block_q: int
    block_kv: int
    recipe: str
    seeds: tuple[int, int, int] = (0, 0, 0)

    @property
    def info(self) -> ref.MaskInfo:
        return ref.build_mask_info(self.mask, self.block_q, self.block_kv)

    def __repr__(self) -> str:
        arrays = ", ".join(
            f"{name} = f32{list(a.shape)} uniform in [-2, 2) (seed {seed})"
            for name, a, seed in zip("qkv", (self.q, self.k, self.v), self.seeds, strict=True))
        shown = ", ".join(f"{key}={fmt_array(value) if isinstance(value, np.ndarray) else value!r}"
                          for key, value in self.kwargs.items())
        return (f"{arrays}, mask = {self.recipe}, mask_info = the MaskInfo of that mask with "
                f"block_q = {self.block_q}, block_kv = {self.block_kv}; call keywords: {shown}")


@st.composite
def computed_cases(draw: st.DrawFn, *, kinds: tuple[str, ...] = COMPUTED_KINDS,
                   offsets: bool = False) -> ComputedCase:
    """A Task 5.6 call: L <= 32, blocks 2/4/8 per axis, H 1-2, d 4/8/16, dv 4/8.

    ``offsets``: the queries sit ``offset`` >= 2 positions after the keys (explicit
    ``q_positions``; kinds with "causal" only, so every query keeps a visible key), else
    positions are 0..L-1, passed explicitly or left to their default.
    """
    bq, bkv = draw(st.sampled_from((2, 4, 8))), draw(st.sampled_from((2, 4, 8)))
    kind = draw(st.sampled_from(kinds))
    unit = math.lcm(bq, bkv)
    length = unit * draw(st.integers(1, max(1, 32 // unit)))
    every = np.arange(length, dtype=np.int32)
    kwargs: dict = {}
    recipe: list[str] = []
    # Offsets from 2: with offset 1 a strict causal comparison (q > kv) gives exactly the
    # mask of positions 0..L-1, and the two mistakes could not be told apart.
    offset = draw(st.integers(2, length + 1)) if offsets else 0
    q_pos = every + offset
    if offsets:
        kwargs["q_positions"] = q_pos
        recipe.append(f"queries at positions {offset}..{offset + length - 1}, keys at "
                      f"0..{length - 1}")
    elif draw(st.booleans()):
        kwargs["q_positions"], kwargs["kv_positions"] = every, every.copy()
    causal = "causal" in kind
    if causal:
        kwargs["causal"] = True
        recipe.append("causal")
    window = None
    if "local" in kind:
        left = window_side(draw, length, bkv)
        right = None if causal else window_side(draw, length, bkv)
        if offsets and left is not None:
            left = max(left, offset)  # the last query keeps the last key in its window
        window = (left, right)
        kwargs["window"] = window
        recipe.append(f"window {window}")
    ids = np.zeros(length, np.int32)
    if "documents" in kind:
        ids, text = _documents(draw, length)
        ids = ids.astype(np.int32)
        kwargs["q_segment_ids"] = ids
        if draw(st.booleans()):
            kwargs["kv_segment_ids"] = ids.copy()
        recipe.append(text.removeprefix("segment_mask(").removesuffix(")"))
    sm_scale = draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))
    if sm_scale is not None:
        kwargs["sm_scale"] = sm_scale
    mask = ref._rule_mask(q_pos, every, ids, ids, causal, window)
    heads = draw(st.integers(1, 2))
    d, dv = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8]))
    drawn = (draw(seeds), draw(seeds), draw(seeds))
    q, k, v = (make_array((heads, length, n), np.dtype(np.float32), seed, low=-2, high=2)
               for n, seed in zip((d, d, dv), drawn, strict=True))
    return ComputedCase(q, k, v, kwargs, mask, bq, bkv, " & ".join(recipe), drawn)


def _computed_reply(s: Session, c: ComputedCase):
    """(reply, the wrapper's output, per pallas_call the recorded arguments)."""
    reply = s.invoke("splash_attention_computed_mask",
                     (c.q, c.k, c.v, tuple(c.info), dict(c.kwargs)), harness="a5")
    value = reply.value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise CheckFailure("internal grader error: the a5 harness replied oddly",
                           status="error", internal=True)
    return reply, value[0], value[1]


def _computed_expected(c: ComputedCase) -> np.ndarray:
    scale = c.kwargs.get("sm_scale")
    return masked_dense_attention(c.q, c.k, c.v, c.mask, sm_scale=scale)


def _check_computed_output(reply, out: object, c: ComputedCase) -> None:
    assert_close(out, _computed_expected(c), SPLASH_RTOL, SPLASH_ATOL,
                 what="splash_attention_computed_mask's output")
    reply.own_call(0)  # its own pallas_call computed it
    if np.asarray(out).dtype != np.float32:
        raise CheckFailure("splash_attention_computed_mask's output has the wrong dtype",
                           expected="float32", got=np.asarray(out).dtype.name)


@check(A, "5.6", 4, "splash_attention_computed_mask equals dense float64 masked attention for "
                    "causal, local-window and document masks and their & (drawn tilings, "
                    "heads, head sizes, sm_scale or its default)")
def computed_values(s: Session) -> None:
    """Task 5.6: splash_attention_computed_mask equals dense float64 masked attention for
    causal, local-window and document masks and their & (drawn tilings, heads, head sizes,
    sm_scale or its default).
    """
    def body(c: ComputedCase) -> None:
        reply, out, _ = _computed_reply(s, c)
        _check_computed_output(reply, out, c)
    run_property(computed_cases(), body, max_examples=12)


@check(A, "5.6", 2, "the mask is computed from the positions the call is given: queries "
                    "placed after the keys (q_positions = offset + 0..L-1, offset >= 2) with "
                    "causal, causal & window and causal & documents masks")
def computed_positions(s: Session) -> None:
    """Task 5.6: the mask is computed from the positions the call is given: queries placed
    after the keys (q_positions = offset + 0..L-1, offset >= 2) with causal, causal & window
    and causal & documents masks.
    """
    def body(c: ComputedCase) -> None:
        reply, out, calls = _computed_reply(s, c)
        try:
            _check_computed_output(reply, out, c)
        except CheckFailure as failure:
            length = c.q.shape[1]
            every = np.arange(length)
            ids = np.asarray(c.kwargs.get("q_segment_ids", np.zeros(length, np.int32)))
            ignored = ref._rule_mask(every, every, ids, ids, bool(c.kwargs.get("causal")),
                                     c.kwargs.get("window"))
            # What such a kernel computes over the given table: full tiles unmasked, partial
            # tiles under the rule at positions 0..L-1, empty tiles skipped.
            kinds = np.kron(ref.classify_blocks(c.mask, c.block_q, c.block_kv),
                            np.ones((c.block_q, c.block_kv), np.int8))
            seen = (kinds == 2) | ((kinds == 1) & ignored)
            if seen.any(axis=1).all():
                model = masked_dense_attention(c.q, c.k, c.v, seen,
                                               sm_scale=c.kwargs.get("sm_scale"))
                if explains(out, _computed_expected(c), model, strict_nan=True):
                    failure.diagnosis = _positions_diagnosis(calls, c)
            raise
    run_property(computed_cases(kinds=("causal", "causal & local", "causal & documents"),
                                offsets=True), body, max_examples=8)


#: The output is attention with queries and keys at the same positions: which of two
#: mistakes gives it is read from the arguments the wrapper handed its pallas_call.
POSITIONS_FROM_GRID = (
    "the output is attention with queries at positions 0..L-1: the kernel computes positions "
    "from the grid (program_id x block size) instead of reading the q_positions / "
    "kv_positions its call is given (they are there: one argument holds q_positions, one "
    "0..L-1); the mask rule compares the positions the call is given (lecture §6.3, §6.6)")
KV_POSITIONS_FROM_Q = (
    "kv_positions defaults to q_positions: with q_positions given and kv_positions left out, "
    "the call is handed the queries' positions twice (no argument holds the keys' default "
    "0..L-1), so every key sits at its query's position and the queries are not after the "
    "keys; the default of kv_positions is 0..L-1 whatever q_positions is (the handout) "
    "(lecture §6.6)")


def _positions_diagnosis(calls: object, c: ComputedCase) -> str | None:
    """Which mistake gives attention at positions 0..L-1 here (the caller verified the output):
    read from the per-token arguments the wrapper handed its pallas_call(s) (``calls``, the
    harness's record: shape, dtype, values of every integer argument). q_positions handed in
    twice and no 0..L-1: the keys were given the queries' positions (``KV_POSITIONS_FROM_Q``);
    q_positions once and 0..L-1 beside it: the kernel ignores what it was given
    (``POSITIONS_FROM_GRID``). Anything else: no diagnosis."""
    length = c.q.shape[1]
    q_pos = np.asarray(c.kwargs.get("q_positions", np.arange(length)))
    every = np.arange(length)
    tokens = []
    for call in calls if isinstance(calls, (list, tuple)) else ():
        for arg in call if isinstance(call, (list, tuple)) else ():
            if isinstance(arg, (list, tuple)) and len(arg) == 3 and arg[2] is not None:
                values = np.asarray(arg[2])
                if values.size == length:
                    tokens.append(values.ravel())
    as_queries = sum(np.array_equal(t, q_pos) for t in tokens)
    as_default = any(np.array_equal(t, every) for t in tokens)
    if "kv_positions" not in c.kwargs and as_queries >= 2 and not as_default:
        return KV_POSITIONS_FROM_Q
    if as_queries == 1 and as_default:
        return POSITIONS_FROM_GRID
    return None


def _mask_operand(values: np.ndarray | None, shape: tuple, dtype: str, info: ref.MaskInfo,
                  mask: np.ndarray) -> str | None:
    """What mask data an argument of the call holds, in words, else None: the stored
    patterns (``partial_mask_blocks``, in any integer or bool dtype), the dense mask, or
    some other bool array; per-token arrays and the tables are not masks. Float arguments
    are not inspected (q, k and v may have the patterns' shape)."""
    patterns = np.asarray(info.partial_mask_blocks, bool)
    if values is not None:
        squeezed = np.squeeze(values)
        if squeezed.ndim >= 2 and values.size == patterns.size and patterns.size and \
                np.array_equal(values.reshape(patterns.shape).astype(bool), patterns):
            return "partial_mask_blocks"
        if squeezed.ndim >= 2 and values.size == mask.size and \
                np.array_equal(values.reshape(mask.shape).astype(bool), mask):
            return "the dense [L, L] mask"
    if dtype == "bool":
        return "a bool array"
    return None


def _moved_masks(traces: list, calls: list, c: ComputedCase, info: ref.MaskInfo
                 ) -> list[tuple[int, int, str, str, int, int]]:
    """(call, argument, what, how shown, DMAs, bytes) of every argument that holds mask
    data and reaches the kernel from HBM: a blocked or prefetched input, or one left in
    HBM (``pl.ANY``) in a call whose kernel copies data itself (those bytes are shown)."""
    found = []
    for n, (trace, args) in enumerate(zip(traces, calls, strict=False)):
        moving = [op for op in trace.operands if op.role in ("prefetch", "in")]
        for a, (op, arg) in enumerate(zip(moving, args, strict=False)):
            shape, dtype, values = arg
            what = _mask_operand(None if values is None else np.asarray(values), tuple(shape),
                                 str(dtype), info, c.mask)
            if what is None:
                continue
            moved = op.hbm_bytes if op.role == "in" else int(np.prod(op.shape)) * np.dtype(
                op.dtype).itemsize
            if op.memory_space == "any":  # left in HBM: moved only by the kernel's own copies
                moved = trace.manual_dma_bytes
            if moved:
                shown = f"{op.name} {op.dtype}{list(op.shape)} ({op.role}, {op.memory_space})"
                found.append((n, a, what, shown, op.dma_count, moved))
    return found


@check(A, "5.6", 4, "no mask moves from HBM: the call's inputs are q, k, v and per-token "
                    "positions and segment ids, never partial_mask_blocks or a dense mask "
                    "(drawn masks and the lecture's causal / window counts scaled by 1/8)")
def computed_no_mask_from_hbm(s: Session) -> None:
    """Task 5.6: no mask moves from HBM: the call's inputs are q, k, v and per-token positions
    and segment ids, never partial_mask_blocks or a dense mask (drawn masks and the lecture's
    causal / window counts scaled by 1/8).
    """
    def body(c: ComputedCase) -> None:
        reply, _, calls = _computed_reply(s, c)
        reply.own_call(0)  # the call that computed the result is one of those inspected
        info = c.info
        if not isinstance(calls, (list, tuple)) or len(calls) != len(reply.traces):
            raise CheckFailure("internal grader error: the recorded calls do not match the "
                               "traces", status="error", internal=True)
        moved = _moved_masks(reply.traces, calls, c, info)
        if not moved:
            return
        n, a, what, shown, dmas, nbytes = moved[0]
        stored = info.partial_mask_blocks.shape[0]
        failure = CheckFailure(
            "a mask moves from HBM into the kernel: compute each partial tile's mask from "
            "positions and segment ids instead",
            expected="inputs q, k, v and per-token int32 arrays only; 0 mask bytes from HBM "
                     f"(this mask's {_count(stored, 'stored pattern')} stay unused)",
            got=f"argument {a} of pallas_call {n}, {shown}: {what}, {dmas} DMAs, "
                f"{nbytes} B moved")
        if what == "partial_mask_blocks":
            failure.diagnosis = (
                "the kernel still reads partial_mask_blocks (the Task 5.4 pattern blocks, "
                "chosen by mask_next): the values are right, but every partial tile copies "
                f"its stored pattern from HBM; at L {worked.LENGTH} with {worked.BLOCK}-tiles "
                "that is " + ", ".join(f"{p.mask} {p.saved_mib:g} MiB" for p in worked.SAVED)
                + " of patterns the computed mask never stores (lecture §6.6)")
        raise failure

    for length_mask, label in _worked_computed_cases():
        try:
            body(length_mask)
        except CheckFailure as failure:
            failure.input = failure.input or label
            raise
    run_property(computed_cases(), body, max_examples=8)


def _worked_computed_cases() -> list[tuple[ComputedCase, str]]:
    """The lecture's §6.6 count scaled by 1/worked.SCALE: causal and causal & window, one
    head, d = dv = 8 (the stored patterns: 1 and 2, of (BLOCK / SCALE)² bytes each)."""
    length, block = worked.LENGTH // worked.SCALE, worked.BLOCK // worked.SCALE
    window = worked.WINDOW // worked.SCALE
    every = np.arange(length)
    zeros = np.zeros(length, np.int32)
    out = []
    for saved, rule in zip(worked.SAVED[:2], ({"causal": True},
                                              {"causal": True, "window": (window, None)}),
                           strict=True):
        mask = ref._rule_mask(every, every, zeros, zeros, True, rule.get("window"))
        q, k, v = (make_array((1, length, 8), np.dtype(np.float32), seed, low=-2, high=2)
                   for seed in (1, 2, 3))
        case = ComputedCase(q, k, v, dict(rule), mask, block, block,
                            f"{saved.mask} at L {length}, blocks {block}", (1, 2, 3))
        out.append((case, f"{saved.mask}, L {worked.LENGTH} / {worked.BLOCK} scaled by "
                          f"1/{worked.SCALE}: L {length}, blocks {block} "
                          f"({_count(saved.patterns, 'stored pattern')} the call must not "
                          "read)"))
    return out


# --- Task 5.7 choose_splash_blocks (performance) -------------------------------------------

#: Full points for a mask within this fraction above its fastest legal candidate's time.
PERFORMANCE_RTOL = worked.PERFORMANCE_RTOL
#: Seconds the worker may take for one mask's abstract run: the slowest candidate, (256, 256)
#: causal, 67 584 grid steps, takes about 0.6 s in-process on this 2-core machine.
PERFORMANCE_TIMEOUT = 30.0
MiB = 1 << 20
_PERF_SHAPE = dict(length=ref.PERFORMANCE_LENGTH, heads=ref.PERFORMANCE_HEADS,
                   head_dim=ref.PERFORMANCE_HEAD_DIM, value_dim=ref.PERFORMANCE_VALUE_DIM)
#: How each mask is named in feedback (the problem as worked.py states it).
_PERF_MASK_TEXT = {
    "causal": "causal",
    "local": f"causal with a window of {ref.PERFORMANCE_WINDOW} earlier keys",
    "document": "documents of " + "/".join(map(str, ref.PERFORMANCE_DOCUMENTS)) + " tokens",
}
#: Per session: Task 5.7's measured runs (``_Measured``), so its four checks share them.
_MEASURED: weakref.WeakKeyDictionary[Session, _Measured] = weakref.WeakKeyDictionary()
#: The concrete small runs' inputs are drawn from this seed (the problem is the grader's;
#: nothing about it is secret, the values are checked against the reference).
SMALL_SEED = 5_7
#: A small run's output rows must be within this of dense float64 attention (bf16 inputs;
#: a kernel that rounds p to bf16 before p·v stays within 0.3 % here, one that skips the
#: softmax is off by about its values' size).
SMALL_ATOL, SMALL_RTOL = 2e-2, 2e-2
#: Bytes of the concrete runs' replies beyond the request's own budget (their output rows).
_ROWS_REPLY_BYTES = 1 << 20


def _perf_label(kind: str) -> str:
    h, length = ref.PERFORMANCE_HEADS, ref.PERFORMANCE_LENGTH
    d, dv = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
    return (f"choose_splash_blocks({kind!r}): mask {_PERF_MASK_TEXT[kind]}, L {length}; bf16 "
            f"q, k [{h}, {length}, {d}], v [{h}, {length}, {dv}] on one Ironwood TensorCore "
            "(lecture §6.5)")


@functools.cache
def _kept_elements(kind: str) -> int:
    """How many (query, key) pairs the mask keeps."""
    return int(np.count_nonzero(ref.performance_mask(kind)))


def _tiling_note(kind: str, blocks: tuple[int, int], best: tuple[int, int]) -> str:
    """What a tiling costs per lecture §6.5: grid steps (each with about a microsecond's fixed
    cost and its copies) against score elements computed for masked pairs, next to the
    ``best`` candidate's."""
    def cost(tiling: tuple[int, int]) -> tuple[int, float]:
        active = len(splash_timing.tile_table(kind, *tiling).rows)
        return active, active * tiling[0] * tiling[1] / _kept_elements(kind) - 1

    heads = ref.PERFORMANCE_HEADS
    active, waste = cost(blocks)
    best_active, best_waste = cost(best)
    return (f"your blocks {blocks} give {active} active tiles per head, {heads * active} grid "
            f"steps in all, each paying a fixed cost of about a microsecond plus its copies, "
            f"and compute {waste:.0%} more scores than the mask keeps; the fastest "
            f"{best} gives {best_active} tiles per head ({heads * best_active} steps) and "
            f"computes {best_waste:.0%} more (lecture §6.5: small blocks skip more but pay "
            "per step; large blocks compute masked pairs)")


def _vmem_note(blocks: tuple[int, int]) -> str:
    bq, bkv = blocks
    d, dv = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
    need = 2 * (bq * d * 2 + bkv * d * 2 + bkv * dv * 2 + bq * bkv + bq * dv * 4) \
        + bq * (128 + 128 + dv) * 4
    return (f"double buffers of the q, k, v blocks (bf16), the ({bq}, {bkv}) bool pattern and "
            f"the f32 output block, plus the m, l, acc scratch: {need / MiB:.1f} MiB, more "
            "than the 32 MiB scoped VMEM")


@dataclasses.dataclass
class _Measured:
    """One session's Task 5.7 runs: per mask the chosen blocks (or why there are none);
    the legal candidates (the grader's call fits); per (blocks, masks) verified concretely
    on the small problem of those masks, the counts or the failure."""

    chosen: dict[str, tuple[int, int] | CheckFailure]
    legal: list[tuple[int, int]]
    verified: dict[tuple[tuple[int, int], tuple[str, ...]],
                   splash_timing.ClassWork | CheckFailure]


@functools.cache
def _fits(blocks: tuple[int, int]) -> str | None:
    """None when the standard call fits the scoped VMEM at ``blocks``, else the
    ``VmemOOMError`` message (VMEM depends on the blocks only: one small grid suffices)."""
    import pallas_sim
    from pallas_sim import jax, jnp

    problem = splash_timing.small_problem(*blocks)
    bq, bkv = blocks
    d, dv = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
    call = splash_timing.standard_call(1, len(problem.table.rows), bq, bkv, d, dv,
                                       problem.length_q)
    try:
        pallas_sim.estimate(call, *problem.table.prefetch(),
                            jax.ShapeDtypeStruct((1, problem.length_q, d), jnp.bfloat16),
                            jax.ShapeDtypeStruct((1, problem.length_kv, d), jnp.bfloat16),
                            jax.ShapeDtypeStruct((1, problem.length_kv, dv), jnp.bfloat16),
                            jax.ShapeDtypeStruct((1, bq, bkv), jnp.bool_),
                            chip=ref.PERFORMANCE_CHIP)
    except pallas_sim.VmemOOMError as exc:
        return str(exc)
    return None


def _legal_candidates() -> list[tuple[int, int]]:
    return [b for b in ref.splash_block_candidates() if _fits(b) is None]


def _choose(s: Session, kind: str) -> tuple[int, int]:
    """The student's blocks for ``kind``, when two candidate ints at which the standard
    call fits the scoped VMEM. Raises ``CheckFailure``."""
    label = _perf_label(kind)
    try:
        chosen = s.invoke("choose_splash_blocks", (kind,)).value
    except CheckFailure as failure:
        raise failure.copy(input=label) from None
    candidates = ref.SPLASH_BLOCK_CANDIDATES
    if not (isinstance(chosen, tuple | list) and len(chosen) == 2
            and all(isinstance(b, int | np.integer) and not isinstance(b, bool | np.bool_)
                    for b in chosen)):  # numpy ints are ints, as in Tasks 3.5 and 4.8
        raise CheckFailure("choose_splash_blocks(mask_kind) must return a tuple of two ints "
                           "(block_q, block_kv)", input=label, expected="e.g. (512, 512)",
                           got=repr(chosen)[:200])
    blocks = (int(chosen[0]), int(chosen[1]))
    if not all(b in candidates for b in blocks):
        raise CheckFailure("choose_splash_blocks returned a block size outside the candidate "
                           "set", input=label,
                           expected=f"each of block_q, block_kv one of {list(candidates)}",
                           got=str(blocks))
    oom = _fits(blocks)
    if oom is not None:
        raise CheckFailure(f"VmemOOMError: {oom}", input=label,
                           expected="blocks whose standard Splash call fits the 32 MiB "
                                    "scoped VMEM", got=str(blocks),
                           diagnosis=_vmem_note(blocks))
    return blocks


def _runs_reply(s: Session, runs: list[dict], *, reply_bytes: int = 0) -> list:
    """The harness's reply for ``runs`` (a list of one dict per run), or raises the
    invoke's ``CheckFailure``; a reply of another shape is refused (status error)."""
    kwargs = {"head_dim": ref.PERFORMANCE_HEAD_DIM, "value_dim": ref.PERFORMANCE_VALUE_DIM,
              "sm_scale": splash_timing.SCALE}
    reply = s.invoke("choose_splash_blocks", (runs,), kwargs, harness="a5",
                     timeout=PERFORMANCE_TIMEOUT, reply_bytes=reply_bytes).value
    if not isinstance(reply, list) or len(reply) != len(runs) or not all(
            isinstance(r, dict) for r in reply):
        raise CheckFailure("the measured runs' reply is not one record per run",
                           got=repr(reply)[:120], status="error")
    return reply


def _parsed(problem: splash_timing.SmallProblem, raw: object, *, rows: int | None = None
            ) -> step_model.StepRecord | str:
    """One run's record (``step_model.parse_record``), or the error text of the kernel that
    raised. Raises ``CheckFailure`` (status error) for a reply that is not a record."""
    shape = None if rows is None else (rows, ref.PERFORMANCE_VALUE_DIM)
    record = step_model.parse_record(raw, num_steps=len(problem.table.rows),
                                     sample_shape=shape)
    if isinstance(record, step_model.KernelRaised):
        return record.error
    return record


def _measure(s: Session) -> _Measured:
    """Ask for every choice and run each distinct choice concretely and on shapes (one round
    trip each); no other candidate is run."""
    chosen: dict[str, tuple[int, int] | CheckFailure] = {}
    for kind in ref.PERFORMANCE_MASKS:
        try:
            chosen[kind] = _choose(s, kind)
        except CheckFailure as failure:
            chosen[kind] = failure
    legal = _legal_candidates()
    m = _Measured(chosen, legal, {})
    for blocks in dict.fromkeys(b for b in chosen.values() if isinstance(b, tuple)):
        _verify(s, m, blocks, tuple(k for k in ref.PERFORMANCE_MASKS if chosen[k] == blocks))
    return m


def _verify(s: Session, m: _Measured, blocks: tuple[int, int], masks: tuple[str, ...]
            ) -> splash_timing.ClassWork | CheckFailure:
    """Run the student's kernel concretely at ``blocks`` on the small problem of ``masks``
    and on shapes: values checked against dense attention at sampled rows, op counts equal.
    Records and returns the ``ClassWork`` or the ``CheckFailure``."""
    try:
        outcome: splash_timing.ClassWork | CheckFailure = _verified_work(s, blocks, masks)
    except CheckFailure as failure:
        outcome = failure
    m.verified[blocks, masks] = outcome
    return outcome


def _verified_work(s: Session, blocks: tuple[int, int], masks: tuple[str, ...]
                   ) -> splash_timing.ClassWork:
    problem = splash_timing.small_problem(*blocks, masks)
    rows = splash_timing.sample_rows(problem, SMALL_SEED)
    label = (f"your splash_attention_kernel in the grader's standard Splash call at blocks "
             f"{blocks}: one head, {len(problem.table.rows)} tiles with every kind of step "
             f"the {'/'.join(masks)} mask has at these blocks (partial and full tiles, first "
             f"and last of a q row); bf16 q [1, {problem.length_q}, "
             f"{ref.PERFORMANCE_HEAD_DIM}], k, v [1, {problem.length_kv}, "
             f"{ref.PERFORMANCE_HEAD_DIM}|{ref.PERFORMANCE_VALUE_DIM}]")
    run = {**problem.request(), "seed": SMALL_SEED, "rows": rows}
    try:
        real_raw, shapes_raw = _runs_reply(s, [run, problem.request()],
                                           reply_bytes=_ROWS_REPLY_BYTES)
        real = _parsed(problem, real_raw, rows=len(rows))
        shapes = _parsed(problem, shapes_raw)
    except CheckFailure as failure:
        raise failure.copy(input=label) from None
    if isinstance(real, str):
        raise CheckFailure(f"your splash_attention_kernel raised at blocks {blocks}",
                           input=label, got=real)
    got = real.sample
    want = splash_timing.expected_rows(problem, SMALL_SEED, rows)
    assert got is not None
    close = np.isfinite(got) & (np.abs(got - want) <= SMALL_ATOL + SMALL_RTOL * np.abs(want))
    if not close.all():
        bad = int(np.argmin(close.all(axis=1)))
        raise CheckFailure(
            f"your splash_attention_kernel's output at blocks {blocks} is not masked "
            "attention, so no time is predicted for it", input=label,
            expected=f"query row {int(rows[bad])}: {fmt_array(want[bad, :4])} ...",
            got=f"{fmt_array(got[bad, :4])} ...",
            hint="Task 5.4's kernel, run at the chosen blocks (tolerance "
                 f"{SMALL_ATOL:g} + {SMALL_RTOL:g}·|expected|)")
    if isinstance(shapes, str):
        raise CheckFailure(
            f"your kernel does different work when it runs on shapes only than when it runs "
            f"on data (blocks {blocks}): it raised on shapes only", input=label,
            expected="the same op counts per grid step in both runs", got=shapes,
            hint="a kernel's work must not depend on whether its blocks hold values "
                 "(pallas_sim.estimate runs the same kernel on shapes only)")
    step_model.require_same_work(real, shapes, where=f"blocks {blocks}", input=label)
    return splash_timing.class_work(problem, real)


def _measured(s: Session) -> _Measured:
    kept = _MEASURED.get(s)
    if kept is None:
        kept = _MEASURED[s] = _measure(s)
    return kept


def _chosen_work(m: _Measured, kind: str
                 ) -> tuple[tuple[int, int], splash_timing.ClassWork]:
    """The chosen blocks for ``kind`` and their verified work per class. Raises the
    ``CheckFailure`` that stopped them."""
    blocks = m.chosen[kind]
    if isinstance(blocks, CheckFailure):
        raise blocks.copy()
    masks = tuple(k for k in ref.PERFORMANCE_MASKS if m.chosen[k] == blocks)
    outcome = m.verified[blocks, masks]
    if isinstance(outcome, CheckFailure):
        raise outcome.copy()
    return blocks, outcome


def _own_best(m: _Measured, kind: str) -> tuple[tuple[int, int], float, str]:
    """The fastest legal candidate for the student's own kernel on ``kind``: (blocks,
    seconds, whose time). The kernel's work is its verified run's at the chosen blocks and,
    at every other legal candidate (the grader's call fits), that work projected from the
    reference kernel's (``splash_timing.projected_work``); candidates whose lower bound
    cannot beat the best so far are not timed."""
    blocks, work = _chosen_work(m, kind)
    masks = tuple(k for k in ref.PERFORMANCE_MASKS if m.chosen[k] == blocks)
    legal = list(m.legal) if blocks in m.legal else [*m.legal, blocks]
    works = {b: splash_timing.projected_work(kind, b, blocks, masks, work) for b in legal}
    found = step_model.fastest(
        list(works), lambda b: splash_timing.time_floor(kind, *b, works[b]),
        lambda b: splash_timing.full_time(kind, *b, works[b]).time_s)
    assert found is not None
    return found[0], found[1], "your kernel's measured work, projected"


@check(A, "5.7", 1, "performance: choose_splash_blocks(mask_kind) returns candidate blocks "
                    "(block_q, block_kv) for the causal, local and document masks at L 8192 "
                    "at which your splash_attention_kernel runs in the standard Splash call "
                    "within the 32 MiB scoped VMEM, computing attention, as it does on shapes "
                    "only")
def splash_blocks_fit(s: Session) -> None:
    """Task 5.7: performance: choose_splash_blocks(mask_kind) returns candidate blocks
    (block_q, block_kv) for the causal, local and document masks at L 8192 at which your
    splash_attention_kernel runs in the standard Splash call within the 32 MiB scoped VMEM,
    computing attention, as it does on shapes only.

    Records the predicted time of the three choices, summed, as the task's predicted ms.
    """
    m = _measured(s)
    total_s = 0.0
    for kind in ref.PERFORMANCE_MASKS:
        blocks, per_class = _chosen_work(m, kind)
        total_s += splash_timing.full_time(kind, *blocks, per_class).time_s
    measures.record(s, measures.PREDICTED_MS, total_s * 1e3)


def _within_best(s: Session, kind: str) -> None:
    m = _measured(s)
    blocks, per_class = _chosen_work(m, kind)
    line = splash_timing.full_time(kind, *blocks, per_class)
    best, best_s, source = _own_best(m, kind)
    got_s = float(line.time_s)
    if got_s > best_s * (1 + PERFORMANCE_RTOL):  # the notes are worked out only when shown
        performance.require_within(
            got_s, best_s, PERFORMANCE_RTOL, subject=f"your blocks {blocks} for the {kind} "
            "mask are", input=_perf_label(kind),
            got=f"{got_s * 1e3:.3f} ms, MFU {line.mfu:.0%}, VMEM "
                f"{line.vmem_bytes / MiB:.1f} MiB of {line.vmem_limit_bytes / MiB:.0f}",
            diagnosis=f"the fastest candidate on {source} is {best} at "
                      f"{best_s * 1e3:.3f} ms; " + _tiling_note(kind, blocks, best))


@check(A, "5.7", 3, "performance: causal mask: the predicted time of your kernel at your "
                    "blocks is within 10 % of its fastest legal candidate's (lecture §6.5)")
def splash_blocks_fast_causal(s: Session) -> None:
    """Task 5.7: performance: causal mask: the predicted time of your kernel at your blocks
    is within 10 % of its fastest legal candidate's (lecture §6.5).
    """
    _within_best(s, "causal")


@check(A, "5.7", 3, "performance: local mask (causal, window 2048): the predicted time of "
                    "your kernel at your blocks is within 10 % of its fastest legal "
                    "candidate's (lecture §6.5)")
def splash_blocks_fast_local(s: Session) -> None:
    """Task 5.7: performance: local mask (causal, window 2048): the predicted time of your
    kernel at your blocks is within 10 % of its fastest legal candidate's (lecture §6.5).
    """
    _within_best(s, "local")


@check(A, "5.7", 3, "performance: document mask (documents 1000/2000/1096/2500/1596): the "
                    "predicted time of your kernel at your blocks is within 10 % of its "
                    "fastest legal candidate's (lecture §6.5)")
def splash_blocks_fast_document(s: Session) -> None:
    """Task 5.7: performance: document mask (documents 1000/2000/1096/2500/1596): the
    predicted time of your kernel at your blocks is within 10 % of its fastest legal
    candidate's (lecture §6.5).
    """
    _within_best(s, "document")
