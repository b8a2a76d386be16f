"""Shared by the a5 public checks: constants, drawn masks and plain-loop oracles."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Mismatch, seeds

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
