# Attack: a forbidden module through __import__.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    return __import__("os").getpid()
