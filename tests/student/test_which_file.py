"""One rule for which file is graded when ``<stem>.py`` and ``<stem>.ipynb`` both exist
(graders/student/which_file.py; docs/ta-guide.md, "Which file is graded").

The rule itself on a1's real handouts, then every path that uses it on a TA's side:
``pallas-lab grade`` on a student folder and a class folder (table, skipped lines and
the gradebook's notes column) and an nbgrader course (notebooks only, as nbgrader's own
autograde). The student's commands are in tests/student/test_which_file_student.py, the
Gradescope dry run in tests/integrations/test_gradescope_autograder.py.
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest

from graders.batch.discovery import discover
from graders.student import which_file
from graders.student.which_file import choose_file, choose_in, fingerprints_text

ROOT = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"
PY, NB = f"{STEM}.py", f"{STEM}.ipynb"
HANDOUT = ROOT / "assignments"
BEN = ROOT / "examples" / "submissions" / "ben_typical_mistakes" / PY


def handout(folder: Path, *names: str) -> Path:
    """Copies of the released handout files ``names`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(HANDOUT / name, folder / name)
    return folder


def filled_notebook(path: Path) -> Path:
    """The solution as a notebook (what a student who worked in Jupyter submits)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(jupytext.read(ROOT / "solutions" / PY), path)
    return path


def filled_py(path: Path, source: Path = ROOT / "solutions" / PY) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return path


def age(path: Path, seconds: float) -> None:
    """Set ``path``'s modification time ``seconds`` in the past."""
    when = path.stat().st_mtime - seconds
    os.utime(path, (when, when))


# -- the rule --------------------------------------------------------------------------------

def test_a_filled_notebook_beside_an_untouched_py_is_graded_and_the_note_says_why(
        tmp_path: Path) -> None:
    handout(tmp_path, PY)
    filled_notebook(tmp_path / NB)
    age(tmp_path / NB, 3600)  # older than the .py: the handout comparison decides, not time
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / NB
    assert choice.left_out == tmp_path / PY
    assert choice.note == f"graded {NB} ({PY} is unchanged from the handout)"


def test_a_filled_py_beside_an_untouched_notebook_is_graded(tmp_path: Path) -> None:
    handout(tmp_path, NB)
    filled_py(tmp_path / PY)
    age(tmp_path / PY, 3600)
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / PY
    assert choice.note == f"graded {PY} ({NB} is unchanged from the handout)"


@pytest.mark.parametrize("newer", [PY, NB])
def test_when_both_differ_the_newer_is_graded(tmp_path: Path, newer: str) -> None:
    filled_py(tmp_path / PY, BEN)
    filled_notebook(tmp_path / NB)
    older = NB if newer == PY else PY
    age(tmp_path / older, 60)
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / newer
    assert choice.note == (f"graded {newer} ({older} differs from the handout too, but "
                           f"{newer} was saved later)")


def test_on_gradescope_the_one_that_differs_more_is_graded_whatever_the_times(
        tmp_path: Path) -> None:
    """ben's .py changes fewer lines than the whole solution in the notebook."""
    filled_py(tmp_path / PY, BEN)
    filled_notebook(tmp_path / NB)
    age(tmp_path / NB, 60)  # the .py is newer: ignored here
    choice = choose_in(tmp_path, STEM, decide="changes")
    assert choice is not None and choice.graded == tmp_path / NB
    assert choice.note.startswith(f"graded {NB} ({PY} differs from the handout too; {NB} "
                                  "differs more from it: ")
    assert "changed lines against" in choice.note


def test_when_neither_differs_the_py_is_graded_and_it_is_not_started(tmp_path: Path) -> None:
    handout(tmp_path, PY, NB)
    age(tmp_path / PY, 60)  # the notebook is newer: still unchanged, so no reason to prefer it
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / PY
    assert choice.note == (f"graded {PY} ({PY} and {NB} are both unchanged from the handout: "
                           "not started)")


def test_a_notebook_run_and_saved_with_outputs_but_its_code_unchanged_is_unchanged(
        tmp_path: Path) -> None:
    """The code that would be graded is compared, not the JSON: outputs, execution counts
    and markdown edits make no difference; one changed code line does."""
    notebook = nbformat.read(HANDOUT / NB, as_version=4)
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type == "code":
            cell.execution_count = number
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        else:
            cell.source += "\n\nMy notes on this task."
    nbformat.write(notebook, tmp_path / NB)
    filled_py(tmp_path / PY)
    age(tmp_path / PY, 60)
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / PY, choice
    assert choice.note == f"graded {PY} ({NB} is unchanged from the handout)"

    code = next(c for c in notebook.cells if c.cell_type == "code"
                and "NotImplementedError" in c.source)
    code.source = code.source.replace('raise NotImplementedError("Need to implement for Task '
                                      '1.1")', "z_ref[...] = x_ref[...] + y_ref[...]")
    nbformat.write(notebook, tmp_path / NB)
    assert which_file.candidate(tmp_path / NB, STEM).changed == 1


def test_a_folder_named_like_the_py_is_no_candidate_and_is_said(tmp_path: Path) -> None:
    (tmp_path / PY).mkdir()
    filled_notebook(tmp_path / NB)
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / NB
    assert choice.problems == (f"{PY} is a folder, not a file: not graded",)
    assert choice.note == f"graded {NB} ({PY} is a folder, not a file: not graded)"


def test_a_broken_notebook_is_not_the_handout_and_says_why(tmp_path: Path) -> None:
    """A notebook that is not JSON is graded over the untouched .py (it is the student's
    work; its grading then says it is not a notebook) and the reason is kept."""
    handout(tmp_path, PY)
    (tmp_path / NB).write_text('{"cells": [', encoding="utf-8")
    found = which_file.candidate(tmp_path / NB, STEM)
    assert found.changed is None and found.differs
    assert found.problem.startswith(f"{NB} is not a Jupyter notebook")
    choice = choose_in(tmp_path, STEM)
    assert choice is not None and choice.graded == tmp_path / NB


def test_a_fifo_is_never_opened_and_an_unreadable_file_is_said(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / PY)  # opening it would block until a writer came
    assert which_file.candidate(tmp_path / PY, STEM).problem == (
        f"{PY}: not a regular file: it is a FIFO (named pipe)")
    (tmp_path / PY).unlink()
    filled_py(tmp_path / PY).write_bytes(b"x = '\xff'\n")
    assert which_file.candidate(tmp_path / PY, STEM).problem == (
        f"{PY} is not valid UTF-8 (byte 0xff at offset 5)")
    big = tmp_path / "big" / PY
    big.parent.mkdir()
    with open(big, "wb") as handle:
        handle.truncate(64 << 30)  # sparse: 64 GiB on paper, nothing read
    assert which_file.candidate(big, STEM).problem == (
        f"{PY}: file too large: {64 << 30} bytes, limit {1 << 20} (a submission may be at "
        "most 1 MiB as a .py file)")


def test_without_a_handout_to_compare_with_the_newer_file_is_graded(tmp_path: Path) -> None:
    (tmp_path / "t9_fake.py").write_text("x = 1\n", encoding="utf-8")
    filled_notebook(tmp_path / "t9_fake.ipynb")
    age(tmp_path / "t9_fake.py", 60)
    choice = choose_file([tmp_path / "t9_fake.py", tmp_path / "t9_fake.ipynb"], "t9_fake")
    assert choice.graded == tmp_path / "t9_fake.ipynb"
    assert choice.why == ("there is no handout of t9_fake to compare t9_fake.py with, but "
                          "t9_fake.ipynb was saved later")


def test_a_full_tie_goes_to_the_py(tmp_path: Path) -> None:
    py, nb = tmp_path / "t9_fake.py", tmp_path / "t9_fake.ipynb"
    py.write_text("x = 1\n", encoding="utf-8")
    filled_notebook(nb)
    os.utime(py, (1_000_000_000, 1_000_000_000))
    os.utime(nb, (1_000_000_000, 1_000_000_000))
    for decide, tie in (("mtime", "neither is newer nor further from it"),
                        ("changes", "neither is further from it")):
        choice = choose_file([nb, py], "t9_fake", decide=decide)
        assert choice.graded == py
        assert choice.why == (f"there is no handout of t9_fake to compare t9_fake.ipynb with; "
                              f"{tie}: the .py is graded")


def test_the_recorded_handouts_are_the_released_ones() -> None:
    recorded = (ROOT / "graders" / "student" / "handout_fingerprints.py").read_text(
        encoding="utf-8")
    assert recorded == fingerprints_text(HANDOUT), "run `pallas-lab release`"


# -- pallas-lab grade: student folder, class folder, gradebook notes ---------------------------

def test_grade_discovery_in_a_student_and_a_class_folder(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    handout(klass / "alice", PY)
    filled_notebook(klass / "alice" / NB)
    handout(klass / "bob", NB)
    filled_py(klass / "bob" / PY)
    handout(klass / "cleo", PY, NB)
    (klass / "dan" / PY).mkdir(parents=True)
    filled_notebook(klass / "dan" / NB)
    for found in (discover([klass]), discover([klass / "alice"])):
        alice = [s.file for s in found.submissions if s.student == "alice"]
        assert alice == [klass / "alice" / NB]
        assert found.notes["alice"] == [f"graded {NB} ({PY} is unchanged from the handout)"]
        assert (f"alice/{PY}: not graded, {NB} is ({PY} is unchanged from the handout)"
                in found.problems)
    found = discover([klass])
    graded = {s.student: s.file.name for s in found.submissions}
    assert graded == {"alice": NB, "bob": PY, "cleo": PY, "dan": NB}
    assert found.notes["bob"] == [f"graded {PY} ({NB} is unchanged from the handout)"]
    assert found.notes["cleo"] == [f"graded {PY} ({PY} and {NB} are both unchanged from the "
                                   "handout: not started)"]
    assert found.notes["dan"] == [f"not graded: {PY} (a folder, not a file)"]


def test_a_renamed_filled_notebook_beside_an_untouched_py_is_graded(tmp_path: Path) -> None:
    """A browser's copy name ("(1)") on the notebook does not make the untouched .py win."""
    alice = handout(tmp_path / "alice", PY)
    renamed = f"{STEM} (1).ipynb"
    filled_notebook(alice / renamed)
    found = discover([alice])
    assert [s.file.name for s in found.submissions] == [renamed]
    assert found.notes["alice"] == [f"graded {renamed} ({PY} is unchanged from the handout)",
                                    f"renamed: {renamed}"]


def test_grade_cli_grades_the_notebook_and_the_gradebook_notes_say_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from graders.cli.main import main

    klass = tmp_path / "class"
    handout(klass / "alice", PY)
    filled_notebook(klass / "alice" / NB)
    book = tmp_path / "gradebook.csv"
    assert main(["grade", str(klass), "--format", "csv", "--out", str(book),
                 "--timeout", "2"]) == 0
    captured = capsys.readouterr()
    said = " ".join((captured.out + captured.err).split())
    assert f"alice/{PY}: not graded, {NB} is ({PY} is unchanged from the handout)" in said, said
    rows = list(csv.DictReader(book.open(encoding="utf-8")))
    assert [(r["student"], r["a1"]) for r in rows] == [("alice", "100")], rows
    assert rows[0]["notes"] == f"graded {NB} ({PY} is unchanged from the handout)"


def test_an_nbgrader_course_grades_notebooks_only_as_nbgrader_does(tmp_path: Path) -> None:
    """nbgrader's autograde takes ``<notebook>.ipynb`` files only (its converters glob
    ``notebook_id + ".ipynb"``; a .py is copied along, never graded), so pallas-lab grade
    on the course does the same: the filled .py is skipped, with a note."""
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory

    course = tmp_path / "course"
    (course).mkdir()
    (course / "nbgrader_config.py").write_text("", encoding="utf-8")
    folder = handout(course / "submitted" / "alice" / STEM, NB)
    filled_py(folder / PY)
    found = discover([course])
    assert [s.file for s in found.submissions] == [folder / NB]
    assert found.notes["alice"] == [f"not graded: {PY} (nbgrader grades notebooks only: {NB})"]

    coursedir = CourseDirectory(root=str(course), assignment_id=STEM, student_id="alice")
    converter = Autograde(coursedir=coursedir)
    converter.init_notebooks()
    assert [Path(p).name for found in converter.assignments.values() for p in found] == [NB]
