"""The worker zygote: a worker program imported once, forked into a fresh sandbox per worker.

Started by ``graders.worker.zygote.Zygote`` (trusted, as root) as
``python -I -S -B <libdir>/pallas_lab_zygote.py CONFIG.json``, with the base interpreter
the sandboxed workers use: this file and ``sandbox.py`` (as ``pallas_lab_sandbox.py``) are
copied into the zygote's library directory, so that a forked worker's command line, its
stack and its code objects name only that temporary folder, as an exec'd worker's name
only its own (no path of the project, no ``graders``). It runs no student code. It

1. enters a mount namespace of its own and bind-mounts numpy, ml_dtypes,
   RestrictedPython and pallas_sim on the empty mount points of its library
   directory, so that it imports them from the very paths every worker's root
   shows (``graders.worker.libdir.build_libdir``);
2. imports the worker program (``pallas_lab_worker``: numpy, ml_dtypes, pallas_sim,
   the protocol, the submission policy) and the harnesses: the ~0.8 s of start-up
   that every exec'd worker pays, paid once;
3. prints ``ready`` and answers connections on its Unix socket (in a folder only
   root can enter). Each request is a ``SandboxPlan`` as JSON with four file
   descriptors (the worker's stdin, stdout, stderr and a status pipe); the zygote
   forks a reporter that leads a new session and forks the launcher, which runs
   ``sandbox.launch(plan, run=...)`` exactly as the exec'd launcher does (cgroup,
   namespaces, the new root, limits, the worker's own uid, ``no_new_privs``), except
   that the sandboxed process calls the already-imported worker's ``main()``
   instead of exec'ing a new interpreter. The reporter writes the launcher's raw wait
   status to the status pipe. The zygote replies with the reporter's pid and a pidfd
   of it (``pidfd_open``), through which the grader kills the tree (each process of
   it dies with its parent: ``PR_SET_PDEATHSIG``).

It exits when its standard input (a pipe from the grader) closes. It imports only the
standard library and what is in its library directory.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys

_SELF_DIR = os.path.dirname(os.path.abspath(__file__))
#: Most file descriptors a request may carry (stdin, stdout, stderr, status).
_FDS = 4


sys.path.insert(0, _SELF_DIR)  # the zygote's library directory (-I adds no script folder)
import pallas_lab_sandbox as sandbox  # noqa: E402 - graders/worker/sandbox.py, copied


def _mount_packages(libdir: str, binds: list[list[str]]) -> None:
    """A private mount namespace in which the library directory holds the packages."""
    libc = sandbox._libc()
    sandbox._check(libc.unshare(sandbox._CLONE_NEWNS), "unshare")
    sandbox._mount(libc, None, "/", None, sandbox._MS_REC | sandbox._MS_PRIVATE)
    for source, target in binds:
        if not os.path.realpath(target).startswith(os.path.realpath(libdir) + os.sep):
            raise OSError(f"bind target {target} is outside {libdir}")
        sandbox._bind_read_only(libc, source, target)


def _import_worker(libdir: str) -> object:
    """Import the worker program from ``libdir`` (it restricts ``sys.path`` itself)."""
    sys.path[:] = [libdir, *(p for p in sys.path if p and p not in (_SELF_DIR, libdir))]
    worker = importlib.import_module("pallas_lab_worker")
    harnesses = os.path.join(libdir, "pallas_lab_harnesses")
    for name in sorted(os.listdir(harnesses)):
        stem, ext = os.path.splitext(name)
        if ext == ".py" and stem.isidentifier() and stem != "__init__":
            importlib.import_module(f"pallas_lab_harnesses.{stem}")
    return worker


def _run_worker(worker: object, libdir: str):  # noqa: ANN202 - sandbox.Runner
    """The sandboxed process's body: the worker's ``main()`` in its working directory."""

    def run(plan: object) -> int:
        os.environ.clear()
        os.environ.update(plan.env)
        worker._WORKDIR = plan.workdir
        # As an exec'd worker's: the working directory, the library directory, the stdlib.
        sys.path[:] = [plan.workdir, libdir,
                       *(p for p in sys.path[2:] if p not in (plan.workdir, libdir))]
        importlib.invalidate_caches()
        sys.argv = [os.path.join(libdir, "pallas_lab_worker.py")]
        return int(worker.main() or 0)

    return run


def _reporter(plan: object, fds: list[int], run: object) -> None:
    """The forked reporter: never returns. Leads a new session, forks the launcher and
    writes its raw wait status to the status pipe (``fds[3]``)."""
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    stdin_fd, stdout_fd, stderr_fd, status_fd = fds
    for target, fd in ((0, stdin_fd), (1, stdout_fd), (2, stderr_fd)):
        os.dup2(fd, target)
    status = os.dup(status_fd)  # above 2, then everything else is closed
    os.closerange(3, status)
    os.closerange(status + 1, 1 << 16)
    libc = sandbox._libc()
    launcher = os.fork()
    if launcher == 0:
        code = 126
        try:
            os.close(status)
            sandbox._check(libc.prctl(sandbox._PR_SET_PDEATHSIG, sandbox._SIGKILL, 0, 0, 0),
                           "prctl(PDEATHSIG)")
            code = sandbox.launch(plan, run=run)
        except BaseException as exc:  # noqa: BLE001 - report and die, never run unsandboxed
            os.write(2, f"pallas-lab sandbox: {exc}\n".encode())
        os._exit(code)
    for fd in (0, 1):  # only the worker holds the protocol pipes
        os.close(fd)
    _, raw = os.waitpid(launcher, 0)
    try:
        os.write(status, str(raw).encode())
    finally:
        os._exit(0)


def _serve_one(conn: socket.socket, run: object) -> None:
    """Read one plan and its descriptors, fork its reporter, reply with pid and pidfd."""
    fds: list[int] = []
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, _FDS)
        if len(fds) != _FDS:
            raise ValueError(f"a request carries {_FDS} file descriptors, not {len(fds)}")
        raw = json.loads(data.decode("utf-8"))
        raw["ro_binds"] = [tuple(pair) for pair in raw.get("ro_binds", [])]
        raw["limits"] = [tuple(pair) for pair in raw.get("limits", sandbox.LIMITS)]
        plan = sandbox.SandboxPlan(**raw)
        if plan.level != "namespace":
            raise ValueError("the zygote starts namespace-level workers only")
        pid = os.fork()
        if pid == 0:
            try:
                conn.close()
                _reporter(plan, fds, run)
            finally:
                os._exit(126)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)
    except Exception as exc:  # noqa: BLE001 - the grader falls back to an exec'd worker
        try:
            conn.sendall(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        except OSError:
            pass
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()


def main(argv: list[str]) -> int:
    """Script entry: ``zygote_main.py CONFIG.json`` (keys socket, libdir, binds, home)."""
    with open(argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    libdir = config["libdir"]
    _mount_packages(libdir, config["binds"])
    os.chdir(config["home"])
    worker = _import_worker(libdir)
    run = _run_worker(worker, libdir)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # reporters are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(config["socket"])
    os.chmod(config["socket"], 0o600)
    listener.listen(16)
    os.write(1, b"ready\n")
    while True:
        readable, _, _ = select.select([listener, 0], [], [])
        if 0 in readable and not os.read(0, 64):
            return 0  # the grader closed our stdin: done
        if listener in readable:
            conn, _ = listener.accept()
            _serve_one(conn, run)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
