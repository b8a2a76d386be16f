"""Manual adjustments: the TA's ``adjustments.csv``, applied on every run, after grading.

One row per adjustment or regrade request::

    student,item,points,delta,reason,who,regrade
    alice,4.3,,+2,accepted an equivalent mask,TA Kim,accepted
    bob,a4,80,,excused: medical,Prof. Lee,
    carol,4.1,,,asked for a regrade of the tiling check,TA Kim,denied

``student`` names a gradebook row (the folder name; a Moodle folder also by its name or
id, as ``graders.reports.names.folder_keys`` folds them); ``item`` is a task (``4.3``) or
an assignment (``a4`` or its stem). ``points`` sets the item's score, ``delta`` adds to it
(negative allowed); exactly one of them, or neither for a regrade request that changed
nothing (``regrade`` ``denied`` or ``pending``). ``regrade`` records a regrade request's
outcome beside the adjustment it led to: ``accepted``, ``denied``, ``pending`` or empty.

The file belongs to the TA and lives outside the results folder: regrading replaces
results.json files, never this file, and the gradebook and feedback are rebuilt from both
each run (``graders.reports.ledger``). A row that cannot be used costs only that row and
gets one message naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graders.course.catalog import ASSIGNMENTS
from graders.reports.late import LateError, _number, assignment_named, read_table

#: The columns of an adjustments CSV; ``task`` and ``assignment`` are read as ``item``.
COLUMNS = ("student", "item", "points", "delta", "reason", "who", "regrade")
ALIASES = {"task": "item", "assignment": "item"}
OUTCOMES = ("", "accepted", "denied", "pending")


@dataclass(frozen=True)
class Adjustment:
    """One row of adjustments.csv: ``student``; ``assignment`` (``"a4"``) and ``task``
    (``"4.3"``, or None for the whole assignment); ``points`` (set) or ``delta`` (add), in
    points, both None for a request that changed nothing; ``reason``, ``who``, ``regrade``
    (the request's outcome, ``OUTCOMES``); ``where`` ("FILE line N")."""

    student: str
    assignment: str
    task: str | None
    points: float | None
    delta: float | None
    reason: str
    who: str
    regrade: str
    where: str

    def describe(self, taken: float | None = None) -> str:
        """The row in words, as the feedback and the gradebook's notes show it; ``taken``:
        the change a task ``delta`` actually made, when keeping the task within 0 and its
        points made it smaller than asked."""
        item = f"Task {self.task}" if self.task else f"{self.assignment} (whole assignment)"
        if self.points is not None:
            change = f"set to {self.points:g}"
        elif self.delta is not None and taken is not None and abs(taken - self.delta) > 1e-9:
            change = (f"{taken:+g} point(s) ({self.delta:+g} asked; a task stays within 0 "
                      "and its points)")
        elif self.delta is not None:
            change = f"{self.delta:+g} point(s)"
        else:
            change = "no change"
        request = f"regrade request {self.regrade}: " if self.regrade else ""
        by = f" ({self.who})" if self.who else ""
        reason = f": {self.reason}" if self.reason else ""
        return f"{request}{item} {change}{reason}{by}"


def read_adjustments(path: Path) -> tuple[list[Adjustment], list[str]]:
    """The usable rows of the adjustments CSV ``path``, in file order, and one message
    per row that is not ("FILE line N: why; row ignored"). Raises ``LateError`` when the
    file cannot be read or lacks the ``student`` or ``item`` column."""
    rows, problems = _rows(path)
    found = []
    for line, row in rows:
        where = f"{path} line {line}"
        try:
            found.append(_adjustment(row, where))
        except LateError as exc:
            problems.append(f"{where}: {exc}; row ignored")
    return found, problems


def _rows(path: Path) -> tuple[list[tuple[int, dict[str, str]]], list[str]]:
    known = (*COLUMNS, *ALIASES)
    rows, problems = read_table(path, ("student",), known)
    named = [(line, {ALIASES.get(k, k): v for k, v in row.items()}) for line, row in rows]
    if rows and not any("item" in row for _, row in named):
        raise LateError(f"{path} line 1: no item column (a task such as 4.3, or an "
                        "assignment such as a4)")
    return named, problems


def _adjustment(row: dict[str, str], where: str) -> Adjustment:
    student = row.get("student", "").strip()
    if not student:
        raise LateError("no student")
    item = row.get("item", "").strip()
    task_of = {t.id: a.id for a in ASSIGNMENTS.values() for t in a.tasks if t.graded}
    if item in task_of:
        assignment, task = task_of[item], item
    else:
        info = assignment_named(item)
        if info is None:
            raise LateError(f"item {item!r} is neither a graded task (4.3) nor an "
                            "assignment (a4)")
        assignment, task = info.id, None
    points_text, delta_text = row.get("points", "").strip(), row.get("delta", "").strip()
    regrade = row.get("regrade", "").strip().casefold()
    if regrade not in OUTCOMES:
        raise LateError(f"regrade {regrade!r} is not one of accepted, denied, pending "
                        "(or empty)")
    if points_text and delta_text:
        raise LateError("give points or delta, not both")
    if not (points_text or delta_text) and regrade not in ("denied", "pending"):
        raise LateError("give points or delta (only a denied or pending regrade "
                        "request may change nothing)")
    if (points_text or delta_text) and regrade in ("denied", "pending"):
        raise LateError(f"a {regrade} regrade request changes no points: leave points "
                        "and delta empty")
    points = _number(points_text, "points") if points_text else None
    delta = _number(delta_text, "delta") if delta_text else None
    if points is not None:
        top = _task_max(assignment, task)
        if not 0 <= points <= top:
            raise LateError(f"points {points:g} must lie within 0 and {top:g} "
                            f"(the most {item} can score)")
    return Adjustment(student, assignment, task, points, delta,
                      row.get("reason", "").strip(), row.get("who", "").strip(),
                      regrade, where)


def _task_max(assignment: str, task: str | None) -> float:
    info = ASSIGNMENTS[assignment]
    if task is None:
        return float(sum(t.points for t in info.graded_tasks))
    return float(info.task(task).points)
