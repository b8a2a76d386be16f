# Attack: print hundreds of megabytes (to fill the disk or the report).
# Defence: captured output is size-limited by RLIMIT_FSIZE, and only its end is reported.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    line = "spam " * 200000
    for _ in range(400):
        print(line)
    return 0
