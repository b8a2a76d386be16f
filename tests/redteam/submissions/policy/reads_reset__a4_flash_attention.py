# Attack: a causal kernel that does the work of every tile (masking instead of skipping) and
# then zeroes the refs' public read counters on the tiles it should have skipped, so the
# trace shows no reads there.
# Defence: a ref's attributes are read-only (a property), and the write guard refuses setting
# attributes of objects that are not the submission's own.


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale, causal, block_q, block_kv,
                           soft_cap=None, max_logit_const=None):
    q_block, kv_block = pl.program_id(1), pl.program_id(2)

    @pl.when(kv_block == 0)
    def _init():
        first_m = -np.inf if max_logit_const is None else max_logit_const
        m_scratch_ref[...] = jnp.full_like(m_scratch_ref, first_m)
        l_scratch_ref[...] = jnp.zeros_like(l_scratch_ref)
        acc_scratch_ref[...] = jnp.zeros_like(acc_scratch_ref)

    s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32) * sm_scale
    if soft_cap is not None:
        s = soft_cap * jnp.tanh(s / soft_cap)
    if causal:
        rows = q_block * block_q + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
        cols = kv_block * block_kv + jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
        s = jnp.where(cols <= rows, s, -np.inf)
    m_prev = m_scratch_ref[:, :1]
    if max_logit_const is None:
        m_new = jnp.maximum(m_prev, s.max(axis=1, keepdims=True))
    else:
        m_new = m_prev
    p = jnp.where(s == -np.inf, 0.0, jnp.exp(s - m_new))
    rescale = jnp.where(m_prev == -np.inf, 0.0, jnp.exp(m_prev - m_new))
    l_scratch_ref[...] = jnp.broadcast_to(l_scratch_ref[:, :1] * rescale
                                          + p.sum(axis=1, keepdims=True), l_scratch_ref.shape)
    acc_scratch_ref[...] = acc_scratch_ref[...] * rescale + jnp.dot(
        p, v_ref[...].astype(jnp.float32), preferred_element_type=jnp.float32)
    m_scratch_ref[...] = jnp.broadcast_to(m_new, m_scratch_ref.shape)
    if causal:
        @pl.when(kv_block * block_kv > (q_block + 1) * block_q - 1)
        def _hide():
            for ref in (q_ref, k_ref, v_ref):
                ref.reads = 0

    @pl.when(kv_block == pl.num_programs(2) - 1)
    def _finish():
        o_ref[...] = acc_scratch_ref[...] / l_scratch_ref[:, :1]
