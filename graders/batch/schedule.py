"""What a batch grades and in which order: resume (a submission whose results.json was made
from a file of the same content, the record's SHA-256, is not graded again; a result made
from other content is dropped when its grader dies for good) and schedule (the longest
files first, by the checks their records declare).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from graders.batch.store import read_result, result_path
from graders.grading.submission import Submission
from graders.reports.files import atomic_write_text
from graders.safety import submission_files

#: In a batch folder while a ``--force`` / ``--task`` / ``--student`` regrade is not
#: finished: what it regrades; its own modification time is when it started.
REGRADE_MARK = ".pallas-lab-regrade.json"


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


def regraded_since(out: Path, sub: Submission, since: float) -> bool:
    """Whether ``sub`` has a current results.json written at or after ``since`` (a time of
    the batch folder's file system, ``os.stat``'s ``st_mtime``): regraded by the stopped
    batch that a rerun resumes."""
    path = result_path(out, sub.student, sub.stem)
    try:
        written = path.stat().st_mtime
    except OSError:
        return False
    return written >= since and is_current(out, sub)


def pending_students(submissions: Sequence[Submission], out: Path, *, force: bool = False,
                     since: float | None = None) -> dict[str, list[Submission]]:
    """Students to grade, in order, each with the submissions of theirs to grade: with
    ``force`` every student and every submission (with ``since`` too, those not regraded
    since that time: ``regraded_since``), otherwise the students with a submission that
    lacks a current results.json (none yet, one of another content, or one without
    pallas-lab's record), with just those submissions (the others' results are current)."""
    by_student: dict[str, list[Submission]] = {}
    for sub in submissions:
        if force and since is not None:
            pending = not regraded_since(out, sub, since)
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
               tasks: Collection[str] | None = None, since: float | None = None) -> BatchPlan:
    """The ``BatchPlan`` for grading ``submissions`` into the batch folder ``out``: with
    ``force`` or ``tasks`` every file (``tasks``: those tasks' checks only; with ``since``,
    the time a stopped regrade of the same options started, every file not regraded since),
    otherwise only the files without a current results.json, longest first by the checks
    their records declare. Reads the results.json files under ``out`` (bounded); never
    imports checks."""
    pending = pending_students(submissions, out, force=force or bool(tasks), since=since)
    students = {sub.student for sub in submissions}
    return BatchPlan(pending, schedule(pending, tasks) if pending else [],
                     len(students) - len(pending))


def grader_fingerprint() -> str:
    """SHA-256 of the grading code: every ``.py`` file of the packages that decide a grade
    (``graders``, ``reference``, ``pallas_sim``), by path and content; found without
    importing them."""
    import importlib.util

    digest = hashlib.sha256()
    for name in ("graders", "reference", "pallas_sim"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(list(spec.submodule_search_locations)[0]).resolve()
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root.parent)).encode("utf-8", "surrogateescape"))
            digest.update(b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _regrade_key(submissions: Sequence[Submission], force: bool,
                 tasks: Collection[str] | None) -> dict[str, object]:
    """What makes two regrades the same: the options, the files (student, stem) and the
    grading code (a regrade stopped to fix a check is not resumed by the fixed grader)."""
    files = sorted(f"{sub.student}\0{sub.stem}" for sub in submissions)
    return {"force": force, "tasks": sorted(tasks or ()),
            "files": hashlib.sha256("\n".join(files).encode("utf-8", "surrogateescape"))
            .hexdigest(), "grader": grader_fingerprint()}


def start_regrade(out: Path, submissions: Sequence[Submission], *, force: bool,
                  tasks: Collection[str] | None) -> float | None:
    """For a regrade (``force`` or ``tasks``): the time a stopped regrade of the same files,
    options and grading code (``grader_fingerprint``) started (``REGRADE_MARK`` in
    ``out``), which this one resumes: the files regraded since keep their new results
    (``plan_batch``'s ``since``). Otherwise None,
    and the mark is written for this regrade (replacing another's). None and nothing
    written for a batch that is not a regrade."""
    if not (force or tasks):
        return None
    mark = out / REGRADE_MARK
    key = _regrade_key(submissions, force, tasks)
    try:
        if json.loads(submission_files.read_bytes(mark, 4096).decode("utf-8")) == key:
            return mark.stat().st_mtime
    except (OSError, ValueError, submission_files.RefusedFile):
        pass
    atomic_write_text(mark, json.dumps(key))
    return None


def finish_regrade(out: Path) -> None:
    """A regrade went through to its end: nothing is left to resume."""
    (out / REGRADE_MARK).unlink(missing_ok=True)
