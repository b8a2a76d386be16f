"""`pallas-lab grade`: discovery, the three report formats, exit statuses."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from graders.batch.discovery import discover
from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.fake_lab import GOOD, STUB, write


@pytest.fixture
def klass(tmp_path: Path, fake_assignment: Assignment) -> Path:
    """A class folder: alice (correct), bob (untouched), carol (an unknown file too)."""
    root = tmp_path / "class"
    write(root / "alice", "t9_fake.py", GOOD)
    write(root / "bob", "t9_fake.py", STUB)
    write(root / "carol", "t9_fake.py", GOOD)
    write(root / "carol", "notes.py", "x = 1\n")
    (root / "README.md").write_text("not a student\n", encoding="utf-8")
    return root


def test_discovery_of_files_student_folders_and_class_folders(klass: Path) -> None:
    found = discover([klass])
    assert [(s.student, s.stem, s.file.name) for s in found.submissions] == [
        ("alice", "t9_fake", "t9_fake.py"),
        ("bob", "t9_fake", "t9_fake.py"),
        ("carol", "t9_fake", "t9_fake.py"),
    ]
    assert len(found.problems) == 1 and found.problems[0].startswith("carol/notes.py: not an")
    assert [s.student for s in discover([klass / "bob"]).submissions] == ["bob"]
    single = discover([klass / "carol" / "notes.py"], assignment="t9").submissions
    assert [(s.student, s.assignment.id) for s in single] == [("carol", "t9")]
    missing = klass / "missing"
    assert discover([missing]).problems == [f"{missing}: no such file or folder"]


def test_no_path_means_the_bundled_examples() -> None:
    found = discover()
    assert found.submissions, "examples/submissions/ holds sample submissions"
    assert all(s.file.is_relative_to(Path(__file__).resolve().parents[2] / "examples")
               for s in found.submissions)


def test_table_format_prints_per_task_rows_and_totals(
    klass: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grade", str(klass), "--timeout", "2"]) == 0
    out = capsys.readouterr()
    assert "alice" in out.out and "100/100" in out.out
    assert "not started" in out.out and "0/100" in out.out
    assert "skipped: carol/notes.py" in out.out


def test_gradescope_for_one_submission_writes_the_file_and_is_reproducible(
    klass: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    texts = []
    for _ in range(2):
        assert main(["grade", str(klass / "alice" / "t9_fake.py"), "--format", "gradescope",
                     "--out", str(out), "--timeout", "2"]) == 0
        data = json.loads(out.read_text(encoding="utf-8"))
        data.pop("execution_time")
        texts.append(json.dumps(data))
    assert texts[0] == texts[1]
    data = json.loads(texts[0])
    assert (data["score"], data["max_score"]) == (100, 100)
    assert [t["number"] for t in data["tests"]] == ["9.1", "9.1", "9.2", "9.3"]
    assert [t["max_score"] for t in data["tests"]] == [40, 20, 40, 0]
    test = data["tests"][0]
    assert set(test) == {"name", "number", "score", "max_score", "status", "output", "tags",
                         "visibility"}
    assert test["status"] == "passed" and test["visibility"] == "visible"


def test_gradescope_for_several_submissions_writes_one_file_each(
    klass: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    assert main(["grade", str(klass), "--format", "gradescope", "--out", str(out),
                 "--timeout", "2"]) == 0
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json"))
    assert files == [f"{s}/t9_fake/results.json" for s in ("alice", "bob", "carol")]
    bob = json.loads((out / "bob" / "t9_fake" / "results.json").read_text(encoding="utf-8"))
    assert bob["score"] == 0 and {t["status"] for t in bob["tests"]} == {"failed"}


def test_csv_gradebook_has_a_row_per_student_and_a_column_per_graded_task(
    klass: Path, tmp_path: Path
) -> None:
    out = tmp_path / "book.csv"
    assert main(["grade", str(klass), "--format", "csv", "--out", str(out),
                 "--timeout", "2"]) == 0
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "9.1", "9.2", "t9", "total", "t9 max", "t9 percent",
                             "total max", "total percent", "notes"], (
        "the maxima and percentages come after total, so earlier columns keep their places")
    assert [(r["student"], r["9.1"], r["9.2"], r["total"]) for r in rows] == [
        ("alice", "60", "40", "100"), ("bob", "0", "0", "0"), ("carol", "60", "40", "100"),
    ]
    assert [(r["t9 max"], r["t9 percent"], r["total max"], r["total percent"])
            for r in rows] == [("100", "100", "100", "100"), ("100", "0", "100", "0"),
                               ("100", "100", "100", "100")]
    assert [r["notes"] for r in rows] == ["", "", "misnamed: notes.py"], (
        "a file the grader did not grade is listed in its student's row, never dropped")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # grading one student again keeps the others' rows
    write(klass / "bob", "t9_fake.py", GOOD)
    assert main(["grade", str(klass / "bob"), "--format", "csv", "--out", str(out)]) == 0
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["student"], r["total"]) for r in rows] == [
        ("alice", "100"), ("bob", "100"), ("carol", "100"),
    ]


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", str(tmp_path / "nothing-here")]) == 2
    with pytest.raises(SystemExit) as info:
        main(["grade", "--format", "pdf"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["grade", "--timeout", "-1"])


def test_a_grader_bug_exits_1_after_writing_the_report(
    fake_assignment: Assignment, make_submission: Callable[..., Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from graders.checking.framework import check

    @check("t9", "9.1", 1, "a check with a bug")
    def buggy(s: object) -> None:
        raise KeyError("bug")

    out = tmp_path / "r.json"
    path = make_submission(GOOD)
    assert main(["grade", str(path), "--format", "gradescope", "--out", str(out)]) == 1
    assert json.loads(out.read_text(encoding="utf-8"))["score"] == 100
    assert "internal error in check t9 9.1 'a check with a bug'" in capsys.readouterr().err


def test_release_is_delegated(monkeypatch: pytest.MonkeyPatch) -> None:
    import graders.release.handouts

    seen: list[object] = []
    monkeypatch.setattr(graders.release.handouts, "main", lambda argv=None: seen.append(argv) or 0)
    assert main(["release", "--check"]) == 0
    assert seen == [["--check"]]


def test_a_class_folder_with_a_stray_script_is_still_a_class_folder(klass: Path) -> None:
    write(klass, "grade_all.py", "print('a TA helper')\n")
    found = discover([klass])
    assert [s.student for s in found.submissions] == ["alice", "bob", "carol"]
    assert any(p.startswith("class/grade_all.py: a file in a class folder") for p in found.problems)


def test_csv_gradebook_percentages_are_of_the_final_score(
    klass: Path, tmp_path: Path
) -> None:
    """The maximum and percentage columns use the final score (after adjustments), as the
    assignment column does; the total's percentage is of every assignment's maximum.
    Before, the gradebook had no maximum or percentage at all."""
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text("student,item,points,delta,reason,who,regrade\n"
                           "bob,t9,55,,agreed by hand,TA Kim,\n", encoding="utf-8")
    out = tmp_path / "book.csv"
    assert main(["grade", str(klass / "bob"), "--format", "csv", "--out", str(out),
                 "--timeout", "2", "--adjustments", str(adjustments)]) == 0
    with open(out, newline="", encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    assert (row["t9 raw"], row["t9"], row["t9 max"], row["t9 percent"], row["total max"],
            row["total percent"]) == ("0", "55", "100", "55", "100", "55"), row
