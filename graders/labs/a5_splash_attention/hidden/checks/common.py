"""Shared by the a5 hidden checks: constants, drawn masks and comparisons."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import reference.a5_splash_attention as ref
from graders.checking.compare import as_array, fmt_array
from graders.checking.framework import CheckFailure
from graders.checking.strategies import seeds
from graders.labs.a5_splash_attention.public.public_checks.common import (
    DTYPES,
    KINDS,
    MaskCase,
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
