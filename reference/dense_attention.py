"""Dense float64 attention: the values every Flash Attention check compares with.

This is attention as written on the blackboard (lecture §5, first formula):
all scores of a head at once, the mask applied, one softmax per row, one
product with V. No blocks, no running state, no float32 anywhere, so it shares
no mistake with a block-by-block kernel. Graders use it for expected values
and for the score statistics that place a Max-Logit-Estimate constant inside
its safe range (lecture §5.4).

Conventions (docs/student-api.md, a4): q [H, L, d], k [Hkv, L, d], v [Hkv, L, dv]
with H % Hkv == 0, and query head h reads kv head h // (H // Hkv) (grouped-query
attention). ``causal``: key position j > query position i is masked.
``soft_cap``: scaled scores s become cap·tanh(s / cap).
"""

from __future__ import annotations

import numpy as np

__all__ = ["attention_scores", "dense_attention", "kv_head_of", "masked_dense_attention",
           "score_extremes"]


def kv_head_of(num_heads: int, num_kv_heads: int) -> np.ndarray:
    """int64 [H]: the kv head each query head reads, h // (H // Hkv).

    Raises:
      ValueError: ``num_heads`` is not a positive multiple of ``num_kv_heads``.
    """
    if num_kv_heads < 1 or num_heads < 1 or num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} must be a positive multiple of "
                         f"num_kv_heads={num_kv_heads}")
    return np.arange(num_heads) // (num_heads // num_kv_heads)


def attention_scores(q: np.ndarray, k: np.ndarray, *, sm_scale: float, causal: bool = False,
                     soft_cap: float | None = None) -> np.ndarray:
    """float64 [H, L, L]: scaled (and capped) scores, -inf where the causal mask hides a key.

    q: [H, L, d]; k: [Hkv, L, d] (any float dtype, bf16 included).

    Raises:
      ValueError: H is not a multiple of Hkv, or q and k disagree on L or d.
    """
    q64 = np.asarray(q).astype(np.float64)
    k64 = np.asarray(k).astype(np.float64)
    if q64.shape[1:] != k64.shape[1:]:
        raise ValueError(f"q has shape {q64.shape} and k {k64.shape}: L and d must agree")
    k_per_head = k64[kv_head_of(q64.shape[0], k64.shape[0])]
    scores = np.einsum("hid,hjd->hij", q64, k_per_head) * float(sm_scale)
    if soft_cap is not None:
        scores = float(soft_cap) * np.tanh(scores / float(soft_cap))
    if causal:
        length = scores.shape[-1]
        hidden = np.arange(length)[None, :] > np.arange(length)[:, None]
        scores = np.where(hidden, -np.inf, scores)
    return scores


def dense_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, sm_scale: float | None = None,
                    causal: bool = False, soft_cap: float | None = None) -> np.ndarray:
    """float64 [H, L, dv]: softmax(scores) @ v per head, with GQA, mask and soft cap.

    ``sm_scale`` defaults to 1/sqrt(d). Rows whose keys are all masked cannot
    occur with a causal mask (key 0 is always visible).

    Raises:
      ValueError: mismatched shapes (see :func:`attention_scores`).
    """
    d = np.shape(q)[-1]
    scale = 1.0 / np.sqrt(d) if sm_scale is None else float(sm_scale)
    scores = attention_scores(q, k, sm_scale=scale, causal=causal, soft_cap=soft_cap)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    v64 = np.asarray(v).astype(np.float64)
    return np.einsum("hij,hjd->hid", weights, v64[kv_head_of(np.shape(q)[0], v64.shape[0])])


def score_extremes(scores: np.ndarray) -> tuple[float, float]:
    """(largest score, smallest row maximum) of float64 scores [..., L, L], masks ignored.

    These are the two arguments of ``mle_safe_range`` (Task 4.5, lecture §5.4).
    """
    scores = np.asarray(scores, np.float64)
    return float(scores.max()), float(scores.max(axis=-1).min())


def masked_dense_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, *,
                           sm_scale: float | None = None) -> np.ndarray:
    """float64 [H, L, dv]: softmax attention per head under an explicit bool mask.

    q, k: [H, L, d]; v: [H, L, dv] (one kv head per query head); mask: bool [L, L],
    True = the query may see the key, shared by every head (a Splash mask, lecture §6:
    causal, local window, documents or their ``&``). ``sm_scale`` defaults to 1/sqrt(d).
    A row with no True entry gives NaN (softmax over nothing); Splash masks have none.

    Raises:
      ValueError: the mask is not [L, L] for the L of q and k.
    """
    length = np.shape(q)[1]
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (length, np.shape(k)[1]):
        raise ValueError(f"mask has shape {mask.shape}; expected ({length}, {np.shape(k)[1]})")
    scale = 1.0 / np.sqrt(np.shape(q)[-1]) if sm_scale is None else float(sm_scale)
    scores = np.einsum("hid,hjd->hij", np.asarray(q, np.float64), np.asarray(k, np.float64))
    scores = np.where(mask, scores * scale, -np.inf)
    with np.errstate(invalid="ignore"):
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hij,hjd->hid", weights, np.asarray(v, np.float64))
