"""grade_file: every check gets a result, failures read like docs/style.md, scores count
graded tasks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from graders.checking.framework import check
from graders.course.catalog import Assignment
from graders.grading import grade as grading
from graders.grading import session
from graders.grading.grade import grade_file
from tests.helpers.fake_lab import BUGGY, GOOD, STUB


def test_a_correct_submission_gets_every_graded_point(
    fake_assignment: Assignment, make_submission: Callable[..., Path]
) -> None:
    result = grade_file(make_submission(GOOD), timeout=2.0)
    assert (result.score, result.max_score) == (100, 100)
    assert [c.status for c in result.checks] == ["passed"] * 4
    assert result.student == "alice" and result.assignment == "t9" and result.load_error is None
    assert [(t.task, t.points, t.graded) for t in result.tasks()] == [
        ("9.1", 60, True), ("9.2", 40, True), ("9.3", 10, False),
    ]


def test_an_untouched_handout_gets_zero_and_says_not_started(
    fake_assignment: Assignment, make_submission: Callable[..., Path]
) -> None:
    result = grade_file(make_submission(STUB), timeout=2.0)
    assert result.score == 0
    assert {c.status for c in result.checks} == {"not started"}
    assert {t.status for t in result.tasks()} == {"not started"}
    assert result.checks[0].feedback.splitlines()[:3] == [
        "Task 9.1 add — 0/40 (not started)",
        "  check: add(x, y) equals x + y on drawn int arrays",
        "  problem: add is not implemented yet (NotImplementedError: Need to implement for "
        "Task 9.1)",
    ]


def test_a_buggy_submission_gets_style_feedback_and_a_loop_costs_only_its_check(
    fake_assignment: Assignment, make_submission: Callable[..., Path]
) -> None:
    result = grade_file(make_submission(BUGGY), timeout=1.0)
    statuses = {c.check: c.status for c in result.checks}
    assert statuses == {
        "add(x, y) equals x + y on drawn int arrays": "failed",
        "add works on the worked example": "passed",
        "spin(n) returns n": "timeout",
        "later() returns 1": "passed",
    }
    assert result.score == 20  # the ungraded 9.3 does not count
    assert result.checks[0].feedback == "\n".join([
        "Task 9.1 add — 0/40",
        "  check: add(x, y) equals x + y on drawn int arrays",
        "  problem: add returned the wrong values",
        "  smallest failing input: [10]",
        "  expected: [11]",
        "  got:      [9]",
        "  looks like: subtracts instead of adding (lecture §9)",
    ])
    spin = result.checks[2]
    assert spin.reason == "spin did not finish within 1 s"
    assert "smallest failing input: " in spin.feedback


def test_grading_twice_gives_the_same_results(
    fake_assignment: Assignment, make_submission: Callable[..., Path]
) -> None:
    path = make_submission(BUGGY.replace("    while n > 3:\n        pass\n", ""))
    first, second = (grade_file(path, timeout=1.0) for _ in range(2))
    assert first.score == 60
    strip = [(c.task, c.check, c.points, c.status, c.feedback) for c in first.checks]
    assert strip == [(c.task, c.check, c.points, c.status, c.feedback) for c in second.checks]


def test_a_grader_bug_in_one_check_loses_no_other_result(
    fake_assignment: Assignment, make_submission: Callable[..., Path]
) -> None:
    @check("t9", "9.2", 5, "a check with a bug")
    def buggy_check(s: object) -> None:
        raise ZeroDivisionError("oops")

    result = grade_file(make_submission(GOOD), timeout=2.0)
    bad = [c for c in result.checks if c.check == "a check with a bug"]
    assert len(bad) == 1 and bad[0].status == "error" and bad[0].internal
    assert "ZeroDivisionError" in bad[0].internal_detail
    assert "Traceback" not in bad[0].feedback and "oops" not in bad[0].feedback
    assert [c.status for c in result.checks if c is not bad[0]] == ["passed"] * 4


def test_every_check_without_a_result_counts_as_failed(
    fake_assignment: Assignment, make_submission: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken_worker(*args: object, **kwargs: object) -> None:
        raise RuntimeError("cannot find the numpy package to give to the worker")

    monkeypatch.setattr(session, "Worker", broken_worker)
    result = grade_file(make_submission(GOOD), timeout=2.0)
    assert len(result.checks) == 4 and result.score == 0
    assert {c.status for c in result.checks} == {"error"}
    assert "could not be graded" in (result.load_error or "")


def test_a_syntax_error_fails_every_check_with_the_line(
    fake_assignment: Assignment, make_submission: Callable[..., Path]
) -> None:
    result = grade_file(make_submission("def add(x, y:\n    return x\n"), timeout=2.0)
    assert result.score == 0 and len(result.checks) == 4
    assert result.load_error is not None and "line 1, column" in result.load_error
    assert "def add(x, y:" in result.checks[0].feedback


def test_a_graded_task_without_checks_is_reported_not_silently_free(
    fake_assignment: Assignment, make_submission: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graders.checking.framework import REGISTRY

    monkeypatch.setitem(REGISTRY, "t9", [c for c in REGISTRY["t9"] if c.task != "9.2"])
    result = grade_file(make_submission(GOOD), timeout=2.0)
    assert result.score == 60 and result.max_score == 100
    assert [c.check for c in result.checks if c.task == "9.2"] == [grading.NO_CHECKS]


def test_the_file_name_must_name_an_assignment(make_submission: Callable[..., Path]) -> None:
    with pytest.raises(ValueError, match="does not name an assignment"):
        grade_file(make_submission(GOOD, name="homework.py"))


def test_a_stub_not_started_is_not_said_to_call_a_failed_dependency() -> None:
    """TA walk: cleo's untouched 1.2 said "depends on Task 1.1 (add_kernel), which failed
    too: your blocked_add calls it", but her blocked_add is the stub and calls nothing."""
    samples = Path(__file__).resolve().parents[2] / "examples" / "submissions"
    cleo = samples / "cleo_untouched" / "a1_pallas_basics.py"
    result = grade_file(cleo)
    stubbed = [c for c in result.checks if c.task == "1.2"]
    assert stubbed and all(c.status == "not started" for c in stubbed)
    assert not [c for c in stubbed if "depends on" in c.feedback], stubbed[0].feedback
