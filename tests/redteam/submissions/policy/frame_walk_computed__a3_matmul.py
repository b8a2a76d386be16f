# Attack: the same frame walk with every attribute name computed at run time, so the
# compile-time check sees only getattr calls.
# Defence: the run-time guard behind getattr refuses a generator's frame (and the audit hook
# would refuse the frame access if the guard let it through).

_G, _F, _B, _L = "gi_" + "frame", "f_" + "back", "f_" + "back", "f_" + "locals"


def _caller_frames():
    box = []

    def probe():
        yield getattr(getattr(box[0], _G), _B)

    gen = probe()
    box.append(gen)
    frame = next(gen)
    while frame is not None:
        yield frame
        frame = getattr(frame, _F)


def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None):
    for frame in _caller_frames():
        local = getattr(frame, _L)
        x, y = local.get("x"), local.get("y")
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.ndim == y.ndim == 2:
            z = x.astype(np.float64) @ y.astype(np.float64)
            if activation == "relu":
                z = np.maximum(z, 0.0)
            bm, bn = z_ref.shape
            i, j = pl.program_id(0), pl.program_id(1)
            z_ref[...] = z[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
            return
