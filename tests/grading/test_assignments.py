"""The discovered assignments and check registration (per-lab tests: tests/test_labs.py)."""

from __future__ import annotations

import pytest

from graders.assignments import ASSIGNMENTS, assignment_for_stem, get_assignment, known_stems
from graders.checks.framework import check, load_checks


def test_the_labs_are_discovered_in_course_order() -> None:
    assert list(ASSIGNMENTS) == [f"a{n}" for n in range(1, len(ASSIGNMENTS) + 1)]
    for assignment in ASSIGNMENTS.values():
        assert assignment.package == f"graders.labs.{assignment.stem}"
        assert all(task.id.startswith(assignment.id[1:] + ".") for task in assignment.tasks)
        for task in assignment.tasks:
            assert set(task.depends) <= {t.id for t in assignment.tasks} - {task.id}


def test_stems_name_assignments() -> None:
    assert known_stems() == ("a1_pallas_basics", "a2_pipelining", "a3_matmul",
                             "a4_flash_attention", "a5_splash_attention")
    assert assignment_for_stem("a4_flash_attention") is get_assignment("a4")
    assert assignment_for_stem("homework") is None
    with pytest.raises(KeyError, match="known: a1, a2"):
        get_assignment("a9")


def test_check_registration_rejects_bad_tasks_points_and_duplicates() -> None:
    with pytest.raises(ValueError, match="N.M"):
        check("a1", "1", 1, "x")
    with pytest.raises(ValueError, match="positive"):
        check("a1", "1.1", 0, "x")
    existing = load_checks("a1")[0]
    with pytest.raises(ValueError, match="already has a check"):
        check("a1", existing.task, 1, existing.name)(lambda s: None)
