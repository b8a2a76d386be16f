"""Every discovered assignment, graded end to end: the same tests for each lab.

Parametrized over ``graders.course.catalog.ASSIGNMENTS`` (the labs under
``graders/labs/``), so a new assignment is tested here without editing this
file: its solution gets every point, its untouched handout gets 0 with every
check failing as "not started", its checks add up to its tasks' points, and each
sample student earns the per-task points written in
``examples/submissions/scores.toml`` (the one place they are written).
"""

from __future__ import annotations

import ast

import pytest

from graders.checking.framework import load_checks
from graders.course.catalog import ASSIGNMENTS
from graders.grading.grade import grade_file
from tests.helpers.samples import (
    ROOT,
    expected_points,
    graded_sample,
    sample_students,
    task_points,
)

IDS = list(ASSIGNMENTS)


@pytest.mark.parametrize("assignment_id", IDS)
def test_the_solution_gets_every_graded_point(assignment_id: str) -> None:
    assignment = ASSIGNMENTS[assignment_id]
    result = grade_file(ROOT / "solutions" / assignment.file_name)
    full = {task.id: float(task.points) for task in assignment.graded_tasks}
    assert task_points(result) == full, (
        f"solutions/{assignment.file_name} must get full marks; failures: "
        f"{[(c.task, c.check, c.reason) for c in result.checks if c.status != 'passed']}")
    assert result.score == result.max_score == 100


@pytest.mark.parametrize("assignment_id", IDS)
def test_the_handout_gets_zero_and_every_check_says_not_started(assignment_id: str) -> None:
    assignment = ASSIGNMENTS[assignment_id]
    result = grade_file(ROOT / "assignments" / assignment.file_name)
    assert result.score == 0, "a handout whose stubs all raise NotImplementedError earns nothing"
    ran = {c.check: c.status for c in result.checks}
    assert set(ran) == {c.name for c in load_checks(assignment_id)}, "every check ran"
    assert set(ran.values()) == {"not started"}, (
        "every check calls the student's functions, so every check fails on the stubs: "
        f"{[name for name, status in ran.items() if status != 'not started']}")


@pytest.mark.parametrize("assignment_id", IDS)
def test_the_checks_of_each_task_add_up_to_its_points(assignment_id: str) -> None:
    assignment = ASSIGNMENTS[assignment_id]
    checks = load_checks(assignment_id)
    for task in assignment.graded_tasks:
        total = sum(c.points for c in checks if c.task == task.id)
        assert total == task.points, f"Task {task.id}: checks give {total}, record {task.points}"
    assert {c.task for c in checks} <= {t.id for t in assignment.tasks}
    assert assignment.max_score == 100


@pytest.mark.parametrize("assignment_id", IDS)
def test_the_record_names_every_function_the_solution_defines_for_a_task(
        assignment_id: str) -> None:
    assignment = ASSIGNMENTS[assignment_id]
    tree = ast.parse((ROOT / "solutions" / assignment.file_name).read_text(encoding="utf-8"))
    defined = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    missing = [name for name in assignment.functions if name not in defined]
    assert not missing, f"the record's functions {missing} are not defined by the solution"


def test_scores_toml_has_one_table_per_sample_and_assignment() -> None:
    wanted = {(student, a.stem) for student in sample_students() for a in ASSIGNMENTS.values()}
    assert set(expected_points()) == wanted, (
        "examples/submissions/scores.toml lists every student folder's every assignment")
    for (student, stem), points in expected_points().items():
        tasks = next(a for a in ASSIGNMENTS.values() if a.stem == stem).graded_tasks
        assert list(points) == [t.id for t in tasks], f"{student}/{stem}: one entry per task"


@pytest.mark.parametrize("student, stem", sorted(expected_points()))
def test_each_sample_gets_the_points_written_in_scores_toml(student: str, stem: str) -> None:
    result = graded_sample(student, stem)
    assert task_points(result) == expected_points()[student, stem], (
        f"{student}/{stem}: per-task points differ from examples/submissions/scores.toml; "
        f"reasons: {[(t.task, t.reason) for t in result.tasks() if t.points < t.max_points]}")
