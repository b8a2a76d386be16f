"""`pallas-lab grade --roster EXPORT --format canvas|moodle|blackboard`: grades back into
the LMS, round-tripped.

Each test starts from an LMS export the roster reader accepts (tests/helpers/lms_rosters.py,
the layouts tests/cli/test_grade_options.py reads), grades a small class of the fake
one-task lab through the real command line, and reads the import file back as that LMS
would: its key column holds the roster's identifiers, every roster student has a row
(or is listed in the side file, with a warning), and the scores are the final ones.
Before this change ``--format`` knew only table, gradescope and csv (exit status 2).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.fake_lab import GOOD, STUB, write
from tests.helpers.lms_rosters import (
    BLACKBOARD,
    CANVAS,
    MOODLE,
    read_canvas_import,
    read_keyed_import,
    read_side_file,
    write_roster,
)

#: The fake lab's column when the roster has none of its own.
NEW_COLUMN = "t9 Fake assignment"


def _class(root: Path, folders: dict[str, str]) -> Path:
    for folder, source in folders.items():
        write(root / folder, "t9_fake.py", source)
    return root


def test_canvas_import_is_keyed_by_the_roster_and_holds_final_scores(
        tmp_path: Path, fake_assignment: Assignment,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Canvas: Student, ID, SIS User ID, SIS Login ID, Section, then the assignment (a new
    column, named after it, and the roster's own "Fake assignment (456)" column reused),
    and the Points Possible row. Jane scores 100, John's 0 is set to 55 by an adjustment
    (the final score, as the gradebook's), Rita did not submit (an empty cell), and zed,
    not on the roster, is in the side file with a warning."""
    lines = CANVAS.splitlines()
    canvas = "\n".join([lines[0] + ",Fake assignment (456)", *(f"{x}," for x in lines[1:])])
    roster = write_roster(tmp_path / "canvas_export.csv", canvas)
    klass = _class(tmp_path / "class", {"smithjane": GOOD, "jdoe": STUB, "zed": GOOD})
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text("student,item,points,delta,reason,who,regrade\n"
                           "jdoe,t9,55,,agreed by hand,TA Kim,\n", encoding="utf-8")
    out = tmp_path / "to_canvas.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "canvas",
                 "--out", str(out), "--timeout", "2", "--adjustments", str(adjustments)]) == 0
    captured = capsys.readouterr()
    book_path = tmp_path / "book.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "csv",
                 "--out", str(book_path), "--timeout", "2",
                 "--adjustments", str(adjustments)]) == 0
    header = next(csv.reader(out.open(newline="", encoding="utf-8")))
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                      "Fake assignment (456)"], header
    points, rows = read_canvas_import(out)
    assert points["Fake assignment (456)"] == "100"
    assert sorted(rows) == ["11", "12", "13"], "every roster student, keyed by Canvas's ID"
    assert [(rows[k]["Student"], rows[k]["SIS Login ID"], rows[k]["Section"])
            for k in ("11", "12", "13")] == [
        ("Smith, Jane", "jsmith", "Sec 1"), ("Doe, John", "jdoe", "Sec 1"),
        ("Roe, Rita", "rroe", "Sec 1")]
    assert {k: r["Fake assignment (456)"] for k, r in rows.items()} == {
        "11": "100", "12": "55", "13": ""}
    with open(book_path, newline="", encoding="utf-8") as handle:
        book = {r["student"]: r for r in csv.DictReader(handle)}
    assert book["jdoe"]["t9"] == "55" and book["smithjane"]["t9"] == "100", (
        "the import file holds the gradebook's final scores")
    side = read_side_file(tmp_path / "to_canvas_unmatched.csv")
    assert side["zed"]["reason"].startswith("not on the roster") and side["zed"]["t9"] == "100"
    assert "canvas: folder 'zed': not on the roster" in " ".join(captured.err.split())
    assert "3 roster student(s), 2 with a final score, 1 without a submission" in " ".join(
        captured.out.split())
    # A TA's walk: without --jobs the export graded everything again and printed none of
    # the roster's notes a batch prints; both are said now.
    err = " ".join(captured.err.split())
    assert "rroe: missing: no submission" in err, err
    assert "with --jobs N and --results DIR (a class graded before) it is read back" in err


def test_canvas_names_a_new_assignment_column_after_the_assignment(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    """The roster's export has no column of the fake lab (only "A1 (123)", another
    assignment): a new column, "t9 Fake assignment", with its points in Points Possible;
    the roster's other assignment columns are not copied."""
    roster = write_roster(tmp_path / "canvas_export.csv", CANVAS)
    klass = _class(tmp_path / "class", {"jdoe": GOOD})
    out = tmp_path / "to_canvas.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "canvas",
                 "--out", str(out), "--timeout", "2"]) == 0
    points, rows = read_canvas_import(out)
    assert list(points)[-1] == NEW_COLUMN and points[NEW_COLUMN] == "100"
    assert "A1 (123)" not in points
    assert {k: r[NEW_COLUMN] for k, r in rows.items()} == {"11": "", "12": "100", "13": ""}


def test_moodle_import_is_keyed_by_id_number(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    """Moodle: its export's identity columns (First name ... Email address), keyed by ID
    number (Moodle's "Map from: ID number, Map to: useridnumber"); Moodle download folders
    match the roster by their name."""
    roster = write_roster(tmp_path / "moodle_export.csv", MOODLE)
    klass = _class(tmp_path / "class", {"Jane Smith_991_assignsubmission_file_": GOOD,
                                        "John Doe_992_assignsubmission_file_": STUB})
    out = tmp_path / "to_moodle.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "moodle",
                 "--out", str(out), "--timeout", "2"]) == 0
    header = next(csv.reader(out.open(newline="", encoding="utf-8")))
    assert header == ["First name", "Last name", "ID number", "Institution", "Department",
                      "Email address", NEW_COLUMN]
    rows = read_keyed_import(out, "ID number")
    assert {k: (r["Email address"], r[NEW_COLUMN]) for k, r in rows.items()} == {
        "S001": ("jane.smith@uni.example", "100"), "S002": ("jdoe@uni.example", "0")}
    assert read_side_file(tmp_path / "to_moodle_unmatched.csv") == {}


def test_blackboard_import_is_keyed_by_username_and_lists_who_has_none(
        tmp_path: Path, fake_assignment: Assignment,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Blackboard: Last Name, First Name, Username, Student ID, every cell quoted. Jane has
    no Username on the roster, so Blackboard could not place her row: she is left out of
    the import file, with a warning and her score in the side file."""
    roster = write_roster(tmp_path / "bb_export.csv", BLACKBOARD)
    klass = _class(tmp_path / "class", {"jdoe": GOOD, "Jane Smith": STUB})
    out = tmp_path / "to_bb.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "blackboard",
                 "--out", str(out), "--timeout", "2"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    text = out.read_text(encoding="utf-8")
    assert text.splitlines()[0] == ('"Last Name","First Name","Username","Student ID",'
                                    f'"{NEW_COLUMN}"')
    assert text.splitlines()[1:] == ['"Doe","John","jdoe","S002","100"'], text
    rows = read_keyed_import(out, "Username")
    assert list(rows) == ["jdoe"]
    side = read_side_file(tmp_path / "to_bb_unmatched.csv")
    assert side["Jane Smith"]["kind"] == "roster student"
    assert side["Jane Smith"]["t9"] == "0" and "no 'Username'" in side["Jane Smith"]["reason"]
    assert "blackboard: roster student 'Jane Smith': no 'Username'" in err


@pytest.mark.parametrize(("roster_text", "expected"), [
    (None, "--format canvas needs --roster"),
    ("student\nalice\n", "--format canvas needs a roster exported from Canvas"),
])
def test_an_lms_format_without_a_roster_of_that_lms_is_refused_before_grading(
        tmp_path: Path, fake_assignment: Assignment, no_grading: None,
        capsys: pytest.CaptureFixture[str], roster_text: str | None, expected: str) -> None:
    """No roster, or one without any of Canvas's keys (ID, SIS User ID, SIS Login ID):
    exit status 2, one line, nothing graded or written."""
    klass = _class(tmp_path / "class", {"alice": GOOD})
    argv = ["grade", str(klass), "--format", "canvas", "--out", str(tmp_path / "c.csv")]
    if roster_text is not None:
        argv += ["--roster", str(write_roster(tmp_path / "roster.csv", roster_text))]
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err and "nothing was graded" in err, err
    assert not (tmp_path / "c.csv").exists()


def test_a_batch_writes_the_import_file_beside_its_results_with_the_late_policy_applied(
        tmp_path: Path) -> None:
    """A batch (``--jobs``) with a late policy: the results and gradebook.csv go to
    ``<out>_results/``, and the import file holds the gradebook's final score (the real
    a1 solution, two days late at 10% a day: 80), not the raw 100."""
    from tests.helpers.late_class import DAY, DUE, DUE_EPOCH, STEM, _put, grade

    klass = tmp_path / "class"
    _put(klass / "jdoe" / f"{STEM}.py", solution=True, when=DUE_EPOCH + 2 * DAY - 60)
    roster = write_roster(tmp_path / "canvas.csv", CANVAS.replace("A1 (123)",
                                                                  "Pallas basics (123)"))
    out = tmp_path / "to_canvas.csv"
    run = grade(klass, "--jobs", "1", "--roster", roster, "--format", "canvas", "--out", out,
                "--due", f"a1={DUE}", "--late-policy", "percent", "--late-rate", "10")
    assert run.returncode == 0, run.stderr[-3000:]
    with open(tmp_path / "to_canvas_results" / "gradebook.csv", newline="",
              encoding="utf-8") as handle:
        book = {r["student"]: r for r in csv.DictReader(handle)}
    assert (book["jdoe"]["a1 raw"], book["jdoe"]["a1"]) == ("100", "80"), book["jdoe"]
    points, rows = read_canvas_import(out)
    assert points["Pallas basics (123)"] == "100", "the roster's own a1 column is updated"
    assert {k: r["Pallas basics (123)"] for k, r in rows.items()} == {
        "11": "", "12": "80", "13": ""}


def test_moodle_is_keyed_by_email_when_the_id_numbers_are_empty(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    """An institution that leaves Moodle's ID number empty: the import is keyed by the
    e-mail address (Moodle's "Map to: useremail"), the column filled in for the most
    students, rather than setting every student aside."""
    roster = write_roster(tmp_path / "moodle_export.csv", MOODLE.replace("S001", "")
                          .replace("S002", ""))
    klass = _class(tmp_path / "class", {"Jane Smith_991_assignsubmission_file_": GOOD})
    out = tmp_path / "to_moodle.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "moodle",
                 "--out", str(out), "--timeout", "2"]) == 0
    rows = read_keyed_import(out, "Email address")
    assert {k: r[NEW_COLUMN] for k, r in rows.items()} == {
        "jane.smith@uni.example": "100", "jdoe@uni.example": ""}


def test_a_one_student_regrade_exports_the_whole_results_folder(tmp_path: Path) -> None:
    """Found in review: the import file held only the students of this run's PATHs, so a
    regrade of one folder into the class's results wrote every classmate's cell empty,
    while gradebook.csv (rebuilt from every results.json) kept their scores. The import
    file is written from the same results as the gradebook. A TA's walk then found the
    classmates' late penalties lost in it (their submission times are the ones recorded
    with their results: this run did not find their files): jdoe, two days late, is 80
    in the gradebook and must be 80 in the import file too, not 100."""
    from tests.helpers.late_class import DAY, DUE, DUE_EPOCH, STEM, _put, grade

    klass = tmp_path / "class"
    _put(klass / "jdoe" / f"{STEM}.py", solution=True, when=DUE_EPOCH + 2 * DAY - 60)
    _put(klass / "jsmith" / f"{STEM}.py", solution=False, when=DUE_EPOCH)
    roster = write_roster(tmp_path / "canvas.csv", CANVAS.replace("A1 (123)",
                                                                  "Pallas basics (123)"))
    out = tmp_path / "to_canvas.csv"
    late = ("--due", f"a1={DUE}", "--late-policy", "percent", "--late-rate", "10")
    first = grade(klass, "--jobs", "1", "--roster", roster, "--format", "canvas", "--out", out,
                  *late)
    assert first.returncode == 0, first.stderr[-3000:]
    _, rows = read_canvas_import(out)
    assert {k: r["Pallas basics (123)"] for k, r in rows.items()} == {
        "11": "0", "12": "80", "13": ""}
    again = grade(klass / "jsmith", "--jobs", "1", "--force", "--roster", roster,
                  "--format", "canvas", "--out", out, *late)
    assert again.returncode == 0, again.stderr[-3000:]
    _, rows = read_canvas_import(out)
    assert {k: r["Pallas basics (123)"] for k, r in rows.items()} == {
        "11": "0", "12": "80", "13": ""}
    with open(tmp_path / "to_canvas_results" / "gradebook.csv", newline="",
              encoding="utf-8") as handle:
        book = {r["student"]: r for r in csv.DictReader(handle)}
    assert book["jdoe"]["a1"] == "80"
    # The same walk: the classmates of the regraded folder were each noted "missing".
    assert "missing" not in book["jdoe"].get("notes", ""), book["jdoe"]
    assert "jdoe: missing" not in again.stderr and "rroe: missing" in again.stderr, (
        again.stderr[-2000:])


def test_exporting_a_class_graded_before_reads_its_results_back(tmp_path: Path) -> None:
    """A TA's walk: the class was graded into results/ (``--jobs --out results``); the
    export then always graded the class again into ``<out>_results/``. ``--results`` (or
    the course config's ``out``) names the results folder the export reads: nothing is
    regraded, the scores are the ones graded."""
    from tests.helpers.late_class import DUE_EPOCH, STEM, _put, grade

    klass = tmp_path / "class"
    _put(klass / "jdoe" / f"{STEM}.py", solution=True, when=DUE_EPOCH)
    _put(klass / "jsmith" / f"{STEM}.py", solution=False, when=DUE_EPOCH)
    roster = write_roster(tmp_path / "canvas.csv", CANVAS.replace("A1 (123)",
                                                                  "Pallas basics (123)"))
    results = tmp_path / "results"
    first = grade(klass, "--jobs", "1", "--out", results)
    assert first.returncode == 0, first.stderr[-3000:]
    out = tmp_path / "to_canvas.csv"
    export = grade(klass, "--jobs", "1", "--results", results, "--roster", roster,
                   "--format", "canvas", "--out", out)
    assert export.returncode == 0, export.stderr[-3000:]
    assert "graded 0 student(s), 2 already had results" in " ".join(
        (export.stdout + export.stderr).split()), export.stdout[-2000:]
    assert not (tmp_path / "to_canvas_results").exists()
    _, rows = read_canvas_import(out)
    assert {k: r["Pallas basics (123)"] for k, r in rows.items()} == {
        "11": "0", "12": "100", "13": ""}
    # The same walk: the roster student without a submission had an empty total in the
    # batch's gradebook (0 in a single run's): no submission scores 0 of the maximum.
    with open(results / "gradebook.csv", newline="", encoding="utf-8") as handle:
        missing = [r for r in csv.DictReader(handle) if "no submission" in r.get("notes", "")]
    assert len(missing) == 1 and missing[0]["a1"] == "", missing
    assert (missing[0]["total"], missing[0]["total percent"]) == ("0", "0"), missing
    # the course config's out is the batch's results folder for every format
    (tmp_path / "pallas-lab.toml").write_text('out = "results"\njobs = 1\n', encoding="utf-8")
    moodle = write_roster(tmp_path / "moodle_export.csv", MOODLE)
    again = grade(klass, "--roster", moodle, "--format", "moodle", "--out",
                  tmp_path / "to_moodle.csv", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "graded 0 student(s), 2 already had results" in " ".join(
        (again.stdout + again.stderr).split()), again.stdout[-2000:]
    assert not (tmp_path / "to_moodle_results").exists()


@pytest.mark.parametrize("argv, expected", [
    (["--results", "r"], "--results names a batch's results folder: add --jobs N"),
    (["--results", "r", "--jobs", "1"], "--results is for --format csv or an LMS format"),
])
def test_results_without_a_batch_or_with_the_table_is_refused(
        tmp_path: Path, fake_assignment: Assignment, argv: list[str], expected: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    klass = _class(tmp_path / "class", {"jdoe": GOOD})
    assert main(["grade", str(klass), *argv]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert expected in err and "nothing was graded" in err, err
