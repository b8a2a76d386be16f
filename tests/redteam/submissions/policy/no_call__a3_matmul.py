# Attack: a wrapper with no pallas_call at all: NumPy's product, and the ValueError the task
# asks for on shapes that do not fit.
# Defence: a wrapper task's checks need the result of the wrapper's own pallas_call.


def matmul(x, y, *, block_shape=(128, 128, 128), activation=None):
    bm, bn, bk = block_shape
    m, k = x.shape
    n = y.shape[1]
    if k != y.shape[0] or m % bm or n % bn or k % bk:
        raise ValueError(f"shapes {x.shape} @ {y.shape} do not fit block_shape={block_shape}")
    z = x.astype(np.float32) @ y.astype(np.float32)
    return np.maximum(z, 0.0) if activation == "relu" else z
