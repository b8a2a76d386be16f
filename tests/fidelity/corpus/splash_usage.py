"""Corpus: Splash attention as it is used.

Follows the usage of ``jax.experimental.pallas.ops.tpu.splash_attention``
(https://github.com/jax-ml/jax/tree/main/jax/experimental/pallas/ops/tpu/splash_attention):
a mask per head (causal, local window) summarised on the host into a ``MaskInfo``-style
set of tables - for each (head, q block, kv block) whether the mask block is empty,
partial or full, which kv block to fetch next (so an empty block costs no copy) and
which partial mask block applies - passed as three scalar-prefetch operands; a kernel
over (heads, q blocks, kv blocks) that skips empty blocks, masks only partial ones,
runs an online softmax over ``block_kv_compute`` slices of each kv block, and is
``jax.vmap``-ed over the batch as ``make_splash_mha``'s result is.

This is the project's own version of that usage at small shapes: our own mask
summary, kernel, code and comments.
"""

from __future__ import annotations

import dataclasses
import functools

import ml_dtypes
import numpy as np
from corpus_cases import BF16, Case, corpus_case

CASES: list[Case] = []
LANES = 128
MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)
EMPTY, PARTIAL, FULL = 0, 1, 2
F32_ATTENTION = 2e-5


def causal(seq: int) -> np.ndarray:
    """bool (seq, seq): query i sees keys 0..i."""
    return np.tril(np.ones((seq, seq), bool))


def local(seq: int, window: int) -> np.ndarray:
    """bool (seq, seq): query i sees keys i-window+1..i."""
    rows, cols = np.indices((seq, seq))
    return (cols <= rows) & (cols > rows - window)


@dataclasses.dataclass(frozen=True)
class MaskTables:
    """What the kernel needs to know about a (heads, q_len, kv_len) mask, per block.

    Attributes:
      kind: int8 (heads, q_blocks, kv_blocks): EMPTY, PARTIAL or FULL.
      fetch_kv: int32, same shape: the kv block to have in VMEM at that step - the block
        itself, or for an empty block the next non-empty one of its row (the last one
        after the row's end), so an empty block costs no new copy.
      fetch_mask: int32, same shape: index into ``partial_blocks`` (likewise carried).
      partial_blocks: bool (n, block_q, block_kv): the distinct partial mask blocks.
    """

    kind: np.ndarray
    fetch_kv: np.ndarray
    fetch_mask: np.ndarray
    partial_blocks: np.ndarray


def summarise(mask: np.ndarray, block_q: int, block_kv: int) -> MaskTables:
    """The :class:`MaskTables` of a bool (heads, q_len, kv_len) mask."""
    heads, q_len, kv_len = mask.shape
    shape = (heads, q_len // block_q, kv_len // block_kv)
    kind = np.zeros(shape, np.int8)
    fetch_kv = np.zeros(shape, np.int32)
    fetch_mask = np.zeros(shape, np.int32)
    partial: list[np.ndarray] = []
    for h, i, j in np.ndindex(shape):
        piece = mask[h, i * block_q:(i + 1) * block_q, j * block_kv:(j + 1) * block_kv]
        if piece.all():
            kind[h, i, j] = FULL
        elif piece.any():
            kind[h, i, j] = PARTIAL
            same = [n for n, seen in enumerate(partial) if np.array_equal(seen, piece)]
            if not same:
                partial.append(piece)
            fetch_mask[h, i, j] = same[0] if same else len(partial) - 1
    for h, i in np.ndindex(shape[:2]):  # carry the next needed block backwards ...
        used = np.flatnonzero(kind[h, i] != EMPTY)
        last = used[-1] if len(used) else 0  # ... and the last one past the row's end
        next_kv, next_mask = last, fetch_mask[h, i, last]
        for j in reversed(range(shape[2])):
            if kind[h, i, j] != EMPTY:
                next_kv = j
                next_mask = fetch_mask[h, i, j] if kind[h, i, j] == PARTIAL else next_mask
            fetch_kv[h, i, j], fetch_mask[h, i, j] = next_kv, next_mask
    if not partial:
        partial.append(np.ones((block_q, block_kv), bool))
    return MaskTables(kind, fetch_kv, fetch_mask, np.stack(partial))


def _splash_kernel(kind_ref, fetch_kv_ref, fetch_mask_ref, q_ref, k_ref, v_ref, mask_ref,
                   o_ref, m_scratch, l_scratch, acc_scratch, *, ns, block_kv_compute):
    """One (head, q block, kv block) step of the masked online softmax."""
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    del fetch_kv_ref, fetch_mask_ref  # the index maps read them
    h, i, j = pl.program_id(0), pl.program_id(1), pl.program_id(2)
    block_q, head_dim = q_ref.shape
    block_kv = k_ref.shape[0]

    @pl.when(j == 0)
    def _start():
        acc_scratch[...] = jnp.zeros_like(acc_scratch)
        m_scratch[...] = jnp.full_like(m_scratch, MASK_VALUE)
        l_scratch[...] = jnp.zeros_like(l_scratch)

    kind = kind_ref[h, i, j].astype(jnp.int32)  # SMEM tables may be narrower than int32
    no_mask_needed = kind != PARTIAL

    def fold_slice(c, carry):
        keys = pl.ds(c * block_kv_compute, block_kv_compute)
        m_prev, l_prev = m_scratch[...], l_scratch[...]
        scores = jax.lax.dot_general(q_ref[...], k_ref[keys, :], (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)
        keep = jnp.bitwise_or(mask_ref[:, keys],
                              jnp.broadcast_to(no_mask_needed, (block_q, block_kv_compute)))
        scores = jnp.where(keep, scores, MASK_VALUE)
        m_next = jnp.maximum(m_prev, scores.max(axis=-1)[:, None])
        weights = jnp.exp(scores - jnp.tile(m_next, (1, block_kv_compute // LANES)))
        l_now = jax.lax.broadcast_in_dim(weights.sum(axis=-1), l_prev.shape, (0,))
        alpha = jnp.exp(m_prev - m_next)
        m_scratch[...], l_scratch[...] = m_next, l_now + alpha * l_prev
        values = v_ref[keys, :].astype(jnp.float32)
        rescale = jnp.tile(alpha, (1, pl.cdiv(head_dim, LANES)))[..., :head_dim]
        acc_scratch[...] = rescale * acc_scratch[...] + jax.lax.dot_general(
            weights, values, (((1,), (0,)), ((), ())))
        return carry

    @pl.when(kind != EMPTY)
    def _run():
        jax.lax.fori_loop(0, block_kv // block_kv_compute, fold_slice, None)

    @pl.when(j == pl.num_programs(2) - 1)
    def _finish():
        inv_l = jnp.tile(1.0 / l_scratch[...], (1, pl.cdiv(head_dim, LANES)))[..., :head_dim]
        o_ref[...] = (acc_scratch[...] * inv_l).astype(o_ref.dtype)


SPLASH_SEMANTICS = ("parallel", "arbitrary", "arbitrary")


def make_mha(ns, tables: MaskTables, *, block_q, block_kv, block_kv_compute,
             semantics=SPLASH_SEMANTICS):
    """``attend(q, k, v)`` over (heads, seq, head_dim) arrays, as ``make_splash_mha``
    returns: the mask tables are fixed when it is made. ``semantics=None`` leaves out
    the compiler params (see ``causal_mha_vmapped_over_batch``)."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    heads, q_blocks, kv_blocks = tables.kind.shape

    def q_map(h, i, j, kind, fetch_kv, fetch_mask):
        return (h, i, 0)

    def kv_map(h, i, j, kind, fetch_kv, fetch_mask):
        return (h, fetch_kv[h, i, j], 0)

    def mask_map(h, i, j, kind, fetch_kv, fetch_mask):
        return (fetch_mask[h, i, j], 0, 0)

    def attend(q, k, v):
        head_dim = q.shape[-1]
        kernel = functools.partial(_splash_kernel, ns=ns, block_kv_compute=block_kv_compute)
        grid_spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=3,
            grid=(heads, q_blocks, kv_blocks),
            in_specs=[pl.BlockSpec((None, block_q, head_dim), q_map),
                      pl.BlockSpec((None, block_kv, head_dim), kv_map),
                      pl.BlockSpec((None, block_kv, head_dim), kv_map),
                      pl.BlockSpec((None, block_q, block_kv), mask_map)],
            out_specs=pl.BlockSpec((None, block_q, head_dim), q_map),
            scratch_shapes=[pltpu.VMEM((block_q, LANES), jnp.float32),
                            pltpu.VMEM((block_q, LANES), jnp.float32),
                            pltpu.VMEM((block_q, head_dim), jnp.float32)])
        params = None if semantics is None else pltpu.CompilerParams(
            dimension_semantics=semantics)
        return pl.pallas_call(
            kernel, grid_spec=grid_spec, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
            compiler_params=params,
        )(tables.kind, tables.fetch_kv, tables.fetch_mask, q, k, v, tables.partial_blocks)

    return attend


def _qkv(seed, shape, dtype=np.float32, scale=1.0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    return (q * scale).astype(dtype), k.astype(dtype), v.astype(dtype)


@corpus_case(CASES, tolerance=F32_ATTENTION,
             exercises="3 prefetch tables (int8/int32), causal skip of empty blocks, "
                       "jax.vmap over the batch")
def causal_mha_vmapped_over_batch(ns):
    jax = ns.jax
    tables = summarise(np.stack([causal(256)] * 2), 128, 128)
    # No dimension_semantics here: JAX 0.10.2's TPU interpret mode cannot vmap a call
    # that has them (test_corpus.py pins that limitation).
    attend = make_mha(ns, tables, block_q=128, block_kv=128, block_kv_compute=128,
                      semantics=None)
    q, k, v = _qkv(0, (2, 2, 256, 64), scale=0.125)
    return jax.vmap(attend)(q, k, v)


@corpus_case(CASES, tolerance=BF16,
             exercises="per-head masks (causal, local window): partial mask blocks, "
                       "bool mask refs, 2 compute slices per kv block, bf16")
def local_and_causal_heads_bf16(ns):
    mask = np.stack([causal(512), local(512, 96)])
    tables = summarise(mask, 128, 256)
    attend = make_mha(ns, tables, block_q=128, block_kv=256, block_kv_compute=128)
    q, k, v = _qkv(1, (2, 512, 128), ml_dtypes.bfloat16, scale=0.1)
    return attend(q, k, v)
