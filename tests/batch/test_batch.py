"""Batch grading of a class of 40: --jobs 2, killed half-way, resumed, same gradebook."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.samples import expected_points, expected_score

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
STEM = "a1_pallas_basics"
# a1 scores of the samples (examples/submissions/scores.toml)
KINDS = {kind: expected_score(kind, STEM) for kind in
         ("ada_correct", "ben_typical_mistakes", "cleo_untouched", "dev_broken")}


def make_class(root: Path) -> dict[str, float]:
    """40 students, ten of each sample kind; returns the expected a1 score per student."""
    expected = {}
    for i in range(40):
        kind = list(KINDS)[i % 4]
        student = f"s{i:02d}_{kind.split('_')[0]}"
        (root / student).mkdir(parents=True)
        shutil.copyfile(SAMPLES / kind / "a1_pallas_basics.py",
                        root / student / "a1_pallas_basics.py")
        expected[student] = KINDS[kind]
    return expected


def batch(klass: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "graders.cli.main", "grade", str(klass), "--jobs", "2", "--out",
         str(out), "--timeout", "5"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def read_gradebook(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_forty_students_killed_and_resumed_give_the_expected_gradebook(tmp_path: Path) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    expected = make_class(klass)
    first = batch(klass, out)
    deadline = time.monotonic() + 120
    while len(list(out.glob("*/*/results.json"))) < 10 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    done = {p: p.stat().st_mtime_ns for p in out.glob("*/*/results.json")}
    assert 10 <= len(done) < 40, "the batch was killed half-way"
    second = batch(klass, out)
    stdout, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    assert f"{len(done)} already had results" in stdout
    for path, mtime in done.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was graded again"
    book = read_gradebook(out / "gradebook.csv")
    assert {s: float(r["a1"]) for s, r in book.items()} == expected
    assert list(next(iter(book.values()))) == ["student", "1.1", "1.2", "1.3", "1.4", "1.5",
                                               "a1", "total", "a1 max", "a1 percent",
                                               "total max", "total percent"]
    ben = expected_points()["ben_typical_mistakes", STEM]
    assert {task: float(book["s01_ben"][task]) for task in ben} == ben
    from graders.batch.store import NOTES_FILE

    assert not [p for p in out.rglob("*") if p.name.startswith(".") and p.name != NOTES_FILE], (
        "the finished batch leaves no temporary files behind (its notes are a record)")
    before = (out / "gradebook.csv").read_text(encoding="utf-8")
    third = batch(klass, out)
    third.communicate(timeout=120)
    assert (out / "gradebook.csv").read_text(encoding="utf-8") == before, (
        "re-running a finished batch changes nothing")
