"""The wall-clock budget of a submission file (grading.grade_file, Session.set_budget).

Calls are cut to what is left of the budget, and once it is spent the running check and
every later one are recorded as ``timeout`` with a message naming the budget. The slow
but correct submission that motivates it is graded through the CLI in
tests/redteam/test_replies_and_limits.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graders.cli.main import main
from graders.course.catalog import Assignment
from graders.grading.grade import grade_file
from tests.helpers.fake_lab import GOOD

#: spin takes a good fraction of a second per call (and far less than the timeout).
SLOW = GOOD.replace("def spin(n):\n    return n", "def spin(n):\n"
                    "    for _ in range(50_000_000):\n        pass\n    return n")


def test_a_file_that_does_not_load_reports_that_not_the_budget(
        fake_assignment: Assignment, make_submission: Callable[..., Path]) -> None:
    result = grade_file(make_submission("def add(x, y:\n    return x\n"), timeout=2.0,
                        budget=1e-6)
    assert [c.status for c in result.checks] == ["error"] * 4, result.checks
    assert all("budget" not in c.reason for c in result.checks), result.checks


def test_a_spent_budget_records_every_remaining_check_as_timeout(
        fake_assignment: Assignment, make_submission: Callable[..., Path]) -> None:
    result = grade_file(make_submission(GOOD), timeout=2.0, budget=1e-6)
    assert [c.status for c in result.checks] == ["timeout"] * 4, result.checks
    for check in result.checks:
        assert check.points == 0
        assert check.reason == ("grading of t9_fake.py stopped: it used its whole wall-clock "
                                "budget of 1e-06 s (set by the grader); this check was not run")


def test_a_call_is_cut_to_what_is_left_of_the_budget(
        fake_assignment: Assignment, make_submission: Callable[..., Path]) -> None:
    # spin's check draws 20 values at a good fraction of a second each: the budget of
    # 3 s runs out in it, while add's check, before it, takes a fraction of a second
    result = grade_file(make_submission(SLOW), timeout=5.0, budget=3.0)
    by_name = {c.check: c for c in result.checks}
    assert by_name["add(x, y) equals x + y on drawn int arrays"].status == "passed"
    spin = by_name["spin(n) returns n"]
    assert spin.status == "timeout" and "this check was stopped" in spin.reason, spin
    later = by_name["later() returns 1"]
    assert later.status == "timeout" and "this check was not run" in later.reason, later


def test_the_cli_takes_a_budget(fake_assignment: Assignment,
                                make_submission: Callable[..., Path]) -> None:
    path = make_submission(GOOD)
    assert main(["grade", str(path), "--format", "gradescope", "--out",
                 str(path.parent / "r.json"), "--budget", "1e-6"]) == 0
    assert "wall-clock budget of 1e-06 s" in (path.parent / "r.json").read_text()
