"""Limits for a submission's whole process tree (graders/worker/cgroups.py, sandbox.py).

The hierarchy discovery and the files a cgroup is given are tested on a fake sysfs
(both cgroup versions); the real thing, where this machine has it, with a real worker:
its cgroup has the documented limits, holds the whole tree, and is gone after close().
The red-team side (forked children, escaping children) is in
tests/redteam/test_replies_and_limits.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graders.worker import cgroups, sandbox
from graders.worker.client import Worker

MiB = 1024 * 1024

V1_MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
32 25 0:28 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu
33 25 0:29 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
"""
V1_CGROUP = "8:pids:/\n4:memory:/grading/ta\n1:cpu:/\n0::/\n"


def _fake_v1(root: Path) -> tuple[str, str]:
    for path in ("memory/grading/ta", "pids", "cpu", "unified"):
        (root / path).mkdir(parents=True)
    return V1_MOUNTINFO.replace("/sys/fs/cgroup", str(root)), V1_CGROUP


def test_v1_is_found_per_controller_under_the_graders_own_cgroup(tmp_path: Path) -> None:
    mountinfo, proc = _fake_v1(tmp_path)
    found = cgroups.find("v1", mountinfo=mountinfo, proc_cgroup=proc)
    assert found is not None and found.version == "v1"
    assert found.dirs == {"memory": tmp_path / "memory/grading/ta", "pids": tmp_path / "pids",
                          "cpu": tmp_path / "cpu"}
    # cgroup2 here has no memory/pids controllers: v2 is not usable
    assert cgroups.find("v2", mountinfo=mountinfo, proc_cgroup=proc) is None


def test_v1_needs_both_memory_and_pids(tmp_path: Path) -> None:
    mountinfo, proc = _fake_v1(tmp_path)
    mountinfo = "\n".join(line for line in mountinfo.splitlines() if "pids" not in line)
    assert cgroups.find("v1", mountinfo=mountinfo, proc_cgroup=proc) is None


def test_a_v1_cgroup_gets_the_documented_limits(tmp_path: Path) -> None:
    mountinfo, proc = _fake_v1(tmp_path)
    hierarchy = cgroups.find("v1", mountinfo=mountinfo, proc_cgroup=proc)
    assert hierarchy is not None
    group = cgroups.create(hierarchy, memory_bytes=256 * MiB, pids=32)
    memory, pids, cpu = group.dirs["memory"], group.dirs["pids"], group.dirs["cpu"]
    assert memory.parent == tmp_path / "memory/grading/ta"
    assert memory.name.startswith(f"pallas-lab-{os.getpid()}-")
    assert (memory / "memory.limit_in_bytes").read_text() == str(256 * MiB)
    assert (pids / "pids.max").read_text() == "32"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "100000", "one CPU for the whole tree"
    assert group.procs_files == [str(d / "cgroup.procs") for d in (memory, pids, cpu)]


def test_a_v2_cgroup_gets_the_documented_limits(tmp_path: Path) -> None:
    own = tmp_path / "unified/grading/ta"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory pids hugetlb\n")
    (own / "cgroup.subtree_control").write_text("cpu memory pids\n")
    mountinfo = f"40 25 0:30 / {tmp_path}/unified rw - cgroup2 cgroup2 rw\n"
    hierarchy = cgroups.find("v2", mountinfo=mountinfo, proc_cgroup="0::/grading/ta\n")
    assert hierarchy is not None and hierarchy.dirs == {"unified": own}
    group = cgroups.create(hierarchy, memory_bytes=4096 * MiB, pids=32)
    unified = group.dirs["unified"]
    assert (unified / "memory.max").read_text() == str(4096 * MiB)
    assert (unified / "memory.swap.max").read_text() == "0"
    assert (unified / "pids.max").read_text() == "32"
    assert (unified / "cpu.max").read_text() == "100000 100000"
    (unified / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert group.oom_kills() == 1


def test_v2_without_the_controllers_delegated_is_not_used(tmp_path: Path) -> None:
    own = tmp_path / "unified/grading"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu io\n")
    (own / "cgroup.subtree_control").write_text("")
    mountinfo = f"40 25 0:30 / {tmp_path}/unified rw - cgroup2 cgroup2 rw\n"
    assert cgroups.find("v2", mountinfo=mountinfo, proc_cgroup="0::/grading\n") is None


@pytest.mark.parametrize("text, value", [("4G", 4096 * MiB), ("256M", 256 * MiB),
                                         ("256MiB", 256 * MiB), (str(64 * MiB), 64 * MiB)])
def test_memory_sizes_are_read_in_binary_units(text: str, value: int) -> None:
    assert cgroups.parse_bytes(text) == value


@pytest.mark.parametrize("text", ["lots", "1M", "-5G", "2T"])
def test_sizes_that_no_worker_can_use_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        cgroups.parse_bytes(text)


def test_the_cgroup_version_can_be_forced_or_switched_off(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv(cgroups.ENV_VAR, "off")
    assert cgroups.requested() == "off" and cgroups.available() is None
    monkeypatch.setenv(cgroups.ENV_VAR, "v3")
    with pytest.raises(ValueError, match="PALLAS_LAB_CGROUP='v3'"):
        cgroups.requested()


def test_without_a_cgroup_a_worker_is_a_single_process() -> None:
    limits = dict(sandbox.limits_for(sandbox.SINGLE_PROCESS))
    assert limits["RLIMIT_NPROC"] == 1 and limits["RLIMIT_AS"] == sandbox.LIMITS_BY_NAME[
        "RLIMIT_AS"]
    assert dict(sandbox.limits_for("cgroup v1")) == sandbox.LIMITS_BY_NAME


def test_only_the_full_sandbox_goes_unmentioned() -> None:
    assert sandbox.describe("namespace", "cgroup v2") == ("namespace, cgroup v2", None)
    for level, tree, words in (("namespace", sandbox.SINGLE_PROCESS, "cannot fork"),
                               ("uid", "cgroup v1", "world-readable"),
                               ("process", "cgroup v1", "sandbox level 'process'")):
        label, warning = sandbox.describe(level, tree)
        assert label == f"{level}, {tree}"
        assert warning is not None and "weaker than the full sandbox" in warning
        assert words in warning and "\n" not in warning


# -- the real hierarchy of this machine -------------------------------------------------------

def _real() -> cgroups.Hierarchy | None:
    try:
        return cgroups.available()
    except (RuntimeError, ValueError):
        return None


needs_cgroup = pytest.mark.skipif(
    not os.environ.get("CI") and _real() is None,
    reason="no writable cgroup hierarchy with the memory and pids controllers here",
)

SUBMISSION = """
import numpy as np


def where():
    return open("/proc/self/cgroup").read()
"""


@needs_cgroup
def test_a_worker_runs_in_its_own_cgroup_which_is_gone_after_close(tmp_path: Path) -> None:
    path = tmp_path / "t9_fake.py"
    path.write_text(textwrap.dedent(SUBMISSION), encoding="utf-8")
    hierarchy = _real()
    assert hierarchy is not None
    with Worker(path, timeout=20.0, sandbox_level="process", policy=False) as worker:
        assert worker.tree_level == f"cgroup {hierarchy.version}"
        group = worker._cgroup
        assert group is not None
        assert worker.pid in group.pids_inside()
        memory = group.dirs.get("memory") or group.dirs["unified"]
        limit = "memory.limit_in_bytes" if hierarchy.version == "v1" else "memory.max"
        assert int((memory / limit).read_text()) == worker.memory_bytes
        pids_dir = group.dirs.get("pids") or group.dirs["unified"]
        assert (pids_dir / "pids.max").read_text().strip() == str(sandbox.TREE_PIDS)
        assert group.dirs[next(iter(group.dirs))].name in worker.call("where").value
    assert not any(d.exists() for d in group.dirs.values()), "the cgroup outlived its worker"


@needs_cgroup
def test_cgroups_of_graders_that_died_are_swept(tmp_path: Path) -> None:
    hierarchy = _real()
    assert hierarchy is not None
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = [parent / f"pallas-lab-{dead}-1" for parent in hierarchy.dirs.values()]
    for directory in stale:
        directory.mkdir()
    group = cgroups.create(hierarchy, memory_bytes=64 * MiB, pids=4)
    try:
        assert not any(d.exists() for d in stale), "a dead grader's cgroup was left behind"
    finally:
        group.remove()
        for directory in stale:
            if directory.exists():
                directory.rmdir()
