"""Limits for a submission's whole process tree: one cgroup per ``Worker`` (trusted side).

Resource limits (``setrlimit``) count each process on its own: forked children, each
under the address-space limit, can hold many times that memory together. A cgroup
counts the tree: its memory, its number of processes, its share of the CPU
(docs/security.md, "Limits"). This module finds a usable cgroup hierarchy, creates
one cgroup per worker under the grader's own cgroup, sets the limits, kills every
process left in it when the worker dies, and removes it when the worker is closed.
It never moves the grader itself.

Versions, strongest first (``PALLAS_LAB_CGROUP=auto|v2|v1|off``; ``auto`` is the default):

``v2``
    The unified hierarchy (``cgroup2``) with the ``memory`` and ``pids`` controllers
    enabled for the children of the grader's cgroup: ``memory.max``,
    ``memory.swap.max`` = 0, ``pids.max``, ``cpu.max`` (one CPU), and ``cgroup.kill``.
``v1``
    The legacy ``memory`` and ``pids`` hierarchies (and ``cpu`` when it is there):
    ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``), ``pids.max``,
    ``cpu.cfs_quota_us``; leftover processes are killed one by one.

Both need write access to the grader's own cgroup directories (root, or a delegated
subtree). When neither is usable, ``available()`` returns None and the worker runs as
a single process instead (``sandbox.TREE_LEVELS``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "PALLAS_LAB_CGROUP"
VERSIONS = ("v2", "v1")
#: Controllers a usable hierarchy must offer; ``cpu`` is used when present.
REQUIRED = ("memory", "pids")
PREFIX = "pallas-lab"
_NAME = re.compile(rf"{PREFIX}-(\d+)-\d+")
_serial = itertools.count(1)


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's cgroups of one version live: ``version`` ("v1"/"v2") and, per
    controller (v1) or for all of them (v2, key "unified"), the grader's own cgroup
    directory, under which the workers' cgroups are made."""

    version: str
    dirs: dict[str, Path]


def requested() -> str | None:
    """The version forced by ``PALLAS_LAB_CGROUP`` ("off" for none), or None for auto.

    Raises ``ValueError`` for any other value.
    """
    value = os.environ.get(ENV_VAR, "auto").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in (*VERSIONS, "off"):
        raise ValueError(f"{ENV_VAR}={value!r} is not one of auto, off, {', '.join(VERSIONS)}")
    return value


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root inside the hierarchy, mount point, fstype, super options) per cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((fields[3], fields[4].replace("\\040", " "), tail[0],
                      set(tail[2].split(","))))
    return found


def _own_paths(proc_cgroup: str) -> dict[str, str]:
    """This process's cgroup path per controller ("" key: the v2 unified path)."""
    paths = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _inside(mount_root: str, mount_point: str, path: str) -> Path:
    """The directory of cgroup ``path`` under a mount of the hierarchy rooted at
    ``mount_root``."""
    if mount_root != "/" and path.startswith(mount_root):
        path = path[len(mount_root):]
    return Path(mount_point) / path.lstrip("/")


def _writable(directory: Path) -> bool:
    return directory.is_dir() and os.access(directory, os.W_OK | os.X_OK)


def find(version: str, *, mountinfo: str | None = None, proc_cgroup: str | None = None
         ) -> Hierarchy | None:
    """The ``version`` hierarchy this process can create cgroups in, or None.

    ``mountinfo`` and ``proc_cgroup`` default to ``/proc/self/mountinfo`` and
    ``/proc/self/cgroup`` (tests pass their own text and a fake sysfs).
    """
    try:
        mountinfo = mountinfo if mountinfo is not None else Path(
            "/proc/self/mountinfo").read_text()
        proc_cgroup = proc_cgroup if proc_cgroup is not None else Path(
            "/proc/self/cgroup").read_text()
    except OSError:
        return None
    mounts, own = _mounts(mountinfo), _own_paths(proc_cgroup)
    if version == "v2":
        for root, point, fstype, _ in mounts:
            if fstype != "cgroup2" or "" not in own:
                continue
            directory = _inside(root, point, own[""])
            if _writable(directory) and _v2_delegates(directory):
                return Hierarchy("v2", {"unified": directory})
        return None
    dirs: dict[str, Path] = {}
    for root, point, fstype, options in mounts:
        if fstype != "cgroup":
            continue
        for controller in ("memory", "pids", "cpu"):
            if controller in options and controller in own and controller not in dirs:
                directory = _inside(root, point, own[controller])
                if _writable(directory):
                    dirs[controller] = directory
    if all(c in dirs for c in REQUIRED):
        return Hierarchy("v1", dirs)
    return None


def _v2_delegates(directory: Path) -> bool:
    """True when children of ``directory`` get the memory and pids controllers (enabling
    them in ``cgroup.subtree_control`` if needed; a cgroup that holds processes itself
    cannot, by the no-internal-processes rule, and is then not used)."""
    try:
        available = (directory / "cgroup.controllers").read_text().split()
        if not all(c in available for c in REQUIRED):
            return False
        enabled = (directory / "cgroup.subtree_control").read_text().split()
        missing = [c for c in (*REQUIRED, "cpu") if c not in enabled and c in available]
        if missing:
            (directory / "cgroup.subtree_control").write_text(
                " ".join(f"+{c}" for c in missing))
        enabled = (directory / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False
    return all(c in enabled for c in REQUIRED)


_chosen: dict[str, Hierarchy | None] = {}


def available() -> Hierarchy | None:
    """The hierarchy workers get cgroups in: the forced version, else v2, else v1, else None.

    Cached per process. Raises ``RuntimeError`` when a forced version is not usable here
    (a TA who asks for tree limits must not silently get less).
    """
    forced = requested()
    key = forced or "auto"
    if key in _chosen:
        return _chosen[key]
    if forced == "off":
        found = None
    elif forced is not None:
        found = find(forced)
        if found is None:
            raise RuntimeError(f"{ENV_VAR}={forced} was asked for, but no writable cgroup "
                               f"{forced} hierarchy with the memory and pids controllers is "
                               "available to this process")
    else:
        found = find("v2") or find("v1")
    _chosen[key] = found
    return found


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


@dataclass
class Cgroup:
    """One worker's cgroup (one directory per v1 controller, or one v2 directory).

    ``procs_files``: the ``cgroup.procs`` files a process writes its pid into to join.
    """

    hierarchy: Hierarchy
    dirs: dict[str, Path]
    memory_bytes: int
    pids: int
    removed: bool = field(default=False)

    @property
    def version(self) -> str:
        """"v1" or "v2"."""
        return self.hierarchy.version

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` file of each directory."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def join(self, pid: int) -> None:
        """Move process ``pid`` into this cgroup (every hierarchy). Raises ``OSError``."""
        for procs in self.procs_files:
            Path(procs).write_text(str(pid))

    def pids_inside(self) -> list[int]:
        """Processes in the cgroup now."""
        found: set[int] = set()
        for directory in self.dirs.values():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
        return sorted(found)

    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit so far."""
        directory = self.dirs.get("unified") or self.dirs.get("memory")
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            for line in (directory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError, TypeError):
            pass
        return 0

    def kill_all(self, rounds: int = 200) -> None:
        """SIGKILL every process in the cgroup until it is empty (``cgroup.kill`` on v2;
        on v1 one by one, round after round, as a process may fork before it dies)."""
        kill_file = self.dirs.get("unified", Path("/nonexistent")) / "cgroup.kill"
        if self.version == "v2" and kill_file.exists():
            _write(kill_file, "1")
        for _ in range(rounds):
            pids = [pid for pid in self.pids_inside() if pid != os.getpid()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self) -> None:
        """Kill what is left, then remove the cgroup's directories (idempotent)."""
        if self.removed:
            return
        self.kill_all()
        for directory in self.dirs.values():
            for _ in range(100):  # a killed process leaves the cgroup a moment later
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.removed = True


def create(hierarchy: Hierarchy, *, memory_bytes: int, pids: int) -> Cgroup:
    """A new cgroup for one worker under ``hierarchy`` with these limits (and one CPU).

    Stale cgroups of graders that died are removed first. Raises ``OSError`` when the
    directories cannot be made or a required limit cannot be set (the caller then runs
    the worker without a cgroup and says so).
    """
    sweep(hierarchy)
    name = f"{PREFIX}-{os.getpid()}-{next(_serial)}"
    dirs: dict[str, Path] = {}
    cgroup = Cgroup(hierarchy, dirs, memory_bytes, pids)
    try:
        for controller, parent in hierarchy.dirs.items():
            directory = parent / name
            directory.mkdir()
            dirs[controller] = directory
        if hierarchy.version == "v2":
            unified = dirs["unified"]
            (unified / "memory.max").write_text(str(memory_bytes))
            (unified / "pids.max").write_text(str(pids))
            _write(unified / "memory.swap.max", "0")
            _write(unified / "cpu.max", "100000 100000")
        else:
            (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            _write(dirs["memory"] / "memory.memsw.limit_in_bytes", str(memory_bytes))
            (dirs["pids"] / "pids.max").write_text(str(pids))
            if "cpu" in dirs:
                _write(dirs["cpu"] / "cpu.cfs_period_us", "100000")
                _write(dirs["cpu"] / "cpu.cfs_quota_us", "100000")
    except OSError:
        cgroup.remove()
        raise
    return cgroup


def sweep(hierarchy: Hierarchy) -> None:
    """Remove the cgroups that graders which no longer run left behind (killed by SIGKILL
    before they could clean up), killing whatever still runs in them."""
    for controller, parent in hierarchy.dirs.items():
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            match = _NAME.fullmatch(entry.name)
            if not match or not entry.is_dir() or _alive(int(match.group(1))):
                continue
            Cgroup(hierarchy, {controller: entry}, 0, 0).remove()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def parse_bytes(text: str) -> int:
    """``4G``, ``256M``, ``512K`` or a number of bytes -> bytes (binary units).

    Raises ``ValueError`` for anything else or a value under 16 MiB.
    """
    match = re.fullmatch(r"\s*(\d+)\s*([KMGkmg]?)i?[Bb]?\s*", text)
    if not match:
        raise ValueError(f"{text!r} is not a size such as 4G, 256M or a number of bytes")
    value = int(match.group(1)) * 1024 ** " KMG".index((match.group(2) or " ").upper())
    if value < 16 * 1024**2:
        raise ValueError(f"{text!r} is less than 16 MiB: no worker starts with that")
    return value
