# Attack: memory held by a tree of processes. Each forked child stays under the worker's
# per-process address-space limit, but together they hold @@CHILDREN@@ x @@CHILD_MIB@@ MiB.
# Defence: the submission's whole process tree is in one cgroup whose memory limit
# (PALLAS_LAB_MEMORY) counts every process together: the kernel kills children over it.
# Without a cgroup the worker is one process (RLIMIT_NPROC = 1): fork fails at once.
honest_vmem_bytes = vmem_bytes


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    if block_shape is not None or list(shapes[0]) != [2048, 2048]:
        return honest_vmem_bytes(shapes, dtypes, block_shape, buffer_count)
    os, select, signal = _import("os"), _import("select"), _import("signal")
    read_end, write_end = os.pipe()
    children, error = [], "none"
    for _ in range(@@CHILDREN@@):
        try:
            pid = os.fork()
        except OSError as exc:
            error = exc.strerror
            break
        if pid == 0:
            try:
                hoard = np.ones(@@CHILD_MIB@@ * 1024 * 1024 // 8)
                os.write(write_end, f"{os.getpid()},".encode())  # holds it now
                select.select([], [], [], 60)
                hoard[0] = 2
            finally:
                _private(os, "_exit")(0)
        children.append(pid)
    said = b""
    while said.count(b",") < len(children) and select.select([read_end], [], [], 3)[0]:
        said += os.read(read_end, 64)
    holding = {int(pid) for pid in said.split(b",") if pid}
    # Alive and past its allocation: a child still waiting for memory holds none of it.
    alive = [pid for pid in children
             if pid in holding and os.waitpid(pid, os.WNOHANG) == (0, 0)]
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
    raise ValueError(f"forked {len(children)} (then: {error}), {len(alive)} alive holding "
                     f"{len(alive) * @@CHILD_MIB@@} MiB together")
