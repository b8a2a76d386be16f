"""Fallback kernels for bench/compare_jax.py, used when a solution file does
not define them yet.  Written against pallas_sim's spelling and loaded through
``pallas_sim.backends.swap``, exactly like a solution, so the same code runs on
both backends.  Shapes and names follow docs/student-api.md (a1, a3, a4, a5).
"""

import functools
import math

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu


def add_kernel(x_ref, y_ref, z_ref):
    """One (bm, bn) block of z = x + y."""
    z_ref[...] = x_ref[...] + y_ref[...]


def blocked_add(x, y, *, block_shape=(256, 256)):
    """x + y over a grid of cdiv(dim, block) blocks (a1 Task 1.2)."""
    bm, bn = block_shape
    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    return pl.pallas_call(add_kernel, grid=(pl.cdiv(x.shape[0], bm), pl.cdiv(x.shape[1], bn)),
                          in_specs=[spec, spec], out_specs=spec,
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None):
    """Grid (i, j, k), k last: z (bm, bn) f32 accumulates x (bm, bk) @ y (bk, bn)."""
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _():
        z_ref[...] = jnp.zeros_like(z_ref)

    z_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _():
        if activation == "relu":
            z_ref[...] = jnp.maximum(z_ref[...], 0.0)


def matmul(x, y, *, block_shape=(128, 128, 128), activation=None):
    """x [M, K] @ y [K, N] -> f32 [M, N] over a (M/bm, N/bn, K/bk) grid (a3 Task 3.2)."""
    bm, bn, bk = block_shape
    (m, kk), (_, n) = x.shape, y.shape
    return pl.pallas_call(
        functools.partial(matmul_kernel, activation=activation),
        grid=(m // bm, n // bn, kk // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                  pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, sm_scale,
                           causal, block_q, block_kv):
    """One (head, q block, kv block) step of causal-capable Flash Attention (a4 Task 4.3)."""
    i, j = pl.program_id(1), pl.program_id(2)

    @pl.when(j == 0)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    visible = jnp.logical_or(not causal, j * block_kv <= (i + 1) * block_q - 1)

    @pl.when(visible)
    def _():
        s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32) * sm_scale
        if causal:
            rows = i * block_q + jnp.arange(block_q)[:, None]
            cols = j * block_kv + jnp.arange(block_kv)[None, :]
            s = jnp.where(cols <= rows, s, -1e30)
        m_prev = m_ref[:, :1]
        m_new = jnp.maximum(m_prev, s.max(axis=1, keepdims=True))
        p = jnp.exp(s - m_new)
        alpha = jnp.exp(m_prev - m_new)
        l_ref[...] = jnp.broadcast_to(alpha * l_ref[:, :1] + p.sum(axis=1, keepdims=True),
                                      l_ref.shape)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p, v_ref[...],
                                                      preferred_element_type=jnp.float32)
        m_ref[...] = jnp.broadcast_to(m_new, m_ref.shape)

    @pl.when(j == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...] / l_ref[:, :1]


def flash_attention(q, k, v, *, causal=False, sm_scale=None, block_q=128, block_kv=128):
    """q, k, v [H, L, d] -> f32 [H, L, dv] over a (H, L/bq, L/bkv) grid (a4 Task 4.4)."""
    heads, length, d = q.shape
    dv = v.shape[-1]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    kernel = functools.partial(flash_attention_kernel, sm_scale=scale, causal=causal,
                               block_q=block_q, block_kv=block_kv)
    return pl.pallas_call(
        kernel, grid=(heads, length // block_q, length // block_kv),
        in_specs=[pl.BlockSpec((None, block_q, d), lambda h, i, j: (h, i, 0)),
                  pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h, j, 0)),
                  pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h, j, 0))],
        out_specs=pl.BlockSpec((None, block_q, dv), lambda h, i, j: (h, i, 0)),
        scratch_shapes=[pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, dv), jnp.float32)],
        out_shape=jax.ShapeDtypeStruct((heads, length, dv), jnp.float32),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(q, k, v)


class MaskInfo:
    """The active tiles of a block-sparse mask, row-major (a5 Task 5.3's fields)."""

    def __init__(self, mask, block_q, block_kv):
        nq, nkv = mask.shape[0] // block_q, mask.shape[1] // block_kv
        tiles = mask.reshape(nq, block_q, nkv, block_kv).transpose(0, 2, 1, 3)
        any_, all_ = tiles.any(axis=(2, 3)), tiles.all(axis=(2, 3))
        rows, cols = np.nonzero(any_)
        self.active_rows, self.active_cols = rows.astype(np.int32), cols.astype(np.int32)
        self.block_mask = np.where(all_[rows, cols], 2, 1).astype(np.int8)
        patterns, ids, own = [], {}, []
        for r, c, kind in zip(rows, cols, self.block_mask, strict=True):
            if kind == 1:
                key = tiles[r, c].tobytes()
                if key not in ids:
                    ids[key] = len(patterns)
                    patterns.append(tiles[r, c])
            own.append(ids[tiles[r, c].tobytes()] if kind == 1 else -1)
        nxt, upcoming = np.zeros(len(rows), np.int32), 0
        for g in range(len(rows) - 1, -1, -1):
            upcoming = own[g] if own[g] >= 0 else upcoming
            nxt[g] = upcoming
        self.mask_next = nxt
        self.partial_mask_blocks = (np.stack(patterns) if patterns
                                    else np.zeros((0, block_q, block_kv), bool))
        new_row = rows[1:] != rows[:-1]
        self.bounds_start = np.concatenate([[True], new_row])
        self.bounds_end = np.concatenate([new_row, [True]])


def build_mask_info(mask, block_q, block_kv):
    """MaskInfo of a bool [L, L] mask (a5 Task 5.3, without the argument checks)."""
    return MaskInfo(np.asarray(mask, bool), block_q, block_kv)


def splash_attention_kernel(rows_ref, cols_ref, next_ref, start_ref, end_ref, kind_ref,
                            q_ref, k_ref, v_ref, mask_ref, o_ref, m_ref, l_ref, acc_ref, *,
                            sm_scale):
    """One (head, active tile) step of Splash Attention (a5 Task 5.4)."""
    g = pl.program_id(1)

    @pl.when(start_ref[g] == 1)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32) * sm_scale
    keep = jnp.logical_or(kind_ref[g] == 2, mask_ref[...])
    s = jnp.where(keep, s, -1e30)
    m_prev = m_ref[:, :1]
    m_new = jnp.maximum(m_prev, s.max(axis=1, keepdims=True))
    p = jnp.where(keep, jnp.exp(s - m_new), 0.0)
    alpha = jnp.exp(m_prev - m_new)
    l_ref[...] = jnp.broadcast_to(alpha * l_ref[:, :1] + p.sum(axis=1, keepdims=True),
                                  l_ref.shape)
    acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p, v_ref[...],
                                                  preferred_element_type=jnp.float32)
    m_ref[...] = jnp.broadcast_to(m_new, m_ref.shape)

    @pl.when(end_ref[g] == 1)
    def _():
        o_ref[...] = acc_ref[...] / l_ref[:, :1]


def splash_attention(q, k, v, mask_info, *, sm_scale=None):
    """Attention over the active tiles of mask_info, grid (H, A) (a5 Task 5.4)."""
    heads, length, d = q.shape
    dv = v.shape[-1]
    patterns = np.asarray(mask_info.partial_mask_blocks, bool)
    _, bq, bkv = patterns.shape
    if not len(patterns):
        patterns = np.ones((1, bq, bkv), bool)
    table = [np.asarray(f, np.int32) for f in (
        mask_info.active_rows, mask_info.active_cols, mask_info.mask_next,
        mask_info.bounds_start, mask_info.bounds_end, mask_info.block_mask)]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    q_map = lambda h, g, r, c, n, s, e, b: (h, r[g], 0)  # noqa: E731
    kv_map = lambda h, g, r, c, n, s, e, b: (h, c[g], 0)  # noqa: E731
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(heads, len(table[0])),
        in_specs=[pl.BlockSpec((None, bq, d), q_map), pl.BlockSpec((None, bkv, d), kv_map),
                  pl.BlockSpec((None, bkv, dv), kv_map),
                  pl.BlockSpec((None, bq, bkv), lambda h, g, r, c, n, s, e, b: (n[g], 0, 0))],
        out_specs=pl.BlockSpec((None, bq, dv), q_map),
        scratch_shapes=[pltpu.VMEM((bq, 128), jnp.float32), pltpu.VMEM((bq, 128), jnp.float32),
                        pltpu.VMEM((bq, dv), jnp.float32)])
    return pl.pallas_call(
        functools.partial(splash_attention_kernel, sm_scale=scale), grid_spec=spec,
        out_shape=jax.ShapeDtypeStruct((heads, length, dv), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")))(
        *table, q, k, v, patterns)
