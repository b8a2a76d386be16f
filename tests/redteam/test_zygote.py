"""Workers forked from a batch's zygote (graders.worker.zygote) are the exec'd workers'
equals: the same sandbox, the same view, the same failures, the same grades.

The sandbox itself (uid, limits, root, network, processes) is checked for both kinds by
tests/redteam/test_sandbox.py, and the process-tree limits by test_replies_and_limits.py.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from graders.batch.discovery import discover
from graders.batch.run import run_batch
from graders.batch.store import read_results
from graders.worker import sandbox, zygote
from graders.worker.client import Worker

REPO = Path(__file__).resolve().parents[2]

PROBE = '''
import os
import signal
import sys


def view():
    return {"path": sys.path, "cwd": os.getcwd(), "env": dict(os.environ),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            "modules": sorted(sys.modules)}


def exists(path):
    return os.path.exists(path)


def listing(path):
    return sorted(os.listdir(path))


def segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def spin():
    while True:
        pass


def pid():
    return os.getpid()
'''


def _namespace_available() -> bool:
    try:
        return sandbox.choose_level() == "namespace"
    except (RuntimeError, ValueError):
        return False


pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and not _namespace_available(),
    reason="the zygote serves the namespace sandbox, which needs root and unshare(2)")


@pytest.fixture(scope="module")
def template() -> Iterator[zygote.Zygote]:
    with zygote.Zygote() as running:
        yield running


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text(PROBE, encoding="utf-8")
    return path


@pytest.fixture
def forked(template: zygote.Zygote, probe: Path) -> Iterator[Worker]:
    previous = zygote.use(template.config_path)
    try:
        with Worker(probe, timeout=5.0, policy=False) as worker:
            assert isinstance(worker._live["process"], zygote.ForkedProcess)
            yield worker
    finally:
        zygote.use(previous)


def _normalised(view: dict, worker: Worker) -> dict:
    """The view with this worker's own temp paths (workdir, libdir) replaced."""
    text = repr(view).replace(str(worker.workdir), "<work>").replace(str(worker.libdir),
                                                                       "<lib>")
    return eval(text)  # noqa: S307 - our own repr of plain values


def test_a_forked_worker_sees_what_an_exec_worker_sees(forked: Worker, probe: Path,
                                                      template: zygote.Zygote) -> None:
    forking = zygote.use(None)
    try:
        with Worker(probe, timeout=5.0, policy=False) as plain:
            assert not isinstance(plain._live["process"], zygote.ForkedProcess)
            expected = _normalised(plain.call("view").value, plain)
    finally:
        zygote.use(forking)
    got = _normalised(forked.call("view").value, forked)
    assert got["path"] == expected["path"]
    assert got["cwd"] == expected["cwd"] == "<work>"
    assert got["env"] == expected["env"]
    assert got["fds"] == expected["fds"], "the forked worker holds descriptors of the zygote"
    # It may hold more of the worker program's own imports (the harnesses, preloaded), but
    # nothing of the grader's: no project module, no hypothesis, no reference.
    trusted = {m for m in got["modules"] if m.split(".")[0] in (
        "graders", "reference", "solutions", "hypothesis", "rich", "pytest")}
    assert trusted == set(), trusted


def test_the_zygote_and_its_socket_are_out_of_reach(forked: Worker,
                                                    template: zygote.Zygote) -> None:
    for path in (template.socket_path, template.config_path, template.log_path, REPO):
        assert not forked.call("exists", (str(path),)).value, path
    # The zygote's folder is there only as the parent of the library directory.
    assert forked.call("listing", (str(template.base),)).value == ["lib"]


def test_a_crash_is_reported_with_its_signal(forked: Worker) -> None:
    result = forked.call("segfault")
    assert not result.ok and result.error is not None
    assert result.error.kind == "crash" and "SIGSEGV" in result.error.message, result.error
    assert forked.call("pid").ok, "the next call restarts the worker"


def test_a_timeout_kills_the_whole_tree_and_the_next_call_restarts(forked: Worker) -> None:
    process = forked._live["process"]
    assert isinstance(process, zygote.ForkedProcess)
    result = forked.call("spin", timeout=0.5)
    assert not result.ok and result.error is not None and result.error.kind == "timeout"
    assert process.returncode == -signal.SIGKILL
    left = forked._cgroup.pids_inside() if forked._cgroup is not None else []
    assert left == [], "a process outlived the kill"
    assert forked.call("pid").value == 2 and forked.restarts == 1


def test_without_the_zygote_workers_start_by_exec(template: zygote.Zygote, probe: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    gone = zygote.Zygote()
    previous = zygote.use(gone.config_path)
    try:
        with Worker(probe, timeout=5.0, policy=False) as worker:
            assert isinstance(worker._live["process"], zygote.ForkedProcess)
            gone.close()  # e.g. killed: a restart must still get a worker
            assert worker.call("segfault").error is not None
            assert worker.call("pid").value == 2
            assert not isinstance(worker._live["process"], zygote.ForkedProcess)
    finally:
        zygote.use(previous)
    monkeypatch.setenv(zygote.ENV_VAR, "off")
    with pytest.raises(zygote.ZygoteUnavailable, match="off"):
        zygote.Zygote()


def test_a_batch_grades_the_same_with_and_without_the_zygote(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = REPO / "examples" / "submissions"
    klass = tmp_path / "class"
    for student in ("ada_correct", "ben_typical_mistakes", "dev_broken"):
        (klass / student).mkdir(parents=True)
        source = samples / student / "a1_pallas_basics.py"
        (klass / student / source.name).write_bytes(source.read_bytes())
    found = discover([klass]).submissions
    scores = {}
    for mode in ("off", "on"):
        monkeypatch.setenv(zygote.ENV_VAR, mode)
        out = tmp_path / f"results-{mode}"
        run_batch(found, out=out, jobs=2, timeout=3.0, err=Console(file=sys.stderr))
        scores[mode] = {(r.student, r.assignment): (r.score, [c.points for c in r.checks])
                        for r in read_results(out)}
    assert scores["on"] == scores["off"] and len(scores["on"]) == 3, scores
