"""Reference for assignment a4, Flash Attention (lecture §5).

Public names are exactly those of the student API (with, for Task 4.8, the trusted side
of its grading: ``predicted_flash_time``, ``best_flash_config``). Everything is dense
float64 math, deliberately unlike the block-by-block solution:

* ``online_softmax``: the (m, l) after block k are the prefix maximum and the
  prefix sum of exp(x - m) over the first k blocks, computed directly from
  the whole prefix rather than by updating a running state. Masked entries
  (-inf) get probability 0; a prefix of only -inf is the empty state
  (m = -inf, l = 0) and a row of only -inf has probabilities 0 (the handout's
  contract, Task 4.1).
* ``merge_attention_states``: the side with the larger maximum keeps weight 1
  and the other gets exp(-|m_a - m_b|), which is symmetric by construction.
* ``mle_safe_range``: the float32 limits come from their bit patterns
  (largest finite = 2^128·(1 - 2^-24), smallest normal = 2^-126).
* ``flash_attention_kernel`` / ``flash_attention``: the intended kernel and
  pallas_call (``use_base2_exp``: scores and m times log2 e, exp2), and
  ``flash_attention_kernel_microtiled`` (a ``fori_loop`` over ``bkv_compute`` slices
  carrying the state as values), kept for their trace (grid, BlockSpecs, scratch, DMAs, which
  blocks do work). Expected VALUES come from ``reference.dense_attention``,
  dense float64 attention that shares no code with any blocked kernel.
"""

import functools as _functools
import math as _math

import numpy as _np

from pallas_sim import jax as _jax
from pallas_sim import jnp as _jnp
from pallas_sim import pl as _pl
from pallas_sim import pltpu as _pltpu

__all__ = [
    "attention_flops",
    "choose_flash_config",
    "finalize_attention_state",
    "flash_attention",
    "flash_attention_hbm_bytes",
    "flash_attention_kernel",
    "flash_attention_kernel_microtiled",
    "merge_attention_states",
    "mle_safe_range",
    "online_softmax",
    "xla_attention_hbm_bytes",
]

_LN2 = _math.log(2.0)
_LN_F32_MAX = 128 * _LN2 + _math.log1p(-(2.0 ** -24))
_LN_F32_TINY = -126 * _LN2


def _sum_exp_below(x64: _np.ndarray, top: _np.ndarray) -> _np.ndarray:
    """Σ exp(x - top) over the last axis, 0 where ``top`` is -inf (only -inf seen)."""
    seen = ~_np.isneginf(top)
    safe_top = _np.where(seen, top, 0.0)
    return _np.where(seen, _np.exp(x64 - safe_top[..., None]).sum(axis=-1), 0.0)


def online_softmax(x, block_size: int):
    """Task 4.1: (softmax over the last axis, [(m_k, l_k) per block]) in float64.

    x: [n] or [rows, n], finite or -inf. A -inf entry has probability 0; while a row
    has shown only -inf its (m, l) is the empty state (-inf, 0); a row of only -inf
    has probabilities 0. Raises ValueError for block_size < 1.
    """
    x64 = _np.asarray(x, dtype=_np.float64)
    n = x64.shape[-1]
    if block_size < 1:
        raise ValueError(f"block_size={block_size} must be at least 1")
    prefix_max = _np.maximum.accumulate(x64, axis=-1)
    trace = []
    for k in range(-(-n // block_size)):
        end = min((k + 1) * block_size, n)
        m_k = prefix_max[..., end - 1]
        l_k = _sum_exp_below(x64[..., :end], m_k)
        trace.append((_np.asarray(m_k), _np.asarray(l_k)))
    top = x64.max(axis=-1)
    total = _sum_exp_below(x64, top)
    safe_top = _np.where(_np.isneginf(top), 0.0, top)
    shifted = _np.exp(x64 - safe_top[..., None])
    probs = _np.zeros_like(shifted)
    _np.divide(shifted, total[..., None], out=probs,
               where=_np.broadcast_to(total[..., None] > 0, shifted.shape))
    return probs, trace


def _weights(m_a: _np.ndarray, m_b: _np.ndarray) -> tuple[_np.ndarray, _np.ndarray]:
    """exp(m_a - max) and exp(m_b - max), with two empty states (-inf) giving 1 and 1."""
    with _np.errstate(invalid="ignore"):
        gap = m_a - m_b
    gap = _np.where(_np.isnan(gap), 0.0, gap)
    return _np.exp(_np.minimum(gap, 0.0)), _np.exp(_np.minimum(-gap, 0.0))


def merge_attention_states(state_a, state_b):
    """Task 4.2: (m, l, acc) of the union of two disjoint key sets, in float64."""
    m_a, l_a, acc_a = (_np.asarray(t, dtype=_np.float64) for t in state_a)
    m_b, l_b, acc_b = (_np.asarray(t, dtype=_np.float64) for t in state_b)
    w_a, w_b = _weights(m_a, m_b)
    m = _np.where(m_a >= m_b, m_a, m_b)
    l_sum = l_a * w_a + l_b * w_b
    acc = acc_a * _np.expand_dims(w_a, -1) + acc_b * _np.expand_dims(w_b, -1)
    return m, l_sum, acc


def finalize_attention_state(state):
    """Task 4.2: acc / l[..., None] in float64."""
    acc = _np.asarray(state[2], dtype=_np.float64)
    denom = _np.asarray(state[1], dtype=_np.float64)
    return acc / _np.expand_dims(denom, -1)


def _causal_block_visible(q_block: int, kv_block: int, block_q: int, block_kv: int) -> bool:
    """True when some key of kv block ``kv_block`` is at or before the last query of
    q block ``q_block`` (otherwise the whole (block_q, block_kv) tile is masked)."""
    return kv_block * block_kv <= (q_block + 1) * block_q - 1


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale, causal, block_q, block_kv,
                           soft_cap=None, max_logit_const=None, use_base2_exp=False) -> None:
    """Task 4.3: one (head, q block, kv block) step; scratch m, l f32 (block_q, 128),
    acc f32 (block_q, dv). Fully masked causal blocks do no work (``pl.when``).
    ``use_base2_exp``: scores and m in base-2 units (times log2 e), exp2 (lecture §6.6)."""
    q_block, kv_block = _pl.program_id(1), _pl.program_id(2)
    lanes = m_scratch_ref.shape[-1]
    unit = _np.float32(1.0 / _LN2) if use_base2_exp else _np.float32(1.0)
    power = _jnp.exp2 if use_base2_exp else _jnp.exp

    @_pl.when(kv_block == 0)
    def _start():
        start = -_np.inf if max_logit_const is None else float(max_logit_const) * float(unit)
        m_scratch_ref[...] = _jnp.full(m_scratch_ref.shape, start, _np.float32)
        l_scratch_ref[...] = _jnp.zeros(l_scratch_ref.shape, _np.float32)
        acc_scratch_ref[...] = _jnp.zeros(acc_scratch_ref.shape, _np.float32)

    visible = (not causal) or _causal_block_visible(q_block, kv_block, block_q, block_kv)

    @_pl.when(visible)
    def _accumulate():
        scores = _jnp.einsum("qd,kd->qk", q_ref[...], k_ref[...],
                             preferred_element_type=_jnp.float32) * _np.float32(sm_scale)
        if soft_cap is not None:
            cap = _np.float32(soft_cap)
            scores = cap * _jnp.tanh(scores / cap)
        if use_base2_exp:
            scores = scores * unit
        if causal:
            rows = q_block * block_q + _jnp.arange(block_q)[:, None]
            cols = kv_block * block_kv + _jnp.arange(block_kv)[None, :]
            scores = _jnp.where(cols > rows, _np.float32(-_np.inf), scores)
        m_old = m_scratch_ref[:, :1]
        if max_logit_const is None:
            m_new = _jnp.maximum(m_old, scores.max(axis=1, keepdims=True))
            shrink = power(m_old - m_new)
        else:
            m_new, shrink = m_old, 1.0  # no rescale: the multiplies by 1 fold away
        weights = power(scores - m_new)
        l_new = shrink * l_scratch_ref[:, :1] + weights.sum(axis=1, keepdims=True)
        acc_scratch_ref[...] = shrink * acc_scratch_ref[...] + _jnp.dot(
            weights, v_ref[...], preferred_element_type=_jnp.float32)
        m_scratch_ref[...] = _jnp.broadcast_to(m_new, (block_q, lanes))
        l_scratch_ref[...] = _jnp.broadcast_to(l_new, (block_q, lanes))

    @_pl.when(kv_block == _pl.num_programs(2) - 1)
    def _finish():
        o_ref[...] = (acc_scratch_ref[...] / l_scratch_ref[:, :1]).astype(o_ref.dtype)


def flash_attention_kernel_microtiled(q_ref, k_ref, v_ref, o_ref, m_scratch_ref,
                                      l_scratch_ref, acc_scratch_ref, *, sm_scale, causal,
                                      block_q, block_kv, bkv_compute) -> None:
    """Task 4.7: Task 4.3's step (no soft cap, no constant) with the kv block scored
    ``bkv_compute`` keys at a time: a ``fori_loop`` over the slices carries (m, l, acc)
    as values and stores them once, so the largest array computed is
    (block_q, bkv_compute) when d, dv <= bkv_compute (lecture §5.3)."""
    q_block, kv_block = _pl.program_id(1), _pl.program_id(2)
    lanes = m_scratch_ref.shape[-1]

    @_pl.when(kv_block == 0)
    def _start():
        m_scratch_ref[...] = _jnp.full(m_scratch_ref.shape, -_np.inf, _np.float32)
        l_scratch_ref[...] = _jnp.zeros(l_scratch_ref.shape, _np.float32)
        acc_scratch_ref[...] = _jnp.zeros(acc_scratch_ref.shape, _np.float32)

    visible = (not causal) or _causal_block_visible(q_block, kv_block, block_q, block_kv)

    def _slice(index, state):
        m_old, l_old, acc_old = state
        first = index * bkv_compute
        keys = k_ref[_pl.ds(first, bkv_compute), :]
        scores = _jnp.einsum("qd,kd->qk", q_ref[...], keys,
                             preferred_element_type=_jnp.float32) * _np.float32(sm_scale)
        if causal:
            rows = q_block * block_q + _jnp.arange(block_q)[:, None]
            cols = kv_block * block_kv + first + _jnp.arange(bkv_compute)[None, :]
            scores = _jnp.where(cols > rows, _np.float32(-_np.inf), scores)
        m_new = _jnp.maximum(m_old, scores.max(axis=1, keepdims=True))
        shrink = _jnp.exp(m_old - m_new)
        weights = _jnp.exp(scores - m_new)
        return (m_new, shrink * l_old + weights.sum(axis=1, keepdims=True),
                shrink * acc_old + _jnp.dot(weights, v_ref[_pl.ds(first, bkv_compute), :],
                                            preferred_element_type=_jnp.float32))

    @_pl.when(visible)
    def _accumulate():
        state = (m_scratch_ref[:, :1], l_scratch_ref[:, :1], acc_scratch_ref[...])
        m_new, l_new, acc_new = _jax.lax.fori_loop(0, block_kv // bkv_compute, _slice, state)
        m_scratch_ref[...] = _jnp.broadcast_to(m_new, (block_q, lanes))
        l_scratch_ref[...] = _jnp.broadcast_to(l_new, (block_q, lanes))
        acc_scratch_ref[...] = acc_new

    @_pl.when(kv_block == _pl.num_programs(2) - 1)
    def _finish():
        o_ref[...] = (acc_scratch_ref[...] / l_scratch_ref[:, :1]).astype(o_ref.dtype)


def flash_attention(q, k, v, *, causal=False, sm_scale=None, block_q=128, block_kv=128,
                    soft_cap=None, max_logit_const=None, use_base2_exp=False):
    """Task 4.4: the intended pallas_call (grid (H, L/block_q, L/block_kv), head dims
    squeezed, query head h reading kv head h // group); returns float32 [H, L, dv].

    Raises ValueError (before any pallas_call) when k or v does not have q's length L
    (self-attention only: the handout's decision for kv_len != q_len), when H is not a
    multiple of Hkv, or when a block size does not divide L."""
    heads, length, d = q.shape
    kv_heads, dv = k.shape[0], v.shape[-1]
    if k.shape[1] != length or v.shape[1] != length:
        raise ValueError(f"k has {k.shape[1]} and v {v.shape[1]} positions but q has "
                         f"L={length}: kv_len must equal q_len")
    if heads % kv_heads:
        raise ValueError(f"H={heads} is not a multiple of Hkv={kv_heads}")
    for name, block in (("block_q", block_q), ("block_kv", block_kv)):
        if length % block:
            raise ValueError(f"L={length} is not a multiple of {name}={block}")
    group = heads // kv_heads
    scale = 1.0 / _math.sqrt(d) if sm_scale is None else float(sm_scale)
    kernel = _functools.partial(
        flash_attention_kernel, sm_scale=scale, causal=causal, block_q=block_q,
        block_kv=block_kv, soft_cap=soft_cap, max_logit_const=max_logit_const,
        use_base2_exp=use_base2_exp)
    return _pl.pallas_call(
        kernel,
        out_shape=_jax.ShapeDtypeStruct((heads, length, dv), _np.float32),
        grid=(heads, length // block_q, length // block_kv),
        in_specs=[
            _pl.BlockSpec((None, block_q, d), lambda h, i, j: (h, i, 0)),
            _pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h // group, j, 0)),
            _pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h // group, j, 0)),
        ],
        out_specs=_pl.BlockSpec((None, block_q, dv), lambda h, i, j: (h, i, 0)),
        scratch_shapes=[_pltpu.VMEM((block_q, 128), _jnp.float32),
                        _pltpu.VMEM((block_q, 128), _jnp.float32),
                        _pltpu.VMEM((block_q, dv), _jnp.float32)],
        compiler_params=_pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(q, k, v)


def mle_safe_range(max_logit: float, min_row_max: float) -> tuple[float, float]:
    """Task 4.5: open interval of constants c with exp(s - c) safe in float32."""
    return float(max_logit) - _LN_F32_MAX, float(min_row_max) - _LN_F32_TINY


def flash_attention_hbm_bytes(H: int, L: int, d: int, dv: int, block_q: int, *,
                              in_bytes: int = 2, out_bytes: int = 4) -> int:
    """Task 4.6: Q read once, K and V once per query block, O written once."""
    sweeps = -(-L // block_q)
    once = H * L * (d * in_bytes + dv * out_bytes)
    return int(once + sweeps * H * L * (d + dv) * in_bytes)


def xla_attention_hbm_bytes(H: int, L: int, d: int, dv: int, *, in_bytes: int = 2,
                            score_bytes: int = 4, out_bytes: int = 4) -> int:
    """Task 4.6: scores written once and read twice, plus Q, K, V in and O out."""
    per_row = 3 * L * score_bytes + (d + d + dv) * in_bytes + dv * out_bytes
    return int(H * L * per_row)


def attention_flops(H: int, L: int, d: int, dv: int) -> int:
    """Task 4.6: 2·H·L²·d for Q·Kᵀ plus 2·H·L²·dv for P·V."""
    return int(2 * H * L * L * d + 2 * H * L * L * dv)


# --- Task 4.8 (performance): block sizes and MLE for the lecture's attention -----------------

#: Task 4.8: the values each of block_q and block_kv may take (elements); all divide L 4096.
FLASH_BLOCK_CANDIDATES = (256, 512, 1024, 2048, 4096)
#: Task 4.8: max_logit_const with MLE off (None) or on (the slides' exercise constant 70,
#: lecture §5.4 and the §6.6 exercise list).
FLASH_MLE_CANDIDATES = (None, 70.0)
#: Task 4.8: the lecture's layer, q, k [H, L, d] and v [H, L, dv] in bf16, non-causal
#: (lecture §5.3: Q / K [128, 4096, 192], V [128, 4096, 128]).
PERFORMANCE_Q_SHAPE, PERFORMANCE_V_SHAPE = (128, 4096, 192), (128, 4096, 128)
#: Task 4.8: the chip the time is predicted for (one Ironwood TensorCore).
PERFORMANCE_CHIP = "v7"
#: Task 4.8: bytes of the score tiles a step holds per element of its largest array: the
#: f32 scores and their exp (lecture §5.3: 16 / 32 / 128 MiB at 1024 x 2048 / 2048 x 2048 /
#: 4096 x 4096). ``pallas_sim``'s VMEM accounting counts blocks and scratch, not these.
SCORE_TILE_BYTES_PER_ELEMENT = 2 * 4


def predicted_flash_run(config) -> tuple[float, int]:
    """Task 4.8: (predicted seconds, VMEM bytes of blocks, scratch and score tiles) of the
    lecture's attention with ``config`` = (block_q, block_kv, max_logit_const).

    bf16 q, k [128, 4096, 192], v [128, 4096, 128], non-causal, f32 out, this reference's
    ``flash_attention`` run on shapes only (``pallas_sim.estimate``, chip "v7";
    docs/performance-model.md; lecture §5.3, §5.4). The VMEM is the call's peak (blocks
    double-buffered, scratch) plus ``SCORE_TILE_BYTES_PER_ELEMENT`` per element of the
    largest array the kernel computes (the [block_q, block_kv] scores).

    Raises:
      ValueError: a block size that does not divide L (names it).
      VmemOOMError: the blocks and scratch exceed the scoped VMEM (a real run's message).
    """
    import pallas_sim

    block_q, block_kv, constant = config
    q = _jax.ShapeDtypeStruct(PERFORMANCE_Q_SHAPE, _jnp.bfloat16)
    v = _jax.ShapeDtypeStruct(PERFORMANCE_V_SHAPE, _jnp.bfloat16)
    estimate = pallas_sim.estimate(flash_attention, q, q, v, block_q=int(block_q),
                                   block_kv=int(block_kv), max_logit_const=constant,
                                   chip=PERFORMANCE_CHIP)
    line, call = estimate.timelines[0], estimate.calls[0]
    tiles = SCORE_TILE_BYTES_PER_ELEMENT * int(call.largest_intermediate)
    return float(line.time_s), int(line.vmem_bytes) + tiles


def predicted_flash_time(config) -> float:
    """Task 4.8: predicted seconds of ``predicted_flash_run(config)``; same errors."""
    return predicted_flash_run(config)[0]


def flash_vmem_capacity() -> int:
    """Task 4.8: bytes of VMEM on one TensorCore of ``PERFORMANCE_CHIP`` (64 MiB on
    Ironwood): a configuration whose blocks and score tiles need more cannot run (lecture
    §5.3: 4096 x 4096 tiles, 128 MiB, exceed it)."""
    from pallas_sim.extend import get_chip

    return int(get_chip(PERFORMANCE_CHIP).vmem_bytes)


def flash_config_candidates() -> list[tuple[int, int, float | None]]:
    """Task 4.8: every (block_q, block_kv, max_logit_const) over the candidate sets, in
    order; whether it fits VMEM is for ``predicted_flash_run`` to say."""
    length = PERFORMANCE_Q_SHAPE[1]
    sizes = [b for b in FLASH_BLOCK_CANDIDATES if length % b == 0]
    return [(bq, bkv, c) for bq in sizes for bkv in sizes for c in FLASH_MLE_CANDIDATES]


def best_flash_config() -> tuple[tuple[int, int, float | None], float]:
    """Task 4.8: (the fastest legal candidate, its predicted seconds): the minimum of
    ``predicted_flash_time`` over ``flash_config_candidates`` whose blocks, scratch and
    score tiles fit ``flash_vmem_capacity`` (ties: the first in candidate order). About a
    second (50 abstract runs)."""
    from pallas_sim import VmemOOMError

    capacity = flash_vmem_capacity()
    best: tuple[tuple[int, int, float | None], float] | None = None
    for config in flash_config_candidates():
        try:
            seconds, vmem = predicted_flash_run(config)
        except VmemOOMError:
            continue
        if vmem <= capacity and (best is None or seconds < best[1]):
            best = (config, seconds)
    assert best is not None
    return best


#: Task 4.8: the fastest legal candidate, as ``best_flash_config`` finds it (kept here so
#: that grading does not search; tests/reference/test_reference_a4.py recomputes it): the slides'
#: choice. (4096, 1024, 70.0) and (1024, 4096, 70.0) are 0.1-0.4 % slower; 4096-row or
#: -column blocks with 2048 or more on the other side need 64 MiB or more of score tiles.
BEST_FLASH_CONFIG = (2048, 2048, 70.0)


def choose_flash_config() -> tuple[int, int, float | None]:
    """Task 4.8: (block_q, block_kv, max_logit_const) for the lecture's attention:
    ``BEST_FLASH_CONFIG``."""
    return BEST_FLASH_CONFIG
