"""The operating-system sandbox around the worker: namespaces, a minimal root, a dropped uid.

This file has two roles (docs/security.md, "Sandbox levels"):

* imported by ``graders.worker.client`` (trusted): ``choose_level()`` picks the
  strongest level this machine offers and ``SandboxPlan`` describes one worker's
  filesystem view, user id and limits;
* run as a script by the client, as root, in front of the worker
  (``python -I -S -B sandbox.py PLAN.json``): it builds the sandbox described
  by the plan and then ``exec``s the worker program inside it. As a script it
  imports only the standard library.

Levels, strongest first (``PALLAS_LAB_SANDBOX`` may force one; ``off`` means
``process``):

``namespace``
    New mount, PID, network, IPC and UTS namespaces (``unshare(2)``). The
    worker's root directory is a fresh read-only tmpfs holding only ``/usr``
    (and the ``/bin``, ``/lib`` links), the Python installation without its
    ``site-packages``, the worker's library directory (numpy, ml_dtypes,
    pallas_sim, the protocol, the harnesses), a private ``/proc`` showing only
    the worker's own processes, four
    device nodes and the working directory: a 64 MiB tmpfs holding a copy of
    the submission. The network namespace has no interface but a downed
    loopback. The worker is PID 1 of its namespace, so everything it starts
    dies with it. It runs as a user id of its own (no supplementary groups,
    no capabilities, ``no_new_privs``), which makes the per-user process
    limit its own. Needs root (CAP_SYS_ADMIN).
``uid``
    Root without namespaces (e.g. a container whose seccomp profile forbids
    ``unshare``): the worker drops to a user id of its own, with
    ``no_new_privs`` and the limits below; it sees the host's files that are
    readable by everyone, so this level protects the gradebook, the results
    and ``/root`` only through file permissions.
``process``
    No privileges to drop (not root), or the sandbox switched off: only what
    the client always does (a scrubbed environment, a private ``sys.path``, a
    process group killed on timeout, resource limits).

Every level applies the resource limits of ``LIMITS``, which count each process on
its own. The submission's whole process tree is limited too (``TREE_LEVELS``,
strongest first): by a cgroup (``graders.worker.cgroups``: memory, processes and one
CPU for the tree) when one is available, else by allowing the worker no second
process at all (``RLIMIT_NPROC`` = 1 for its own user id); only a worker that runs as
root without a cgroup (``PALLAS_LAB_SANDBOX=off`` as root, ``PALLAS_LAB_CGROUP=off``)
has no tree limit. ``describe()`` says which combination is in use and whether it is
weaker than the full sandbox (namespace + cgroup).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource  # imported before chroot: the new root may not hold lib-dynload
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

LEVELS = ("namespace", "uid", "process")
#: What a forked (not exec'd) worker runs once sandboxed: ``run(plan)`` -> exit status.
Runner = Callable[["SandboxPlan"], int]
ENV_VAR = "PALLAS_LAB_SANDBOX"

#: First user id handed to workers; each worker gets FIRST_UID + the launcher's pid.
FIRST_UID = 200_000
#: Size of the worker's writable working directory (a tmpfs at the namespace level).
WORKDIR_BYTES = 64 * 1024**2
#: Resource limits of the worker process: (name of the resource.RLIMIT_* constant, value).
LIMITS: tuple[tuple[str, int], ...] = (
    ("RLIMIT_AS", 4 * 1024**3),        # bytes of address space: memory bombs get MemoryError
    ("RLIMIT_CPU", 600),               # seconds of CPU time over the worker's whole life
    ("RLIMIT_FSIZE", 16 * 1024**2),    # bytes of any file written, captured output included
    ("RLIMIT_NPROC", 32),              # processes of the worker's user id: fork bombs stop
    ("RLIMIT_NOFILE", 256),            # open file descriptors
    ("RLIMIT_CORE", 0),                # no core dumps
)
LIMITS_BY_NAME = dict(LIMITS)
#: Limits of a submission's whole process tree, in its cgroup: memory in bytes (all its
#: processes together, tmpfs files included; ``PALLAS_LAB_MEMORY`` may set another, e.g.
#: ``2G``), processes (the launcher's two included), and one CPU's worth of time at a time.
TREE_MEMORY_BYTES = 4 * 1024**3
TREE_PIDS = 32
MEMORY_ENV_VAR = "PALLAS_LAB_MEMORY"
#: How the process tree is limited, strongest first (see the module docstring).
TREE_LEVELS = ("cgroup v2", "cgroup v1", "one process per worker", "none")
SINGLE_PROCESS = "one process per worker"
#: Host device nodes made available inside the namespace level's root.
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
#: System calls a worker may not make, by audit architecture: the kernel's key retention
#: service (``add_key``, ``request_key``, ``keyctl``), which no namespace here covers: keys
#: made by one worker would outlive it and be readable by later ones (tests/redteam/
#: test_keyring.py). Compat ABIs a 64-bit process can reach (``int 0x80``, AArch32) are
#: listed too; x86_64's x32 numbers (bit 30 set) are refused whole; any other architecture
#: is refused every call.
DENIED_SYSCALLS: dict[int, tuple[int, ...]] = {
    0xC000003E: (248, 249, 250),  # x86_64
    0x40000003: (286, 287, 288),  # i386
    0xC00000B7: (217, 218, 219),  # aarch64
    0x40000028: (309, 310, 311),  # arm (EABI)
}
_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_SIGKILL = 9


@dataclass
class SandboxPlan:
    """Everything the launcher needs to start one worker (written as JSON, read as root).

    ``level``: one of ``LEVELS`` (never ``process``: that level needs no launcher).
    ``root``: an empty host directory used as the mount point of the new root.
    ``argv``/``env``: the worker's command line (``argv[0]`` the interpreter) and
    environment. ``workdir``: the worker's working directory (same path inside
    and outside); ``files``: host files copied into it (name -> host path).
    ``ro_binds``: (host path, path inside) pairs mounted read-only;
    ``masks``: paths inside hidden under an empty read-only tmpfs (applied
    after the binds, e.g. the interpreter's ``site-packages``). ``limits``: the
    rlimits the worker gets (``limits_for``); ``cgroup_procs``: the
    ``cgroup.procs`` files of the worker's cgroup, which the launcher joins
    before it does anything else, so that every process of the tree is in it.
    """

    level: str
    root: str
    argv: list[str]
    env: dict[str, str]
    workdir: str
    files: dict[str, str] = field(default_factory=dict)
    ro_binds: list[tuple[str, str]] = field(default_factory=list)
    masks: list[str] = field(default_factory=list)
    limits: list[tuple[str, int]] = field(default_factory=lambda: list(LIMITS))
    cgroup_procs: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """The plan as JSON text (what the launcher reads)."""
        return json.dumps(asdict(self), sort_keys=True)


# -- choosing a level (trusted side) -----------------------------------------------------------

_chosen: dict[str, str] = {}


def requested_level() -> str | None:
    """The level forced by ``PALLAS_LAB_SANDBOX`` (``off`` -> ``process``), or None for auto.

    Raises ``ValueError`` for a value that is not a level, ``off`` or ``auto``.
    """
    value = os.environ.get(ENV_VAR, "auto").strip().lower()
    if value in ("", "auto"):
        return None
    if value == "off":
        return "process"
    if value not in LEVELS:
        raise ValueError(f"{ENV_VAR}={value!r} is not one of auto, off, {', '.join(LEVELS)}")
    return value


def _probe(level: str, python: str) -> bool:
    """True when a throw-away launcher can enter ``level`` on this machine.

    The probe runs in a session of its own (a Ctrl-C to the batch's group does not cut
    it short) and makes its folder in this process's temporary folder (a batch grader's
    private one, removed whatever happens, even when the probe is killed)."""
    import importlib.util
    import subprocess
    import tempfile

    spec = importlib.util.find_spec("numpy")  # located, not imported
    numpy_parent = os.path.dirname(os.path.dirname(spec.origin)) if spec and spec.origin else ""
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-B", os.path.abspath(__file__), "--probe", level,
             os.path.realpath(getattr(sys, "_base_executable", None) or python), numpy_parent],
            capture_output=True, timeout=30, check=False, start_new_session=True,
            env={**os.environ, "TMPDIR": tempfile.gettempdir()},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"ok"


def choose_level(python: str | None = None) -> str:
    """The sandbox level workers run at: the forced one, else the strongest available.

    Cached per process. Raises ``RuntimeError`` when a forced level is not
    available here (a TA who asks for isolation must not silently get less).
    """
    python = python or sys.executable
    forced = requested_level()
    key = f"{forced}:{python}"
    if key in _chosen:
        return _chosen[key]
    if forced is not None:
        if forced != "process" and not (os.geteuid() == 0 and _probe(forced, python)):
            raise RuntimeError(
                f"{ENV_VAR}={forced} was asked for, but this machine cannot provide it "
                "(it needs root and, for 'namespace', unshare(2))"
            )
        level = forced
    elif os.geteuid() != 0:
        level = "process"
    elif _probe("namespace", python):
        level = "namespace"
    elif _probe("uid", python):
        level = "uid"
    else:
        level = "process"
    _chosen[key] = level
    return level


def tree_memory_bytes() -> int:
    """The memory limit of a submission's process tree: ``PALLAS_LAB_MEMORY`` or 4 GiB.

    Raises ``ValueError`` for a value that is not a size of at least 16 MiB.
    """
    from graders.worker.cgroups import parse_bytes

    value = os.environ.get(MEMORY_ENV_VAR, "").strip()
    return parse_bytes(value) if value else TREE_MEMORY_BYTES


def choose_tree_level(level: str) -> str:
    """How the process tree of a worker at sandbox ``level`` is limited (``TREE_LEVELS``):
    a cgroup when ``graders.worker.cgroups.available()`` finds one, else one process per
    worker, except for a worker that runs as root (the ``process`` level as root), for
    which ``RLIMIT_NPROC`` does nothing: "none". Raises ``RuntimeError`` when a forced
    cgroup version is not available (``PALLAS_LAB_CGROUP``)."""
    from graders.worker import cgroups

    hierarchy = cgroups.available()
    if hierarchy is not None:
        return f"cgroup {hierarchy.version}"
    if level == "process" and os.geteuid() == 0:
        return "none"
    return SINGLE_PROCESS


def limits_for(tree_level: str) -> list[tuple[str, int]]:
    """The rlimits of a worker whose tree is limited by ``tree_level``: ``LIMITS``, with
    ``RLIMIT_NPROC`` = 1 (no second process) when there is no cgroup."""
    if tree_level.startswith("cgroup"):
        return list(LIMITS)
    return [(name, 1 if name == "RLIMIT_NPROC" else value) for name, value in LIMITS]


def describe(level: str, tree_level: str) -> tuple[str, str | None]:
    """(a short label for reports, a one-line warning for the TA or None).

    The full sandbox is the ``namespace`` level with a cgroup for the process tree;
    anything less gets a warning that says what a submission can do there.
    """
    label = f"{level}, {tree_level}"
    problems = []
    root = os.geteuid() == 0
    if level == "process" and root:
        problems.append("sandbox level 'process': submissions run as root and can read, "
                        "write and kill everything on this machine")
    elif level == "process":
        problems.append("sandbox level 'process': submissions run as your user and can read "
                        "every file you can, other students' submissions included")
    elif level == "uid":
        problems.append("sandbox level 'uid': submissions can read every world-readable "
                        "file of this machine")
    if tree_level == SINGLE_PROCESS:
        problems.append("no cgroup: one process per worker (a submission cannot fork), "
                        "memory and CPU limited per process")
    elif tree_level == "none":
        problems.append("no cgroup and a root worker: the processes a submission forks are "
                        "not limited")
    if not problems:
        return label, None
    if level == "process" and root:
        advice = f"unset {ENV_VAR} for the namespace sandbox"
    else:
        advice = "grade as root, where unshare(2) and a writable cgroup give the full sandbox"
    return label, (f"pallas-lab: workers run at {label}, weaker than the full sandbox: "
                   + "; ".join(problems) + f" ({advice})")


# -- the launcher (runs as root, in front of the worker) ----------------------------------------


def _libc():  # noqa: ANN202 - ctypes handle
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                           ctypes.c_ulong, ctypes.c_char_p]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int,  # noqa: ANN001
           data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
           f"mount {source} on {target}")


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _make_mount_point(target: str, is_dir: bool) -> None:
    if is_dir:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            with open(target, "wb"):
                pass


def _bind_read_only(libc, source: str, target: str) -> None:  # noqa: ANN001
    _make_mount_point(target, os.path.isdir(source))
    _mount(libc, source, target, None, _MS_BIND | _MS_REC)
    _mount(libc, None, target, None,
           _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _build_root(libc, plan: SandboxPlan, uid: int) -> None:  # noqa: ANN001
    """Assemble the new root under ``plan.root`` (inside the new mount namespace)."""
    root = plan.root
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount(libc, "tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=4m,mode=755")
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        host = f"/{name}"
        if os.path.islink(host):
            os.symlink(os.readlink(host), _inside(root, host))
        elif os.path.isdir(host):
            _bind_read_only(libc, host, _inside(root, host))
    _bind_read_only(libc, "/usr", _inside(root, "/usr"))
    for source, target in plan.ro_binds:
        _bind_read_only(libc, source, _inside(root, target))
    for path in plan.masks:
        target = _inside(root, path)
        if os.path.isdir(target):
            _mount(libc, "tmpfs", target, "tmpfs",
                   _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=4k,mode=755")
    for device in DEVICES:
        if os.path.exists(device):
            target = _inside(root, device)
            _make_mount_point(target, False)
            _mount(libc, device, target, None, _MS_BIND)
    proc = _inside(root, "/proc")
    os.makedirs(proc, exist_ok=True)
    # hidepid=2: the worker sees only its own processes, not PID 1 (root, the launcher).
    _mount(libc, "proc", proc, "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "hidepid=2")
    work = _inside(root, plan.workdir)
    os.makedirs(work, exist_ok=True)
    _mount(libc, "tmpfs", work, "tmpfs", _MS_NOSUID | _MS_NODEV,
           f"size={WORKDIR_BYTES},mode=700,uid={uid},gid={uid}")
    _copy_files(plan, work, uid)
    _mount(libc, None, root, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    os.chdir(root)
    os.chroot(".")


def _copy_files(plan: SandboxPlan, work: str, uid: int) -> None:
    for name, host in plan.files.items():
        target = os.path.join(work, os.path.basename(name))
        with open(host, "rb") as source, open(target, "wb") as copy:
            copy.write(source.read())
        os.chown(target, uid, uid)
        os.chmod(target, 0o600)


def apply_limits(limits: list[tuple[str, int]] | tuple[tuple[str, int], ...] = LIMITS) -> None:
    """Lower this process's rlimits to ``limits`` (never raising a hard limit)."""
    for name, value in limits:
        which = getattr(resource, name, None)
        if which is None:
            continue
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def _drop_privileges(libc, uid: int) -> None:  # noqa: ANN001
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:  # pragma: no cover - setresuid does not fail so
        raise OSError("the worker is still root")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    # Set after the uid change (which clears it): the worker dies with its launcher.
    _check(libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    _deny_syscalls(libc)


def seccomp_program() -> list[tuple[int, int, int, int]]:
    """The classic-BPF seccomp filter of ``DENIED_SYSCALLS`` as (code, jt, jf, k) rows:
    load the architecture; per known one, load the call number and return EPERM for a
    denied number (and, on x86_64, for any x32 number), else allow; EPERM for an unknown
    architecture (the kernel's ``seccomp_data``: nr at offset 0, arch at 4)."""
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    rows: list[tuple[int, int, int, int]] = [(load, 0, 0, 4)]
    denials: list[int] = []  # rows whose jt must reach the final EPERM
    for arch, numbers in DENIED_SYSCALLS.items():
        body = 2 + len(numbers) + (arch == _X86_64)  # load nr, checks, allow
        rows.append((jeq, 0, body, arch))
        rows.append((load, 0, 0, 0))
        if arch == _X86_64:
            denials.append(len(rows))
            rows.append((jge, 0, 0, _X32_BIT))
        for number in numbers:
            denials.append(len(rows))
            rows.append((jeq, 0, 0, number))
        rows.append((ret, 0, 0, allow))
    rows.append((ret, 0, 0, deny))  # unknown architecture, and every denial's target
    end = len(rows) - 1
    for index in denials:
        code, _, jf, k = rows[index]
        rows[index] = (code, end - index - 1, jf, k)
    return rows


def _deny_syscalls(libc) -> None:  # noqa: ANN001
    """Install ``seccomp_program`` (needs ``no_new_privs``; kept across exec and fork, and
    never removable by the worker)."""

    class _Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint)]

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]

    rows = seccomp_program()
    filters = (_Filter * len(rows))(*(_Filter(*row) for row in rows))
    program = _Program(len(rows), filters)
    _check(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0),
           "prctl(PR_SET_SECCOMP)")


def _become_worker(libc, plan: SandboxPlan, uid: int, run: Runner | None = None) -> None:  # noqa: ANN001
    """Lower the limits, drop to ``uid`` and exec the worker: never returns, or raises.

    With ``run`` (a forked copy of an already-imported worker, ``graders.worker.zygote``)
    the process instead calls ``run(plan)`` under the same limits and user id and exits
    with its status: nothing is exec'd, the worker program is already in memory.
    """
    apply_limits(plan.limits)
    _drop_privileges(libc, uid)
    if run is not None:
        code = 1
        try:
            code = run(plan)
        finally:
            os._exit(code)
    os.execve(plan.argv[0], plan.argv, plan.env)


def _enter_uid_level(libc, plan: SandboxPlan, uid: int,  # noqa: ANN001
                     run: Runner | None = None) -> None:
    os.makedirs(plan.workdir, exist_ok=True)
    for name, host in plan.files.items():
        target = os.path.join(plan.workdir, os.path.basename(name))
        if os.path.abspath(host) != os.path.abspath(target):
            _copy_files(SandboxPlan(**{**asdict(plan), "files": {name: host}}),
                        plan.workdir, uid)
    os.chown(plan.workdir, uid, uid)
    os.chmod(plan.workdir, 0o700)
    os.chdir(plan.workdir)
    _become_worker(libc, plan, uid, run)


def _init(libc, plan: SandboxPlan, uid: int, report: int,  # noqa: ANN001
          run: Runner | None = None) -> int:
    """PID 1 of the new namespace (root, runs no student code): build the root, fork the
    worker, reap every orphan, and when the worker ends write its raw wait status to
    ``report`` and return; everything left in the namespace then dies with us."""
    _check(libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    _build_root(libc, plan, uid)
    os.chdir(plan.workdir)
    worker = os.fork()
    if worker == 0:
        try:
            os.close(report)
            _become_worker(libc, plan, uid, run)
        except BaseException as exc:  # noqa: BLE001 - report and die, never run unsandboxed
            os.write(2, f"pallas-lab sandbox: {exc}\n".encode())
        os._exit(126)
    for fd in (0, 1):  # only the worker holds the protocol pipes
        os.close(fd)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:  # pragma: no cover - the worker is always reaped first
            return 0
        if pid == worker:
            os.write(report, str(status).encode())
            return 0


def launch(plan: SandboxPlan, run: Runner | None = None) -> int:
    """Run the worker described by ``plan``; returns the exit status to report.

    ``run``: instead of exec'ing ``plan.argv``, the sandboxed process calls
    ``run(plan)`` and exits with what it returns (the worker zygote's forked copies,
    ``graders.worker.zygote``); every other step is the same.

    At the ``uid`` level this process becomes the worker (exec). At the
    ``namespace`` level it unshares, forks the namespace's PID 1 (which builds
    the root and forks the worker) and waits; a worker killed by a signal
    makes this process die of the same signal, so the grader sees it.
    Raises ``OSError`` when the sandbox cannot be built.
    """
    uid = FIRST_UID + os.getpid()
    for procs in plan.cgroup_procs:  # first: every process started from here is in it
        with open(procs, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
    libc = _libc()
    if plan.level != "namespace":
        _enter_uid_level(libc, plan, uid, run)
        return 127  # pragma: no cover - exec does not return
    _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC
                        | _CLONE_NEWUTS), "unshare")
    read_end, write_end = os.pipe()
    init = os.fork()
    if init == 0:
        code = 126
        try:
            os.close(read_end)
            code = _init(libc, plan, uid, write_end, run)
        except BaseException as exc:  # noqa: BLE001 - report and die, never run unsandboxed
            os.write(2, f"pallas-lab sandbox: {exc}\n".encode())
        os._exit(code)
    os.close(write_end)
    for fd in (0, 1):
        os.close(fd)
    chunks = []
    while chunk := os.read(read_end, 64):
        chunks.append(chunk)
    os.waitpid(init, 0)
    text = b"".join(chunks).decode() or str(126 << 8)
    status = int(text)
    if os.WIFSIGNALED(status):
        import signal

        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig  # pragma: no cover - the signal ends this process
    return os.WEXITSTATUS(status)


def _probe_main(level: str, python: str, numpy_parent: str) -> int:
    """Try ``level`` in a child that does nothing else; print ``ok`` when it works.

    At the namespace level the child runs ``true`` in the new root (the
    interpreter and numpy are bind-mounted there by root); at the uid level it
    runs ``python -c "import numpy"`` as the worker's user, which must be able
    to reach both on the host's filesystem."""
    import tempfile

    base = tempfile.mkdtemp(prefix="pallas-lab-probe-")
    try:
        root = os.path.join(base, "root")
        os.mkdir(root)
        check = f"import sys; sys.path.insert(0, {numpy_parent!r}); import numpy"
        argv = ["/usr/bin/true"] if level == "namespace" else [python, "-I", "-S", "-c", check]
        plan = SandboxPlan(level, root, argv, {}, os.path.join(base, "work"))
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(os.open(os.devnull, os.O_RDWR), 0)
                os.dup2(0, 1)
                os._exit(launch(plan))
            except BaseException:  # noqa: BLE001
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    if ok:
        print("ok")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    """Script entry: ``sandbox.py PLAN.json`` or ``sandbox.py --probe LEVEL PYTHON NUMPY``."""
    if len(argv) == 5 and argv[1] == "--probe":
        return _probe_main(argv[2], argv[3], argv[4])
    if len(argv) != 2:
        os.write(2, b"usage: sandbox.py PLAN.json | --probe LEVEL PYTHON NUMPY_PARENT\n")
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        data = json.load(handle)
    data["ro_binds"] = [tuple(pair) for pair in data.get("ro_binds", [])]
    data["limits"] = [tuple(pair) for pair in data.get("limits", LIMITS)]
    plan = SandboxPlan(**data)
    try:
        return launch(plan)
    except OSError as exc:
        os.write(2, f"pallas-lab sandbox: {exc}\n".encode())
        return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv))
