# Attack: sys.exit(0) / raise SystemExit(0) inside student functions.
# Defence: the worker catches SystemExit like any exception; the check fails.
def blocked_add(x, y, *, block_shape=(256, 256)):
    _import("sys").exit(0)


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    raise SystemExit(0)
