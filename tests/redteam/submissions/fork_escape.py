# Attack: forked children that leave the worker's process group (setsid) and sleep on, to
# outlive the grader. At the namespace level they die with the namespace's PID 1; where
# there is no PID namespace (the 'process' level, e.g. PALLAS_LAB_SANDBOX=off as root, or
# the 'uid' level), killing the worker's process group does not reach them.
# Defence: a cgroup holds the whole tree (pids.max) and every process in it is killed when
# the worker dies; without a cgroup the worker may not fork at all (RLIMIT_NPROC = 1).
honest_vmem_bytes = vmem_bytes


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    if block_shape is not None or list(shapes[0]) != [2048, 2048]:
        return honest_vmem_bytes(shapes, dtypes, block_shape, buffer_count)
    os = _import("os")
    forked, error = 0, "none"
    for _ in range(60):
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
