"""Corpus: the reference TPU flash-attention forward kernel.

Follows the structure of the forward pass of
``jax.experimental.pallas.ops.tpu.flash_attention``
(https://github.com/jax-ml/jax/blob/main/jax/experimental/pallas/ops/tpu/flash_attention.py):
a (batch blocks, heads, q blocks, kv blocks) grid with only the last axis "arbitrary";
(block_b, 1, block, head_dim) blocks looped over in Python inside the kernel; running
max and denominator kept 128 lanes wide in float32 VMEM scratch; an inner loop over
``block_k`` slices of the ``block_k_major`` kv block; causal blocks above the diagonal
skipped with ``pl.when`` while their index maps re-point at the next block needed
(``lax.select``); an optional bias input and optional segment ids (``None`` in the
inputs and their BlockSpecs when absent); the single-step variant without scratch when
one kv block covers the sequence; the residuals l and m as optional outputs (``None``
in ``out_shape``).

This is the project's own version of that structure, written from the description
above at small shapes; our own code and comments.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import ml_dtypes
import numpy as np
from corpus_cases import BF16, Case, corpus_case

CASES: list[Case] = []
LANES = 128  # m and l are kept this wide, one copy per lane
MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)  # finite: exp(MASK - m) is 0, not NaN
F32_ATTENTION = 2e-5  # float32 softmax-weighted sums: exp and division round differently


class SegmentIds(NamedTuple):
    """Which segment each token belongs to: q (batch, q_len), kv (batch, kv_len)."""

    q: np.ndarray
    kv: np.ndarray


def _sees_block(q_block, block_q, kv_block, block_kv):
    """Whether the last query row of q block ``q_block`` reaches the first key of
    ``kv_block``: otherwise a causal mask hides the whole (q, kv) block."""
    return (q_block + 1) * block_q - 1 >= kv_block * block_kv


def _attend_one_slice(ns, b, q_ref, k_ref, v_ref, bias_ref, q_seg_ref, kv_seg_ref,
                      m_scratch, l_scratch, acc_scratch, *, start, block_k, causal, sm_scale,
                      first_row, first_col):
    """Fold keys ``start : start + block_k`` of the current kv block into the running
    softmax of batch row ``b`` of the block (``b`` = (batch index, head index 0)).

    ``first_row``/``first_col``: where the q block and the kv block start in the
    sequence, read from ``pl.program_id`` by the caller (JAX 0.10.2's ``interpret=True``
    cannot lower ``program_id`` inside a loop body)."""
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    block_q, head_dim = q_ref.shape[2], q_ref.shape[3]
    m_prev, l_prev = m_scratch[b], l_scratch[b]  # (block_q, LANES)
    keys = (*b, pl.ds(start, block_k), slice(None))
    scores = jax.lax.dot_general(q_ref[b], k_ref[keys], (((1,), (1,)), ((), ())),
                                 preferred_element_type=jnp.float32)  # (block_q, block_k)
    if bias_ref is not None:
        scores += bias_ref[(*b, pl.ds(None), pl.ds(start, block_k))].astype(jnp.float32)
    if sm_scale != 1.0:
        scores *= sm_scale
    visible = None
    if q_seg_ref is not None:
        q_ids = jnp.tile(q_seg_ref[b[0]], (1, block_k // LANES))  # (block_q, block_k)
        kv_ids = kv_seg_ref[b[0], :1, pl.ds(start, block_k)]  # (1, block_k)
        visible = jnp.equal(q_ids, kv_ids)
    if causal:
        rows = first_row + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 0)
        cols = first_col + start + jax.lax.broadcasted_iota(jnp.int32, (block_q, block_k), 1)
        visible = cols <= rows if visible is None else jnp.logical_and(visible, cols <= rows)
    if visible is not None:
        scores = scores + jnp.where(visible, 0.0, MASK_VALUE)

    m_next = jnp.maximum(m_prev, jnp.max(scores, axis=1)[:, None])  # (block_q, LANES)
    p = jnp.exp(scores - jnp.tile(m_next, (1, block_k // LANES)))
    l_rescaled = jnp.exp(m_prev - m_next) * l_prev
    l_next = jnp.sum(p, axis=1)[:, None] + l_rescaled
    m_scratch[b], l_scratch[b] = m_next, l_next

    def widen(lanes):  # (block_q, LANES) -> (block_q, head_dim)
        if head_dim >= LANES:
            return jnp.tile(lanes, (1, head_dim // LANES))
        return lanes[:, :head_dim]

    inv_l = jnp.where(l_next == 0.0, 1.0, 1.0 / l_next)
    acc_scratch[b] *= widen(l_rescaled * inv_l)
    values = v_ref[keys]
    acc_scratch[b] += jax.lax.dot(p.astype(values.dtype), values,
                                  preferred_element_type=jnp.float32) * widen(inv_l)


def _forward_kernel(q_ref, k_ref, v_ref, bias_ref, q_seg_ref, kv_seg_ref, o_ref, l_ref, m_ref,
                    *scratch, ns, causal, sm_scale, block_k, kv_len, loop):
    """One (batch block, head, q block, kv block) step of the tiled forward pass."""
    refs = (q_ref, k_ref, v_ref, bias_ref, q_seg_ref, kv_seg_ref, o_ref, l_ref, m_ref, *scratch)
    for batch_row in range(q_ref.shape[0]):  # a static loop over the batch rows of a block
        _forward_one_row(ns, (batch_row, 0), *refs, causal=causal, sm_scale=sm_scale,
                         block_k=block_k, kv_len=kv_len, loop=loop)


def _forward_one_row(ns, b, q_ref, k_ref, v_ref, bias_ref, q_seg_ref, kv_seg_ref, o_ref, l_ref,
                     m_ref, m_scratch, l_scratch, acc_scratch, *, causal, sm_scale, block_k,
                     kv_len, loop):
    """The step for batch row ``b`` = (row, 0) of the block: start, attend, finish."""
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    block_q, block_k_major = q_ref.shape[2], k_ref.shape[2]
    q_block, kv_block = pl.program_id(2), pl.program_id(3)

    @pl.when(kv_block == 0)
    def _start():
        m_scratch[b] = jnp.full(m_scratch.shape[2:], -jnp.inf, jnp.float32)
        l_scratch[b] = jnp.zeros(l_scratch.shape[2:], jnp.float32)
        acc_scratch[b] = jnp.zeros(acc_scratch.shape[2:], jnp.float32)

    attend = functools.partial(
        _attend_one_slice, ns, b, q_ref, k_ref, v_ref, bias_ref, q_seg_ref, kv_seg_ref,
        m_scratch, l_scratch, acc_scratch, block_k=block_k, causal=causal,
        sm_scale=sm_scale, first_row=q_block * block_q, first_col=kv_block * block_k_major)
    run = _sees_block(q_block, block_q, kv_block, block_k_major) if causal else True

    @pl.when(run)
    def _attend():
        if loop == "pl.loop":
            @pl.loop(0, block_k_major, step=block_k)
            def _slice(start):
                attend(start=start)
        else:
            def body(i, carry):
                attend(start=i * block_k)
                return carry

            jax.lax.fori_loop(0, block_k_major // block_k, body, None)

    @pl.when(kv_block == kv_len // block_k_major - 1)
    def _finish():
        o_ref[b] = acc_scratch[b].astype(o_ref.dtype)
        if l_ref is not None:
            l_ref[b] = l_scratch[b].astype(l_ref.dtype)
            m_ref[b] = m_scratch[b].astype(m_ref.dtype)


def _single_step_kernel(q_ref, k_ref, v_ref, bias_ref, q_seg_ref, kv_seg_ref, o_ref, l_ref,
                        m_ref, *, ns, causal, sm_scale, block_k, kv_len, loop):
    """One step when a single kv block holds the whole sequence: a plain softmax."""
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    block_q = q_ref.shape[2]
    for batch_row in range(q_ref.shape[0]):
        b = (batch_row, 0)
        scores = jax.lax.dot_general(q_ref[b], k_ref[b], (((1,), (1,)), ((), ())),
                                     preferred_element_type=jnp.float32)
        if bias_ref is not None:
            scores += bias_ref[b].astype(jnp.float32)
        scores *= sm_scale
        if causal:
            rows = pl.program_id(2) * block_q + jax.lax.broadcasted_iota(
                jnp.int32, scores.shape, 0)
            cols = jax.lax.broadcasted_iota(jnp.int32, scores.shape, 1)
            scores = scores + jnp.where(cols <= rows, 0.0, MASK_VALUE)
        m = jnp.max(scores, axis=1)[:, None]
        p = jnp.exp(scores - m)
        l = jnp.sum(p, axis=1)[:, None]
        p /= l
        if l_ref is not None:
            l_ref[b] = jax.lax.broadcast_in_dim(l, l_ref.shape[2:], range(2))
            m_ref[b] = jax.lax.broadcast_in_dim(m, m_ref.shape[2:], range(2))
        values = v_ref[b]
        o_ref[b] = jax.lax.dot(p.astype(values.dtype), values,
                               preferred_element_type=jnp.float32).astype(o_ref.dtype)


def flash_forward(ns, q, k, v, bias=None, segment_ids=None, *, causal=False, sm_scale=1.0,
                  block_b=1, block_q=128, block_k_major=128, block_k=128,
                  save_residuals=False, loop="fori_loop", cost_estimate=False):
    """Attention of q (batch, heads, q_len, head_dim) over k, v (batch, heads, kv_len, d).

    Returns o, or (o, l, m) with ``save_residuals`` (l, m: float32 (batch, heads, q_len)).
    """
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    batch, heads, q_len, head_dim = q.shape
    kv_len = k.shape[2]
    grid = (pl.cdiv(batch, block_b), heads, pl.cdiv(q_len, block_q), kv_len // block_k_major)

    def kv_block_to_fetch(q_block, kv_block):
        # A skipped (masked) kv block fetches block 0 instead: the next one this q block's
        # successor needs, so the skipped step costs no copy.
        if not causal:
            return kv_block
        return jax.lax.select(_sees_block(q_block, block_q, kv_block, block_k_major),
                              kv_block, 0)

    def q_map(bb, h, qi, ki):
        return (bb, h, qi, 0)

    def kv_map(bb, h, qi, ki):
        return (bb, h, kv_block_to_fetch(qi, ki), 0)

    def bias_map(bb, h, qi, ki):
        return (bb, h, qi, kv_block_to_fetch(qi, ki))

    def q_seg_map(bb, h, qi, ki):
        return (bb, qi, 0)

    def kv_seg_map(bb, h, qi, ki):
        return (bb, 0, kv_block_to_fetch(qi, ki))

    single_step = block_k == kv_len
    kernel = functools.partial(_single_step_kernel if single_step else _forward_kernel, ns=ns,
                               causal=causal, sm_scale=sm_scale, block_k=block_k,
                               kv_len=kv_len, loop=loop)
    scratch = [] if single_step else [
        pltpu.VMEM((block_b, 1, block_q, LANES), jnp.float32),  # running max m
        pltpu.VMEM((block_b, 1, block_q, LANES), jnp.float32),  # running denominator l
        pltpu.VMEM((block_b, 1, block_q, head_dim), jnp.float32),  # output accumulator
    ]
    out_shape = [jax.ShapeDtypeStruct(q.shape, q.dtype)]
    out_specs = [pl.BlockSpec((block_b, 1, block_q, head_dim), q_map)]
    if save_residuals:
        lanes = jax.ShapeDtypeStruct((batch, heads, q_len, LANES), jnp.float32)
        out_shape += [lanes, lanes]
        out_specs += [pl.BlockSpec((block_b, 1, block_q, LANES), q_map)] * 2
    else:
        out_shape += [None, None]
        out_specs += [None, None]

    q_seg = kv_seg = q_seg_spec = kv_seg_spec = None
    if segment_ids is not None:
        # As the reference lays them out: q ids repeated along 128 lanes, kv ids along 8
        # sublanes.
        q_seg = jax.lax.broadcast_in_dim(segment_ids.q, (batch, q_len, LANES), (0, 1))
        kv_seg = jax.lax.broadcast_in_dim(segment_ids.kv, (batch, 8, kv_len), (0, 2))
        q_seg_spec = pl.BlockSpec((block_b, block_q, LANES), q_seg_map)
        kv_seg_spec = pl.BlockSpec((block_b, 8, block_k_major), kv_seg_map)
    in_specs = [
        pl.BlockSpec((block_b, 1, block_q, head_dim), q_map),
        pl.BlockSpec((block_b, 1, block_k_major, head_dim), kv_map),
        pl.BlockSpec((block_b, 1, block_k_major, head_dim), kv_map),
        None if bias is None else pl.BlockSpec((block_b, 1, block_q, block_k_major), bias_map),
        q_seg_spec,
        kv_seg_spec,
    ]
    estimate = None
    if cost_estimate:
        estimate = pl.CostEstimate(
            flops=4 * batch * heads * q_len * kv_len * head_dim,
            transcendentals=batch * heads * q_len * kv_len,
            bytes_accessed=sum(a.size * a.dtype.itemsize for a in (q, k, v)) * 2)
    o, *residuals = pl.pallas_call(
        kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=0, grid=grid,
                                               in_specs=in_specs, out_specs=out_specs,
                                               scratch_shapes=scratch),
        out_shape=out_shape,
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
        cost_estimate=estimate,
    )(q, k, v, bias, q_seg, kv_seg)
    if save_residuals:
        l, m = (r[..., 0] for r in residuals)
        return o, l, m
    return o


def _qkv(seed, shape, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


@corpus_case(CASES, tolerance=F32_ATTENTION,
             exercises="4-D grid, block_b=2 rows looped in Python, causal skip + lax.select "
                       "index maps, fori_loop over block_k slices, residual outputs l, m")
def causal_with_residuals(ns):
    q, k, v = _qkv(0, (2, 2, 256, 64))
    return flash_forward(ns, q, k, v, causal=True, sm_scale=0.125, block_b=2,
                         block_k_major=256, save_residuals=True)


@corpus_case(CASES, tolerance=BF16,
             exercises="bf16 q/k/v, an additive bias block, None inputs and outputs, "
                       "pl.ds(None)")
def bias_bf16_no_residuals(ns):
    q, k, v = _qkv(1, (1, 2, 256, 128), ml_dtypes.bfloat16)
    bias = np.random.default_rng(2).standard_normal((1, 2, 256, 256)).astype(
        ml_dtypes.bfloat16)
    return flash_forward(ns, q, k, v, bias, sm_scale=0.5)


@corpus_case(CASES, tolerance=F32_ATTENTION,
             exercises="segment ids broadcast to 128 lanes / 8 sublanes (broadcast_in_dim), "
                       "jnp.tile, jnp.equal masks")
def segment_ids(ns):
    q, k, v = _qkv(3, (2, 1, 256, 128))
    ids = np.repeat(np.array([[0, 1], [2, 3]], np.int32), 128, axis=1)  # two segments each
    return flash_forward(ns, q, k, v, segment_ids=SegmentIds(q=ids, kv=ids), block_q=128,
                         block_k_major=256, block_k=128)


@corpus_case(CASES, tolerance=F32_ATTENTION,
             exercises="single-step variant (block_k == kv_len): no scratch, "
                       "broadcast_in_dim residuals")
def single_step_causal(ns):
    q, k, v = _qkv(4, (1, 2, 128, 64))
    return flash_forward(ns, q, k, v, causal=True, sm_scale=0.125, block_k_major=128,
                         block_k=128, save_residuals=True)


@corpus_case(CASES, tolerance=F32_ATTENTION,
             exercises="the reference's own spelling: pl.loop over block_k slices, "
                       "pl.CostEstimate")
def causal_with_pl_loop_and_cost_estimate(ns):
    q, k, v = _qkv(5, (1, 1, 256, 128))
    return flash_forward(ns, q, k, v, causal=True, block_k_major=256, block_k=128,
                         loop="pl.loop", cost_estimate=True)
