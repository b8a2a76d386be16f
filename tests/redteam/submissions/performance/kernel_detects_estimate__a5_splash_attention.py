# Task 5.7 attack: the kernel body tells an abstract run from a real one by
# its block's repr (an abstract block prints as zeros) and does only the two products there (no scale, max, exp, rescale or
# division), so every predicted step is cheap; real runs are the solution's kernel, so Task
# 5.4 keeps its points. The blocks are a poor choice: (1024, 2048) for every mask.
_honest_splash_kernel = splash_attention_kernel


def splash_attention_kernel(active_rows_ref, active_cols_ref, mask_next_ref, bounds_start_ref,
                            bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref, mask_ref,
                            o_ref, m_scratch_ref, l_scratch_ref, acc_scratch_ref, *,
                            sm_scale, block_q, block_kv, use_base2_exp=False):
    if "[[0 0 ... 0 0]" not in repr(q_ref[...]):
        return _honest_splash_kernel(
            active_rows_ref, active_cols_ref, mask_next_ref, bounds_start_ref, bounds_end_ref,
            block_mask_ref, q_ref, k_ref, v_ref, mask_ref, o_ref, m_scratch_ref,
            l_scratch_ref, acc_scratch_ref, sm_scale=sm_scale, block_q=block_q,
            block_kv=block_kv, use_base2_exp=use_base2_exp)
    g = pl.program_id(1)

    @pl.when(bounds_start_ref[g] == 1)
    def _start():
        acc_scratch_ref[...] = jnp.zeros(acc_scratch_ref.shape, jnp.float32)

    scores = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32)
    acc_scratch_ref[...] += jnp.dot(scores, v_ref[...].astype(jnp.float32),
                                    preferred_element_type=jnp.float32)

    @pl.when(bounds_end_ref[g] == 1)
    def _finish():
        o_ref[...] = acc_scratch_ref[...]


def choose_splash_blocks(mask_kind):
    return (1024, 2048)
