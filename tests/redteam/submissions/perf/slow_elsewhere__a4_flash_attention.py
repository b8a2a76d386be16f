# Attack ("the threshold from your own sweep"), as slow_elsewhere__a3: the
# solution's kernel (correct, the same work on data and on shapes) plus dead vector ops
# (2 x 4.1 ms spread over the full grid's steps) at every candidate configuration except
# its own bad choice (1024, 2048, MLE off), so that choice is "the best for your own
# kernel". Tasks 4.3/4.4 keep their points (the dead ops change no value).
# Honest outcome: (1024, 2048, None) is the solution's 4.043 ms, +48 % over the fastest
# legal candidate (2.728 ms): 3/10.

CHOSEN = (1024, 2048, None)
_solution_kernel = flash_attention_kernel


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale, causal, block_q, block_kv,
                           soft_cap=None, max_logit_const=None, use_base2_exp=False):
    if (block_q, block_kv, max_logit_const) != CHOSEN and min(block_q, block_kv) >= 256:
        steps = 128 * (4096 // block_q) * (4096 // block_kv)  # the lecture's H and L
        t = q_ref[0:1, 0:1].astype(jnp.float32)
        for _ in range(int(2 * 4.1e-3 / (steps * 0.064e-6)) + 1):
            t = t + 1.0
    _solution_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                     acc_scratch_ref, sm_scale=sm_scale, causal=causal, block_q=block_q,
                     block_kv=block_kv, soft_cap=soft_cap, max_logit_const=max_logit_const,
                     use_base2_exp=use_base2_exp)


def choose_flash_config():
    return CHOSEN
