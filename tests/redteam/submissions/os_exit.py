# Attack: os._exit(0) in the middle of a check, hoping that a clean exit counts as a pass.
# Defence: a check without a reply fails; the worker restarts for the next check.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    _private(_import("os"), "_exit")(0)
