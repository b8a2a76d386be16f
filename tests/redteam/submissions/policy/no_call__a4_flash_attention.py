# Attack: a Flash Attention wrapper with no pallas_call: dense NumPy attention.
# Defence: a wrapper task's checks need the result of the wrapper's own pallas_call.


def flash_attention(q, k, v, *, causal=False, sm_scale=None, block_q=128, block_kv=128,
                    soft_cap=None, max_logit_const=None):
    heads, length, d = q.shape
    group = heads // k.shape[0]
    scale = 1.0 / np.sqrt(d) if sm_scale is None else sm_scale
    kk = np.repeat(k.astype(np.float64), group, axis=0)
    vv = np.repeat(v.astype(np.float64), group, axis=0)
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), kk) * scale
    if soft_cap is not None:
        s = soft_cap * np.tanh(s / soft_cap)
    if causal:
        s = np.where(np.tril(np.ones((length, length), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,hkd->hqd", p, vv).astype(np.float32)
