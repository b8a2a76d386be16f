"""The records every assignment is described by: ``Task`` and ``Assignment``.

Source: docs/grading-design.md ("Assignments and tasks") and docs/student-api.md
(task ids and function names). Task ids ``N.M`` are the same everywhere: the
stub's error message, the pytest marker, the reports and the feedback. Each
assignment's record lives in its own lab package, ``graders/labs/<stem>/__init__.py``
(``ASSIGNMENT``); ``graders.course.catalog`` discovers them. Only tasks marked
``graded`` count towards a score.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Task:
    """One task of an assignment.

    ``id`` ("1.2", ``N.M`` with N the assignment's number), ``functions`` (the
    names the student defines for it, in the handout's order), ``points``,
    ``graded`` (counts towards the score), and ``depends``: the tasks whose
    functions this task's functions legitimately call (a wrapper its kernel,
    mask_stats the MaskInfo builder). A mistake in a task may cost points on
    the tasks that declare it (one fault, one charge), and their
    feedback says so.
    """

    id: str
    functions: tuple[str, ...]
    points: float
    graded: bool = True
    depends: tuple[str, ...] = ()
    #: Graded on the predicted speed of the student's own kernel: its points are
    #: reported apart from correctness, and its title says "(performance)".
    performance: bool = False
    #: How many hidden checks grade the task: what a batch schedules by (the longest files
    #: first) without importing the hidden checks. tests/course/test_records.py fails
    #: when a lab's record and its registered checks disagree.
    checks: int = 1

    @property
    def title(self) -> str:
        """The task's functions as reports show them: ``"merge_attention_states, ..."``;
        a performance task's ends with ``" (performance)"``."""
        names = ", ".join(self.functions)
        return f"{names} (performance)" if self.performance else names


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """One assignment: ``id`` ("a1"), file ``stem``, ``title``, ``lecture`` section ("§2"),
    its ``tasks`` in order, and ``package``: the lab package holding its checks
    (``graders.labs.<stem>``; None for an assignment whose checks are registered directly
    in ``framework.REGISTRY``, as test fixtures do)."""

    id: str
    stem: str
    title: str
    lecture: str
    tasks: tuple[Task, ...]
    package: str | None = None

    @property
    def checks_module(self) -> str | None:
        """The module registering the hidden checks (``<package>.hidden.checks``), or None."""
        return None if self.package is None else f"{self.package}.hidden.checks"

    @property
    def public_checks_module(self) -> str | None:
        """The module registering the public checks (``<package>.public.public_checks``), or
        None."""
        return None if self.package is None else f"{self.package}.public.public_checks"

    @property
    def file_name(self) -> str:
        """The submission's file name, ``<stem>.py``."""
        return f"{self.stem}.py"

    @property
    def graded_tasks(self) -> tuple[Task, ...]:
        """The tasks that count towards the score, in order."""
        return tuple(task for task in self.tasks if task.graded)

    @property
    def max_score(self) -> float:
        """Points available from the graded tasks."""
        return sum(task.points for task in self.graded_tasks)

    @property
    def functions(self) -> dict[str, str]:
        """Every task function's name mapped to its task id, in handout order."""
        return {name: task.id for task in self.tasks for name in task.functions}

    def check_count(self, tasks: Collection[str] | None = None) -> int:
        """The hidden checks the record declares (``Task.checks``), of ``tasks`` (task ids)
        only when given: a file's expected grading cost, in checks."""
        return sum(task.checks for task in self.tasks if not tasks or task.id in tasks)

    def dependants(self, task_id: str) -> tuple[str, ...]:
        """The tasks that declare ``task_id`` as a dependency, directly or through others."""
        found: list[str] = []
        frontier = [task_id]
        while frontier:
            current = frontier.pop()
            for task in self.tasks:
                if current in task.depends and task.id not in found:
                    found.append(task.id)
                    frontier.append(task.id)
        return tuple(found)

    def task(self, task_id: str) -> Task:
        """The task with this id; raises ``KeyError`` naming the assignment's task ids."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        known = ", ".join(task.id for task in self.tasks)
        raise KeyError(f"{self.id} has no Task {task_id} (tasks: {known})")
