"""The worker's processes as the trusted side handles them: lower a process's rlimits,
say in words how one ended, kill a worker's whole process group and reap it, and clean up
after a worker (its process group, its cgroup, its folder)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from graders.worker import cgroups, sandbox
from graders.worker.libdir import (  # noqa: F401 - re-exported: the worker's files and env
    HARNESS_DIR,
    POLICY_DIR,
    WORKER_DIR,
    build_libdir,
    interpreter,
    site_package_dirs,
    worker_env,
)
from graders.worker.zygote import ForkedProcess


def apply_limits(pid: int | None = None,
                  limits: list[tuple[str, int]] | tuple[tuple[str, int], ...] = sandbox.LIMITS
                  ) -> None:
    """Lower the rlimits of ``pid`` to ``limits`` (None: this process, before exec).

    Run as another user than root, ``RLIMIT_NPROC`` counts every process of that user
    (the grader's included), so a limit above 1 means nothing there and is skipped;
    1 (no second process, ``sandbox.limits_for`` without a cgroup) is applied.
    """
    import resource

    for name, value in limits:
        which = getattr(resource, name, None)
        if which is None or (name == "RLIMIT_NPROC" and os.geteuid() != 0 and value > 1):
            continue
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        if pid is None:
            resource.setrlimit(which, (value, value))
        else:
            resource.prlimit(pid, which, (value, value))


def describe_exit(returncode: int | None) -> str:
    """How a worker process ended, in words (``returncode`` None: it stopped answering)."""
    if returncode is None:
        return "the worker process stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {returncode}"


def cleanup(live: dict[str, subprocess.Popen[bytes] | None], base: Path,
             cgroup: cgroups.Cgroup | None = None) -> None:
    """Kill the worker in ``live`` (its whole process group), remove its ``cgroup`` and its
    folder ``base``; safe to call more than once (a weakref finalizer's, then close's)."""
    process = live.get("process")
    if process is not None:
        kill_group(process)
    if cgroup is not None:
        cgroup.remove()  # every process of the tree, then the cgroup itself
    shutil.rmtree(base, ignore_errors=True)


def kill_group(process: subprocess.Popen[bytes] | ForkedProcess) -> None:
    """SIGKILL the worker's whole process group and reap the worker."""
    if isinstance(process, ForkedProcess):
        process.kill_group()  # by pidfd: the zygote reaps it, so its pid may be reused
    else:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.kill()
        except ProcessLookupError:
            pass
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
        pass
