"""Reference for assignment a4, Flash Attention (lecture §5).

Public names are exactly those of the student API. Everything is dense
float64 math, deliberately unlike the block-by-block solution:

* ``online_softmax``: the (m, l) after block k are the prefix maximum and the
  prefix sum of exp(x - m) over the first k blocks, computed directly from
  the whole prefix rather than by updating a running state.
* ``merge_attention_states``: the side with the larger maximum keeps weight 1
  and the other gets exp(-|m_a - m_b|), which is symmetric by construction.
* ``mle_safe_range``: the float32 limits come from their bit patterns
  (largest finite = 2^128·(1 - 2^-24), smallest normal = 2^-126).

Tasks 4.3 and 4.4 are stubs until their issue fills them in.
"""

import math as _math

import numpy as _np

__all__ = [
    "attention_flops",
    "finalize_attention_state",
    "flash_attention",
    "flash_attention_hbm_bytes",
    "flash_attention_kernel",
    "merge_attention_states",
    "mle_safe_range",
    "online_softmax",
    "xla_attention_hbm_bytes",
]

_LN2 = _math.log(2.0)
_LN_F32_MAX = 128 * _LN2 + _math.log1p(-(2.0 ** -24))
_LN_F32_TINY = -126 * _LN2


def online_softmax(x, block_size: int):
    """Task 4.1: (softmax over the last axis, [(m_k, l_k) per block]) in float64."""
    x64 = _np.asarray(x, dtype=_np.float64)
    n = x64.shape[-1]
    if block_size < 1:
        raise ValueError(f"block_size={block_size} must be at least 1")
    prefix_max = _np.maximum.accumulate(x64, axis=-1)
    trace = []
    for k in range(-(-n // block_size)):
        end = min((k + 1) * block_size, n)
        m_k = prefix_max[..., end - 1]
        l_k = _np.exp(x64[..., :end] - m_k[..., None]).sum(axis=-1)
        trace.append((_np.asarray(m_k), _np.asarray(l_k)))
    shifted = _np.exp(x64 - x64.max(axis=-1, keepdims=True))
    probs = shifted / shifted.sum(axis=-1, keepdims=True)
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


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale, causal, block_q, block_kv,
                           soft_cap=None, max_logit_const=None) -> None:
    """Task 4.3: not implemented yet in this release."""
    raise NotImplementedError("Need to implement for Task 4.3")


def flash_attention(q, k, v, *, causal=False, sm_scale=None, block_q=128, block_kv=128,
                    soft_cap=None, max_logit_const=None):
    """Task 4.4: not implemented yet in this release."""
    raise NotImplementedError("Need to implement for Task 4.4")


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
