# Attack: recurse without end, once with Python's limit and once with it lifted (a crash).
def _down(n):
    return _down(n + 1) + 1


def blocked_add(x, y, *, block_shape=(256, 256)):
    return _down(0)


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    _import("sys").setrecursionlimit(10**8)
    return _down(0)
