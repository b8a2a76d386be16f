"""`pallas-lab grade`: options checked before grading, names mapped, every student a row,
roster formats, clear messages."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from graders.batch.discovery import discover, match_file_name
from graders.checking.framework import raised_text
from graders.cli.main import main
from graders.course.catalog import Assignment
from graders.grading.grade import grade_file
from graders.grading.result import SubmissionResult
from graders.grading.submission import file_digest
from graders.reports.roster import match_roster, read_roster
from graders.reports.table import load_reason, short_reason
from tests.helpers.fake_lab import GOOD, STUB, write
from tests.helpers.lms_rosters import BLACKBOARD, CANVAS, MOODLE


@pytest.fixture
def klass(tmp_path: Path, fake_assignment: Assignment) -> Path:
    root = tmp_path / "class"
    write(root / "alice", "t9_fake.py", GOOD)
    write(root / "bob", "t9_fake.py", STUB)
    return root


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2, f"{argv} must be refused with exit status 2"
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "nothing was graded" in lines[0], (
        f"one line saying what is wrong and that nothing was graded, not:\n{err}")
    return " ".join(err.split())


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_jobs_below_one_is_refused_before_grading(
        klass: Path, tmp_path: Path, jobs: str, no_grading: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    message = _refused(["grade", str(klass), "--jobs", jobs, "--out", str(tmp_path / "r")],
                       capsys)
    assert "--jobs must be at least 1" in message and jobs in message
    assert not (tmp_path / "r").exists()


def test_out_of_the_wrong_kind_is_refused_before_grading(
        klass: Path, tmp_path: Path, no_grading: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder, file = tmp_path / "folder", tmp_path / "file.json"
    folder.mkdir()
    file.write_text("{}", encoding="utf-8")
    cases = [
        (["--format", "csv", "--out", str(folder)], "is a folder"),
        (["--format", "gradescope", "--out", str(file)], "is a file"),  # two submissions
        (["--jobs", "2", "--out", str(file)], "is a file"),
        (["--format", "csv", "--jobs", "2", "--out", str(folder)], "is a folder"),
        (["--out", str(file / "inside" / "report.txt")], "is a file, not a folder"),
        (["--format", "csv", "--out", str(tmp_path / "b.csv"), "--task", "9.1"],
         "would write partial scores"),
        (["--task", "7.7"], "--task 7.7: no such task"),
        (["--student", "zed"], "--student zed: no submission"),
        (["--force"], "with a batch: add --jobs N"),
    ]
    for options, words in cases:
        message = _refused(["grade", str(klass), *options], capsys)
        assert words in message, (options, message)
    assert file.read_text(encoding="utf-8") == "{}" and not any(folder.iterdir())


def test_to_gradebook_outside_a_course_is_refused_before_grading(
        klass: Path, tmp_path: Path, no_grading: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    message = _refused(["grade", str(klass), "--to-gradebook", str(tmp_path)], capsys)
    assert "not an nbgrader course" in message


def test_a_failing_to_gradebook_after_grading_still_prints_the_table(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from graders.integrations.nbgrader.course import GradebookError

    def fail(*args: object) -> int:
        raise GradebookError("the gradebook has no assignment 't9_fake'")

    (tmp_path / "nbgrader_config.py").write_text("", encoding="utf-8")
    monkeypatch.setattr("graders.cli.grade_options.gradebook_problem", lambda *a: None)
    monkeypatch.setattr("graders.integrations.nbgrader.course.write_scores", fail)
    assert main(["grade", str(klass), "--to-gradebook", str(tmp_path), "--timeout", "2"]) == 2
    captured = capsys.readouterr()
    assert "alice" in captured.out and "100/100" in captured.out, "the table is printed"
    assert "the gradebook has no assignment 't9_fake'" in captured.err


@pytest.mark.parametrize(("name", "stem", "student"), [
    ("a1.py", "a1_pallas_basics", None),
    ("A2_Pipelining.py", "a2_pipelining", None),
    ("a4_flash_attention (1).py", "a4_flash_attention", None),
    ("a3-matmul.ipynb", "a3_matmul", None),
    ("a5_splash_attention-2.py", "a5_splash_attention", None),
    ("smithjane_123_456_a1_pallas_basics.py", "a1_pallas_basics", "smithjane"),
    ("smithjane_LATE_123_456_A1 (2).py", "a1_pallas_basics", "smithjane"),
    ("a1_pallas_basics.PY", "a1_pallas_basics", None),
])
def test_misnamed_files_map_by_the_documented_rule(name: str, stem: str,
                                                    student: str | None) -> None:
    info, prefix = match_file_name(name)
    assert info is not None and info.stem == stem, name
    assert prefix == student


@pytest.mark.parametrize("name", ["hw.py", "a1_final.py", "a1_pallas_basics.txt", "a6.py",
                                  "a12.py"])
def test_other_names_do_not_map(name: str) -> None:
    assert match_file_name(name)[0] is None, f"{name} must not be graded by guesswork"


def test_misnamed_files_are_graded_or_listed_and_every_student_gets_a_row(
        tmp_path: Path, fake_assignment: Assignment,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "class"
    write(root / "alice", "T9_Fake (1).py", GOOD)
    write(root / "bob", "t9.py", GOOD)
    write(root / "carol", "homework.py", GOOD)
    (root / "dan").mkdir()
    found = discover([root])
    assert {(s.student, s.stem) for s in found.submissions} == {
        ("alice", "t9_fake"), ("bob", "t9_fake")}
    book = tmp_path / "book.csv"
    assert main(["grade", str(root), "--format", "csv", "--out", str(book),
                 "--timeout", "2"]) == 0
    with open(book, newline="", encoding="utf-8") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {"alice", "bob", "carol", "dan"}, "nobody is dropped"
    assert rows["alice"]["t9"] == "100" and rows["alice"]["notes"] == "renamed: T9_Fake (1).py"
    assert rows["bob"]["t9"] == "100"
    assert rows["carol"]["t9"] == "" and rows["carol"]["notes"] == "misnamed: homework.py"
    assert rows["dan"]["notes"] == "no submission (empty folder)"


def test_an_exact_name_is_graded_before_a_renamed_copy(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    write(tmp_path / "alice", "t9_fake.py", GOOD)
    write(tmp_path / "alice", "t9_fake (1).py", STUB)
    found = discover([tmp_path / "alice"])
    assert [s.file.name for s in found.submissions] == ["t9_fake.py"]
    assert found.notes["alice"] == ["not graded: t9_fake (1).py (t9_fake.py was)"]


def test_a_flat_lms_download_is_one_student_per_prefix(tmp_path: Path) -> None:
    # In a folder of its own: pytest's tmp_path sits beside other tests' folders,
    # which may hold submissions (then the download is ambiguous, see
    # tests/batch/test_discovery_layouts.py).
    download = tmp_path / "download"
    write(download, "smithjane_11_21_a1_pallas_basics.py", "x = 1\n")
    write(download, "doejohn_LATE_12_22_a1_pallas_basics (1).py", "x = 1\n")
    write(download, "doejohn_12_23_notes.py", "x = 1\n")
    found = discover([download])
    assert sorted((s.student, s.stem) for s in found.submissions) == [
        ("doejohn", "a1_pallas_basics"), ("smithjane", "a1_pallas_basics")]
    assert "misnamed: doejohn_12_23_notes.py" in found.notes["doejohn"]


@pytest.mark.parametrize(("text", "folders", "missing"), [
    (CANVAS, ["smithjane", "jdoe"], ["rroe"]),
    (MOODLE, ["Jane Smith_991_assignsubmission_file_"], ["S002"]),
    (BLACKBOARD, ["jdoe"], ["Jane Smith"]),
    ("student\nalice\nbob\n", ["alice"], ["bob"]),
    ("alice\nbob\n", ["bob"], ["alice"]),
])
def test_roster_formats_match_folders_and_name_the_missing(
        tmp_path: Path, text: str, folders: list[str], missing: list[str]) -> None:
    path = tmp_path / "roster.csv"
    path.write_text("\n".join(line.strip() for line in text.splitlines()) + "\n",
                    encoding="utf-8")
    entries = read_roster(path)
    matched, absent, strangers = match_roster(entries, [*folders, "zed"])
    assert set(matched) == set(folders)
    assert [e.name for e in absent] == missing
    assert strangers == ["zed"]


def test_a_roster_gives_missing_students_a_row(
        klass: Path, tmp_path: Path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("student\nalice\nbob\ncarol\n", encoding="utf-8")
    book = tmp_path / "book.csv"
    assert main(["grade", str(klass), "--roster", str(roster), "--format", "csv",
                 "--out", str(book), "--timeout", "2"]) == 0
    with open(book, newline="", encoding="utf-8") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert rows["carol"]["notes"] == "missing: no submission" and rows["carol"]["t9"] == ""
    assert rows["alice"]["t9"] == "100" and rows["bob"]["t9"] == "0"
    assert rows["carol"]["total"] == "0", "no submission scores 0, as in a batch's gradebook"


def test_an_unreadable_file_says_so(tmp_path: Path, fake_assignment: Assignment) -> None:
    folder = tmp_path / "alice" / "t9_fake.py"  # a folder where a file should be
    folder.mkdir(parents=True)
    digest, failure = file_digest(folder)
    assert digest == "" and failure is not None
    # Never opened: its kind comes from lstat (graders.safety.submission_files).
    assert "t9_fake.py was not read: not a regular file: it is a folder" in failure.what
    result = grade_file(folder, assignment="t9", timeout=2)
    assert result.score == 0 and "not a regular file" in (result.load_error or "")
    assert all("not a regular file" in c.feedback for c in result.checks)


def test_an_empty_file_says_so(tmp_path: Path, fake_assignment: Assignment) -> None:
    path = write(tmp_path / "alice", "t9_fake.py", "\n\n")
    result = grade_file(path, timeout=2)
    assert result.load_error == "t9_fake.py is empty, so there was nothing to run"
    assert {c.status for c in result.checks} == {"error"}


def test_a_huge_print_is_reported_in_words(tmp_path: Path, fake_assignment: Assignment
                                           ) -> None:
    source = GOOD.replace("def add(x, y):\n", "def add(x, y):\n    print('x' * 40_000_000)\n")
    result = grade_file(write(tmp_path / "alice", "t9_fake.py", source), timeout=10)
    add = next(c for c in result.checks if c.task == "9.1")
    assert add.status == "failed"
    assert add.reason.startswith("add printed more than the 16 MiB of output"), add.reason
    assert "remove the large print" in add.feedback
    assert raised_text("f", "KeyError", "'b'") == "f raised KeyError: 'b'"


def test_table_reasons_are_cut_between_words() -> None:
    text = "function 'accumulate_inplace' raised ValueError: " + "word " * 40
    short = short_reason(text, limit=60)
    assert len(short) <= 60 and short.endswith("…")
    assert short[:-1] == text[: len(short) - 1].rstrip(" ,;:("), "a prefix of the text"
    assert text[len(short) - 1] == " ", "cut where a word ends"


def test_a_file_that_failed_on_import_is_not_said_to_be_not_run() -> None:
    ran = SubmissionResult("alice", "a1_pallas_basics", "a1", "a1_pallas_basics.py",
                           load_error="importing a1_pallas_basics.py raised ZeroDivisionError")
    refused = SubmissionResult("alice", "a1_pallas_basics", "a1", "a1_pallas_basics.py",
                               load_error="a1_pallas_basics.py was not run: line 2: import of "
                                          "'os' is not allowed")
    assert load_reason(ran) == "the file failed when it was imported (see below)"
    assert load_reason(refused) == "the file was not run (see below)"


def test_status_outside_a_handout_folder_says_so_and_exits_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["status"]) == 2
    captured = capsys.readouterr()
    assert "no handout found" in captured.err and "not found" not in captured.out
    assert os.listdir(tmp_path) == []


def test_an_out_that_cannot_be_written_is_refused_before_grading(
        klass: Path, tmp_path: Path, no_grading: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # As root every folder is writable, so the permission check is made to say no here.
    monkeypatch.setattr("graders.cli.grade_options.os.access", lambda path, mode: False)
    message = _refused(["grade", str(klass), "--jobs", "2", "--out",
                        str(tmp_path / "results")], capsys)
    assert f"{tmp_path} is not writable" in message
