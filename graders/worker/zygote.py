"""Trusted side of the worker zygote: start it for a batch, fork sandboxed workers from it.

An exec'd worker spends about 0.8 s of CPU starting (the interpreter, numpy, and
above all ml_dtypes 0.7's ufunc promoters, ~0.5 s) before it reads the
submission. A batch starts one per file and one per restart after a timeout (the
bundled samples: about 29), on a machine whose two cores are already busy. The
zygote (``zygote_main.py``) pays that once: it imports the worker program and
forks one copy per worker, each of which then builds the same sandbox as the
exec'd launcher (``sandbox.launch``: cgroup, namespaces, new root, limits, its own
uid) before it reads anything from the grader (docs/security.md, "Sandbox levels").

Only the namespace level is served (the zygote needs its own mount namespace to
import the packages from the paths the workers' roots show); any other level, or
a zygote that cannot be reached, gives the exec'd worker as before.
``Zygote()`` is used by ``graders.batch.run.run_batch``; a grader process selects it
with ``use(config_path)`` and ``graders.worker.client.Worker`` asks ``spawn``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from graders.worker import libdir, sandbox

#: ``PALLAS_LAB_ZYGOTE=off`` makes every worker start by exec (for comparisons and
#: debugging); the grades are the same either way.
ENV_VAR = "PALLAS_LAB_ZYGOTE"
ZYGOTE_MAIN = Path(__file__).resolve().parent / "zygote_main.py"
#: Seconds the zygote may take to import the worker program and say "ready".
READY_TIMEOUT = 60.0
#: Seconds a fork request may take before the grader falls back to an exec'd worker.
SPAWN_TIMEOUT = 10.0

_current: dict[str, object] = {}


class ZygoteUnavailable(RuntimeError):
    """The zygote could not start or fork a worker (the caller starts one by exec)."""


class Zygote:
    """One running zygote: its private folder, library directory and socket.

    ``Zygote()`` builds a library directory with mount points
    (``libdir.build_libdir``), starts ``zygote_main.py`` with the base interpreter
    (``libdir.interpreter``) and waits until it has imported the worker program.
    Raises ``ZygoteUnavailable`` when ``PALLAS_LAB_ZYGOTE=off``, when this machine has no
    namespace sandbox, when
    ``os.pidfd_open`` is missing, or when the process does not become ready within
    ``READY_TIMEOUT`` seconds or ``stopped()`` becomes true meanwhile. ``close()`` (or
    leaving ``with``) stops it and removes the folder; workers already forked are not
    affected.
    """

    def __init__(self, stopped: Callable[[], bool] | None = None) -> None:
        self._stopped = stopped
        if os.environ.get(ENV_VAR, "").strip().lower() == "off":
            raise ZygoteUnavailable(f"{ENV_VAR}=off")
        if not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
            raise ZygoteUnavailable("this Python has no pidfd_open / send_fds")
        try:
            level = sandbox.choose_level()
        except (RuntimeError, ValueError) as exc:
            raise ZygoteUnavailable(str(exc)) from None
        if level != "namespace":
            raise ZygoteUnavailable(f"the sandbox level is {level!r}, not 'namespace'")
        from graders.worker.socket_dir import SocketDirError, socket_parent

        try:  # the socket's folder: under a short temporary directory
            parent = socket_parent()
        except SocketDirError as exc:
            raise ZygoteUnavailable(str(exc)) from None
        self.base = Path(tempfile.mkdtemp(prefix="pallas-lab-zygote-", dir=parent))
        self.base.chmod(0o700)  # the socket's folder: only root enters it
        self.process: subprocess.Popen[bytes] | None = None
        try:
            self.libdir = self.base / "lib"
            self.binds = libdir.build_libdir(self.libdir, mount_points=True)
            # Run from the library directory, like the worker program (zygote_main.py's
            # docstring): nothing a worker can see names the project's folders.
            script = self.libdir / "pallas_lab_zygote.py"
            shutil.copyfile(ZYGOTE_MAIN, script)
            shutil.copyfile(ZYGOTE_MAIN.parent / "sandbox.py",
                            self.libdir / "pallas_lab_sandbox.py")
            home = self.base / "home"
            home.mkdir()
            self.socket_path = self.base / "socket"
            self.config_path = self.base / "zygote.json"
            self.config_path.write_text(json.dumps({
                "socket": str(self.socket_path), "libdir": str(self.libdir),
                "binds": [list(pair) for pair in self.binds], "home": str(home),
            }), encoding="utf-8")
            python, _ = libdir.interpreter()
            self.log_path = self.base / "zygote.log"
            with open(self.log_path, "wb") as log:
                self.process = subprocess.Popen(
                    [python, "-I", "-S", "-B", str(script), str(self.config_path)],
                    cwd=home, env=libdir.worker_env(home), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                    close_fds=True)
            self._wait_ready()
        except BaseException:
            self.close()
            raise

    def _wait_ready(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + READY_TIMEOUT
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([fd], [], [], min(0.1, max(0.0, remaining)))
            if self._stopped is not None and self._stopped():
                raise ZygoteUnavailable("the batch was stopped while the zygote started")
            if not readable:
                if remaining > 0:
                    continue
                raise ZygoteUnavailable("the zygote did not start in time")
            chunk = os.read(fd, 64)
            if not chunk:
                log = self.log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
                raise ZygoteUnavailable(f"the zygote stopped while starting: {log}")
            line += chunk
        if line != b"ready\n":
            raise ZygoteUnavailable(f"the zygote said {line!r}, not 'ready'")

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the zygote (EOF on its stdin, then SIGKILL) and remove its folder."""
        process, self.process = self.process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=2.0)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        shutil.rmtree(self.base, ignore_errors=True)


class ForkedProcess:
    """A worker forked by the zygote, with the parts of ``subprocess.Popen`` the client
    uses: ``pid``, ``stdin``, ``stdout``, ``returncode``, ``poll``, ``wait``, ``kill``.

    ``pid`` is the reporter's (the group leader of the worker's tree); ``kill()`` sends
    SIGKILL through a pidfd, so a reused pid is never hit; the launcher, the
    namespace's init and the worker die with it (``PR_SET_PDEATHSIG``). ``returncode``
    follows Popen's convention (negative: killed by that signal) and is read from the
    status pipe the reporter writes when the launcher ends; a reporter killed before it
    could write counts as killed by SIGKILL.
    """

    def __init__(self, pid: int, pidfd: int, stdin_fd: int, stdout_fd: int,
                 status_fd: int) -> None:
        self.pid = pid
        self._pidfd = pidfd
        self.stdin = os.fdopen(stdin_fd, "wb", buffering=0)
        self.stdout = os.fdopen(stdout_fd, "rb", buffering=0)
        self._status_fd: int | None = status_fd
        self._status = b""
        self.returncode: int | None = None

    def _read_status(self, timeout: float | None) -> bool:
        """Read the status pipe until EOF or ``timeout``; True once the process ended."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._status_fd is not None:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._status_fd], [], [], remaining)
            if not readable:
                return False
            chunk = os.read(self._status_fd, 64)
            if chunk:
                self._status += chunk
                continue
            os.close(self._status_fd)
            self._status_fd = None
            try:
                raw = int(self._status.decode("ascii"))
            except ValueError:
                self.returncode = -signal.SIGKILL
            else:
                self.returncode = (-os.WTERMSIG(raw) if os.WIFSIGNALED(raw)
                                   else os.WEXITSTATUS(raw))
            self._close_pidfd()
        return True

    def poll(self) -> int | None:
        """The return code, or None while the worker runs."""
        self._read_status(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end; raises ``subprocess.TimeoutExpired`` after ``timeout`` s."""
        if not self._read_status(timeout):
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the reporter (its tree follows); nothing when it already ended."""
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill_group(self) -> None:
        """What ``process.kill_group`` does to a Popen's group: here ``kill()``."""
        self.kill()

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def __del__(self) -> None:
        self._close_pidfd()
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None


def use(config_path: str | Path | None) -> str | None:
    """Make workers of this process fork from the zygote of ``config_path`` (None: exec);
    returns the config path selected before (to restore it)."""
    previous = _current.get("config")
    _current.clear()
    if config_path is None:
        return previous  # type: ignore[return-value]
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    _current.update(socket=config["socket"], libdir=Path(config["libdir"]),
                    binds=[tuple(pair) for pair in config["binds"]], config=str(config_path))
    return previous  # type: ignore[return-value]


@contextlib.contextmanager
def serving() -> Iterator[Zygote | None]:
    """A zygote for the workers this process starts while the block runs (``use``), or
    None where none can run here (the workers then start by exec); stopped at the end."""
    try:
        running = Zygote()
    except ZygoteUnavailable:
        yield None
        return
    with running:
        previous = use(running.config_path)
        try:
            yield running
        finally:
            use(previous)


def current() -> dict[str, object] | None:
    """The zygote selected by ``use`` (socket, libdir, binds), or None."""
    return dict(_current) if _current else None


def spawn(plan: sandbox.SandboxPlan, output_fd: int) -> ForkedProcess:
    """Fork a worker for ``plan`` from the current zygote; its stderr goes to ``output_fd``.

    Raises ``ZygoteUnavailable`` when no zygote is selected or it cannot fork (the
    caller then starts the worker by exec).
    """
    if not _current:
        raise ZygoteUnavailable("no zygote is selected")
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    status_r, status_w = os.pipe()
    ours = [stdin_w, stdout_r, status_r]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(SPAWN_TIMEOUT)
            conn.connect(str(_current["socket"]))
            socket.send_fds(conn, [plan.to_json().encode("utf-8")],
                            [stdin_r, stdout_w, output_fd, status_w])
            data, fds, _, _ = socket.recv_fds(conn, 4096, 1)
    except OSError as exc:
        for fd in ours:
            os.close(fd)
        raise ZygoteUnavailable(f"the zygote could not be asked: {exc}") from None
    finally:
        for fd in (stdin_r, stdout_w, status_w):  # the worker's ends: the zygote has them
            os.close(fd)
    try:
        reply = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        reply = {}
    if "pid" not in reply or len(fds) != 1:
        for fd in [*ours, *fds]:
            os.close(fd)
        raise ZygoteUnavailable(f"the zygote refused: {reply.get('error', data[:200])}")
    return ForkedProcess(int(reply["pid"]), fds[0], stdin_w, stdout_r, status_r)
