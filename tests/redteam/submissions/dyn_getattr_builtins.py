# Attack: a forbidden module through getattr(__builtins__, ...).
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    loader = getattr(__builtins__, "__imp" + "ort__")
    return loader("os").getpid()
