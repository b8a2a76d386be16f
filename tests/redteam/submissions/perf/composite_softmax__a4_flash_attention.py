# Attack ("what is counted"): jax.nn.softmax and jax.nn.logsumexp are
# counted as one transcendental op on their result (EUP elements at the EUP's bound, and one
# vector op), while the max, subtraction, exp, sum and division they stand for cost the
# honest kernel five passes over the [block_q, block_kv] tile. The kernel below is correct
# Flash Attention (each kv block's softmax and log-sum-exp, merged in log space; causal and
# soft cap kept; with MLE or base 2 it is the solution's kernel), so Tasks 4.3/4.4 keep
# their points. At 2048 x 2048 with MLE off it is predicted 2.495 ms: 8.5 % below the
# fastest legal candidate (2.728 ms, MLE on) and 23 % below the solution's 3.241 ms there.
# Honest outcome: a composite softmax costs what its parts cost (MLE off: 3/10).

_solution_kernel = flash_attention_kernel


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale, causal, block_q, block_kv,
                           soft_cap=None, max_logit_const=None, use_base2_exp=False):
    if max_logit_const is not None or use_base2_exp:
        return _solution_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                                acc_scratch_ref, sm_scale=sm_scale, causal=causal,
                                block_q=block_q, block_kv=block_kv, soft_cap=soft_cap,
                                max_logit_const=max_logit_const,
                                use_base2_exp=use_base2_exp)
    q_block, kv_block = pl.program_id(1), pl.program_id(2)

    @pl.when(kv_block == 0)
    def _init():
        m_scratch_ref[...] = jnp.full_like(m_scratch_ref, -1e30)   # running log-sum-exp
        acc_scratch_ref[...] = jnp.zeros_like(acc_scratch_ref)     # normalized output

    if causal:
        visible = kv_block * block_kv <= (q_block + 1) * block_q - 1
    else:
        visible = True

    @pl.when(visible)
    def _update():
        s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32) * sm_scale
        if soft_cap is not None:
            s = soft_cap * jnp.tanh(s / soft_cap)
        if causal:
            q_pos = q_block * block_q + jnp.arange(block_q)[:, None]
            k_pos = kv_block * block_kv + jnp.arange(block_kv)[None, :]
            s = jnp.where(k_pos > q_pos, -jnp.inf, s)
        lse_block = jax.nn.logsumexp(s, axis=1, keepdims=True)        # (block_q, 1)
        p = jax.nn.softmax(s, axis=1)                                 # normalized per block
        if causal:  # rows with no visible key in this block: softmax is NaN there
            p = jnp.where(lse_block > -jnp.inf, p, 0.0)
        pv = jnp.dot(p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
        lse_prev = m_scratch_ref[:, :1]
        both = jnp.concatenate([lse_prev, jnp.maximum(lse_block, -1e30)], axis=1)
        lse_new = jax.nn.logsumexp(both, axis=1, keepdims=True)
        acc_scratch_ref[...] = (acc_scratch_ref[...] * jnp.exp(lse_prev - lse_new)
                                + pv * jnp.exp(lse_block - lse_new))
        m_scratch_ref[...] = jnp.broadcast_to(lse_new, m_scratch_ref.shape)

    @pl.when(kv_block == pl.num_programs(2) - 1)
    def _finish():
        o_ref[...] = acc_scratch_ref[...].astype(o_ref.dtype)


def choose_flash_config():
    return (2048, 2048, None)  # MLE off: honest 3.241 ms, +19 % (3/10)
