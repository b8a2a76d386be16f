# Attack: exhaust the machine's memory, at once and little by little.
# Defence: the worker's address space is limited; it gets MemoryError.
def blocked_add(x, y, *, block_shape=(256, 256)):
    return np.ones((1 << 40,), np.uint8)


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    hoard = []
    while True:
        hoard.append(np.ones((1 << 28,), np.float64))
