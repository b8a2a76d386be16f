"""Grade one submission file: static check, worker, every check in order, results.

docs/grading-design.md, "Trusted and untrusted code": student code never runs in this process;
a crash, timeout or exception fails only the check that caused it; every
registered check that produced no result counts as failed; a check that
raises anything but ``CheckFailure`` is the grader's bug and is recorded as
status "error" without losing the other results. Scores count only graded
tasks (``graders.course.catalog``).
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graders.checking import measures
from graders.checking.feedback import cap_text, failure_text, passed_text
from graders.checking.framework import (
    Check,
    CheckFailure,
    PropertyAbort,
    Session,
    load_checks,
)
from graders.checking.registry import Visibility
from graders.checking.status import Status
from graders.course.catalog import Assignment, assignment_for_stem, get_assignment
from graders.grading.result import CheckResult, SubmissionResult
from graders.grading.session import open_session
from graders.grading.submission import Submission
from graders.safety.safe_text import terminal_text


def __getattr__(name: str) -> object:
    """``GRADING_SIM_OPTIONS``: pallas_sim sanitizers of the grading profile, for the
    reference runs in this process; the worker applies the same to the student's code
    (worker/main.py). Written once, in ``pallas_sim._src.config.GRADING_SANITIZERS``.
    Looked up when asked for, so that importing this module (as the command line's main
    process does, which grades nothing itself in a batch) does not import pallas_sim."""
    if name == "GRADING_SIM_OPTIONS":
        from pallas_sim.extend import GRADING_SANITIZERS

        return GRADING_SANITIZERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: A submission file's default wall-clock budget, in per-call timeouts per check: a file
#: whose calls all take just under the timeout stops after (checks x 3 x timeout) seconds
#: (docs/security.md, "Limits"). Honest files use a small fraction of it.
CHECK_BUDGET_TIMEOUTS = 3


NO_CHECKS = "(no checks registered)"


def _result_for_failure(
    check: Check, assignment: Assignment, failure: CheckFailure, seconds: float,
    detail: str = "",
) -> CheckResult:
    task = _task_of(check, assignment)
    feedback = failure_text(
        failure, task_id=check.task, task_title=task.title, check_name=check.name,
        points=check.points, lecture=assignment.lecture,
    )
    reason = cap_text(failure.what.splitlines()[0]) if failure.what else failure.status
    diagnosis = terminal_text(cap_text(failure.diagnosis)) if failure.diagnosis else ""
    return CheckResult(
        assignment=assignment.id, task=check.task, check=check.name, points=0.0,
        max_points=check.points, status=failure.status, feedback=feedback, seconds=seconds,
        graded=task.graded, reason=reason, internal=failure.internal or bool(detail),
        internal_detail=detail, diagnosis=diagnosis,
    )


@dataclass(frozen=True, kw_only=True)
class _CheckTask:
    """The title of a check's task and whether it counts toward the grade."""

    title: str
    graded: bool


def _task_of(check: Check, assignment: Assignment) -> _CheckTask:
    try:
        task = assignment.task(check.task)
    except KeyError:
        return _CheckTask(title="(unknown task)", graded=False)
    return _CheckTask(title=task.title, graded=task.graded)


def _internal_failure(exc: BaseException) -> tuple[CheckFailure, str]:
    failure = CheckFailure(
        f"internal grader error ({type(exc).__name__}); this is not your fault, "
        "please tell the course staff",
        status=Status.ERROR, internal=True,
    )
    return failure, "".join(traceback.format_exception(exc))


def run_check(session: Session, check: Check, assignment: Assignment) -> CheckResult:
    """Run one check against a session and turn its outcome into a ``CheckResult``.

    Never raises for a check's failure or a check's bug (``Exception``);
    ``KeyboardInterrupt`` and ``SystemExit`` propagate.
    """
    session.begin_check(check)
    started = time.monotonic()
    detail = ""
    try:
        check.run(session)
    except CheckFailure as failure:
        outcome: CheckFailure | None = failure
    except PropertyAbort as abort:  # a session call in a property not run by run_property
        outcome = abort.failure
    except Exception as exc:  # noqa: BLE001 - the grader's bug, recorded not raised
        outcome, detail = _internal_failure(exc)
    else:
        outcome = None
    finally:
        session.begin_check(None)
        recorded = measures.take(session)
    seconds = time.monotonic() - started
    if outcome is not None:
        return _result_for_failure(check, assignment, outcome, seconds, detail)
    task = _task_of(check, assignment)
    feedback = passed_text(
        task_id=check.task, task_title=task.title, check_name=check.name, points=check.points
    )
    return CheckResult(
        assignment=assignment.id, task=check.task, check=check.name, points=check.points,
        max_points=check.points, status=Status.PASSED, feedback=feedback, seconds=seconds,
        graded=task.graded, measures=recorded,
    )


def _missing_results(
    assignment: Assignment, checks: list[Check], results: list[CheckResult], reason: str,
    only_tasks: tuple[str, ...] | None = None,
) -> list[CheckResult]:
    """Results for every check that produced none, and for graded tasks without checks
    (of ``only_tasks`` when given)."""
    done = {(r.task, r.check) for r in results}
    extra = []
    for check in checks:
        if (check.task, check.name) not in done:
            failure = CheckFailure(reason, status=Status.ERROR)
            extra.append(_result_for_failure(check, assignment, failure, 0.0))
    for task in assignment.graded_tasks:
        if only_tasks is not None and task.id not in only_tasks:
            continue
        if not any(c.task == task.id for c in checks):
            stub = Check(assignment=assignment.id, task=task.id, name=NO_CHECKS,
                         visibility=Visibility.HIDDEN, points=task.points, run=lambda s: None)
            failure = CheckFailure(
                f"internal grader error: no checks are registered for Task {task.id}",
                status=Status.ERROR, internal=True,
            )
            extra.append(_result_for_failure(stub, assignment, failure, 0.0))
    return extra


def isolation_label() -> str:
    """The sandbox level and tree limits workers of this process get ("" when they cannot
    be determined: a forced level that is not available)."""
    from graders.worker import sandbox

    try:
        level = sandbox.choose_level()
        return sandbox.describe(level, sandbox.choose_tree_level(level))[0]
    except (RuntimeError, ValueError):
        return ""


def resolve_assignment(path: str | Path, assignment: str | None = None) -> Assignment:
    """The assignment a file is graded as: ``assignment`` (an id) or the one its stem names.

    Raises ``KeyError`` for an unknown id and ``ValueError`` when the stem names none.
    """
    if assignment is not None:
        return get_assignment(assignment)
    found = assignment_for_stem(Path(path).stem)
    if found is None:
        raise ValueError(
            f"{Path(path).name} does not name an assignment; pass --assignment aN"
        )
    return found


def grade_file(
    path: str | Path,
    *,
    assignment: str | None = None,
    timeout: float = 10.0,
    student: str | None = None,
    budget: float | None = None,
    tasks: Collection[str] | None = None,
) -> SubmissionResult:
    """Grade one submission file against every registered check of its assignment.

    ``assignment`` ("a1") overrides the assignment named by the file's stem; ``student``
    defaults to the name of the file's folder. Builds the file's ``Submission`` record
    (hashing it once) and grades it with :func:`grade_submission`, whose docstring says
    what ``timeout``, ``budget`` and ``tasks`` do. Raises ``KeyError``/``ValueError``
    when the assignment cannot be determined (the caller's problem, not the student's).
    """
    info = resolve_assignment(path, assignment)
    return grade_submission(Submission.of(path, info, student=student), timeout=timeout,
                            budget=budget, tasks=tasks)


def grade_submission(
    sub: Submission,
    *,
    timeout: float = 10.0,
    budget: float | None = None,
    tasks: Collection[str] | None = None,
) -> SubmissionResult:
    """Grade one submission record against every registered check of its assignment.

    ``timeout`` is each call's limit in seconds; ``budget`` the wall-clock seconds the
    whole file may take (default: ``CHECK_BUDGET_TIMEOUTS`` x ``timeout`` per check),
    after which the running check and every later one are recorded as ``timeout``;
    ``tasks`` (task ids) runs only those tasks' checks (``SubmissionResult.only_tasks``).
    A file that cannot be read or is empty (``sub.unreadable``) earns nothing, every
    check saying why. Returns a ``SubmissionResult`` with one ``CheckResult`` per check
    in registration order (plus one per graded task that has no checks); its ``sha256``
    is the record's. Lets the checks module's ``ImportError`` through (a grader bug).
    """
    path, info = sub.file, sub.assignment
    checks = load_checks(info.id)
    only = None if tasks is None else tuple(t for t in (x.id for x in info.tasks) if t in tasks)
    if only is not None:
        checks = [c for c in checks if c.task in only]
    result = SubmissionResult(
        student=sub.student,
        stem=info.stem,
        assignment=info.id,
        file=str(path),
        only_tasks=only,
        sha256=sub.sha256,
    )
    started = time.monotonic()
    if budget is None:
        budget = len(checks) * CHECK_BUDGET_TIMEOUTS * timeout
        rule = (f"{len(checks)} checks x {CHECK_BUDGET_TIMEOUTS} x the {timeout:g} s "
                "call timeout")
    else:
        rule = "set by the grader"
    missing_reason = "this check produced no result"
    import pallas_sim
    from pallas_sim.extend import GRADING_SANITIZERS

    try:
        with pallas_sim.config(**GRADING_SANITIZERS), _session_for(sub, timeout) as session:
            result.sandbox = session.isolation or isolation_label()
            # what was graded: the bytes the session read, which may differ from what
            # discovery hashed when the file changed in between (a result never claims
            # content it was not made from: the resume rule compares this digest)
            result.sha256 = session.file_sha256 or result.sha256
            session.set_budget(started + budget, budget, rule)
            if session.load_failure is not None:
                result.load_error = session.load_failure.what
            for check in checks:
                if session.out_of_budget and session.load_failure is None:
                    result.checks.append(_result_for_failure(
                        check, info, session.budget_failure(ran=False), 0.0))
                    continue
                result.checks.append(run_check(session, check, info))
    except (OSError, RuntimeError) as exc:
        result.load_error = f"the submission could not be graded: {exc}"
        missing_reason = result.load_error
    finally:
        result.checks.extend(_missing_results(info, checks, result.checks, missing_reason,
                                              only))
        result.checks[:] = _note_dependencies(info, result.checks)
        result.seconds = time.monotonic() - started
    return result


@contextmanager
def _session_for(sub: Submission, timeout: float) -> Iterator[Session]:
    """``open_session``, or a session whose every call fails with ``sub.unreadable``."""
    if sub.unreadable is not None:
        yield Session.failed(sub.assignment, sub.unreadable, sub.file.name)
        return
    with open_session(sub.file, sub.assignment, timeout=timeout) as session:
        yield session


def _note_dependencies(assignment: Assignment, checks: list[CheckResult]) -> list[CheckResult]:
    """Add to each failed check of a task that uses another task's functions (``Task.depends``)
    which of those failed too: the fault may be there (one fault, one charge, and
    a dependant's feedback says so). A check of a task still at its stub ("not started")
    gets no such note: the stub calls nothing (the self-check's ``note_dependencies``
    notes only failing tasks too)."""
    failed = {c.task for c in checks if c.status != Status.PASSED}
    if not failed:
        return checks
    out = []
    for c in checks:
        try:
            task = assignment.task(c.task)
        except KeyError:
            out.append(c)
            continue
        broken = [d for d in task.depends if d in failed]
        # A stub not started calls nothing: it cannot have failed through a dependency.
        if c.status in (Status.PASSED, Status.NOT_STARTED) or not broken:
            out.append(c)
            continue
        names = ", ".join(f"Task {d} ({assignment.task(d).title})" for d in broken)
        note = (f"  depends on {names}, which failed too: your {task.title} calls it, so fix "
                "that first; this check may pass once it does")
        out.append(dataclasses.replace(
            c, feedback=f"{c.feedback.rstrip()}\n{note}",
            reason=f"{c.reason} (depends on Task {', '.join(broken)}, which failed)"))
    return out
