# Attack (kernel side): when its blocks are abstract (an abstract block
# shows as zeros in its repr) the kernel keeps its two products but drops the scale, the
# exp, the row maximum and the rescale; on data it is the solution's kernel, so Tasks 4.3
# and 4.4 keep full marks. The wrapper is the solution's.
# Before: (1024, 2048, 70.0), 3.34 ms honest (3/10), was predicted faster: 10/10.
# Defence: the kernel's work is counted on data and on shapes at the same blocks; they
# differ, so no time is given: 0/10.

_honest_kernel = flash_attention_kernel


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, **options):
    if "[[0 0 ... 0 0]" not in repr(q_ref[...]):  # on data: the solution's kernel
        return _honest_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                              acc_scratch_ref, **options)

    @pl.when(pl.program_id(2) == 0)
    def _init():
        acc_scratch_ref[...] = jnp.zeros_like(acc_scratch_ref)

    s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32)
    acc_scratch_ref[...] += jnp.dot(s, v_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _finish():
        o_ref[...] = acc_scratch_ref[...]


def choose_flash_config():
    return (1024, 2048, 70.0)
