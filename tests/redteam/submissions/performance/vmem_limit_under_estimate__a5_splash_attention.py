# Task 5.7 attack: (4096, 4096) tiles need 50 MiB of VMEM, over the
# 32 MiB scoped limit; the wrapper raises vmem_limit_bytes to 64 MiB only when its inputs
# are not NumPy arrays (an abstract run), so the prediction runs and is "legal". Real runs
# use the solution's wrapper (Task 5.4 keeps its points).

_honest_splash_attention = splash_attention


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

    def q_index(h, g, rows, cols, nxt, starts, ends, kinds):
        return h, rows[g], 0

    def kv_index(h, g, rows, cols, nxt, starts, ends, kinds):
        return h, cols[g], 0

    def pattern_index(h, g, rows, cols, nxt, starts, ends, kinds):
        return nxt[g], 0, 0

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(heads, table[0].shape[0]),
        in_specs=[pl.BlockSpec((None, block_q, head_dim), q_index),
                  pl.BlockSpec((None, block_kv, head_dim), kv_index),
                  pl.BlockSpec((None, block_kv, value_dim), kv_index),
                  pl.BlockSpec((None, block_q, block_kv), pattern_index)],
        out_specs=pl.BlockSpec((None, block_q, value_dim), q_index),
        scratch_shapes=[pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, value_dim), jnp.float32)])
    return pl.pallas_call(
        functools.partial(splash_attention_kernel, sm_scale=scale, block_q=block_q,
                          block_kv=block_kv, use_base2_exp=use_base2_exp),
        grid_spec=grid_spec,
        out_shape=jax.ShapeDtypeStruct((heads, seq_len, value_dim), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary"),
                                             vmem_limit_bytes=64 * 2**20),
        name="splash_attention")(*table, q, k, v, patterns)


def choose_splash_blocks(mask_kind):
    return (4096, 4096)
