"""What grading one file produces: a ``CheckResult`` per check, their per-task rollup
(``TaskResult``) and the file's ``SubmissionResult`` (score over graded tasks, the load
error, the sandbox it ran under, the SHA-256 of what was graded). Reports, the batch's
store and the integrations read these; nothing here runs a check."""

from __future__ import annotations

from dataclasses import dataclass, field

from graders.checking.status import RESULT_STATUSES, TASK_FAILURE_ORDER, Status
from graders.course.catalog import Assignment, get_assignment


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """The outcome of one check for one submission (built by keyword only).

    ``points`` earned of ``max_points``; ``status`` a :class:`Status` (a string given
    becomes its member; ``ValueError`` for one outside ``RESULT_STATUSES``);
    ``feedback`` the student-facing text (docs/style.md); ``reason`` its one-line
    summary ("" when passed); ``graded`` whether the task counts; ``internal``
    True when the grader itself failed (``internal_detail`` then holds our
    traceback, for the staff only, never shown to students).
    """

    assignment: str
    task: str
    check: str
    points: float
    max_points: float
    status: Status
    feedback: str
    seconds: float = 0.0
    graded: bool = True
    reason: str = ""
    internal: bool = False
    internal_detail: str = ""
    #: What the check measured besides its points (``graders.checking.measures``): e.g. a
    #: performance task's ``"predicted_ms"``; empty for most checks.
    measures: dict[str, float] = field(default_factory=dict)
    #: The "looks like" diagnosis the check itself computed and verified on the failing
    #: input (``CheckFailure.diagnosis``, control characters escaped), "" when there is
    #: none. A field of its own, never parsed from ``feedback``, which quotes what the
    #: student's code raised and printed: the class report counts mistakes from this.
    diagnosis: str = ""

    def __post_init__(self) -> None:
        status = Status(self.status)
        if status not in RESULT_STATUSES:
            raise ValueError(f"a check result's status is one of {list(RESULT_STATUSES)}, "
                             f"not {status.value!r}")
        object.__setattr__(self, "status", status)


@dataclass(frozen=True, kw_only=True)
class TaskResult:
    """A task's rollup over its checks: points, the worst status and the first reason."""

    task: str
    title: str
    points: float
    max_points: float
    status: Status
    reason: str
    graded: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))

    @property
    def shown_status(self) -> str:
        """The status reports show: "partial" for a failed task that kept some points."""
        if self.status == Status.FAILED and self.points > 0:
            return Status.PARTIAL
        return self.status


@dataclass
class SubmissionResult:
    """Everything graded for one submission file.

    ``checks`` in registration order; ``load_error`` the static-check or import
    failure (None when the file loaded); ``score``/``max_score`` over graded tasks;
    ``sandbox`` the isolation the submission ran under (``Worker.isolation``, e.g.
    "namespace, cgroup v1"; for a file that never ran, what it would have got).
    """

    student: str
    stem: str
    assignment: str
    file: str
    checks: list[CheckResult] = field(default_factory=list)
    load_error: str | None = None
    seconds: float = 0.0
    sandbox: str = ""
    #: The task ids this result covers (``grade_file(..., tasks=...)``); None: every task.
    only_tasks: tuple[str, ...] | None = None
    #: The SHA-256 of the file's bytes when it was graded ("" when it could not be read).
    sha256: str = ""

    @property
    def info(self) -> Assignment:
        """The assignment's table entry."""
        return get_assignment(self.assignment)

    @property
    def score(self) -> float:
        """Points earned on graded tasks."""
        return round(sum(c.points for c in self.checks if c.graded), 6)

    @property
    def max_score(self) -> float:
        """Points available on graded tasks (from the assignments table; with
        ``only_tasks``, on those tasks only)."""
        if self.only_tasks is None:
            return self.info.max_score
        return sum(t.points for t in self.info.graded_tasks if t.id in self.only_tasks)

    @property
    def internal_errors(self) -> list[CheckResult]:
        """Checks that failed because of the grader, not the student."""
        return [c for c in self.checks if c.internal]

    def tasks(self) -> list[TaskResult]:
        """Per-task rollup in the assignment's task order (tasks without checks included)."""
        rollup = []
        for task in self.info.tasks:
            if self.only_tasks is not None and task.id not in self.only_tasks:
                continue
            checks = [c for c in self.checks if c.task == task.id]
            if not checks and not task.graded:
                continue
            earned = sum(c.points for c in checks)
            statuses = [c.status for c in checks]
            if statuses and all(s == Status.PASSED for s in statuses):
                status = Status.PASSED
            elif statuses and all(s == Status.NOT_STARTED for s in statuses):
                status = Status.NOT_STARTED
            else:
                failing = [s for s in statuses if s != Status.PASSED]
                status = next((s for s in TASK_FAILURE_ORDER if s in failing), Status.FAILED)
            reason = next((c.reason for c in checks if c.status != Status.PASSED and c.reason), "")
            rollup.append(
                TaskResult(task=task.id, title=task.title, points=round(earned, 6),
                           max_points=task.points, status=status, reason=reason,
                           graded=task.graded)
            )
        return rollup
