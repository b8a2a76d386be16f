# Attack: never return (hoping for a hung grader or a skipped check).
# Defence: a per-call timeout; the process group is killed and the worker restarted.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    while True:
        pass
