"""What a batch grades and in which order: resume (a submission whose results.json was made
from a file of the same content, the record's SHA-256, is not graded again; a result made
from other content is dropped when its grader dies for good) and schedule (the longest
files first, by the checks their records declare).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from graders.batch.store import read_result, result_path
from graders.grading.submission import Submission


def is_current(out: Path, sub: Submission) -> bool:
    """Whether ``sub`` has a results.json made from a file with its content (the record's
    SHA-256)."""
    previous = read_result(result_path(out, sub.student, sub.stem), sub.assignment)
    return previous is not None and previous.sha256 != "" and previous.sha256 == sub.sha256


def drop_stale_result(out: Path, sub: Submission) -> bool:
    """After ``sub``'s grader died for good: remove a results.json (and the feedback
    files beside it) made from other content than ``sub.file``'s present one, so the
    gradebook shows no score rather than an earlier submission's. Returns whether a
    result of this very content is kept."""
    if is_current(out, sub):
        return True
    path = result_path(out, sub.student, sub.stem)
    for stale in (path, path.with_name("feedback.md"), path.with_name("feedback.html")):
        stale.unlink(missing_ok=True)
    return False


def pending_students(submissions: Sequence[Submission], out: Path, *, force: bool = False,
                     done: Callable[[Submission], bool] | None = None,
                     ) -> dict[str, list[Submission]]:
    """Students to grade, in order, each with the submissions of theirs to grade: with
    ``force`` every student and every submission (resuming a stopped regrade: those for
    which ``done`` is false, ``graders.batch.regrade.regraded``), otherwise the students
    with a submission that lacks a current results.json (none yet, one of another
    content, or one without pallas-lab's record), with just those submissions (the
    others' results are current)."""
    by_student: dict[str, list[Submission]] = {}
    for sub in submissions:
        if force and done is not None:
            pending = not done(sub)
        else:
            pending = force or not is_current(out, sub)
        if pending:
            by_student.setdefault(sub.student, []).append(sub)
    return by_student


def grading_cost(sub: Submission, tasks: Collection[str] | None = None) -> int:
    """What grading ``sub`` is expected to cost, in checks: those its assignment's record
    declares (``Task.checks``; of ``tasks`` only, when given). The hidden checks are never
    imported here. Only the order of the costs matters (``schedule``)."""
    return sub.assignment.check_count(tasks)


def schedule(pending: Mapping[str, Sequence[Submission]],
             tasks: Collection[str] | None = None) -> list[Submission]:
    """The order in which a batch hands out ``pending``'s submissions (one file per job):
    the most expensive first (``grading_cost``), ties in the students' order then each
    student's, so that the long files start early and the short ones fill in the gaps
    at the end, whichever student they belong to (longest processing time first)."""
    subs = [sub for student_subs in pending.values() for sub in student_subs]
    costs = {id(sub): grading_cost(sub, tasks) for sub in subs}
    return sorted(subs, key=lambda sub: -costs[id(sub)])  # sorted() is stable


@dataclass(frozen=True)
class BatchPlan:
    """What a batch will do, decided once before any grader starts: ``pending``, the
    students to grade with their files (``pending_students``); ``order``, those files in
    the order they are handed out (``schedule``); ``skipped``, how many students' results
    were all current."""

    pending: Mapping[str, Sequence[Submission]]
    order: Sequence[Submission]
    skipped: int


def plan_batch(submissions: Sequence[Submission], out: Path, *, force: bool = False,
               tasks: Collection[str] | None = None,
               done: Callable[[Submission], bool] | None = None) -> BatchPlan:
    """The ``BatchPlan`` for grading ``submissions`` into the batch folder ``out``: with
    ``force`` or ``tasks`` every file (``tasks``: those tasks' checks only; resuming a
    stopped regrade, every file for which ``done`` is false),
    otherwise only the files without a current results.json, longest first by the checks
    their records declare. Reads the results.json files under ``out`` (bounded); never
    imports checks."""
    pending = pending_students(submissions, out, force=force or bool(tasks), done=done)
    students = {sub.student for sub in submissions}
    return BatchPlan(pending, schedule(pending, tasks) if pending else [],
                     len(students) - len(pending))

