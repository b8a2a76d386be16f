# Attack: fork many processes that leave the process group and outlive the grader.
# Defence: a per-uid process limit, and a PID namespace that dies with the worker.
def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    os = _import("os")
    forked, error = 0, "none"
    for _ in range(150):
        try:
            pid = os.fork()
        except OSError as exc:
            error = exc.strerror
            break
        if pid == 0:
            try:
                os.setsid()
                os.execv("/bin/sleep", ["sleep", "@@SLEEP@@"])
            finally:
                _private(os, "_exit")(0)
        forked += 1
    raise ValueError(f"forked {forked}, then: {error}")
