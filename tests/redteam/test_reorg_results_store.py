"""Red-team pass after the reorganisation: the batch's results store and resume rule.

Each test shows a hole that was open before its fix (each failed there):

* a results.json the batch did not write is believed when its recorded SHA-256 matches
  the file (``graders.batch.schedule.is_current``): nothing ties a result to the grader
  that wrote it, and nothing stops ``--out`` from lying inside the class folder, where
  the students write. A careless TA (``--out CLASS``, or ``pallas-lab grade .`` run from
  inside the class folder, whose student named ``results`` then owns the results
  folder) gets a forged 100 in the gradebook for an untouched handout;
* a student folder holding ``<stem>.py`` and ``<stem>/<stem>.py`` gives two submissions
  of one (student, assignment), written to one results.json: the grade flips between
  runs and one file is dropped without a word.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"
HANDOUT = REPO / "assignments" / f"{STEM}.py"
SOLUTION = REPO / "solutions" / f"{STEM}.py"


def _grade(cwd: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="200", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "graders.cli.main", "grade",
                           *map(str, args), "--timeout", "5"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _forged_result(submission: Path) -> str:
    """What a student writes on their own machine: a results.json in pallas-lab's schema
    claiming 100 points, with the SHA-256 of the file they submit."""
    digest = hashlib.sha256(submission.read_bytes()).hexdigest()
    return json.dumps({
        "score": 100.0,
        "execution_time": 1.0,
        "tests": [{"number": task, "name": "forged", "score": float(points),
                   "max_score": float(points), "output": "", "tags": []}
                  for task, points in (("1.1", 15), ("1.2", 25), ("1.3", 25), ("1.4", 20),
                                       ("1.5", 15))],
        "extra_data": {"sandbox": "", "pallas_lab": {
            "file": submission.name, "sha256": digest, "load_error": None,
            "checks": [{"status": "passed", "reason": ""}] * 5}},
    })


def _rows(gradebook: Path) -> dict[str, dict[str, str]]:
    with open(gradebook, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_a_results_json_planted_in_the_students_folder_is_not_believed(tmp_path: Path) -> None:
    """``pallas-lab grade CLASS --jobs 1 --out CLASS``: the results of mallory land in
    CLASS/mallory/<stem>/results.json, her own folder. She planted one there: her
    untouched handout (0 points) must not be kept at 100."""
    klass = tmp_path / "class"
    mallory = klass / "mallory"
    (mallory / STEM).mkdir(parents=True)
    shutil.copyfile(HANDOUT, mallory / f"{STEM}.py")
    (mallory / STEM / "results.json").write_text(_forged_result(mallory / f"{STEM}.py"),
                                                 encoding="utf-8")
    run = _grade(tmp_path, klass, "--jobs", "1", "--out", klass)
    book = klass / "gradebook.csv"
    refused = run.returncode == 2 and not book.exists()
    assert refused or _rows(book)["mallory"]["a1"] == "0", (
        f"exit {run.returncode}; the forged result was kept: {_rows(book)['mallory']}\n"
        f"{run.stdout[-2000:]}{run.stderr[-2000:]}")


def test_a_student_folder_named_results_does_not_own_the_results(tmp_path: Path) -> None:
    """The TA grades from inside the class folder with the default ``--out results``
    (``cd class && pallas-lab grade . --jobs 1``). A student whose folder is called
    ``results`` then owns the results folder: a results.json planted there for bob (with
    the SHA-256 of bob's file, which is bob's own handout) and for themselves is kept, and
    the gradebook shows the forgeries."""
    klass = tmp_path / "class"
    bob = klass / "bob"
    bob.mkdir(parents=True)
    shutil.copyfile(HANDOUT, bob / f"{STEM}.py")
    attacker = klass / "results"
    attacker.mkdir()
    shutil.copyfile(HANDOUT, attacker / f"{STEM}.py")
    for name, file in (("bob", bob / f"{STEM}.py"), ("results", attacker / f"{STEM}.py")):
        (attacker / name / STEM).mkdir(parents=True)
        (attacker / name / STEM / "results.json").write_text(_forged_result(file),
                                                             encoding="utf-8")
    run = _grade(klass, ".", "--jobs", "1")
    book = attacker / "gradebook.csv"
    if run.returncode == 2 and not book.exists():
        return  # refused: the results folder is a student's
    rows = _rows(book)
    assert rows["bob"]["a1"] == "0" and rows["results"]["a1"] == "0", (
        f"exit {run.returncode}; forged rows kept: bob {rows['bob']}, results "
        f"{rows['results']}\n{run.stdout[-2000:]}{run.stderr[-2000:]}")


def test_one_student_gets_one_submission_per_assignment(tmp_path: Path) -> None:
    """alice/a1_pallas_basics.py (the handout) beside alice/a1_pallas_basics/
    a1_pallas_basics.py (the solution): discovery makes two submissions of one (student,
    assignment) and says nothing. Both are written to one results.json, so the grade is
    whichever finished last, and every rerun grades the other one again (the grade
    flips: 100, then 0, measured with --jobs 2). One must be graded and the other
    listed as skipped, as for any other pair of files."""
    from graders.batch.discovery import discover

    alice = tmp_path / "class" / "alice"
    (alice / STEM).mkdir(parents=True)
    shutil.copyfile(HANDOUT, alice / f"{STEM}.py")
    shutil.copyfile(SOLUTION, alice / STEM / f"{STEM}.py")
    shutil.copytree(alice, tmp_path / "class" / "bob")
    found = discover([tmp_path / "class"])
    keys = [(s.student, s.stem) for s in found.submissions]
    assert len(keys) == len(set(keys)), (
        f"two submissions share a results.json: {[str(s.file) for s in found.submissions]}; "
        f"problems {found.problems}, notes {found.notes}")


@pytest.mark.parametrize("jobs", ["2"])
def test_a_batch_rerun_of_an_unchanged_class_keeps_the_gradebook(tmp_path: Path,
                                                                  jobs: str) -> None:
    """The same class graded twice into one --out, nothing changed in between: the second
    run must find every result current and leave the gradebook as it was."""
    alice = tmp_path / "class" / "alice"
    (alice / STEM).mkdir(parents=True)
    shutil.copyfile(HANDOUT, alice / f"{STEM}.py")
    shutil.copyfile(SOLUTION, alice / STEM / f"{STEM}.py")
    out = tmp_path / "out"
    first = _grade(tmp_path, tmp_path / "class", "--jobs", jobs, "--out", out)
    before = (out / "gradebook.csv").read_text(encoding="utf-8")
    second = _grade(tmp_path, tmp_path / "class", "--jobs", jobs, "--out", out)
    after = (out / "gradebook.csv").read_text(encoding="utf-8")
    assert before == after and "graded 0 student(s)" in second.stdout, (
        f"first run:\n{before}\n{first.stdout[-600:]}\nsecond run:\n{after}\n"
        f"{second.stdout[-600:]}")
