"""A new TA's walk through late work, extensions, adjustments and the course config
(docs/ta-guide.md, "Late work and adjustments" and "Course config"), through the real CLI
as in tests/cli/test_late_adjustments.py: the fake assignment t9 keeps the runs short.

Tests that pass state behaviour the walk found right; tests that fail state what the docs
promise (or what a TA needs) and the current code does not do."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.cli import pallas_lab
from tests.helpers.fake_lab import GOOD, write

DUE = "2026-03-01T12:00+00:00"
DUE_EPOCH = 1772366400.0  # 2026-03-01 12:00 UTC
ADJ_HEADER = "student,item,points,delta,reason,who,regrade\n"
EXT_HEADER = "student,assignment,due,days,hours,reason\n"


def _at(path: Path, epoch: float) -> None:
    os.utime(path, (epoch, epoch))


@pytest.fixture
def klass(tmp_path: Path, fake_assignment: Assignment) -> Path:
    root = tmp_path / "class"
    write(root / "alice", "t9_fake.py", GOOD)
    write(root / "bob", "t9_fake.py", GOOD)
    _at(root / "alice" / "t9_fake.py", DUE_EPOCH - 60)              # on time
    _at(root / "bob" / "t9_fake.py", DUE_EPOCH + 26 * 3600)          # 26 h late
    return root


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _csv(klass: Path, book: Path, *extra: str) -> list[str]:
    return ["grade", str(klass), "--format", "csv", "--out", str(book), "--timeout", "2",
            *extra]


def _seed(klass: Path, out: Path) -> None:
    """Grade once in this process (a batch's children do not know the fake lab), as
    tests/batch/test_batch_late.py does; later batch runs then regrade nothing."""
    out.mkdir(parents=True, exist_ok=True)
    assert main(["grade", str(klass), "--format", "gradescope", "--out", str(out),
                 "--timeout", "2"]) == 0


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())


# --- what works ------------------------------------------------------------------------


def test_everyone_late_past_due_is_capped_at_the_cap(klass: Path, tmp_path: Path) -> None:
    """A due date in the past for everyone: 10 % per started day, at most 50 %."""
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--due", "t9=2026-01-01T00:00+00:00",
                     "--late-policy", "percent", "--late-rate", "10",
                     "--late-cap", "50")) == 0
    rows = _rows(book)
    for name in ("alice", "bob"):
        assert rows[name]["t9 raw"] == "100" and rows[name]["t9 penalty"] == "50"
        assert rows[name]["t9"] == "50"
    assert rows["bob"]["total"] == "50"


def test_a_due_flag_without_a_zone_is_read_in_the_config_timezone(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """13:00 in Berlin (winter, +01:00) is 12:00 UTC: alice one minute early."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pallas-lab.toml").write_text('timezone = "Europe/Berlin"\n',
                                              encoding="utf-8")
    assert main(_csv(klass, tmp_path / "gb.csv", "--due", "t9=2026-03-01 13:00",
                     "--late-policy", "zero")) == 0
    rows = _rows(tmp_path / "gb.csv")
    assert rows["alice"]["t9"] == "100" and rows["bob"]["t9"] == "0"
    assert "due 2026-03-01 13:00+01:00" in rows["alice"]["notes"]


def test_a_student_not_in_the_extensions_file_keeps_the_course_due_date(
        klass: Path, tmp_path: Path) -> None:
    ext = tmp_path / "extensions.csv"
    ext.write_text(EXT_HEADER + "alice,t9,,3,,conference\n", encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--due", f"t9={DUE}", "--late-policy", "zero",
                     "--extensions", str(ext))) == 0
    rows = _rows(book)
    assert rows["bob"]["t9"] == "0" and "extension" not in rows["bob"]["notes"]
    assert rows["alice"]["t9"] == "100"


def test_a_typo_row_with_too_many_cells_costs_only_that_row(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    adj = tmp_path / "adjustments.csv"
    adj.write_text(ADJ_HEADER
                   + "alice,t9,,+5,bonus,TA Kim,\n"
                   + "bob,t9,,+5,bonus, for the write-up,TA Kim,\n",   # stray comma
                   encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--adjustments", str(adj))) == 0
    rows = _rows(book)
    assert rows["alice"]["t9"] == "105" and rows["bob"]["t9"] == "100"
    assert f"{adj} line 3: 8 cells for 7 columns; row ignored" in _err(capsys)


def test_an_adjustment_for_a_student_who_does_not_exist_is_named(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    adj = tmp_path / "adjustments.csv"
    adj.write_text(ADJ_HEADER + "zed,t9,0,,academic integrity,Prof. Lee,\n"
                   + "bob,t9,0,,academic integrity,Prof. Lee,\n", encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--adjustments", str(adj))) == 0
    rows = _rows(book)
    assert rows["bob"]["t9 raw"] == "100" and rows["bob"]["t9"] == "0"
    assert rows["alice"]["t9"] == "100" and set(rows) == {"alice", "bob"}
    assert f"{adj} line 2: no student 'zed'" in _err(capsys)


def test_an_excel_csv_with_a_byte_order_mark_is_read(klass: Path, tmp_path: Path) -> None:
    """Excel's "CSV UTF-8" starts the file with a BOM."""
    adj = tmp_path / "adjustments.csv"
    adj.write_bytes(("\ufeff" + ADJ_HEADER + "alice,t9,,+5,bonus,TA Kim,\r\n")
                    .encode("utf-8"))
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--adjustments", str(adj))) == 0
    assert _rows(book)["alice"]["t9"] == "105"


def test_a_policy_change_in_the_config_regrades_nothing_and_rewrites_feedback(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "pallas-lab.toml"
    base = f'out = "results"\njobs = 1\ntimeout = 2\n[assignments.t9]\ndue = "{DUE}"\n'
    _seed(klass, tmp_path / "results")  # before the config's jobs = 1 makes it a batch
    config.write_text(base + '[late]\npolicy = "percent"\nrate = 10\n', encoding="utf-8")
    assert main(["grade", str(klass)]) == 0
    result = tmp_path / "results" / "bob" / "t9_fake" / "results.json"
    before = (result.stat().st_mtime_ns, result.read_bytes())
    assert _rows(tmp_path / "results" / "gradebook.csv")["bob"]["t9"] == "80"
    config.write_text(base + '[late]\npolicy = "percent"\nrate = 25\n', encoding="utf-8")
    assert main(["grade", str(klass)]) == 0
    assert (result.stat().st_mtime_ns, result.read_bytes()) == before
    assert _rows(tmp_path / "results" / "gradebook.csv")["bob"]["t9"] == "50"
    feedback = (result.parent / "feedback.md").read_text(encoding="utf-8")
    assert "25% per started day" in feedback


# --- what is wrong, confusing or undocumented ------------------------------------------


def test_submitted_time_is_shown_in_the_same_zone_as_the_due_date(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Observed: "due 2026-03-01 13:00+01:00; submitted 2026-03-02 14:00+00:00": two zones
    side by side, so a TA must convert to see whether it was late (and "late by 31 min"
    next to a submitted time that reads as before the due date). Expected: the submission
    time in the course's timezone, like the due date."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pallas-lab.toml").write_text(
        'timezone = "Europe/Berlin"\n[assignments.t9]\ndue = "2026-03-01 13:00"\n',
        encoding="utf-8")
    assert main(_csv(klass, tmp_path / "gb.csv")) == 0
    bob = _rows(tmp_path / "gb.csv")["bob"]
    assert "due 2026-03-01 13:00+01:00" in bob["notes"]
    assert "submitted 2026-03-02 15:00+01:00" in bob["notes"], bob["notes"]
    assert bob["t9 submitted"] == "2026-03-02 15:00+01:00"


def test_a_granted_task_regrade_shows_in_that_task_column(
        klass: Path, tmp_path: Path) -> None:
    """Observed: after "alice,9.2,,-15" (or a regrade accepted with +10 on a task) the
    gradebook's 9.2 column and the feedback's task table keep the raw 40/40, so the task
    columns no longer add up to "t9 adjusted" (85) and a per-task export carries the old
    score. Expected: the task column holds the adjusted task score."""
    adj = tmp_path / "adjustments.csv"
    adj.write_text(ADJ_HEADER + "alice,9.2,,-15,hard-coded the answer,TA Kim,accepted\n",
                   encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--adjustments", str(adj))) == 0
    alice = _rows(book)["alice"]
    assert alice["t9 adjusted"] == "85" and alice["t9"] == "85"
    assert float(alice["9.1"]) + float(alice["9.2"]) == float(alice["t9 adjusted"]), alice


def test_an_empty_adjustments_file_means_no_adjustments(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Observed: a 0-byte adjustments.csv (created at the start of term, nothing in it
    yet) stops the run with exit 2, "line 1: no student column ... nothing was graded".
    Expected: no rows, no adjustments, the class graded."""
    adj = tmp_path / "adjustments.csv"
    adj.write_text("", encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--adjustments", str(adj))) == 0, _err(capsys)
    assert _rows(book)["alice"]["t9"] == "100"


def test_a_canvas_late_flag_within_the_students_extension_costs_nothing(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    """Canvas flags LATE against its own due date, which knows nothing of our extensions.
    bob has two extra days and his file's time is 10 h after the course due date, well
    inside them. Observed: "late (amount unknown: counted as one period)", -10 %.
    Expected: on time, no penalty (the extension covers the time Canvas gives)."""
    root = tmp_path / "canvas"
    write(root, "smithbob_LATE_1002_5002_t9_fake.py", GOOD)
    write(root, "jonesalice_1001_5001_t9_fake.py", GOOD)
    _at(root / "smithbob_LATE_1002_5002_t9_fake.py", DUE_EPOCH + 10 * 3600)
    _at(root / "jonesalice_1001_5001_t9_fake.py", DUE_EPOCH - 60)
    ext = tmp_path / "extensions.csv"
    ext.write_text(EXT_HEADER + "smithbob,t9,,2,,medical\n", encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(root, book, "--due", f"t9={DUE}", "--late-policy", "percent",
                     "--late-rate", "10", "--extensions", str(ext))) == 0
    bob = _rows(book)["smithbob"]
    assert "extension of 48 h (medical)" in bob["notes"]
    assert bob["t9 penalty"] == "0" and bob["t9"] == "100", bob["notes"]


def test_config_flags_an_extensions_file_that_does_not_exist(tmp_path: Path) -> None:
    """`pallas-lab config` is the TA's check of the settings. Observed: with
    `extensions = "nope.csv"` it prints the path and exits 0, while `grade` then stops with
    "nope.csv cannot be read ... nothing was graded". Expected: config says so too (one
    line naming the file, exit status 2, as for the config's other mistakes)."""
    (tmp_path / "pallas-lab.toml").write_text('extensions = "nope.csv"\n', encoding="utf-8")
    done = subprocess.run([*pallas_lab(), "config"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 2, done.stdout
    assert "nope.csv" in done.stderr and "cannot be read" in done.stderr


def test_a_clamped_task_delta_says_what_it_took(klass: Path, tmp_path: Path) -> None:
    """9.2 is worth 40; "-70" takes it to 0 (the docs: a task stays within 0 and its
    points). Observed: the notes and feedback say "Task 9.2 -70 point(s)" although 40 were
    taken. Expected: the points actually taken are stated."""
    adj = tmp_path / "adjustments.csv"
    adj.write_text(ADJ_HEADER + "alice,9.2,,-70,copied,TA Kim,\n", encoding="utf-8")
    book = tmp_path / "gb.csv"
    assert main(_csv(klass, book, "--adjustments", str(adj))) == 0
    alice = _rows(book)["alice"]
    assert alice["t9"] == "60"
    assert "-40 point(s)" in alice["notes"], alice["notes"]


def test_lateness_within_the_grace_period_says_so(
        klass: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bob submits 10 min after the due date with 15 min grace under the zero policy.
    Observed: the notes say "late by 10 min" and nothing else, yet he keeps 100 (and "t9
    late hours" is 0.17): a student reading the feedback cannot tell why a late file kept
    its points. Expected: the notes say it fell within the grace period."""
    monkeypatch.chdir(tmp_path)
    _at(klass / "bob" / "t9_fake.py", DUE_EPOCH + 600)
    (tmp_path / "pallas-lab.toml").write_text(
        f'[late]\npolicy = "zero"\ngrace_minutes = 15\n[assignments.t9]\ndue = "{DUE}"\n',
        encoding="utf-8")
    assert main(_csv(klass, tmp_path / "gb.csv")) == 0
    bob = _rows(tmp_path / "gb.csv")["bob"]
    assert bob["t9"] == "100"
    assert "grace" in bob["notes"], bob["notes"]


def test_the_feedback_title_puts_the_maximum_after_the_final_score(
        klass: Path, tmp_path: Path) -> None:
    """Observed title of feedback.md: "bob: ... : 80 \\(raw 100\\)/100", which reads as
    "(raw 100)/100". Expected: "80/100 (raw 100/100)" or similar, the maximum beside the
    final score."""
    out = tmp_path / "results"
    _seed(klass, out)
    assert main(["grade", str(klass), "--jobs", "1", "--out", str(out), "--timeout", "2",
                 "--due", f"t9={DUE}", "--late-policy", "percent", "--late-rate", "10"]) == 0
    title = (out / "bob" / "t9_fake" / "feedback.md").read_text(encoding="utf-8")
    title = title.splitlines()[0].replace("\\", "")
    assert "80/100" in title, title
    data = json.loads((out / "bob" / "t9_fake" / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == 100  # results.json keeps the raw score (docs: Gradescope's own policy)
