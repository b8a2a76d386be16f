"""The nbgrader round trip with the real nbgrader commands and API."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from graders.nbgrader_course import write_course

ROOT = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"


@pytest.mark.slow
def test_generate_assignment_grade_submitted_and_read_the_gradebook(tmp_path: Path) -> None:
    course = tmp_path / "course"
    write_course(course)
    nbgrader = Path(sys.executable).parent / "nbgrader"
    command = [str(nbgrader)] if nbgrader.exists() else [sys.executable, "-m", "nbgrader"]
    # nbgrader shells out to `alembic` from its own environment: find it without activation.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    made = subprocess.run([*command, "generate_assignment", STEM, "--force"], cwd=course,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": path})
    assert made.returncode == 0, made.stderr
    released = course / "release" / STEM / f"{STEM}.ipynb"
    handout = nbformat.read(ROOT / "assignments" / f"{STEM}.ipynb", as_version=4)
    student_nb = nbformat.read(released, as_version=4)
    assert "### BEGIN SOLUTION" not in released.read_text(encoding="utf-8")
    given = [c.source for c in handout.cells if not c.metadata["nbgrader"]["solution"]]
    assert all(any(g == c.source for c in student_nb.cells) for g in given), (
        "nbgrader's release keeps every given cell of the handout")
    submitted = course / "submitted"
    for student, source in (("alice", None), ("bob", released)):
        folder = submitted / student / STEM
        folder.mkdir(parents=True)
        if source is None:
            solution = jupytext.reads((ROOT / "solutions" / f"{STEM}.py").read_text(
                encoding="utf-8"), fmt="py:percent")
            nbformat.write(solution, folder / f"{STEM}.ipynb")
        else:
            shutil.copyfile(source, folder / f"{STEM}.ipynb")
        (folder / "timestamp.txt").write_text("2026-11-30 12:00:00 UTC", encoding="utf-8")
    grade = subprocess.run([sys.executable, "-m", "graders.cli", "grade", str(course),
                            "--to-gradebook"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert grade.returncode == 0, grade.stdout + grade.stderr
    assert "wrote 10 task score(s)" in grade.stdout
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        alice = gradebook.find_submission(STEM, "alice")
        bob = gradebook.find_submission(STEM, "bob")
        assert (alice.score, alice.max_score) == (100, 100)
        assert (bob.score, bob.max_score) == (0, 100)
        cell = gradebook.find_grade("pallas_lab_task_1_3", STEM, STEM, "alice")
        assert (cell.auto_score, cell.max_score) == (25, 25)
