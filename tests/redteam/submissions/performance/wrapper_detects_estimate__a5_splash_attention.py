# Task 5.7 attack: the wrapper tells an abstract run from a real one (its
# inputs are not NumPy arrays there) and then calls a kernel that does only the two products,
# with index maps that name one block, so no step copies anything; grid, block shapes and
# MXU FLOPs are unchanged. Real runs use the solution's wrapper and kernel (Task 5.4 keeps
# its points). Blocks: (1024, 2048) for every mask, a poor choice.
_honest_splash_attention = splash_attention


def _products_only(active_rows_ref, active_cols_ref, mask_next_ref, bounds_start_ref,
                   bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref, mask_ref, o_ref,
                   m_scratch_ref, l_scratch_ref, acc_scratch_ref, **options):
    scores = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32)
    o_ref[...] = jnp.dot(scores, v_ref[...].astype(jnp.float32),
                         preferred_element_type=jnp.float32)


def splash_attention(q, k, v, mask_info, *, sm_scale=None, use_base2_exp=False):
    if isinstance(q, np.ndarray):
        return _honest_splash_attention(q, k, v, mask_info, sm_scale=sm_scale,
                                        use_base2_exp=use_base2_exp)
    heads, seq_len, head_dim = q.shape
    value_dim = v.shape[-1]
    patterns = np.asarray(mask_info.partial_mask_blocks, dtype=bool)
    _, block_q, block_kv = patterns.shape
    if patterns.shape[0] == 0:
        patterns = np.ones((1, block_q, block_kv), dtype=bool)
    scale = 1.0 / math.sqrt(head_dim) if sm_scale is None else sm_scale
    table = [np.asarray(field, dtype=np.int32) for field in (
        mask_info.active_rows, mask_info.active_cols, mask_info.mask_next,
        mask_info.bounds_start, mask_info.bounds_end, mask_info.block_mask)]

    def one_block(h, g, *tables):
        return 0, 0, 0

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(heads, table[0].shape[0]),
        in_specs=[pl.BlockSpec((None, block_q, head_dim), one_block),
                  pl.BlockSpec((None, block_kv, head_dim), one_block),
                  pl.BlockSpec((None, block_kv, value_dim), one_block),
                  pl.BlockSpec((None, block_q, block_kv), one_block)],
        out_specs=pl.BlockSpec((None, block_q, value_dim), one_block),
        scratch_shapes=[pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, value_dim), jnp.float32)])
    return pl.pallas_call(
        functools.partial(_products_only, sm_scale=scale, block_q=block_q,
                          block_kv=block_kv, use_base2_exp=use_base2_exp),
        grid_spec=grid_spec,
        out_shape=jax.ShapeDtypeStruct((heads, seq_len, value_dim), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="splash_attention")(*table, q, k, v, patterns)


def choose_splash_blocks(mask_kind):
    return (1024, 2048)
