"""The sandbox levels: what the worker sees and may do at each (docs/security.md)."""

from __future__ import annotations

import contextlib
import errno
import os
import platform
from collections.abc import Iterator
from pathlib import Path

import pytest

from graders.worker import sandbox, zygote
from graders.worker.client import Worker, site_package_dirs

# A probe module; the Worker API is used directly with the submission policy off (no static
# check, no guards), as an attacker who got past the policy would.
PROBE = '''
import os
import sys


def identity():
    return os.getuid(), os.geteuid(), os.getgid(), os.getgroups()


def capabilities():
    with open("/proc/self/status") as handle:
        return [line.split()[1] for line in handle if line.startswith("CapEff")][0]


def limits():
    with open("/proc/self/limits") as handle:
        return handle.read()


def root_listing():
    return sorted(os.listdir("/"))


def write(path):
    try:
        with open(path, "w") as handle:
            handle.write("x")
        return "wrote"
    except OSError as exc:
        return type(exc).__name__


def exists(path):
    return os.path.exists(path)


def interfaces():
    return sorted(os.listdir("/sys/class/net")) if os.path.exists("/sys/class/net") else []


def pids():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())


def syscalls(numbers):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    results = []
    for number in numbers:
        ctypes.set_errno(0)
        results.append((libc.syscall(number, 0, 0, 0, 0, 0), ctypes.get_errno()))
    return results


def no_new_privs():
    with open("/proc/self/status") as handle:
        return [line.split()[1] for line in handle if line.startswith("NoNewPrivs")][0]
'''


def _namespace_available() -> bool:
    try:
        return sandbox.choose_level() == "namespace"
    except (RuntimeError, ValueError):
        return False


# Skipped on a developer's machine without root or unshare(2); never in CI, whose machine
# must provide the sandbox (there the tests run and fail if it is missing).
needs_namespace = pytest.mark.skipif(
    not os.environ.get("CI") and not _namespace_available(),
    reason="the namespace sandbox needs root and unshare(2)",
)


@pytest.fixture(scope="module", params=["exec", "zygote"])
def worker(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """The probe in a worker started by exec, and in one forked from a batch's zygote
    (graders.worker.zygote): both must give the same sandbox."""
    folder = tmp_path_factory.mktemp("mallory")
    (folder / "a1_pallas_basics.py").write_text(PROBE, encoding="utf-8")
    level = "namespace" if _namespace_available() else "process"
    with contextlib.ExitStack() as stack:
        if request.param == "zygote":
            if level != "namespace":
                reason = "the zygote serves the namespace level only"
                if os.environ.get("CI"):
                    pytest.fail(f"{reason}, but CI must run the zygote's sandbox probe")
                pytest.skip(reason)
            template = stack.enter_context(zygote.Zygote())
            stack.callback(zygote.use, zygote.use(template.config_path))
        else:
            stack.callback(zygote.use, zygote.use(None))
        w = stack.enter_context(Worker(folder / "a1_pallas_basics.py", timeout=10.0,
                                       policy=False, sandbox_level=level))
        assert w.load_result is not None and w.load_result.ok, w.load_result
        assert isinstance(w._live["process"], zygote.ForkedProcess) == (
            request.param == "zygote"), "the worker was not started the way asked"
        yield w


@needs_namespace
def test_the_worker_is_an_unprivileged_user_of_its_own(worker: Worker) -> None:
    uid, euid, gid, groups = worker.call("identity").value
    assert uid == euid == gid >= sandbox.FIRST_UID and groups == []
    assert int(worker.call("capabilities").value, 16) == 0, "the worker kept capabilities"
    assert worker.call("no_new_privs").value == "1"


@needs_namespace
def test_the_worker_runs_under_the_documented_limits(worker: Worker) -> None:
    text = worker.call("limits").value
    rows = {" ".join(line.split()[:-3]): line.split()[-3:] for line in text.splitlines()[1:]}
    assert rows["Max address space"][0] == str(sandbox.LIMITS_BY_NAME["RLIMIT_AS"])
    assert rows["Max processes"][0] == str(sandbox.LIMITS_BY_NAME["RLIMIT_NPROC"])
    assert rows["Max file size"][0] == str(sandbox.LIMITS_BY_NAME["RLIMIT_FSIZE"])
    assert rows["Max cpu time"][0] == str(sandbox.LIMITS_BY_NAME["RLIMIT_CPU"])
    assert rows["Max core file size"][0] == "0"


@needs_namespace
def test_the_root_holds_only_the_system_the_interpreter_and_the_worker(worker: Worker) -> None:
    listing = set(worker.call("root_listing").value)
    assert listing <= {"bin", "dev", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp",
                       "usr", "root", "opt", "home", "work", "var"}, listing
    for hidden in ("/work/main", "/etc/passwd", "/etc/shadow", "/home", "/var/lib"):
        assert not worker.call("exists", (hidden,)).value, hidden
    for folder in site_package_dirs():
        assert not worker.call("exists", (f"{folder}/hypothesis",)).value, folder


@needs_namespace
def test_only_the_working_directory_is_writable(worker: Worker) -> None:
    assert worker.call("write", (str(worker.workdir / "scratch.txt"),)).value == "wrote"
    for path in ("/scratch.txt", "/usr/scratch.txt", f"{worker.libdir}/scratch.py",
                 "/proc/scratch", "/dev/scratch"):
        assert worker.call("write", (path,)).value in (
            "OSError", "PermissionError", "FileNotFoundError"), path


@needs_namespace
def test_no_network_interface_and_no_other_process(worker: Worker) -> None:
    assert worker.call("interfaces").value == []  # /sys is not even mounted
    assert worker.call("pids").value == [2], "the worker must see only itself"


def test_the_level_can_be_forced_and_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.ENV_VAR, "off")
    assert sandbox.requested_level() == "process"
    assert sandbox.choose_level() == "process"
    monkeypatch.setenv(sandbox.ENV_VAR, "chroot-please")
    with pytest.raises(ValueError, match="PALLAS_LAB_SANDBOX='chroot-please'"):
        sandbox.requested_level()
    monkeypatch.delenv(sandbox.ENV_VAR)
    assert sandbox.requested_level() is None


def test_the_process_level_still_grades(tmp_path: Path) -> None:
    (tmp_path / "a1_pallas_basics.py").write_text("def f():\n    return 3\n", encoding="utf-8")
    with Worker(tmp_path / "a1_pallas_basics.py", sandbox_level="process") as w:
        assert w.sandbox_level == "process"
        assert w.call("f").value == 3


@needs_namespace
@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 system call numbers")
def test_the_kernel_keyrings_are_out_of_reach(worker: Worker) -> None:
    """add_key, request_key and keyctl (keys are not namespaced: they would outlive the
    worker, test_keyring.py) and every x32 call fail with EPERM; other calls still work."""
    denied = worker.call("syscalls", ([248, 249, 250, 0x40000000 | 39],)).value
    assert [tuple(result) for result in denied] == [(-1, errno.EPERM)] * 4, denied
    (pid, error), = worker.call("syscalls", ([39],)).value  # getpid
    assert pid == 2 and error == 0
