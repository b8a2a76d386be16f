# Attack: a forbidden module through exec of a built string.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    scope = {}
    exec("imp" + "ort os; pid = os.getpid()", scope)
    return scope["pid"]
