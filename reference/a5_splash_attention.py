"""Reference for assignment a5, Splash Attention (lecture §6).

Public names are exactly those of the student API, plus ``MaskInfo`` as the
handout gives it. The implementation is deliberately unlike the solution:

* masks come from ``np.tri`` (a lower triangle shifted by a diagonal offset)
  rather than from comparing position grids;
* ``build_mask_info`` walks the tiles one by one in row-major order and
  deduplicates patterns by comparing against the stored ones with
  ``np.array_equal``; ``mask_next`` of full tiles is filled by a forward
  search for the next partial tile, modulo the tile count;
* the Splash kernel keeps its running statistics in float32 scratch as the
  API requires, but computes every tile's scores and weights in float64.

Task 5.7 (performance) adds the trusted side of its grading: the three masks at
``L = 8192`` (``performance_mask``), an op-counting Splash kernel for
``pallas_sim.estimate`` (``predicted_splash_time``) and the fastest legal block
pair per mask (``BEST_SPLASH_BLOCKS``, recomputed by tests/reference/test_reference_a5.py).
"""

import bisect as _bisect
import functools as _functools
import math as _math
from typing import NamedTuple as _NamedTuple

import ml_dtypes as _ml_dtypes
import numpy as _np

from pallas_sim import jax as _jax
from pallas_sim import jnp as _jnp
from pallas_sim import pl as _pl
from pallas_sim import pltpu as _pltpu
from pallas_sim.extend import concrete as _concrete
from pallas_sim.extend import traced as _traced

__all__ = [
    "MaskInfo",
    "build_mask_info",
    "causal_mask",
    "choose_splash_blocks",
    "classify_blocks",
    "local_mask",
    "mask_stats",
    "render_block_mask",
    "segment_mask",
    "splash_attention",
    "splash_attention_computed_mask",
    "splash_attention_kernel",
    "splash_computed_mask_kernel",
]


class MaskInfo(_NamedTuple):
    """The sparse execution table over the A active tiles, in row-major order.

    active_rows, active_cols, mask_next: int32 [A]; block_mask: int8 [A]
    (1 partial, 2 full); partial_mask_blocks: bool [P, block_q, block_kv];
    bounds_start, bounds_end: bool [A].
    """

    active_rows: _np.ndarray
    active_cols: _np.ndarray
    block_mask: _np.ndarray
    mask_next: _np.ndarray
    partial_mask_blocks: _np.ndarray
    bounds_start: _np.ndarray
    bounds_end: _np.ndarray


def causal_mask(q_len: int, kv_len: int | None = None, *, offset: int = 0) -> _np.ndarray:
    """Task 5.1 (lecture §6.1): the causal mask, bool [q_len, kv_len].

    True where q + offset >= kv: ``np.tri`` with diagonal ``k = offset``.
    q_len, kv_len (default q_len): ints >= 0; offset: any int.
    """
    return _np.tri(q_len, q_len if kv_len is None else kv_len, k=offset, dtype=bool)


def local_mask(q_len: int, window, kv_len: int | None = None) -> _np.ndarray:
    """Task 5.1 (lecture §6.1): the sliding-window mask, bool [q_len, kv_len].

    window = (left, right), each an int >= 0 or None (unbounded): True where
    q - left <= kv <= q + right. Built from two ``np.tri`` triangles.
    """
    left, right = window
    n = q_len if kv_len is None else kv_len
    out = None
    if right is not None:
        out = _np.tri(q_len, n, k=right, dtype=bool)
    if left is not None:
        too_far = _np.tri(q_len, n, k=-left - 1, dtype=bool)  # kv <= q - left - 1
        if out is None:
            out = ~too_far
        else:
            _np.greater(out, too_far, out=out)  # out & ~too_far, in place
    return _np.ones((q_len, n), dtype=bool) if out is None else out


def segment_mask(q_segment_ids, kv_segment_ids=None) -> _np.ndarray:
    """Task 5.1 (lecture §6.4): the document mask, bool [q_len, kv_len].

    q_segment_ids: int [q_len]; kv_segment_ids: int [kv_len] (default: the
    query ids). True where the ids are equal.
    """
    q_ids = _np.asarray(q_segment_ids)
    kv_ids = q_ids if kv_segment_ids is None else _np.asarray(kv_segment_ids)
    return _np.equal.outer(q_ids, kv_ids)


def _check_block(name: str, block: int, length_name: str, length: int) -> None:
    if not (isinstance(block, int | _np.integer) and block >= 1 and length % block == 0):
        raise ValueError(f"{name}={block} does not divide {length_name}={length}")


def classify_blocks(mask, block_q: int, block_kv: int) -> _np.ndarray:
    """Task 5.2 (lecture §6.1): the kind of every tile, int8 [q_len // block_q, kv_len // block_kv].

    0 = no True entry, 1 = partial, 2 = all True (``any`` + ``all`` per tile).

    Raises:
      ValueError: a block size that is not a positive divisor of its length.
    """
    m = _np.asarray(mask, dtype=bool)
    _check_block("block_q", block_q, "q_len", m.shape[0])
    _check_block("block_kv", block_kv, "kv_len", m.shape[1])
    tiles = m.reshape(m.shape[0] // block_q, block_q, m.shape[1] // block_kv, block_kv)
    some = tiles.any(axis=(1, 3))
    every = tiles.all(axis=(1, 3))
    return (some.astype(_np.int8) + every.astype(_np.int8)).astype(_np.int8)


def render_block_mask(block_mask) -> str:
    """Task 5.2 (lecture §6.1): the block picture of an int [nq, nkv] array of 0/1/2.

    One line per q block, cells "·" (0), "P" (1), "F" (2) joined by single
    spaces, lines joined by "\n".
    """
    table = _np.array(["·", "P", "F"])
    return "\n".join(" ".join(table[_np.asarray(row, dtype=int)].tolist())
                     for row in _np.asarray(block_mask))


def build_mask_info(mask, block_q: int, block_kv: int) -> MaskInfo:
    """Task 5.3 (lecture §6.2): the MaskInfo of a bool [q_len, kv_len] mask.

    Walks the tiles in row-major order; patterns are deduplicated by content
    (``np.array_equal`` against every stored one), in order of first
    appearance; a full tile's ``mask_next`` is the pattern of the next partial
    tile at or after it, wrapping to the first (0 with none).

    Raises:
      ValueError: a block size does not divide its length; a query row with no
        True entry (the message names the first such row).
    """
    m = _np.asarray(mask, dtype=bool)
    _check_block("block_q", block_q, "q_len", m.shape[0])
    _check_block("block_kv", block_kv, "kv_len", m.shape[1])
    row_has_key = m.any(axis=1)
    if not row_has_key.all():
        first = int(_np.argmin(row_has_key))
        raise ValueError(f"query row {first} attends to no key")
    nq, nkv = m.shape[0] // block_q, m.shape[1] // block_kv
    rows, cols, kinds, own = [], [], [], []
    patterns: list[_np.ndarray] = []
    for r in range(nq):
        for c in range(nkv):
            tile = m[r * block_q:(r + 1) * block_q, c * block_kv:(c + 1) * block_kv]
            if not tile.any():
                continue
            rows.append(r)
            cols.append(c)
            if tile.all():
                kinds.append(2)
                own.append(None)
                continue
            kinds.append(1)
            for pid, stored in enumerate(patterns):
                if _np.array_equal(stored, tile):
                    own.append(pid)
                    break
            else:
                own.append(len(patterns))
                patterns.append(tile.copy())
    count = len(rows)
    partial_at = [g for g in range(count) if own[g] is not None]
    nxt = []
    for g in range(count):
        later = _bisect.bisect_left(partial_at, g)
        nxt.append(own[partial_at[later % len(partial_at)]] if partial_at else 0)
    starts = [g == 0 or rows[g - 1] != rows[g] for g in range(count)]
    ends = [g == count - 1 or rows[g + 1] != rows[g] for g in range(count)]
    blocks = (_np.array(patterns, dtype=bool) if patterns
              else _np.zeros((0, block_q, block_kv), dtype=bool))
    return MaskInfo(_np.array(rows, _np.int32), _np.array(cols, _np.int32),
                    _np.array(kinds, _np.int8), _np.array(nxt, _np.int32), blocks,
                    _np.array(starts, bool), _np.array(ends, bool))


def splash_attention_kernel(active_rows_ref, active_cols_ref, mask_next_ref, bounds_start_ref,
                            bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref, mask_ref, o_ref,
                            m_scratch_ref, l_scratch_ref, acc_scratch_ref, *, sm_scale,
                            block_q, block_kv, use_base2_exp=False) -> None:
    """Task 5.4 (lecture §6.3): one (head, active tile) step of Splash Attention.

    Refs as in the student API: six int32 [A] SMEM prefetch refs, q (block_q,
    d), k (block_kv, d), v (block_kv, dv), mask (block_q, block_kv) bool, o
    (block_q, dv) f32, scratch m, l f32 (block_q, 128) and acc f32 (block_q,
    dv). Scores and weights are computed in float64; masked pairs (partial
    tiles only) get weight exactly 0. ``use_base2_exp``: scores and m in base-2 units
    (times log2 e) and 2**x for the weights (lecture §6.6).
    """
    # The reference computes exactly (float64) on the concrete blocks, branching in
    # Python; student kernels cannot, as on JAX.
    g = int(_concrete(_pl.program_id(1)))
    if _concrete(bounds_start_ref[g]):
        m_scratch_ref[...] = _jnp.full_like(m_scratch_ref, -_np.inf)
        l_scratch_ref[...] = _jnp.zeros_like(l_scratch_ref)
        acc_scratch_ref[...] = _jnp.zeros_like(acc_scratch_ref)
    s = (_concrete(q_ref[...]).astype(_np.float64) @ _concrete(k_ref[...]).astype(_np.float64).T
         ) * float(sm_scale)
    power = _np.exp2 if use_base2_exp else _np.exp
    if use_base2_exp:
        s = s / _math.log(2.0)
    keep = (_np.ones(s.shape, bool) if _concrete(block_mask_ref[g]) == 2
            else _concrete(mask_ref[...]))
    m_old = _concrete(m_scratch_ref[:, 0]).astype(_np.float64)
    tile_max = _np.where(keep, s, -_np.inf).max(axis=1)
    m_new = _np.maximum(m_old, tile_max)
    safe = _np.where(_np.isneginf(m_new), 0.0, m_new)
    w = _np.where(keep, power(_np.where(keep, s, 0.0) - safe[:, None]), 0.0)
    shrink = power(m_old - safe)
    l_new = shrink * _concrete(l_scratch_ref[:, 0]) + w.sum(axis=1)
    acc = (shrink[:, None] * _concrete(acc_scratch_ref[...])
           + w @ _concrete(v_ref[...]).astype(_np.float64))
    lanes = m_scratch_ref.shape  # (block_q, 128): the value repeated along the lanes
    m_scratch_ref[...] = _traced(_np.broadcast_to(m_new[:, None], lanes).astype(_np.float32))
    l_scratch_ref[...] = _traced(_np.broadcast_to(l_new[:, None], lanes).astype(_np.float32))
    acc_scratch_ref[...] = _traced(acc.astype(_np.float32))
    if _concrete(bounds_end_ref[g]):
        o_ref[...] = acc_scratch_ref[...] / l_scratch_ref[:, :1]


def _prefetch_arrays(mask_info) -> tuple:
    """The six scalar-prefetch arrays of Task 5.4's call, int32, in their order."""
    return tuple(_np.asarray(getattr(mask_info, name)).astype(_np.int32) for name in (
        "active_rows", "active_cols", "mask_next", "bounds_start", "bounds_end", "block_mask"))


def _splash_grid_spec(heads: int, active: int, bq: int, bkv: int, d: int, dv: int):
    """Task 5.4's ``PrefetchScalarGridSpec``: grid (heads, active tiles); q and o blocks
    at the tile's row, k and v at its column, the mask block at its pattern id; scratch
    m, l (bq, 128) and acc (bq, dv), all f32."""

    def by_row(h, g, rows, *_):
        return h, rows[g], 0

    def by_col(h, g, rows, cols, *_):
        return h, cols[g], 0

    def by_pattern(h, g, rows, cols, nxt, *_):
        return nxt[g], 0, 0

    return _pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(heads, active),
        in_specs=[_pl.BlockSpec((None, bq, d), by_row), _pl.BlockSpec((None, bkv, d), by_col),
                  _pl.BlockSpec((None, bkv, dv), by_col),
                  _pl.BlockSpec((None, bq, bkv), by_pattern)],
        out_specs=_pl.BlockSpec((None, bq, dv), by_row),
        scratch_shapes=[_pltpu.VMEM((bq, 128), _jnp.float32), _pltpu.VMEM((bq, 128), _jnp.float32),
                        _pltpu.VMEM((bq, dv), _jnp.float32)])


def splash_attention(q, k, v, mask_info, *, sm_scale=None, use_base2_exp=False):
    """Task 5.4 (lecture §6.3): Splash Attention, f32 [H, L, dv], one pallas_call.

    q, k: [H, L, d]; v: [H, L, dv]; mask_info: any object with the MaskInfo
    attributes. Grid (H, A) through ``pltpu.PrefetchScalarGridSpec`` with the
    six prefetch arrays (active_rows, active_cols, mask_next, bounds_start,
    bounds_end, block_mask) as int32; sm_scale defaults to 1 / sqrt(d).
    """
    heads, length, d = q.shape
    dv = v.shape[2]
    blocks = _np.asarray(mask_info.partial_mask_blocks, dtype=bool)
    bq, bkv = blocks.shape[1], blocks.shape[2]
    if blocks.shape[0] == 0:
        blocks = _np.ones((1, bq, bkv), dtype=bool)
    scale = 1.0 / _math.sqrt(d) if sm_scale is None else float(sm_scale)
    prefetch = _prefetch_arrays(mask_info)
    spec = _splash_grid_spec(heads, len(prefetch[0]), bq, bkv, d, dv)
    return _pl.pallas_call(
        _functools.partial(splash_attention_kernel, sm_scale=scale, block_q=bq, block_kv=bkv,
                           use_base2_exp=use_base2_exp),
        grid_spec=spec, out_shape=_jax.ShapeDtypeStruct((heads, length, dv), _jnp.float32),
        compiler_params=_pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="splash_attention")(*prefetch, q, k, v, blocks)


def mask_stats(mask, block_q: int, block_kv: int) -> dict:
    """Task 5.5 (lecture §6.4, §6.6): statistics of a mask's tiling.

    Returns ints num_blocks, num_active, num_partial, num_full, num_patterns,
    pattern_bytes (one byte per element per stored pattern) and the float
    compute_saving = num_blocks / num_active. Raises as ``build_mask_info``.
    """
    kinds = classify_blocks(mask, block_q, block_kv)
    info = build_mask_info(mask, block_q, block_kv)
    partial = int((kinds == 1).sum())
    full = int((kinds == 2).sum())
    patterns = int(info.partial_mask_blocks.shape[0])
    return {"num_blocks": int(kinds.size), "num_active": partial + full,
            "num_partial": partial, "num_full": full, "num_patterns": patterns,
            "pattern_bytes": patterns * int(block_q) * int(block_kv),
            "compute_saving": float(kinds.size) / float(partial + full)}


def _rule_mask(q_positions, kv_positions, q_segment_ids, kv_segment_ids, causal: bool,
               window) -> _np.ndarray:
    """Task 5.6 (lecture §6.6): the dense bool [len(q), len(kv)] mask of a positional rule.

    Built from signed position differences ``delta = q_pos - kv_pos`` (``np.subtract.outer``):
    causal keeps delta >= 0; window (left, right) keeps -right <= delta <= left (a None
    side is unbounded); segment ids must be equal.
    """
    delta = _np.subtract.outer(_np.asarray(q_positions, _np.int64),
                               _np.asarray(kv_positions, _np.int64))
    keep = _np.equal.outer(_np.asarray(q_segment_ids), _np.asarray(kv_segment_ids))
    if causal:
        keep &= delta >= 0
    if window is not None:
        left, right = window
        if left is not None:
            keep &= delta <= left
        if right is not None:
            keep &= delta >= -right
    return keep


def splash_computed_mask_kernel(active_rows_ref, active_cols_ref, bounds_start_ref,
                                bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref, q_pos_ref,
                                kv_pos_ref, q_ids_ref, kv_ids_ref, o_ref, m_scratch_ref,
                                l_scratch_ref, acc_scratch_ref, *, sm_scale, block_q, block_kv,
                                causal, window) -> None:
    """Task 5.6 (lecture §6.6): one (head, active tile) step, the tile's mask computed.

    Refs: five int32 [A] SMEM prefetch refs (active_rows, active_cols, bounds_start,
    bounds_end, block_mask), q (block_q, d), k (block_kv, d), v (block_kv, dv), int32
    positions and segment ids (block_q, 1) / (1, block_kv), o (block_q, dv) f32, scratch
    as in Task 5.4. The mask of a partial tile is ``_rule_mask`` of the block's tokens;
    scores and weights in float64 as in the reference's Task 5.4 kernel.
    """
    g = int(_concrete(_pl.program_id(1)))
    if _concrete(bounds_start_ref[g]):
        m_scratch_ref[...] = _jnp.full_like(m_scratch_ref, -_np.inf)
        l_scratch_ref[...] = _jnp.zeros_like(l_scratch_ref)
        acc_scratch_ref[...] = _jnp.zeros_like(acc_scratch_ref)
    s = (_concrete(q_ref[...]).astype(_np.float64) @ _concrete(k_ref[...]).astype(_np.float64).T
         ) * float(sm_scale)
    if _concrete(block_mask_ref[g]) == 2:
        keep = _np.ones(s.shape, bool)
    else:
        keep = _rule_mask(_concrete(q_pos_ref[:, 0]), _concrete(kv_pos_ref[0, :]),
                          _concrete(q_ids_ref[:, 0]), _concrete(kv_ids_ref[0, :]), causal, window)
    m_old = _concrete(m_scratch_ref[:, 0]).astype(_np.float64)
    m_new = _np.maximum(m_old, _np.where(keep, s, -_np.inf).max(axis=1))
    safe = _np.where(_np.isneginf(m_new), 0.0, m_new)
    w = _np.where(keep, _np.exp(_np.where(keep, s, 0.0) - safe[:, None]), 0.0)
    shrink = _np.exp(m_old - safe)
    l_new = shrink * _concrete(l_scratch_ref[:, 0]) + w.sum(axis=1)
    acc = (shrink[:, None] * _concrete(acc_scratch_ref[...])
           + w @ _concrete(v_ref[...]).astype(_np.float64))
    lanes = m_scratch_ref.shape
    m_scratch_ref[...] = _traced(_np.broadcast_to(m_new[:, None], lanes).astype(_np.float32))
    l_scratch_ref[...] = _traced(_np.broadcast_to(l_new[:, None], lanes).astype(_np.float32))
    acc_scratch_ref[...] = _traced(acc.astype(_np.float32))
    if _concrete(bounds_end_ref[g]):
        o_ref[...] = acc_scratch_ref[...] / l_scratch_ref[:, :1]


def splash_attention_computed_mask(q, k, v, mask_info, *, causal=False, window=None,
                                   q_positions=None, kv_positions=None, q_segment_ids=None,
                                   kv_segment_ids=None, sm_scale=None):
    """Task 5.6 (lecture §6.6): Splash Attention with partial masks computed in the kernel.

    q, k: [H, L, d]; v: [H, L, dv]; mask_info: the MaskInfo of the same mask (only the
    shape of ``partial_mask_blocks`` is read). Positions default to 0..L-1, query
    segment ids to zeros, key ids to the query ids. One pallas_call, grid (H, A), five
    int32 prefetch arrays (active_rows, active_cols, bounds_start, bounds_end,
    block_mask); inputs q, k, v and the int32 per-token arrays [L, 1] / [1, L]. Returns
    f32 [H, L, dv].
    """
    heads, length, d = q.shape
    dv = v.shape[2]
    bq, bkv = (int(n) for n in _np.shape(mask_info.partial_mask_blocks)[1:])
    scale = 1.0 / _math.sqrt(d) if sm_scale is None else float(sm_scale)

    def tokens(values, default):
        return (default if values is None else _np.asarray(values)).astype(_np.int32)

    q_pos = tokens(q_positions, _np.arange(length))
    kv_pos = tokens(kv_positions, _np.arange(length))
    q_ids = tokens(q_segment_ids, _np.zeros(length))
    kv_ids = q_ids if kv_segment_ids is None else tokens(kv_segment_ids, None)
    prefetch = tuple(_np.asarray(getattr(mask_info, name)).astype(_np.int32) for name in (
        "active_rows", "active_cols", "bounds_start", "bounds_end", "block_mask"))

    def by_row(h, g, rows, *_):
        return h, rows[g], 0

    def by_col(h, g, rows, cols, *_):
        return h, cols[g], 0

    def token_col(h, g, rows, *_):
        return rows[g], 0

    def token_row(h, g, rows, cols, *_):
        return 0, cols[g]

    spec = _pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=5, grid=(heads, len(prefetch[0])),
        in_specs=[_pl.BlockSpec((None, bq, d), by_row), _pl.BlockSpec((None, bkv, d), by_col),
                  _pl.BlockSpec((None, bkv, dv), by_col), _pl.BlockSpec((bq, 1), token_col),
                  _pl.BlockSpec((1, bkv), token_row), _pl.BlockSpec((bq, 1), token_col),
                  _pl.BlockSpec((1, bkv), token_row)],
        out_specs=_pl.BlockSpec((None, bq, dv), by_row),
        scratch_shapes=[_pltpu.VMEM((bq, 128), _jnp.float32), _pltpu.VMEM((bq, 128), _jnp.float32),
                        _pltpu.VMEM((bq, dv), _jnp.float32)])
    kernel = _functools.partial(splash_computed_mask_kernel, sm_scale=scale, block_q=bq,
                                block_kv=bkv, causal=bool(causal),
                                window=None if window is None else tuple(window))
    return _pl.pallas_call(
        kernel, grid_spec=spec, out_shape=_jax.ShapeDtypeStruct((heads, length, dv), _jnp.float32),
        compiler_params=_pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="splash_attention_computed_mask")(
            *prefetch, q, k, v, q_pos.reshape(length, 1), kv_pos.reshape(1, length),
            q_ids.reshape(length, 1), kv_ids.reshape(1, length))


# --- Task 5.7 (performance): the block size of Splash at L = 8192 -----------------------------

#: Task 5.7: the values each of block_q and block_kv may take (elements); all divide L.
SPLASH_BLOCK_CANDIDATES = (256, 512, 1024, 2048, 4096)
#: Task 5.7: the sequence length and the attention shape of the lecture's Splash
#: configuration (§6.6, DeepSeek-V3: 128 query heads, q/k head dim 192, v head dim 128), bf16.
PERFORMANCE_LENGTH = 8192
PERFORMANCE_HEADS, PERFORMANCE_HEAD_DIM, PERFORMANCE_VALUE_DIM = 128, 192, 128
#: Task 5.7: the chip the time is predicted for (one Ironwood TensorCore).
PERFORMANCE_CHIP = "v7"
#: Task 5.7: the local mask is causal with a window of this many earlier keys (lecture §6.4,
#: §6.6: "causal ∧ window 2048"): q - 2048 <= kv <= q.
PERFORMANCE_WINDOW = 2048
#: Task 5.7: the document mask's segment layout: five packed documents, in order (sum 8192,
#: mean 1638 tokens, near the lecture's mean of about 1820 at L 32768, §6.4; the first three
#: are Exercise 12's 1000/2000/1096). Document mask only, as Exercise 12 (no causal part).
PERFORMANCE_DOCUMENTS = (1000, 2000, 1096, 2500, 1596)
#: Task 5.7: the three masks, by the name the student's chooser receives.
PERFORMANCE_MASKS = ("causal", "local", "document")


def performance_mask(kind: str) -> _np.ndarray:
    """Task 5.7: the bool [8192, 8192] mask named ``kind`` ("causal", "local", "document").

    Raises:
      ValueError: an unknown ``kind``.
    """
    length = PERFORMANCE_LENGTH
    if kind == "causal":
        return causal_mask(length)
    if kind == "local":
        return local_mask(length, (PERFORMANCE_WINDOW, 0))
    if kind == "document":
        ids = _np.repeat(_np.arange(len(PERFORMANCE_DOCUMENTS)), PERFORMANCE_DOCUMENTS)
        return segment_mask(ids)
    raise ValueError(f"mask_kind={kind!r} is not one of {PERFORMANCE_MASKS}")


@_functools.lru_cache(maxsize=8)
def performance_mask_info(kind: str, block_q: int, block_kv: int) -> MaskInfo:
    """Task 5.7: ``build_mask_info`` of ``performance_mask(kind)`` (cached: a few per process).

    Raises as ``build_mask_info`` and ``performance_mask``.
    """
    return build_mask_info(performance_mask(kind), int(block_q), int(block_kv))


def _estimate_splash_kernel(rows_ref, cols_ref, next_ref, start_ref, end_ref, kind_ref, q_ref,
                            k_ref, v_ref, mask_ref, o_ref, m_ref, l_ref, acc_ref, *,
                            sm_scale) -> None:
    """One active tile of the lecture's Splash kernel (§5.2, §6.3) in jnp ops, for
    ``pallas_sim.estimate``: the float64 ``splash_attention_kernel`` needs values, which an
    abstract run does not have. Per tile: scores q·kᵀ (f32), the mask where the tile is
    partial, the running max, exp of scores and of the max's change, the row sum, acc
    rescaled plus p·v; init at bounds_start, one division at bounds_end."""
    tile = _pl.program_id(1)

    @_pl.when(start_ref[tile] == 1)
    def _init():
        m_ref[...] = _jnp.full(m_ref.shape, -_np.inf, _jnp.float32)
        l_ref[...] = _jnp.zeros(l_ref.shape, _jnp.float32)
        acc_ref[...] = _jnp.zeros(acc_ref.shape, _jnp.float32)

    scores = _jnp.einsum("qd,kd->qk", q_ref[...], k_ref[...],
                         preferred_element_type=_jnp.float32) * sm_scale
    keep = _jnp.logical_or(kind_ref[tile] == 2, mask_ref[...])
    scores = _jnp.where(keep, scores, -1e30)
    m_old = m_ref[:, 0:1]
    m_new = _jnp.maximum(m_old, _jnp.max(scores, axis=-1, keepdims=True))
    p = _jnp.where(keep, _jnp.exp(scores - m_new), 0.0)
    rescale = _jnp.exp(m_old - m_new)
    l_new = rescale * l_ref[:, 0:1] + _jnp.sum(p, axis=-1, keepdims=True)
    acc_ref[...] = rescale * acc_ref[...] + _jnp.einsum(
        "qk,kd->qd", p, v_ref[...].astype(_jnp.float32), preferred_element_type=_jnp.float32)
    m_ref[...] = _jnp.broadcast_to(m_new, m_ref.shape)
    l_ref[...] = _jnp.broadcast_to(l_new, l_ref.shape)

    @_pl.when(end_ref[tile] == 1)
    def _finish():
        o_ref[...] = acc_ref[...] / l_ref[:, 0:1]


def predicted_splash_time(kind: str, blocks) -> float:
    """Task 5.7: predicted seconds of Splash over ``performance_mask(kind)`` with ``blocks`` =
    (block_q, block_kv): bf16 q, k [128, 8192, 192], v [128, 8192, 128], f32 out, the
    pallas_call of ``splash_attention`` around ``_estimate_splash_kernel`` on one Ironwood
    TensorCore (``pallas_sim.estimate``, chip "v7"; docs/performance-model.md; lecture §6.5).

    Raises:
      ValueError: a block that does not divide L (names it).
      VmemOOMError: the call's buffers exceed the scoped VMEM, with a real run's message.
    """
    import pallas_sim

    block_q, block_kv = (int(b) for b in blocks)
    info = performance_mask_info(kind, block_q, block_kv)
    dtype = _np.dtype(_ml_dtypes.bfloat16)
    shape = (PERFORMANCE_HEADS, PERFORMANCE_LENGTH)
    q = _jax.ShapeDtypeStruct((*shape, PERFORMANCE_HEAD_DIM), dtype)
    v = _jax.ShapeDtypeStruct((*shape, PERFORMANCE_VALUE_DIM), dtype)
    patterns = info.partial_mask_blocks
    if patterns.shape[0] == 0:
        patterns = _np.ones((1, block_q, block_kv), dtype=bool)
    prefetch = _prefetch_arrays(info)
    spec = _splash_grid_spec(PERFORMANCE_HEADS, len(prefetch[0]), block_q, block_kv,
                             PERFORMANCE_HEAD_DIM, PERFORMANCE_VALUE_DIM)
    call = _pl.pallas_call(
        _functools.partial(_estimate_splash_kernel,
                           sm_scale=1.0 / _math.sqrt(PERFORMANCE_HEAD_DIM)),
        grid_spec=spec,
        out_shape=_jax.ShapeDtypeStruct((*shape, PERFORMANCE_VALUE_DIM), _jnp.float32),
        compiler_params=_pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="reference_splash")
    estimate = pallas_sim.estimate(call, *prefetch, q, q, v, patterns, chip=PERFORMANCE_CHIP)
    return float(estimate.timelines[0].time_s)


def splash_block_candidates() -> list[tuple[int, int]]:
    """Task 5.7: every (block_q, block_kv) over ``SPLASH_BLOCK_CANDIDATES``; whether it fits
    VMEM is for ``predicted_splash_time`` to say."""
    sizes = SPLASH_BLOCK_CANDIDATES
    return [(bq, bkv) for bq in sizes for bkv in sizes
            if PERFORMANCE_LENGTH % bq == 0 and PERFORMANCE_LENGTH % bkv == 0]


def best_splash_blocks(kind: str) -> tuple[tuple[int, int], float]:
    """Task 5.7: (the fastest legal candidate for ``kind``, its predicted seconds): the
    minimum of ``predicted_splash_time`` over ``splash_block_candidates`` that fit VMEM
    (ties: the first in candidate order). About a second per mask here."""
    from pallas_sim import VmemOOMError

    best: tuple[tuple[int, int], float] | None = None
    for blocks in splash_block_candidates():
        try:
            seconds = predicted_splash_time(kind, blocks)
        except VmemOOMError:
            continue
        if best is None or seconds < best[1]:
            best = (blocks, seconds)
    assert best is not None
    return best


#: Task 5.7: the fastest legal candidate per mask, as ``best_splash_blocks`` finds it (kept
#: here so grading predicts one time per mask, not 25;
#: tests/reference/test_reference_a5.py recomputes them).
BEST_SPLASH_BLOCKS: dict[str, tuple[int, int]] = {
    "causal": (2048, 2048),
    "local": (2048, 2048),
    "document": (4096, 2048),
}


def choose_splash_blocks(mask_kind: str) -> tuple[int, int]:
    """Task 5.7: (block_q, block_kv) for ``performance_mask(mask_kind)``:
    ``BEST_SPLASH_BLOCKS``. Raises ``ValueError`` for an unknown mask."""
    if mask_kind not in BEST_SPLASH_BLOCKS:
        raise ValueError(f"mask_kind={mask_kind!r} is not one of {PERFORMANCE_MASKS}")
    return BEST_SPLASH_BLOCKS[mask_kind]
