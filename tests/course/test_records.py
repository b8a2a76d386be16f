"""The lab records against what the labs register: a record's ``Task.checks`` is the
number of hidden checks of the task, so a batch schedules by it without importing the
hidden checks (graders/batch/schedule.py, ``grading_cost``)."""

from __future__ import annotations

from collections import Counter

import pytest

from graders.checking.framework import load_checks
from graders.course.catalog import ASSIGNMENTS


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS.values()), ids=list(ASSIGNMENTS))
def test_each_tasks_check_count_is_what_the_lab_registers(assignment) -> None:
    registered = Counter(check.task for check in load_checks(assignment.id))
    declared = {task.id: task.checks for task in assignment.tasks}
    assert declared == {task.id: registered.get(task.id, 0) for task in assignment.tasks}
    assert assignment.check_count() == sum(registered.values())
    first = assignment.tasks[0].id
    assert assignment.check_count([first]) == registered[first]
