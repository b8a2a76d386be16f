# Attack: a forbidden module through importlib.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    import importlib
    return importlib.import_module("os").getpid()
