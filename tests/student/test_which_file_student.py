"""`pallas-lab check`, `check --task` and `status` check the file the grader grades
(graders/student/which_file.py, the one rule) and say which and why.

Before the rule they used `<stem>.py` whenever it existed, so a notebook the student
had filled showed "not started".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext

from graders.release.bundle import shipped_files

ROOT = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"
PY, NB = f"{STEM}.py", f"{STEM}.ipynb"


def pallas_lab(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graders.student.cli", *args], cwd=cwd,
                          text=True, capture_output=True, timeout=timeout,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200"})


def workspace(folder: Path, *, notebook_filled: bool) -> Path:
    """A student's folder: one of the pair filled (the solution), the other the handout."""
    folder.mkdir(parents=True, exist_ok=True)
    if notebook_filled:
        shutil.copyfile(ROOT / "assignments" / PY, folder / PY)
        jupytext.write(jupytext.read(ROOT / "solutions" / PY), folder / NB)
        stale = folder / NB  # saved before the .py: the handout comparison decides
    else:
        shutil.copyfile(ROOT / "assignments" / NB, folder / NB)
        shutil.copyfile(ROOT / "solutions" / PY, folder / PY)
        stale = folder / PY
    when = stale.stat().st_mtime - 3600
    os.utime(stale, (when, when))
    return folder


def test_check_task_checks_the_filled_notebook_beside_an_untouched_py(tmp_path: Path) -> None:
    folder = workspace(tmp_path / "work", notebook_filled=True)
    run = pallas_lab("check", "--task", "1.1", cwd=folder)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"a1 Pallas basics — {NB}" in run.stdout
    assert f"graded {NB} ({PY} is unchanged from the handout)" in run.stdout
    assert "Task 1.1 add_kernel: passed" in run.stdout


def test_check_and_status_use_the_filled_py_beside_an_untouched_notebook(
        tmp_path: Path) -> None:
    folder = workspace(tmp_path / "work", notebook_filled=False)
    check = pallas_lab("check", cwd=folder)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"a1 Pallas basics — {PY}" in check.stdout and check.stdout.count(": passed") == 5
    assert f"graded {PY} ({NB} is unchanged from the handout)" in check.stdout
    status = pallas_lab("status", str(folder), cwd=tmp_path)
    assert status.returncode == 0, status.stdout + status.stderr
    row = next(line for line in status.stdout.splitlines() if "a1 Pallas basics" in line)
    assert PY in row and "5/5" in row, row
    assert f"a1: graded {PY} ({NB} is unchanged from the handout)" in status.stdout


def test_status_shows_the_notebook_graded_and_check_on_the_other_file_warns(
        tmp_path: Path) -> None:
    folder = workspace(tmp_path / "work", notebook_filled=True)
    status = pallas_lab("status", cwd=folder)
    assert status.returncode == 0, status.stdout + status.stderr
    row = next(line for line in status.stdout.splitlines() if "a1 Pallas basics" in line)
    assert NB in row and "5/5" in row, row
    assert f"a1: graded {NB} ({PY} is unchanged from the handout)" in status.stdout
    named = pallas_lab("check", PY, "--task", "1.1", cwd=folder)
    assert named.returncode == 1 and "Task 1.1 add_kernel: not started" in named.stdout
    assert (f"the grader grades {NB}, not this file ({PY} is unchanged from the handout); "
            f"check that one: pallas-lab check {NB}") in named.stdout


def test_a_folder_named_like_the_handout_gets_a_clear_message(tmp_path: Path) -> None:
    (tmp_path / PY).mkdir()
    run = pallas_lab("check", PY, cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip() == f"pallas-lab check: {PY} is a folder, not a file"


def test_the_bundle_ships_the_record_of_the_handouts() -> None:
    shipped = {p.as_posix() for p in shipped_files(ROOT)}
    assert {"graders/student/which_file.py",
            "graders/student/handout_fingerprints.py"} <= shipped
