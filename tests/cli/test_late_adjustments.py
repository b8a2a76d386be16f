"""`pallas-lab grade` with due dates, a late policy, extensions and adjustments, and
`pallas-lab config`: through the real CLI, as a TA runs them (docs/ta-guide.md, "Late work
and adjustments")."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

import pytest

from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.fake_lab import GOOD, write

DUE = "2026-03-01T12:00+00:00"
DUE_EPOCH = 1772366400.0  # 2026-03-01 12:00 UTC


@pytest.fixture
def klass(tmp_path: Path, fake_assignment: Assignment) -> Path:
    root = tmp_path / "class"
    write(root / "alice", "t9_fake.py", GOOD)
    write(root / "bob", "t9_fake.py", GOOD)
    # alice: on time; bob: 26 hours late (two started days)
    os.utime(root / "alice" / "t9_fake.py", (DUE_EPOCH - 60, DUE_EPOCH - 60))
    os.utime(root / "bob" / "t9_fake.py", (DUE_EPOCH + 26 * 3600, DUE_EPOCH + 26 * 3600))
    return root


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_a_late_file_loses_its_percent_and_the_gradebook_shows_raw_lateness_and_final(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    book = tmp_path / "gb.csv"
    assert main(["grade", str(klass), "--format", "csv", "--out", str(book), "--timeout", "2",
                 "--due", f"t9={DUE}", "--late-policy", "percent", "--late-rate", "10",
                 "--late-cap", "50"]) == 0
    rows = _rows(book)
    assert rows["alice"]["t9 raw"] == "100" and rows["alice"]["t9"] == "100"
    assert rows["alice"]["t9 late hours"] == "0.00"
    bob = rows["bob"]
    assert bob["t9 raw"] == "100" and bob["t9 penalty"] == "20" and bob["t9"] == "80"
    assert bob["t9 late hours"] == "26.00" and bob["t9 late source"] == "file mtime"
    assert bob["total"] == "80"
    assert "late by 1 d 2 h" in bob["notes"] and "20" in bob["notes"]


def test_penalties_never_go_below_zero_and_zero_policy_zeroes(
        klass: Path, tmp_path: Path) -> None:
    book = tmp_path / "gb.csv"
    assert main(["grade", str(klass), "--format", "csv", "--out", str(book), "--timeout", "2",
                 "--due", DUE, "--late-policy", "zero"]) == 0
    rows = _rows(book)
    assert rows["bob"]["t9"] == "0" and rows["bob"]["t9 raw"] == "100"
    assert rows["alice"]["t9"] == "100"


def test_an_extension_moves_the_due_date_and_a_bad_row_costs_only_that_row(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("student,assignment,due,days,hours,reason\n"
                          "bob,t9,,2,,medical\n"
                          "carol,t9,,1,,\n"
                          "alice,t9,,,lots,\n", encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(["grade", str(klass), "--format", "csv", "--out", str(book), "--timeout", "2",
                 "--due", f"t9={DUE}", "--late-policy", "zero",
                 "--extensions", str(extensions)]) == 0
    rows = _rows(book)
    assert rows["bob"]["t9"] == "100" and "extension of 48 h (medical)" in rows["bob"]["notes"]
    err = " ".join(capsys.readouterr().err.split())
    assert f"{extensions} line 3: no student 'carol'" in err
    assert f"{extensions} line 4: hours 'lots' is not a number" in err


def test_adjustments_apply_on_every_run_and_a_regrade_outcome_is_recorded(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text(
        "student,item,points,delta,reason,who,regrade\n"
        "alice,9.2,,-15,hard-coded the answer,TA Kim,\n"
        "bob,9.1,,,asked for a regrade of add,TA Kim,denied\n"
        "bob,t9,,+5,bonus,TA Kim,\n"
        "bob,9.9,,1,,,\n", encoding="utf-8")
    book = tmp_path / "gb.csv"
    argv = ["grade", str(klass), "--format", "csv", "--out", str(book), "--timeout", "2",
            "--adjustments", str(adjustments)]
    assert main(argv) == 0
    rows = _rows(book)
    assert rows["alice"]["t9 raw"] == "100" and rows["alice"]["t9"] == "85"
    assert "Task 9.2 -15 point(s): hard-coded the answer (TA Kim)" in rows["alice"]["notes"]
    assert rows["bob"]["t9"] == "105" and "regrade request denied" in rows["bob"]["notes"]
    assert f"{adjustments} line 5: item '9.9'" in " ".join(capsys.readouterr().err.split())
    assert main(argv) == 0  # a regrade: the adjustments are applied again, not lost
    assert _rows(book)["alice"]["t9"] == "85"


def test_the_table_shows_the_standing(klass: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", str(klass), "--timeout", "2", "--due", f"t9={DUE}",
                 "--late-policy", "percent", "--late-per", "hour", "--late-rate", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Lateness and adjustments" in out and "-26 point(s)" in out, out
    assert "source: file mtime" in out


def test_config_gives_defaults_flags_override_and_config_shows_sources(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pallas-lab.toml").write_text(
        'timeout = 2\n[late]\npolicy = "zero"\n[assignments.t9]\n'
        'due = 2026-03-01T12:00:00Z\n', encoding="utf-8")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "late.policy" in out and "zero  [pallas-lab.toml]" in out
    assert "timeout             2  [pallas-lab.toml]" in out
    assert "assignments.t9.due  2026-03-01 12:00+00:00  [pallas-lab.toml]" in out
    assert main(["grade", str(klass), "--format", "csv", "--out", "gb.csv"]) == 0
    assert _rows(tmp_path / "gb.csv")["bob"]["t9"] == "0"
    assert main(["grade", str(klass), "--format", "csv", "--out", "gb.csv",
                 "--late-policy", "none"]) == 0
    assert _rows(tmp_path / "gb.csv")["bob"]["t9"] == "100"


def test_a_file_named_alone_is_graded_alone_in_a_course_with_a_batch_config(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A TA's walk: in a course folder whose config says ``jobs = 2``, ``pallas-lab grade
    FILE`` became a class batch (a results folder, a gradebook of one). The config's batch
    is for a class folder; a file named alone prints its table, as without a config.
    (The fake lab is known only in this process: a batch's graders could not grade it.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "roster.csv").write_text("student\nalice\nbob\ncarol\n", encoding="utf-8")
    (tmp_path / "pallas-lab.toml").write_text(
        'jobs = 1\nout = "results"\ntimeout = 2\nroster = "roster.csv"\n', encoding="utf-8")
    assert main(["grade", str(klass / "alice" / "t9_fake.py")]) == 0
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert "100/100" in out and "graded 1 student" not in out, out
    # the same walk: every other roster student was reported "missing: no submission"
    assert "missing" not in captured.err, captured.err
    assert not (tmp_path / "results").exists()
    # (the config's batch still grades a class folder: tests/cli/test_lms_export.py)


@pytest.mark.parametrize(("text", "message"), [
    ("jobs = 0\n", "jobs must be a whole number of at least 1, not 0"),
    ("[late]\npolicy = 'half'\n", "late policy must be one of none, zero, percent"),
    ("tiemout = 3\n", "unknown key 'tiemout'"),
    ("timeout = \n", "not valid TOML"),
    ("[assignments.a9]\ndue = 2026-01-01\n", "[assignments.a9]: not an assignment"),
    ("[assignments.a1]\ndue = 'tomorrow'\n", "'tomorrow' is not a date and time"),
    ("timezone = 'Mars/Olympus'\n", "not an IANA zone name"),
])
def test_a_bad_config_is_one_line_and_exit_2(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pallas-lab.toml").write_text(text, encoding="utf-8")
    for argv in (["config"], ["grade", str(klass), "--format", "csv", "--out", "gb.csv"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "pallas-lab.toml" in lines[0] and message in lines[0], err
    assert not (tmp_path / "gb.csv").exists()


def test_pyproject_tool_table_is_read(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "course"\n[tool.pallas-lab]\nbudget = 30\n', encoding="utf-8")
    assert main(["config"]) == 0
    assert "30  [pyproject.toml [tool.pallas-lab]]" in capsys.readouterr().out


def test_a_due_flag_that_is_not_a_time_is_refused(
        klass: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", str(klass), "--due", "t9=friday"]) == 2
    assert "'friday' is not a date and time" in capsys.readouterr().err


def test_the_time_now_is_not_late_before_the_due_date(klass: Path, tmp_path: Path) -> None:
    os.utime(klass / "bob" / "t9_fake.py", (time.time(), time.time()))
    book = tmp_path / "gb.csv"
    assert main(["grade", str(klass), "--format", "csv", "--out", str(book), "--timeout", "2",
                 "--due", "t9=2999-01-01 00:00 UTC", "--late-policy", "zero"]) == 0
    assert _rows(book)["bob"]["t9"] == "100"
