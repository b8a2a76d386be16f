import functools

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

LOG2_E = float(np.log2(np.e))


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale, causal, block_q, block_kv,
                           soft_cap=None, max_logit_const=None, use_base2_exp=False):
    qi = pl.program_id(1)
    kj = pl.program_id(2)
    exp = jnp.exp2 if use_base2_exp else jnp.exp
    scale = LOG2_E if use_base2_exp else 1.0

    @pl.when(kj == 0)
    def _init():
        m_scratch_ref[...] = jnp.full(m_scratch_ref.shape, -jnp.inf, jnp.float32)
        l_scratch_ref[...] = jnp.zeros(l_scratch_ref.shape, jnp.float32)
        acc_scratch_ref[...] = jnp.zeros(acc_scratch_ref.shape, jnp.float32)

    def _update():
        q = q_ref[...].astype(jnp.float32)
        k = k_ref[...].astype(jnp.float32)
        s = jnp.dot(q, k.T, preferred_element_type=jnp.float32) * sm_scale
        if soft_cap is not None:
            s = soft_cap * jnp.tanh(s / soft_cap)
        if use_base2_exp:
            s = s * LOG2_E
        if causal:
            rows = qi * block_q + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
            cols = kj * block_kv + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
            s = jnp.where(cols > rows, -jnp.inf, s)
        m_prev = m_scratch_ref[:, :1]
        l_prev = l_scratch_ref[:, :1]
        if max_logit_const is not None:
            m_new = jnp.full(m_prev.shape, max_logit_const * scale, jnp.float32)
            p = exp(s - m_new)
            l_new = l_prev + jnp.sum(exp(s - m_new), axis=-1, keepdims=True)
            acc_scratch_ref[...] = acc_scratch_ref[...] + jnp.dot(
                p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
        else:
            m_new = jnp.maximum(m_prev, s.max(axis=-1, keepdims=True))
            alpha = exp(m_prev - m_new)
            p = exp(s - m_new)
            l_new = alpha * l_prev + jnp.sum(exp(s - m_new), axis=-1, keepdims=True)
            acc_scratch_ref[...] = alpha * acc_scratch_ref[...] + jnp.dot(
                p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
        m_scratch_ref[...] = jnp.broadcast_to(m_new, m_scratch_ref.shape)
        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)

    if causal:
        pl.when(kj * block_kv <= (qi + 1) * block_q - 1)(_update)
    else:
        _update()

    @pl.when(kj == pl.num_programs(2) - 1)
    def _finish():
        o_ref[...] = (acc_scratch_ref[...] / l_scratch_ref[:, :1]).astype(o_ref.dtype)


def flash_attention(q, k, v, *, causal=False, sm_scale=None, block_q=128, block_kv=128,
                    soft_cap=None, max_logit_const=None, use_base2_exp=False):
    H, L, d = q.shape
    Hkv, Lk, _ = k.shape
    dv = v.shape[-1]
    if Lk != L or v.shape[1] != L:
        raise ValueError(f"k/v length {Lk}/{v.shape[1]} differs from q length {L}")
    if H % Hkv:
        raise ValueError(f"H={H} is not a multiple of Hkv={Hkv}")
    if L % block_q or L % block_kv:
        raise ValueError(f"block_q={block_q} / block_kv={block_kv} must divide L={L}")
    if sm_scale is None:
        sm_scale = 1.0 / float(np.sqrt(d))
    group = H // Hkv
    kernel = functools.partial(flash_attention_kernel, sm_scale=sm_scale, causal=causal,
                               block_q=block_q, block_kv=block_kv, soft_cap=soft_cap,
                               max_logit_const=max_logit_const, use_base2_exp=use_base2_exp)
    return pl.pallas_call(
        kernel,
        grid=(H, L // block_q, L // block_kv),
        in_specs=[pl.BlockSpec((None, block_q, d), lambda h, i, j: (h, i, 0)),
                  pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h // group, j, 0)),
                  pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h // group, j, 0))],
        out_specs=pl.BlockSpec((None, block_q, dv), lambda h, i, j: (h, i, 0)),
        out_shape=jax.ShapeDtypeStruct((H, L, dv), jnp.float32),
        scratch_shapes=[pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, dv), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(q, k, v)


def choose_flash_config():
    return (2048, 2048, 70.0)
