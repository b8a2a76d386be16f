"""A student's standing on an assignment: raw score, adjustments, lateness, penalty, final.

The ``Ledger`` holds what the TA decided (due dates, late policies, extensions,
adjustments) and each submission's time; ``Ledger.standing`` turns one student's graded
task points into the numbers the gradebook and the feedback show. It runs in the
grader's own process when the gradebook is written, after grading, and reads nothing a
submission's code could have written: results graded once serve any later policy.

The order, for one student and assignment (points, never below 0):

1. ``raw``: the sum of the graded tasks' points, as graded;
2. task adjustments (``points`` sets a task, ``delta`` adds, each kept within 0 and the
   task's points), then assignment ``delta`` rows: ``adjusted``;
3. the late penalty on ``adjusted`` (``graders.reports.late.LatePolicy.penalty``):
   ``final = adjusted - penalty``;
4. an assignment ``points`` row overrides ``final`` (the TA's last word: an excused
   submission, a score agreed by hand).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from graders.checking.feedback import format_points
from graders.course.records import Assignment
from graders.grading.submission import Submission
from graders.reports.adjustments import Adjustment
from graders.reports.late import (
    Extension,
    LatePolicy,
    SubmissionTime,
    late_seconds,
    lateness_text,
    submission_time,
)
from graders.reports.names import resolve_student


@dataclass
class Standing:
    """One student's numbers for one assignment (points; ``late_seconds`` in seconds, None
    when late by an unknown amount) and the lines that explain them (``lines``)."""

    student: str
    assignment: str
    maximum: float
    raw: float
    adjusted: float
    penalty: float = 0.0
    final: float = 0.0
    due: dt.datetime | None = None
    time: SubmissionTime | None = None
    late_seconds: float | None = 0.0
    adjustments: list[Adjustment] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    #: Task id -> points after the task adjustments (the gradebook's task columns).
    tasks: dict[str, float] = field(default_factory=dict)


def _when(value: dt.datetime | None, zone: dt.tzinfo | None = None) -> str:
    """``value`` as the gradebook shows it; in ``zone`` when given (the due date's)."""
    if value is None:
        return ""
    return (value.astimezone(zone) if zone is not None else value).isoformat(
        sep=" ", timespec="minutes")


@dataclass
class Ledger:
    """What the TA decided, for every student found.

    ``due``: assignment id -> due date (aware); ``policies``: assignment id -> late policy
    (``default_policy`` for the others); ``extensions`` and ``adjustments`` keyed by the
    gradebook's student names (``resolve_rows``); ``times``: (student, assignment id) ->
    submission time; ``problems``: one line per row that could not be used.
    """

    due: dict[str, dt.datetime] = field(default_factory=dict)
    policies: dict[str, LatePolicy] = field(default_factory=dict)
    default_policy: LatePolicy = field(default_factory=LatePolicy)
    extensions: dict[str, list[Extension]] = field(default_factory=dict)
    adjustments: dict[str, list[Adjustment]] = field(default_factory=dict)
    times: dict[tuple[str, str], SubmissionTime] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: The course's zone: submission times are shown in it (None: as recorded).
    zone: dt.tzinfo | None = None
    #: The assignments the adjustments file names, in rows matched to a student or not:
    #: the gradebook's columns do not depend on whether a name was told apart.
    named: set[str] = field(default_factory=set)

    def active(self, assignment: str) -> bool:
        """Whether the gradebook shows the late and adjustment columns of ``assignment``:
        it has a due date, or some adjustment names it."""
        return assignment in self.due or assignment in self.named or any(
            a.assignment == assignment for rows in self.adjustments.values() for a in rows)

    def policy(self, assignment: str) -> LatePolicy:
        """The late policy of ``assignment``."""
        return self.policies.get(assignment, self.default_policy)

    def due_of(self, student: str, assignment: str) -> tuple[dt.datetime | None, str]:
        """(``student``'s due date for ``assignment`` with their extension, the extension
        in words or ``""``). The last extension row that applies wins."""
        base = self.due.get(assignment)
        rows = [e for e in self.extensions.get(student, [])
                if e.assignment in (None, assignment)]
        if not rows:
            return base, ""
        last = rows[-1]
        reason = f" ({last.reason})" if last.reason else ""
        if last.due is not None:
            return last.due, f"extension to {_when(last.due)}{reason}"
        if base is None:
            return None, ""
        return base + dt.timedelta(hours=last.hours), f"extension of {last.hours:g} h{reason}"

    def shown_zone(self, due: dt.datetime | None) -> dt.tzinfo | None:
        """The zone a submission time is shown in: the due date's it is compared with,
        else the course's."""
        return due.tzinfo if due is not None and due.tzinfo is not None else self.zone

    def standing(self, student: str, info: Assignment, task_points: Mapping[str, float],
                 stored: SubmissionTime | None = None) -> Standing:
        """``student``'s standing on ``info`` from the points of its graded tasks as graded
        (task id -> points; missing tasks count 0). ``stored``: the submission time
        recorded with the result (``graders.batch.store``), used when this run found no
        file of the student's for ``info``. Never raises."""
        tasks = {t.id: float(task_points.get(t.id, 0.0)) for t in info.graded_tasks}
        maximum = float(sum(t.points for t in info.graded_tasks))
        raw = round(sum(tasks.values()), 6)
        rows = [a for a in self.adjustments.get(student, []) if a.assignment == info.id]
        taken: dict[int, float] = {}  # id(row) -> the change a task row actually made
        for row in rows:
            if row.task is None or row.task not in tasks:
                continue
            top = float(info.task(row.task).points)
            value = row.points if row.points is not None else tasks[row.task] + (row.delta or 0)
            before, tasks[row.task] = tasks[row.task], min(max(value, 0.0), top)
            taken[id(row)] = round(tasks[row.task] - before, 6)
        adjusted = sum(tasks.values()) + sum(r.delta or 0 for r in rows if r.task is None)
        adjusted = round(max(adjusted, 0.0), 6)
        out = Standing(student, info.id, maximum, raw, adjusted, adjustments=rows,
                       tasks={k: round(v, 6) for k, v in tasks.items()})
        due, extension = self.due_of(student, info.id)
        out.due, out.time = due, self.times.get((student, info.id), stored)
        if due is not None:
            policy = self.policy(info.id)
            time = out.time or SubmissionTime(None, "unknown (no submission time)")
            late = (late_seconds(time, due, extended=bool(extension))
                    if out.time is not None else 0.0)
            out.late_seconds = late
            if late is None or late > 0:
                out.penalty = policy.penalty(late, adjusted, maximum)
            shown = _when(time.when, self.shown_zone(due)) or "at an unknown time"
            out.lines.append(f"due {_when(due)}{'; ' + extension if extension else ''}; "
                             f"submitted {shown} (source: {time.source}): "
                             f"{lateness_text(late)}{_why_on_time(time, late, extension, policy)}")
            if out.penalty:
                out.lines.append(f"late policy {policy.describe()}: "
                                 f"-{format_points(out.penalty)} point(s)")
        out.final = round(max(adjusted - out.penalty, 0.0), 6)
        overrides = [r for r in rows if r.task is None and r.points is not None]
        if overrides:
            out.final = overrides[-1].points or 0.0
        out.lines.extend(f"adjustment: {row.describe(taken.get(id(row)))}" for row in rows)
        if out.lines:
            out.lines.append(f"raw {format_points(raw)}, after adjustments "
                             f"{format_points(adjusted)}, penalty "
                             f"{format_points(out.penalty)}, final "
                             f"{format_points(out.final)} of {format_points(maximum)}")
        return out

    def cells(self, standing: Standing) -> dict[str, str]:
        """The gradebook cells of ``standing`` (``standing_columns``)."""
        a = standing.assignment
        time = standing.time
        hours = ("" if standing.due is None or standing.late_seconds is None
                 else f"{max(standing.late_seconds, 0) / 3600:.2f}")
        return {f"{a} raw": format_points(standing.raw),
                f"{a} adjusted": format_points(standing.adjusted),
                f"{a} submitted": (_when(time.when, self.shown_zone(standing.due))
                                   if time else ""),
                f"{a} late hours": hours,
                f"{a} late source": time.source if time and standing.due else "",
                f"{a} penalty": format_points(standing.penalty),
                a: format_points(standing.final)}


def _why_on_time(time: SubmissionTime, late: float | None, extension: str,
                 policy: LatePolicy) -> str:
    """Why a submission that looks late costs nothing, in words ("" when it does not)."""
    if late is not None and 0 < late <= policy.grace_minutes * 60:
        return f" (within the {policy.grace_minutes:g} min grace period: not counted late)"
    if time.late_flag and extension and late is not None and late <= 0:
        return (" (Canvas's LATE flag is against its own due date; within the extension, "
                "the time decides)" if time.when is not None else
                " (Canvas's LATE flag is against its own due date and no time is known: "
                "the extension wins)")
    return ""


def standing_columns(assignment: str) -> list[str]:
    """The columns a ledger adds before an active assignment's (final) column."""
    return [f"{assignment} {c}" for c in
            ("raw", "adjusted", "submitted", "late hours", "late source", "penalty")]


def build_ledger(submissions: Sequence[Submission], students: Iterable[str], *,
                 due: Mapping[str, dt.datetime], policies: Mapping[str, LatePolicy],
                 default_policy: LatePolicy, extensions: Sequence[Extension],
                 adjustments: Sequence[Adjustment], problems: Sequence[str] = (),
                 zone: dt.tzinfo | None = None) -> Ledger:
    """The ledger of a run: each submission's time (``submission_time``), and the
    extension and adjustment rows matched to ``students`` (a row naming nobody found, or
    several, is a problem line naming its file and line, and is left out)."""
    ledger = Ledger(due=dict(due), policies=dict(policies), default_policy=default_policy,
                    problems=list(problems), zone=zone,
                    named={a.assignment for a in adjustments})
    everyone = sorted(set(students))
    for sub in submissions:
        ledger.times[(sub.student, sub.assignment.id)] = submission_time(sub)
    for row, target in ((e, ledger.extensions) for e in extensions):
        _file(row, target, everyone, ledger.problems)
    for row, target in ((a, ledger.adjustments) for a in adjustments):
        _file(row, target, everyone, ledger.problems)
    return ledger


def _file(row: Extension | Adjustment, into: dict, everyone: list[str],
          problems: list[str]) -> None:
    student, why = resolve_student(row.student, everyone)
    if student is None:
        problems.append(f"{row.where}: {why}; row ignored")
        return
    into.setdefault(student, []).append(row)
