"""Red team: a student against the roster match and the LMS import files
(``pallas-lab grade --roster EXPORT --format csv|canvas|moodle|blackboard``).

Folder names are the students' (and, on Moodle, so are display names); roster cells come
from an export a student's profile fields fill. Each test grades a small class of the fake
one-task lab through the real command line; all fail before ``--format
canvas|moodle|blackboard`` existed. The roster match itself is attacked in
tests/redteam/test_roster_lookalikes.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.csv_cells import formula_cells
from tests.helpers.fake_lab import GOOD, STUB, write
from tests.helpers.lms_rosters import (
    CANVAS,
    read_canvas_import,
    read_keyed_import,
    read_side_file,
    write_roster,
)

#: "Kim Lee" with U+212A KELVIN SIGN for the K (case-folds to "kimlee").
KELVIN_KIM = "\u212aim Lee"
NEW_COLUMN = "t9 Fake assignment"


def _grade(klass: Path, *args: object) -> int:
    return main(["grade", str(klass), "--timeout", "2", *map(str, args)])


def test_a_lookalike_folder_gets_no_classmates_moodle_row(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    """The same attack on the Moodle import: Kim's row (ID number S1) stays empty, and
    Mallory's look-alike folder, with her 100, goes to the side file."""
    klass = tmp_path / "class"
    mallory = f"{KELVIN_KIM}_456_assignsubmission_file_"
    write(klass / mallory, "t9_fake.py", GOOD)
    roster = write_roster(tmp_path / "moodle.csv",
                          "First name,Last name,ID number,Email address\n"
                          "Kim,Lee,S1,kim@uni.example\n")
    out = tmp_path / "moodle_import.csv"
    assert _grade(klass, "--roster", roster, "--format", "moodle", "--out", out) == 0
    assert read_keyed_import(out, "ID number")["S1"][NEW_COLUMN] == ""
    side = read_side_file(tmp_path / "moodle_import_unmatched.csv")
    assert side[mallory]["t9"] == "100" and "not on the roster" in side[mallory]["reason"]


def test_a_folder_named_as_a_classmates_login_does_not_take_their_canvas_row(
        tmp_path: Path, fake_assignment: Assignment,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Jane Smith (login jsmith) submits as "Jane Smith" and scores 0; Mallory, not on the
    roster, names her folder "jsmith" and scores 100. Both folders mean Jane's roster
    entry, so neither is given her row: it stays empty, both folders go to the side file
    with their scores, and the TA is warned about each."""
    klass = tmp_path / "class"
    write(klass / "Jane Smith", "t9_fake.py", STUB)
    write(klass / "jsmith", "t9_fake.py", GOOD)
    roster = write_roster(tmp_path / "canvas.csv", CANVAS)
    out = tmp_path / "canvas_import.csv"
    assert _grade(klass, "--roster", roster, "--format", "canvas", "--out", out) == 0
    err = " ".join(capsys.readouterr().err.split())
    _, rows = read_canvas_import(out)
    assert rows["11"][NEW_COLUMN] == "", "Jane's row is taken by nobody"
    side = read_side_file(tmp_path / "canvas_import_unmatched.csv")
    assert (side["jsmith"]["t9"], side["Jane Smith"]["t9"]) == ("100", "0"), side
    assert "several folders match this roster entry" in side["jsmith"]["reason"] or (
        "also matches another folder" in side["jsmith"]["reason"]), side
    assert "canvas: folder 'jsmith'" in err and "canvas: folder 'Jane Smith'" in err


#: Per LMS: a roster whose cells start formulas (a student's profile fields), and the folder
#: that matches its one student.
HOSTILE = {
    "canvas": ('Student,ID,SIS User ID,SIS Login ID,Section\n'
               '"=HYPERLINK(""http://x"",""y"")",11,+S001,@jsmith,"-Sec;=1+2"\n', "jsmith"),
    "moodle": ('First name,Last name,ID number,Institution,Department,Email address\n'
               '=Jane,+Smith,S001,@inst,"a;=b",jane@uni.example\n',
               "=Jane +Smith_991_assignsubmission_file_"),
    "blackboard": ('"Last Name","First Name","Username","Student ID"\n'
                   '"@Smith","=Jane","jdoe","-2+3"\n', "jdoe"),
}


@pytest.mark.parametrize("lms", sorted(HOSTILE))
def test_no_cell_of_an_import_file_or_its_side_file_starts_a_formula(
        tmp_path: Path, fake_assignment: Assignment, lms: str) -> None:
    """Roster cells and folder names that start formulas (after any separator, too) are
    neutralised as the gradebook neutralises them (``graders.safety.safe_text.csv_text``):
    no cell of the import file or of the side file starts a formula, whatever separator a
    spreadsheet splits on; the student's score is still there."""
    text, folder = HOSTILE[lms]
    klass = tmp_path / "class"
    write(klass / folder, "t9_fake.py", GOOD)
    write(klass / "x;=1+2;", "t9_fake.py", GOOD)  # not on the roster: the side file
    roster = write_roster(tmp_path / "roster.csv", text)
    out = tmp_path / "import.csv"
    assert _grade(klass, "--roster", roster, "--format", lms, "--out", out) == 0
    for path in (out, tmp_path / "import_unmatched.csv"):
        found = formula_cells(path.read_text(encoding="utf-8"))
        assert not found, f"{path.name}: {found[:6]}\n{path.read_text(encoding='utf-8')}"
    assert "100" in out.read_text(encoding="utf-8").splitlines()[-1]
    assert "x;'=1+2;" in read_side_file(tmp_path / "import_unmatched.csv")


def test_a_key_that_starts_a_formula_is_set_aside_not_altered(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    """A Blackboard Username "-jdoe" would be written "'-jdoe" to stay safe in a
    spreadsheet, and then name nobody (or, where the LMS trims, somebody else): the row
    goes to the side file instead, with its score."""
    klass = tmp_path / "class"
    write(klass / "jdoe", "t9_fake.py", GOOD)
    roster = write_roster(tmp_path / "bb.csv", '"Last Name","First Name","Username"\n'
                                               '"Doe","John","-jdoe"\n')
    out = tmp_path / "bb_import.csv"
    assert _grade(klass, "--roster", roster, "--format", "blackboard", "--out", out) == 0
    assert out.read_text(encoding="utf-8").splitlines()[1:] == []
    side = read_side_file(tmp_path / "bb_import_unmatched.csv")
    assert [(row["kind"], row["t9"]) for row in side.values()] == [("roster student", "100")]


# --- found by a second red team -------------------------------------------------------


def test_a_name_holding_points_possible_is_never_a_canvas_data_row(
        tmp_path: Path, fake_assignment: Assignment,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Mallory sets her sortable name to "Points Possible, Mallory". Canvas reads any row
    whose first cell holds "Points Possible" as the points row (its importer), so her row
    would set every assignment's maximum (to her score: the class's 100s become extra
    credit). Observed: her row written after the real points row. Expected: set aside,
    named in the side file and a warning."""
    klass = tmp_path / "class"
    write(klass / "jsmith", "t9_fake.py", GOOD)
    write(klass / "mallory", "t9_fake.py", STUB)
    roster = write_roster(tmp_path / "canvas.csv",
                          "Student,ID,SIS User ID,SIS Login ID,Section\n"
                          "    Points Possible,,,,\n"
                          '"Smith, Jane",11,S001,jsmith,Sec 1\n'
                          '"Points Possible, Mallory",14,S004,mallory,Sec 1\n')
    out = tmp_path / "to_canvas.csv"
    assert _grade(klass, "--roster", roster, "--format", "canvas", "--out", out) == 0
    rows = (tmp_path / "to_canvas.csv").read_text(encoding="utf-8").splitlines()
    assert sum("points possible" in line.casefold() for line in rows) == 1, rows
    points, by_id = read_canvas_import(out)
    assert points[NEW_COLUMN] == "100" and set(by_id) == {"11"}
    side = read_side_file(tmp_path / "to_canvas_unmatched.csv")
    assert "points row" in side["mallory"]["reason"], side  # named by her login
    assert "points row" in capsys.readouterr().err


def test_a_digits_only_email_name_is_not_a_classmates_id(tmp_path: Path) -> None:
    """Mallory (no folder) sets her Moodle e-mail to 5@evil.example, 5 being Jane's
    participant id in her folder's name. The e-mail's local part read as an id made both
    entries mean Jane's folder, so Jane's row was left empty. Expected: Jane keeps her
    row; an e-mail's local part never counts as an id."""
    from graders.reports.roster import match_entries, read_roster_file

    roster = write_roster(tmp_path / "moodle.csv",
                          "First name,Last name,ID number,Email address\n"
                          "Jane,Smith,S001,jane@uni.example\n"
                          "Mal,Lory,S004,5@evil.example\n")
    match = match_entries(read_roster_file(roster).entries,
                          ["Jane Smith_5_assignsubmission_file_"])
    assert {f: e.name for f, e in match.matched.items()} == {
        "Jane Smith_5_assignsubmission_file_": "S001"}, match


def test_the_moodle_import_says_which_column_to_map(
        tmp_path: Path, fake_assignment: Assignment,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One student without an ID number: the import is keyed by e-mail, and Moodle files
    a row whose mapped key is empty under the row before. Nothing said which column was
    the key, so a TA mapping "ID number" would file John's grade under Jane. Expected:
    the run names the key column."""
    klass = tmp_path / "class"
    write(klass / "Jane Smith", "t9_fake.py", GOOD)
    write(klass / "John Doe", "t9_fake.py", STUB)
    roster = write_roster(tmp_path / "moodle.csv",
                          "First name,Last name,ID number,Email address\n"
                          "Jane,Smith,S001,jane@uni.example\n"
                          "John,Doe,,jdoe@uni.example\n"
                          "Mal,Lory,,mal@uni.example\n")
    out = tmp_path / "to_moodle.csv"
    assert _grade(klass, "--roster", roster, "--format", "moodle", "--out", out) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "keyed by 'Email address'" in said, said
