# Attack (wrapper side): under pallas_sim.estimate (inputs are not NumPy
# arrays there) the wrapper's index maps make every step reuse block (0, 0), so no copy is
# counted; on data it makes the intended call, so Tasks 3.1 and 3.2 keep full marks.
# Before: (512, 2048, 1024), 3.09 ms honest (3/10), was predicted 1.52 ms: 10/10.
# Defence: the timed call is the grader's standard call around the kernel: 3.09 ms, 3/10.


_honest_matmul = matmul


def matmul(x, y, *, block_shape=(128, 128, 128), activation=None):
    if isinstance(x, np.ndarray):  # on data: the solution's wrapper
        return _honest_matmul(x, y, block_shape=block_shape, activation=activation)
    bm, bn, bk = block_shape
    m, k = x.shape
    n = y.shape[1]

    def kernel(x_ref, y_ref, z_ref):
        matmul_kernel(x_ref, y_ref, z_ref, activation=activation)

    return pl.pallas_call(
        kernel,
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (0, 0)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (0, 0))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)


def choose_matmul_blocks():
    return (512, 2048, 1024)
