# Attack: the wrapper runs a decoy pallas_call with the intended grid and BlockSpecs around an
# empty kernel (so the trace looks right) and returns NumPy's product.
# Defence: a wrapper's result counts only when it is the output of a pallas_call it made
# whose kernel is the submission's own, and the trace checks read that call.


def matmul(x, y, *, block_shape=(128, 128, 128), activation=None):
    bm, bn, bk = block_shape
    m, k = x.shape
    n = y.shape[1]
    if k != y.shape[0] or m % bm or n % bn or k % bk:
        raise ValueError(f"shapes {x.shape} @ {y.shape} do not fit block_shape={block_shape}")
    pl.pallas_call(
        lambda x_ref, y_ref, z_ref: None,
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)
    z = x.astype(np.float32) @ y.astype(np.float32)
    return np.maximum(z, 0.0) if activation == "relu" else z
