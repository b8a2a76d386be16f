"""The assignments table and its agreement with the registered checks."""

from __future__ import annotations

import pytest

from graders.assignments import ASSIGNMENTS, assignment_for_stem, get_assignment, known_stems
from graders.checks.framework import check, load_checks


def test_five_assignments_of_100_points_each() -> None:
    assert list(ASSIGNMENTS) == ["a1", "a2", "a3", "a4", "a5"]
    for assignment in ASSIGNMENTS.values():
        assert sum(task.points for task in assignment.tasks) == 100, assignment.id
        assert all(task.id.startswith(assignment.id[1] + ".") for task in assignment.tasks)


def test_the_points_of_the_graded_tasks() -> None:
    a1, a4 = get_assignment("a1"), get_assignment("a4")
    assert [(t.id, t.points) for t in a1.graded_tasks] == [
        ("1.1", 15), ("1.2", 25), ("1.3", 25), ("1.4", 20), ("1.5", 15),
    ]
    assert [(t.id, t.points) for t in a4.graded_tasks] == [
        ("4.1", 15), ("4.2", 15), ("4.3", 30), ("4.4", 20), ("4.5", 5), ("4.6", 15),
    ]
    assert a4.max_score == 100
    assert [(t.id, t.points) for t in get_assignment("a2").graded_tasks] == [
        ("2.1", 40), ("2.2", 25), ("2.3", 20), ("2.4", 15),
    ]
    assert [(t.id, t.points) for t in get_assignment("a3").graded_tasks] == [
        ("3.1", 30), ("3.2", 30), ("3.3", 20), ("3.4", 20),
    ]
    a5 = get_assignment("a5")
    assert [(t.id, t.points) for t in a5.graded_tasks] == [
        ("5.1", 15), ("5.2", 15), ("5.3", 25), ("5.4", 35), ("5.5", 10),
    ]
    assert a5.max_score == 100


def test_stems_name_assignments() -> None:
    assert known_stems() == ("a1_pallas_basics", "a2_pipelining", "a3_matmul",
                             "a4_flash_attention", "a5_splash_attention")
    assert assignment_for_stem("a4_flash_attention") is get_assignment("a4")
    assert assignment_for_stem("homework") is None
    with pytest.raises(KeyError, match="known: a1, a2"):
        get_assignment("a9")


@pytest.mark.parametrize("assignment_id", ["a1", "a2", "a3", "a4"])
def test_the_checks_of_each_graded_task_add_up_to_its_points(assignment_id: str) -> None:
    assignment = get_assignment(assignment_id)
    checks = load_checks(assignment_id)
    for task in assignment.graded_tasks:
        total = sum(c.points for c in checks if c.task == task.id)
        assert total == task.points, f"Task {task.id}: checks give {total}, table {task.points}"
    assert {c.task for c in checks} <= {t.id for t in assignment.tasks}


def test_check_registration_rejects_bad_tasks_points_and_duplicates() -> None:
    with pytest.raises(ValueError, match="N.M"):
        check("a1", "1", 1, "x")
    with pytest.raises(ValueError, match="positive"):
        check("a1", "1.1", 0, "x")
    existing = load_checks("a1")[0]
    with pytest.raises(ValueError, match="already has a check"):
        check("a1", existing.task, 1, existing.name)(lambda s: None)
