"""A results folder graded once serves any late policy or adjustment: the batch rebuilds
the gradebook and the feedback from results.json without regrading
(graders/reports/ledger.py, graders/reports/feedback_files.py)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.fake_lab import GOOD, write

DUE_EPOCH = 1772366400.0  # 2026-03-01 12:00 UTC


def test_a_policy_change_needs_no_regrade_and_reaches_the_feedback(
        tmp_path: Path, fake_assignment: Assignment, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    write(klass / "bob", "t9_fake.py", GOOD)
    os.utime(klass / "bob" / "t9_fake.py", (DUE_EPOCH + 3600, DUE_EPOCH + 3600))
    # graded once, in this process (the batch's children do not know the fake lab)
    out.mkdir()
    assert main(["grade", str(klass), "--format", "gradescope", "--out", str(out),
                 "--timeout", "2"]) == 0
    assert (out / "bob" / "t9_fake" / "results.json").is_file()
    monkeypatch.setattr("graders.batch.pool.grade_in_child",
                        lambda *a, **k: pytest.fail("regraded"))
    capsys.readouterr()
    argv = ["grade", str(klass), "--jobs", "1", "--out", str(out), "--due",
            "t9=2026-03-01T12:00Z", "--late-policy", "zero"]
    assert main(argv) == 0
    assert "graded 0 student(s), 1 already had results" in " ".join(
        capsys.readouterr().out.split())
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    assert (row["t9 raw"], row["t9 penalty"], row["t9"]) == ("100", "100", "0")
    feedback = (out / "bob" / "t9_fake" / "feedback.md").read_text(encoding="utf-8")
    assert "Lateness and adjustments" in feedback and "final 0 of 100" in feedback
    assert main([*argv[:-1], "none"]) == 0
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        assert next(csv.DictReader(handle))["t9"] == "100"
    assert main(argv[:6]) == 0  # no due date any more: the feedback loses the section
    assert "Lateness" not in (out / "bob" / "t9_fake" / "feedback.md").read_text()
