"""Task 5.3 build_mask_info."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import strategies as st

import reference.a5_splash_attention as ref
from graders.checking.compare import nonfinite_kind
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.labs.a5_splash_attention.hidden.diagnose import pattern_diagnosis
from graders.labs.a5_splash_attention.public.public_checks.common import MaskCase

from .common import FIELD_DTYPES, FIELDS, A, _assert_exact, _mask_info_fields, mask_cases
from .masks import _EX12_IDS

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
