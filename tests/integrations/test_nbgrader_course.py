"""The nbgrader course with the real nbgrader commands: generate_assignment, autograde (which
runs only pallas-lab's tests cells, each grading its task in the sandboxed worker), export
and generate_feedback; and the scores pallas-lab writes into the gradebook itself."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from graders.grading.grade import grade_file
from graders.integrations.nbgrader.course import main as nbgrader_main
from graders.integrations.nbgrader.course import write_course
from graders.release.notebook import grade_cell_id

ROOT = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"
BIN = Path(sys.executable).parent
# nbgrader shells out to `alembic` from its own environment: find it without activation.
ENV = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}


def nbgrader(course: Path, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "nbgrader")] if (BIN / "nbgrader").exists() else [
        sys.executable, "-m", "nbgrader"]
    done = subprocess.run([*command, *args], cwd=course, capture_output=True, text=True,
                          timeout=600, env={**ENV, **(env or {})})
    assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def submit(course: Path, student: str, notebook: nbformat.NotebookNode, when: str) -> Path:
    folder = course / "submitted" / student / STEM
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{STEM}.ipynb")
    (folder / "timestamp.txt").write_text(when, encoding="utf-8")
    return folder / f"{STEM}.ipynb"


@pytest.mark.slow
def test_nbgrader_autograde_export_and_feedback_give_pallas_labs_scores(tmp_path: Path) -> None:
    """`nbgrader autograde` used to give an untouched notebook 100 (the tests cells were
    comments) and ran the student's cells in its own kernel. Now: untouched 0, solution 100,
    a late solution 100 raw minus nbgrader's late penalty (zero policy), a mistaken one
    its partial credit; each task's auto score equals `pallas-lab grade`'s on the same
    notebook, and no student cell runs outside the sandbox."""
    course = tmp_path / "course"
    made = subprocess.run([sys.executable, "-m", "graders.cli.main", "nbgrader", str(course),
                           "--due", "a1=2026-11-30 12:00:00 UTC"],
                          capture_output=True, text=True, timeout=300, env=ENV)
    assert made.returncode == 0 and made.stderr == "", made.stderr
    assert "due a1_pallas_basics: 2026-11-30 12:00:00 UTC" in made.stdout
    generated = nbgrader(course, "generate_assignment", STEM)
    released = nbformat.read(course / "release" / STEM / f"{STEM}.ipynb", as_version=4)
    tests = [c for c in released.cells if c.metadata["nbgrader"].get("grade")]
    assert len(tests) == 5 and all("grade_task" not in c.source for c in tests), (
        "the tests cells' calls are nbgrader hidden tests: the student sees the comment only")
    assert "pallas-lab check --task 1.1" in tests[0].source

    ran = tmp_path / "student-code-ran"
    untouched = nbformat.from_dict(released)
    untouched.cells.append(nbformat.v4.new_code_cell(
        f"import pathlib\npathlib.Path({str(ran)!r}).write_text('ran outside the sandbox')"))
    source = nbformat.read(course / "source" / STEM / f"{STEM}.ipynb", as_version=4)
    mistakes = jupytext.reads((ROOT / "examples" / "submissions" / "ben_typical_mistakes" /
                               f"{STEM}.py").read_text(encoding="utf-8"), fmt="py:percent")
    paths = {
        "cleo": submit(course, "cleo", untouched, "2026-11-29 12:00:00 UTC"),
        "ada": submit(course, "ada", source, "2026-11-29 12:00:00 UTC"),
        "ben": submit(course, "ben", mistakes, "2026-11-29 12:00:00 UTC"),  # no tests cells
        "lou": submit(course, "lou", source, "2026-12-01 12:00:00 UTC"),  # one day late
    }
    # a machine whose `python3` kernelspec is some other Python: autograde still uses its own
    kernels = tmp_path / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(
        '{"argv": ["/bin/false", "{connection_file}"], "display_name": "Python 3 (other)", '
        '"language": "python"}', encoding="utf-8")
    graded = nbgrader(course, "autograde", STEM, env={"JUPYTER_PATH": str(tmp_path / "jupyter")})
    output = generated.stdout + generated.stderr + graded.stdout + graded.stderr
    for noise in ("Warning", "Attribute 'checksum'", "Kernel is running over TCP", "not run"):
        assert noise not in output, f"{noise!r} in nbgrader's output:\n{output}"
    assert not ran.exists(), "a cell of the student's notebook ran in nbgrader's kernel"

    nbgrader(course, "export")
    with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    scores = {s: (float(r["raw_score"]), float(r["late_submission_penalty"]), float(r["score"]))
              for s, r in rows.items()}
    assert scores == {"cleo": (0, 0, 0), "ada": (100, 0, 100), "ben": (76, 0, 76),
                      "lou": (100, 100, 0)}, scores

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="pallas-lab") as book:
        for student in ("cleo", "ben"):
            result = grade_file(paths[student], student=student)  # what `pallas-lab grade` gives
            for task in result.tasks():
                cell = book.find_grade(grade_cell_id(task.task), STEM, STEM, student)
                assert (cell.auto_score, cell.max_score) == (task.points, task.max_points), (
                    f"{student} Task {task.task}: nbgrader {cell.auto_score}, "
                    f"pallas-lab {task.points}")

    nbgrader(course, "generate_feedback", STEM)
    feedback = (course / "feedback" / "ben" / STEM / f"{STEM}.html").read_text(encoding="utf-8")
    assert "Task 1.3 bias_add: 10/25 partial" in feedback, "partial credit with its feedback"
    ada = (course / "feedback" / "ada" / STEM / f"{STEM}.html").read_text(encoding="utf-8")
    assert "Task 1.1 add_kernel: 15/15 passed" in ada


def test_grade_task_grades_the_notebook_once_and_returns_each_tasks_points(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a tests cell runs: the points `pallas-lab grade` gives the task (ben's a1: 76 in
    all, 10/25 on Task 1.3), its feedback on stdout, nothing on stderr (nbgrader scores a
    cell with stderr output 0), and one grading of the notebook for all five cells."""
    import graders.grading.grade
    from graders.integrations.nbgrader import tests as nbgrader_tests

    mistakes = jupytext.reads((ROOT / "examples" / "submissions" / "ben_typical_mistakes" /
                               f"{STEM}.py").read_text(encoding="utf-8"), fmt="py:percent")
    folder = tmp_path / "ben"
    folder.mkdir()
    nbformat.write(mistakes, folder / f"{STEM}.ipynb")
    calls = []
    original = graders.grading.grade.grade_file
    monkeypatch.setattr(graders.grading.grade, "grade_file",
                        lambda *a, **k: calls.append(a) or original(*a, **k))
    monkeypatch.chdir(folder)
    points = {task: nbgrader_tests.grade_task(task) for task in ("1.1", "1.2", "1.3", "1.4",
                                                                  "1.5")}
    expected = {t.task: t.points for t in original(folder / f"{STEM}.ipynb").tasks()}
    assert points == expected and sum(points.values()) == 76, points
    assert len(calls) == 1, "the notebook is graded once for all its tests cells"
    out, err = capfd.readouterr()
    assert "Task 1.3 bias_add: 10/25 partial" in out
    assert err == "", f"stderr in a tests cell costs the task its points: {err!r}"
    with pytest.raises(KeyError, match="no assignment has a graded Task 9.9"):
        nbgrader_tests.grade_task("9.9")


def test_a_customised_course_is_not_overwritten_without_force(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    course = tmp_path / "course"
    assert nbgrader_main([str(course)]) == 0
    assert nbgrader_main([str(course)]) == 0, "writing the same course again is harmless"
    capsys.readouterr()
    config = course / "nbgrader_config.py"
    custom = config.read_text(encoding="utf-8") + "c.Execute.timeout = 60  # ours\n"
    config.write_text(custom, encoding="utf-8")
    notebook = course / "source" / "a2_pipelining" / "a2_pipelining.ipynb"
    notebook.write_text(notebook.read_text(encoding="utf-8").replace("Task", "TASK"),
                        encoding="utf-8")
    assert nbgrader_main([str(course)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nbgrader_config.py exists and differs" in err, err
    assert "(and 1 more); pass --force to replace it" in err, err
    assert config.read_text(encoding="utf-8") == custom and "TASK" in notebook.read_text(
        encoding="utf-8"), "nothing was written"
    assert nbgrader_main([str(course), "--force"]) == 0
    assert "# ours" not in config.read_text(encoding="utf-8")
    assert "TASK" not in notebook.read_text(encoding="utf-8")
    assert nbgrader_main([str(course), "--due", "a1=next week"]) == 2
    assert "'next week' is not a date and time" in capsys.readouterr().err


@pytest.mark.slow
def test_generate_assignment_grade_submitted_and_read_the_gradebook(tmp_path: Path) -> None:
    course = tmp_path / "course"
    write_course(course)
    nbgrader(course, "generate_assignment", STEM, "--force")
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
    grade = subprocess.run([sys.executable, "-m", "graders.cli.main", "grade", str(course),
                            "--to-gradebook"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert grade.returncode == 0, grade.stdout + grade.stderr
    assert "wrote 10 task score(s)" in grade.stdout
    assert "Warning" not in grade.stderr, "no SQLAlchemy warning from nbgrader's gradebook"
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        alice = gradebook.find_submission(STEM, "alice")
        bob = gradebook.find_submission(STEM, "bob")
        assert (alice.score, alice.max_score) == (100, 100)
        assert (bob.score, bob.max_score) == (0, 100)
        cell = gradebook.find_grade("pallas_lab_task_1_3", STEM, STEM, "alice")
        assert (cell.auto_score, cell.max_score) == (25, 25)


#: The PATH of a TA's shell where nothing is activated: the system's folders, no venv.
BARE_PATH = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin")
                            if Path(p).is_dir() and str(BIN) != p)


def test_the_course_and_its_due_dates_are_written_with_the_venvs_script_and_no_venv_on_path(
        tmp_path: Path) -> None:
    """A TA runs `.venv/bin/pallas-lab nbgrader course/ --due ...` by its path, nothing
    activated. nbgrader's gradebook runs `alembic` by name: it failed with "[Errno 2] No such
    file or directory: 'alembic'" (exit 2) after the course files were written. Now the
    due date is recorded, and `grade --to-gradebook` (which opens the same gradebook) works
    the same way."""
    script = BIN / "pallas-lab"
    assert script.exists(), (
        "the suite runs from the README's venv, whose pip install puts the pallas-lab "
        f"script beside the interpreter; there is none in {BIN}")
    env = {"HOME": str(tmp_path), "PATH": BARE_PATH, "LANG": "C.UTF-8"}
    course = tmp_path / "course"
    made = subprocess.run([str(script), "nbgrader", str(course), "--due",
                           "a1=2026-11-30 12:00:00 UTC"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert made.returncode == 0, made.stderr
    assert "alembic" not in made.stderr
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert str(gradebook.find_assignment(STEM).duedate) == "2026-11-30 12:00:00"
    nbgrader(course, "generate_assignment", STEM)
    folder = course / "submitted" / "alice" / STEM
    folder.mkdir(parents=True)
    nbformat.write(jupytext.reads((ROOT / "solutions" / f"{STEM}.py").read_text(
        encoding="utf-8"), fmt="py:percent"), folder / f"{STEM}.ipynb")
    grade = subprocess.run([str(script), "grade", str(course), "--to-gradebook"],
                           capture_output=True, text=True, timeout=300, env=env)
    assert grade.returncode == 0, grade.stdout + grade.stderr
    assert "wrote 5 task score(s)" in grade.stdout


def test_without_nbgraders_tools_nothing_is_written_and_the_message_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> None:
    """Where `alembic` is found neither beside this Python nor on PATH, the command stops
    before writing the course (it used to leave one without its due dates) and names the
    extra to install."""
    from graders.integrations.nbgrader import course as nbgrader_course

    monkeypatch.setattr(nbgrader_course, "_tool_folders", lambda: [str(tmp_path / "none")])
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    target = tmp_path / "course"
    assert nbgrader_main([str(target), "--due", "a1=2026-11-30 12:00:00 UTC"]) == 2
    err = capsys.readouterr().err
    assert "alembic" in err and "pallas-lab[course]" in err
    assert not target.exists(), "nothing written"
