"""A class's batch on Dask (``pallas-lab grade CLASS --scheduler ADDRESS``), on a
``LocalCluster`` of two worker processes: the same results, gradebook and resuming as
``--jobs 2`` on this machine, a stop that keeps what was finished, and a clear line when
the cluster cannot be used."""

from __future__ import annotations

import csv
import http.server
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import distributed  # the cluster extra (in dev): missing, the suite fails, never skips
import pytest

from tests.helpers.cli import pallas_lab

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
STEM = "a1_pallas_basics"
LIMIT = 900


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of a LocalCluster of two single-threaded worker processes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _class(folder: Path, students: dict[str, str]) -> Path:
    for student, sample in students.items():
        (folder / student).mkdir(parents=True)
        shutil.copy(SAMPLES / sample / f"{STEM}.py", folder / student / f"{STEM}.py")
    return folder


def _grade(klass: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*pallas_lab(), "grade", str(klass), "--out", str(out), *options],
                          capture_output=True, text=True, timeout=LIMIT, check=False)


def _scores(out: Path) -> dict[str, list[tuple[str, float]]]:
    return {p.parent.parent.name: [(t["name"], t["score"]) for t in json.loads(
        p.read_text(encoding="utf-8"))["tests"]] for p in out.glob("*/*/results.json")}


def test_a_batch_on_dask_grades_as_the_local_batch_does_and_resumes(
        scheduler: str, tmp_path: Path) -> None:
    klass = _class(tmp_path / "class", {"ada": "ada_correct", "ben": "ben_typical_mistakes",
                                         "cleo": "cleo_untouched"})
    local, dask = tmp_path / "local", tmp_path / "dask"
    done = _grade(klass, local, "--jobs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    done = _grade(klass, dask, "--scheduler", scheduler)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "internal error" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert _scores(dask) == _scores(local) and len(_scores(dask)) == 3
    assert (dask / "gradebook.csv").read_text(encoding="utf-8") == (
        local / "gradebook.csv").read_text(encoding="utf-8")
    for student in ("ada", "ben", "cleo"):
        assert (dask / student / STEM / "feedback.html").is_file()
    again = _grade(klass, dask, "--scheduler", scheduler)
    assert again.returncode == 0
    assert "graded 0 student(s), 3 already had results" in " ".join(again.stdout.split())


def test_a_stopped_dask_batch_keeps_what_was_finished_and_a_rerun_finishes_it(
        scheduler: str, tmp_path: Path) -> None:
    # Sixteen files: on preloaded servers a file takes about a second once the first is
    # done, and the stop must land before the class is (CI saw six finish first).
    students = 16
    klass = _class(tmp_path / "class", {f"s{i}": "ben_typical_mistakes"
                                         for i in range(students)})
    out = tmp_path / "results"
    command = [*pallas_lab(), "grade", str(klass), "--out", str(out), "--scheduler",
               scheduler]
    batch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + LIMIT
    while not list(out.glob("*/*/results.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(batch.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it
    stopped = time.monotonic()
    _, err = batch.communicate(timeout=120)
    assert batch.returncode == 130, err[-3000:]
    assert time.monotonic() - stopped < 60, "the stop does not wait for the class"
    kept = len(list(out.glob("*/*/results.json")))
    assert 1 <= kept < students, kept
    time.sleep(8)  # the workers' graders were stopped, not left to finish after the batch
    assert len(list(out.glob("*/*/results.json"))) == kept, (
        "a result was written after the stopped batch had written its gradebook")
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=LIMIT,
                           check=False)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{kept} already had results" in " ".join(rerun.stdout.split())
    assert len(list(out.glob("*/*/results.json"))) == students


def test_an_unreachable_scheduler_is_one_clear_line_and_nothing_graded(
        tmp_path: Path) -> None:
    klass = _class(tmp_path / "class", {"ada": "ada_correct"})
    done = _grade(klass, tmp_path / "results", "--scheduler", "tcp://127.0.0.1:9")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cannot reach the Dask cluster tcp://127.0.0.1:9" in done.stderr
    assert "nothing was graded" in done.stderr
    assert not list((tmp_path / "results").glob("*/*/results.json"))


def test_an_address_where_no_dask_scheduler_answers_is_one_line_not_a_hang(
        tmp_path: Path) -> None:
    """A TA's slip: the dashboard's port, or any other server. Dask waited for ever on a web
    server, and read a stray HTTP reply as a frame of exabytes (a MemoryError traceback)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        klass = _class(tmp_path / "class", {"ada": "ada_correct"})
        started = time.monotonic()
        done = _grade(klass, tmp_path / "results", "--scheduler",
                      f"tcp://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cannot reach the Dask cluster" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 60


def test_a_scheduler_and_a_cluster_together_are_refused(tmp_path: Path) -> None:
    klass = _class(tmp_path / "class", {"ada": "ada_correct"})
    done = _grade(klass, tmp_path / "results", "--scheduler", "tcp://127.0.0.1:9",
                  "--cluster", "slurm")
    assert done.returncode == 2 and "give one" in done.stderr, done.stderr[-2000:]


def _servers_of_this_worker() -> list[tuple[int, int]]:
    """On a Dask worker: (pid, files sent) of each grading server it has started."""
    from graders.batch import dask_worker

    return [(server.process.pid, server.requests) for server in dask_worker._servers.values()]


def test_each_dask_worker_grades_its_files_on_one_preloaded_server_and_leaves_no_folder(
        tmp_path: Path) -> None:
    """A Dask worker used to start a new Python process per file (the imports and an exec'd
    worker each time: 2.2x the local batch's time on one machine) and left empty
    ``pallas-lab-hypothesis-*`` folders when the cluster stopped it."""
    # A short folder: a forkserver's Unix socket path must fit in 108 bytes.
    temp = Path(tempfile.mkdtemp(prefix="pl-dask-", dir="/tmp"))
    klass = _class(tmp_path / "class", {f"s{i}": "ben_typical_mistakes" for i in range(6)})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, env={"TMPDIR": str(temp)},
                                  local_directory=str(tmp_path / "dask")) as cluster, \
            distributed.Client(cluster) as client:
        done = subprocess.run(
            [*pallas_lab(), "grade", str(klass), "--out", str(tmp_path / "results"),
             "--scheduler", cluster.scheduler_address], capture_output=True, text=True,
            timeout=LIMIT, check=False, env={**os.environ, "TMPDIR": str(temp)})
        assert done.returncode == 0, done.stderr[-3000:]
        servers = client.run(_servers_of_this_worker)
        assert len(list((tmp_path / "results").glob("*/*/results.json"))) == 6
    per_worker = [len(found) for found in servers.values()]
    assert per_worker and all(n <= 1 for n in per_worker), servers
    assert sum(sent for found in servers.values() for _, sent in found) == 6, servers
    left = [p.name for p in temp.iterdir() if p.name.startswith("pallas-lab")]
    shutil.rmtree(temp, ignore_errors=True)
    assert not left


def test_a_symbolic_link_is_refused_on_dask_as_in_a_local_batch(
        scheduler: str, tmp_path: Path) -> None:
    """Red team: the spec sent the link's target, so a Dask worker graded a linked file
    (the solution: 100) that a local batch refuses (0)."""
    klass = tmp_path / "class"
    (klass / "mal").mkdir(parents=True)
    (klass / "mal" / f"{STEM}.py").symlink_to(SAMPLES / "ada_correct" / f"{STEM}.py")
    local, dask = tmp_path / "local", tmp_path / "dask"
    assert _grade(klass, local, "--jobs", "2").returncode == 0
    assert _grade(klass, dask, "--scheduler", scheduler).returncode == 0
    assert _scores(dask) == _scores(local)
    assert all(score == 0 for _, score in _scores(dask)["mal"])


def test_a_file_whose_grader_dies_on_dask_keeps_no_older_score_and_is_noted(
        scheduler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team: on Dask a grader that died left the score of the student's previous file
    in the gradebook (and a new student had no row at all), with no note."""
    from rich.console import Console

    from graders.batch import cluster
    from graders.batch.discovery import discover
    from graders.batch.run import run_batch
    from tests.batch import _dying_remote

    klass = _class(tmp_path / "class", {"abe": "ben_typical_mistakes", "ada": "ada_correct",
                                         "hal": "ada_correct"})
    out = tmp_path / "results"
    assert _grade(klass, out, "--jobs", "2").returncode == 0
    shutil.copy(SAMPLES / "ada_correct" / f"{STEM}.py", klass / "abe" / f"{STEM}.py")
    shutil.rmtree(out / "hal")
    monkeypatch.setattr(cluster, "grade_remote", _dying_remote.grade_remote)
    found = discover([klass])
    with distributed.Client(scheduler) as client:
        outcome = run_batch(found.submissions, out=out, jobs=1, timeout=10.0,
                            err=Console(stderr=True), client=client)
    assert any("abe" in e and "died" in e for e in outcome.errors), outcome.errors
    assert not (out / "abe" / STEM / "results.json").exists(), "the older file's score is gone"
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert f"grader died: {STEM}.py" in rows["abe"]["notes"]
    assert "hal" in rows and rows["hal"]["a1"] == "100", (rows, outcome)


def test_a_killed_client_stops_the_files_its_workers_are_grading(tmp_path: Path) -> None:
    """A TA's walk: after the batch's client was killed (SIGKILL: no stop event set), each
    Dask worker's grading server went on grading its file to the end, a result no one
    collects. The scheduler releases the client's tasks; a released task now stops its
    file's grader as the batch's stop would. Flash Attention files (a4, well over ten
    seconds of grading each) are killed a second into their grading; their graders' folders
    must be gone long before one of them could have finished."""
    temp = Path(tempfile.mkdtemp(prefix="pl-kill-", dir="/tmp"))
    a4 = "a4_flash_attention"
    klass = tmp_path / "class"
    for i in range(4):
        (klass / f"s{i}").mkdir(parents=True)
        shutil.copy(SAMPLES / "ada_correct" / f"{a4}.py", klass / f"s{i}" / f"{a4}.py")
    out = tmp_path / "results"
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, env={"TMPDIR": str(temp)},
                                      local_directory=str(tmp_path / "dask")) as cluster:
            client = subprocess.Popen(
                [*pallas_lab(), "grade", str(klass), "--out", str(out), "--scheduler",
                 cluster.scheduler_address], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(temp)})
            deadline = time.monotonic() + 300
            while not any(temp.glob("pallas-lab-grader-*")):
                assert time.monotonic() < deadline and client.poll() is None, "no file started"
                time.sleep(0.05)
            time.sleep(1.0)
            client.kill()
            client.wait(timeout=60)
            killed = time.monotonic()
            while any(temp.glob("pallas-lab-grader-*")) and time.monotonic() - killed < 60:
                time.sleep(0.1)
            took = time.monotonic() - killed
            assert not any(temp.glob("pallas-lab-grader-*")), "a grader is still at work"
            assert took < 10.0, f"the graders stopped {took:.1f} s after the client was killed"
            assert not list(out.glob("*/*/results.json")), "a stopped file keeps no result"
    finally:
        shutil.rmtree(temp, ignore_errors=True)
