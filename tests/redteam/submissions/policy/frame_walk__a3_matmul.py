# Attack: a kernel with no kernel logic. A running generator's frame leads up the stack to
# whoever called the kernel (the grader's harness, or the student's own wrapper), where the
# whole input arrays live; the kernel writes NumPy's answer into its output block.
# Defence: the compile-time check refuses gi_frame, f_back and f_locals.


def _caller_frames():
    box = []

    def probe():
        yield box[0].gi_frame.f_back

    gen = probe()
    box.append(gen)
    frame = next(gen)
    while frame is not None:
        yield frame
        frame = frame.f_back


def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None):
    for frame in _caller_frames():
        local = frame.f_locals
        x, y = local.get("x"), local.get("y")
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.ndim == y.ndim == 2:
            z = x.astype(np.float64) @ y.astype(np.float64)
            if activation == "relu":
                z = np.maximum(z, 0.0)
            bm, bn = z_ref.shape
            i, j = pl.program_id(0), pl.program_id(1)
            z_ref[...] = z[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
            return
