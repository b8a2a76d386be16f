"""Batch grading of a class: parallel, one result file per submission, resumable.

``pallas-lab grade CLASS_DIR --jobs N --out DIR`` grades N submission files at a
time. The unit of work is one (student, file): the files of every pending student
are handed out most expensive first (``schedule``: the assignment's number of
checks), so one student's slow files (timeouts, endless loops) run side by side
with everybody else's instead of in one process while the others idle. Each file
is graded by a fresh trusted grader process (a ``ProcessPoolExecutor`` child used
for one file only) which starts its own untrusted worker, as ``grade_file``
always does; the child sends back only the student's name, the stem, the score
and an error text, and everything else is read back from the files it wrote.
Results land in ``DIR/<student>/<stem>/results.json`` (Gradescope's schema;
``extra_data`` also holds the file's SHA-256 and each check's status and reason,
so the report can be rebuilt from the file) beside ``feedback.md`` and
``feedback.html`` (the text ``--feedback`` prints), and the gradebook is
rebuilt from those files each time a student's last file is done; every file is
replaced atomically. ``<student>`` is the student's name, percent-encoded where
it could collide with the gradebook, a temp file or another student
(``graders.reports.files.student_folder_name``).

A grader process that dies (SIGKILL from the kernel's out-of-memory killer, a crash in a
C extension, an operator's kill) breaks the pool, which then ends every file it had not
finished. The files already finished keep their results; the others are graded again,
each in a pool of its own (one grader process, the same worker zygote), so that a second
death is that file's alone. A file whose grader dies again gets no result, an error in
``BatchOutcome.errors`` ("the grader process died while grading FILE (how)") and the
note "grader died: FILE" in its student's gradebook row; the batch goes on. A
results.json left by an earlier batch is removed with its feedback files when it was
made from other content (the file was resubmitted: its old score is not this file's),
and kept when it was made from this very content (``force``, ``tasks``).

Resuming: a submission that already has a results.json made from a file with the
same content (SHA-256) is not graded again (temporary files left by a killed
write are removed), so a batch killed half-way and started again grades only the
files without a current result and ends with the same gradebook; a student who
resubmitted a file has that file graded again. ``force`` grades every file again;
``tasks`` re-runs only those tasks' checks and merges them into a current result
(a file without one is graded in full).
"""

from __future__ import annotations

import contextlib
import csv
import json
import multiprocessing
import signal
import sys
import traceback
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from graders.assignments import ASSIGNMENTS, assignment_for_stem
from graders.discovery import Submission
from graders.feedback import format_points
from graders.grading import CheckResult, SubmissionResult, file_digest
from graders.reports.files import atomic_write_text, student_folder_name, student_of_folder_name
from graders.reports.progress import GradingProgress
from graders.safe_text import terminal_text

GRADEBOOK = "gradebook.csv"
#: The key of pallas-lab's own record in results.json's ``extra_data``.
RECORD = "pallas_lab"
#: What a pool child reports for a student whose grading Ctrl-C stopped.
INTERRUPTED = "interrupted"


def result_path(out: Path, student: str, stem: str) -> Path:
    """Where a submission's results.json goes under the batch folder ``out``
    (``student_folder_name`` keeps it clear of the gradebook and other students)."""
    return out / student_folder_name(student) / stem / "results.json"


def result_document(result: SubmissionResult) -> dict[str, Any]:
    """results.json for ``result`` (``graders.reports.gradescope.results_json``) with
    pallas-lab's record in ``extra_data[RECORD]``: the file's name and SHA-256, the load
    error, and per check its status, one-line reason (what the table shows), measures and
    the diagnosis the check verified (``CheckResult.diagnosis``, which the class report
    counts: never the feedback's text)."""
    from graders.reports.gradescope import results_json

    document = results_json(result)
    document["extra_data"][RECORD] = {
        "file": terminal_text(Path(result.file).name),
        "sha256": result.sha256,
        "load_error": (terminal_text(result.load_error, multiline=True)
                       if result.load_error else None),
        "checks": [{"status": c.status, "reason": terminal_text(c.reason),
                    **({"measures": dict(c.measures)} if c.measures else {}),
                    **({"diagnosis": terminal_text(c.diagnosis)} if c.diagnosis else {})}
                   for c in result.checks],
    }
    return document


def write_result(result: SubmissionResult, path: Path) -> Path:
    """Write ``result_document(result)`` to ``path`` atomically; returns the path."""
    text = json.dumps(result_document(result), indent=2, ensure_ascii=False) + "\n"
    return atomic_write_text(path, text)


def read_result(path: Path) -> SubmissionResult | None:
    """The ``SubmissionResult`` a results.json under a batch folder holds (student and stem
    from its folders), or None when it is not one pallas-lab wrote with its record
    (``result_document``) or cannot be read."""
    info = assignment_for_stem(path.parent.name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record = data["extra_data"][RECORD]
        tests = data["tests"]
        statuses = record["checks"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if info is None or len(statuses) != len(tests):
        return None
    result = SubmissionResult(
        student=student_of_folder_name(path.parent.parent.name), stem=info.stem,
        assignment=info.id, file=str(path.parent / record.get("file", info.file_name)),
        load_error=record.get("load_error"), sandbox=data["extra_data"].get("sandbox", ""),
        sha256=record.get("sha256", ""), seconds=float(data.get("execution_time", 0)),
    )
    try:
        checks = [_check_of(info.id, test, state) for test, state in zip(tests, statuses,
                                                                          strict=True)]
    except (KeyError, TypeError, ValueError):  # not a results.json this batch wrote
        return None
    result.checks.extend(checks)
    return result


def _check_of(assignment: str, test: dict, state: dict) -> CheckResult:
    """One check's result from its Gradescope test entry and its recorded status."""
    graded = "not graded" not in test.get("tags", [])
    return CheckResult(
        assignment=assignment, task=str(test["number"]), check=str(test["name"]),
        points=float(test["score"]), max_points=float(test["max_score"]),
        status=str(state["status"]), feedback=str(test.get("output", "")), seconds=0.0,
        graded=graded, reason=str(state.get("reason", "")),
        measures={str(k): float(v) for k, v in (state.get("measures") or {}).items()},
        diagnosis=str(state.get("diagnosis", "")))


def read_results(out: Path) -> list[SubmissionResult]:
    """Every result under the batch folder ``out``, by student then assignment."""
    order = {a: i for i, a in enumerate(ASSIGNMENTS)}
    found = [r for r in map(read_result, sorted(out.glob("*/*/results.json"))) if r]
    return sorted(found, key=lambda r: (r.student, order.get(r.assignment, 99)))


def _merge(previous: SubmissionResult, fresh: SubmissionResult) -> SubmissionResult:
    """``previous`` with the checks of ``fresh.only_tasks`` replaced by ``fresh``'s."""
    from graders.checks.framework import load_checks

    tasks = set(fresh.only_tasks or ())
    kept = [c for c in previous.checks if c.task not in tasks]
    rank = {(c.task, c.name): i for i, c in enumerate(load_checks(previous.assignment))}
    checks = sorted([*kept, *fresh.checks], key=lambda c: rank.get((c.task, c.check), 999))
    return SubmissionResult(
        student=fresh.student, stem=fresh.stem, assignment=fresh.assignment, file=fresh.file,
        checks=checks, load_error=fresh.load_error or previous.load_error,
        seconds=fresh.seconds, sandbox=fresh.sandbox, sha256=fresh.sha256)


def _grade_submission(student: str, stem: str, file: str, assignment: str, out: str,
                      timeout: float, budget: float | None = None,
                      tasks: tuple[str, ...] | None = None,
                      ) -> tuple[str, str, float | None, str | None]:
    """Grade one submission file of ``student`` (runs in a pool child); never raises.

    Writes its results.json and feedback files (with ``tasks``, merged into a current
    result). Returns (student, stem, the score or None when none was written, the
    internal error text or None; ``INTERRUPTED`` after Ctrl-C).
    """
    import warnings

    from graders.grading import grade_file
    from graders.reports.feedback_files import write_feedback_files

    # Third-party warnings (nbformat on an old notebook, ...) are not the TA's business:
    # what matters reaches them as feedback. This process grades one file, then ends.
    warnings.simplefilter("ignore")
    # Ctrl-C (the pool ignores it while idle, _ignore_interrupts) stops this file: the
    # worker is closed on the way out and the submission keeps no result, so a rerun
    # grades it.
    if _STOP is not None and _STOP.is_set():
        return student, stem, None, INTERRUPTED  # Ctrl-C came before this file's turn
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        path = result_path(Path(out), student, stem)
        previous = read_result(path) if tasks else None
        current = previous is not None and previous.sha256 == file_digest(file)[0] != ""
        result = grade_file(file, assignment=assignment, timeout=timeout, student=student,
                            budget=budget, tasks=tasks if current else None)
        if current and previous is not None:
            result = _merge(previous, result)
        if _LOST_INTERRUPT:  # Ctrl-C came while grading, where it could not be raised
            raise KeyboardInterrupt
        write_result(result, path)
        write_feedback_files(result, path.parent)
        if result.internal_errors:
            first = result.internal_errors[0]
            return student, stem, result.score, (
                f"internal error in check {first.assignment} {first.task} {first.check!r}: "
                f"{first.reason}")
    except KeyboardInterrupt:
        return student, stem, None, INTERRUPTED
    except Exception:  # noqa: BLE001 - the grader's bug: report it, keep the batch going
        return student, stem, None, traceback.format_exc()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return student, stem, result.score, None


#: Set in each pool child by ``_ignore_interrupts``: the batch's "stop" event.
_STOP: Any = None
#: Set in a pool child when a Ctrl-C was raised where Python could not pass it on (in a
#: garbage-collector callback, such as hypothesis' gc timer): the file is then not kept.
_LOST_INTERRUPT = False


def _note_lost_interrupt(unraisable: Any) -> None:
    """``sys.unraisablehook`` of a pool child: a KeyboardInterrupt that could not be raised
    is remembered (``_LOST_INTERRUPT``) rather than printed as a traceback; anything else
    goes to Python's own hook."""
    global _LOST_INTERRUPT
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _LOST_INTERRUPT = True
        return
    sys.__unraisablehook__(unraisable)


def _ignore_interrupts(stop: Any, zygote_config: str | None = None) -> None:
    """Pool initializer: an idle grader process ignores Ctrl-C; ``stop`` (an Event the
    batch sets on Ctrl-C) makes the files not yet started return at once; a Ctrl-C lost
    in a garbage-collector callback still stops the file (``_note_lost_interrupt``).
    ``zygote_config``: the batch's worker zygote, which this process's workers fork from
    (``graders.worker.zygote``; None: they start by exec)."""
    global _STOP
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.unraisablehook = _note_lost_interrupt
    _STOP = stop
    from graders.worker import zygote

    zygote.use(zygote_config)


def _start_zygote(stack: contextlib.ExitStack) -> str | None:
    """Start the batch's worker zygote (closed with ``stack``); its config file, or None
    where this machine cannot have one (then every worker starts by exec, as before)."""
    from graders.worker import zygote

    try:
        return str(stack.enter_context(zygote.Zygote()).config_path)
    except zygote.ZygoteUnavailable:
        return None


class BatchInterrupted(Exception):  # noqa: N818 - it is what happened, not a failure
    """Ctrl-C stopped a batch: ``graded`` students were finished (their results kept, the
    gradebook rewritten), ``pending`` were not; a rerun grades those."""

    def __init__(self, graded: int, pending: int) -> None:
        super().__init__(f"interrupted after {graded} of {graded + pending} student(s)")
        self.graded, self.pending = graded, pending


def _is_current(out: Path, sub: Submission) -> bool:
    """Whether ``sub`` has a results.json made from a file with its present content."""
    previous = read_result(result_path(out, sub.student, sub.stem))
    return previous is not None and previous.sha256 != "" and (
        previous.sha256 == file_digest(sub.file)[0])


def _drop_stale_result(out: Path, sub: Submission) -> bool:
    """After ``sub``'s grader died for good: remove a results.json (and the feedback
    files beside it) made from other content than ``sub.file``'s present one, so the
    gradebook shows no score rather than an earlier submission's. Returns whether a
    result of this very content is kept."""
    if _is_current(out, sub):
        return True
    path = result_path(out, sub.student, sub.stem)
    for stale in (path, path.with_name("feedback.md"), path.with_name("feedback.html")):
        stale.unlink(missing_ok=True)
    return False


def pending_students(submissions: Sequence[Submission], out: Path, *, force: bool = False
                     ) -> dict[str, list[Submission]]:
    """Students to grade, in order, each with the submissions of theirs to grade: with
    ``force`` every student and every submission, otherwise the students with a submission
    that lacks a current results.json (none yet, one of another content, or one without
    pallas-lab's record), with just those submissions (the others' results are current)."""
    by_student: dict[str, list[Submission]] = {}
    for sub in submissions:
        if force or not _is_current(out, sub):
            by_student.setdefault(sub.student, []).append(sub)
    return by_student


def grading_cost(sub: Submission, tasks: Collection[str] | None = None) -> int:
    """What grading ``sub`` is expected to cost, in checks: those of its assignment (of
    ``tasks`` only, when given). Only the order of the costs matters (``schedule``)."""
    from graders.checks.framework import load_checks

    checks = load_checks(sub.assignment)
    return sum(1 for c in checks if not tasks or c.task in tasks)


def schedule(pending: Mapping[str, Sequence[Submission]],
             tasks: Collection[str] | None = None) -> list[Submission]:
    """The order in which a batch hands out ``pending``'s submissions (one file per job):
    the most expensive first (``grading_cost``), ties in the students' order then each
    student's, so that the long files start early and the short ones fill in the gaps
    at the end, whichever student they belong to (longest processing time first)."""
    subs = [sub for student_subs in pending.values() for sub in student_subs]
    costs = {id(sub): grading_cost(sub, tasks) for sub in subs}
    return sorted(subs, key=lambda sub: -costs[id(sub)])  # sorted() is stable


def gradebook_from_results(out: Path, notes: Mapping[str, Sequence[str]] | None = None
                           ) -> str:
    """The CSV gradebook text of every ``<student>/<stem>/results.json`` under ``out``.

    Columns as ``graders.reports.gradebook_csv``: ``student``, graded task ids, each
    performance task's predicted ms, assignment totals, ``total``; one row per student,
    sorted; cells written as that module writes them (names escaped, formulas
    neutralised). ``notes`` (student -> lines such as "missing: a1", "misnamed:
    a1.txt") adds a ``notes`` column, and a row for every student it names, with or
    without results.
    """
    from graders.reports.gradebook_csv import (
        format_ms,
        gradebook_columns,
        gradebook_text,
        predicted_column,
        predicted_ms,
        student_cell_value,
    )

    rows: dict[str, dict[str, str]] = {}
    ids: set[str] = set()
    stems = {a.stem: a for a in ASSIGNMENTS.values()}
    for path in sorted(out.glob("*/*/results.json")):
        student, stem = student_of_folder_name(path.parent.parent.name), path.parent.name
        info = stems.get(stem)
        if info is None:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        row = rows.setdefault(student, {"student": student_cell_value(student)})
        points: dict[str, float] = {t.id: 0.0 for t in info.graded_tasks}
        for test in data.get("tests", []):
            if test.get("number") in points and "not graded" not in test.get("tags", []):
                points[test["number"]] += float(test.get("score", 0))
        for task, value in points.items():
            row[task] = format_points(round(value, 6))
        row[info.id] = format_points(float(data.get("score", 0)))
        result = read_result(path)
        for task_id, value in (predicted_ms(result) if result else {}).items():
            row[predicted_column(task_id)] = format_ms(value)
        ids.add(info.id)
    columns = gradebook_columns(sorted(ids))
    for row in rows.values():
        row["total"] = format_points(round(sum(float(row[a]) for a in ids if a in row), 6))
    if notes and any(notes.values()):
        columns.append("notes")
        for student, lines in notes.items():
            row = rows.setdefault(student, {"student": student_cell_value(student)})
            if lines:
                row["notes"] = terminal_text("; ".join(lines))
    return gradebook_text(columns, sorted(rows.values(), key=lambda row: row["student"]))


def task_scores_from_results(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(student, stem) -> points per graded task, read back from the results.json files."""
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for path in sorted(out.glob("*/*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        points: dict[str, float] = {}
        for test in data.get("tests", []):
            if "not graded" not in test.get("tags", []):
                points[test["number"]] = points.get(test["number"], 0.0) + float(test["score"])
        scores[(student_of_folder_name(path.parent.parent.name), path.parent.name)] = points
    return scores


@dataclass(frozen=True)
class BatchOutcome:
    """What ``run_batch`` did: ``graded`` students graded now, ``skipped`` students whose
    results were current, ``errors`` internal error texts ("student: text")."""

    graded: int
    skipped: int
    errors: list[str]


def _death(workers: Sequence[Any]) -> str:
    """How a grader process (of ``workers``, a one-worker pool's processes) ended, for the
    TA: "killed by SIGKILL ...", "exit code 3" or "exit status unknown"."""
    codes = [p.exitcode for p in workers if p.exitcode is not None]
    if not codes:
        return "exit status unknown"
    if codes[0] >= 0:
        return f"exit code {codes[0]}"
    try:
        name = signal.Signals(-codes[0]).name
    except ValueError:
        name = f"signal {-codes[0]}"
    if name == "SIGKILL":
        return "killed by SIGKILL, as the kernel's out-of-memory killer does"
    return f"killed by {name}"


def _finish(future: Future, sub: Submission, done: Callable[..., None]
            ) -> Literal["done", "interrupted", "died"]:
    """How ``sub``'s ended ``future`` (a ``_grade_submission`` call) went: "done" (passed
    to ``done`` with its error text or None), "interrupted" (its grader stopped on Ctrl-C,
    ``INTERRUPTED``) or "died" (``BrokenProcessPool``: its grader process, or another of
    the pool's, died before it finished; no result came back)."""
    try:
        error = future.result()[3]
    except BrokenProcessPool:
        return "died"
    if error == INTERRUPTED:
        return "interrupted"
    done(sub, error)
    return "done"


def _grade_alone(out: Path, subs: Sequence[Submission], jobs: int,
                 options: Mapping[str, Any],
                 grade: Callable[[ProcessPoolExecutor, Submission], Future],
                 done: Callable[..., None], notes: dict[str, list[str]], stop: Any,
                 progress: GradingProgress) -> bool:
    """Grade ``subs`` again, the files a broken pool did not finish, each in a pool of its
    own (one grader process, ``options`` as the batch's pool: the same zygote), at most
    ``jobs`` at a time, in order: a grader that dies now took only its own file down.
    Such a file gets no result (``_drop_stale_result`` under the batch folder ``out``),
    an error for ``done`` and the note "grader died: FILE" in ``notes``;
    every file is passed to ``done`` (except after Ctrl-C: ``stop`` is set and
    the files not started are left). Returns whether Ctrl-C stopped the batch."""
    waiting = list(subs)
    running: dict[Future, tuple[Submission, ProcessPoolExecutor, list[Any]]] = {}
    interrupted = False
    try:
        while running or (waiting and not interrupted):
            while waiting and not interrupted and len(running) < jobs:
                sub = waiting.pop(0)
                pool = ProcessPoolExecutor(max_workers=1, **options)
                future = grade(pool, sub)
                # The pool's one process (started by submit), to tell how it ended.
                running[future] = (sub, pool, list(getattr(pool, "_processes", {}).values()))
            ended, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in ended:
                sub, pool, workers = running.pop(future)
                pool.shutdown()
                ending = _finish(future, sub, done)
                if ending != "died":
                    interrupted |= ending == "interrupted"
                    continue
                how = _death(workers)
                if interrupted or how == "killed by SIGINT":  # Ctrl-C came first
                    interrupted = True
                    continue
                name = Path(sub.file).name
                notes.setdefault(sub.student, []).append(f"grader died: {name}")
                kept = ("an earlier result of the same content is kept"
                        if _drop_stale_result(out, sub) else "no result was written")
                done(sub, f"the grader process died while grading {name} ({how}), "
                          f"also when graded alone; {kept}", "grader died:")
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        progress.stop()
        wait(running)
    finally:
        for _, pool, _ in running.values():
            pool.shutdown()
    return interrupted


def run_batch(submissions: Sequence[Submission], *, out: Path, jobs: int, timeout: float,
              err: Console, budget: float | None = None, force: bool = False,
              tasks: Collection[str] | None = None, gradebook: Path | None = None,
              notes: Mapping[str, Sequence[str]] | None = None) -> BatchOutcome:
    """Grade the pending files of ``submissions`` (``pending_students``; with ``tasks``
    every file, those tasks only) with ``jobs`` processes, one file per job in the order
    of ``schedule`` (``timeout`` per call, ``budget`` per file as in ``grade_file``),
    showing N/M files, the file just done and the time left on ``err``.

    The gradebook (``gradebook``, default ``out/gradebook.csv``; ``notes`` as in
    ``gradebook_from_results``) is rewritten each time a student's last file is done and
    once at the end; ``BatchOutcome`` counts students.

    A grader process that dies breaks the pool: the files it had not finished are
    graded again, each in a one-process pool of its own (``_grade_alone``, at most
    ``jobs`` at a time). A file whose grader dies again gets no result; it is named in
    ``BatchOutcome.errors`` and its student's gradebook row has the note "grader died:
    FILE" (added to a copy of ``notes``). Every file advances the progress once.
    Raises ``ValueError`` when ``jobs`` < 1, and ``BatchInterrupted`` after Ctrl-C (the
    students finished keep their results and the gradebook is rewritten first).
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    out.mkdir(parents=True, exist_ok=True)
    gradebook = gradebook if gradebook is not None else out / GRADEBOOK
    # Half-written by a batch that was killed: the temp files of atomic_write_text.
    for stale in [*gradebook.parent.glob(f".{gradebook.name}.*.tmp"),
                  *out.glob("*/*/.*.tmp")]:
        if stale.is_file():
            stale.unlink(missing_ok=True)
    only = tuple(tasks) if tasks else None
    pending = pending_students(submissions, out, force=force or only is not None)
    students = {s.student for s in submissions}
    done_before = len(students) - len(pending)
    first_errors: dict[str, tuple[int, str]] = {}  # per student: its first file's error
    # The caller's notes and the batch's own ("grader died: <stem>.py").
    book_notes = {student: list(lines) for student, lines in (notes or {}).items()}
    finished = 0
    interrupted = False
    if pending:
        jobs_of = schedule(pending, only)
        left = {student: len(subs) for student, subs in pending.items()}
        rank = {(s.student, s.stem): i for subs in pending.values() for i, s in enumerate(subs)}
        # forkserver: each file's grader is a fresh process forked from a server that has
        # already imported the grader and every lab's checks, so a file costs no
        # interpreter start-up nor imports.
        context = multiprocessing.get_context("forkserver")
        labs = [a.checks_module for a in ASSIGNMENTS.values() if a.checks_module]
        context.set_forkserver_preload(["graders.grading", "graders.reports.gradescope",
                                        "graders.reports.feedback_files", *labs])
        stop = context.Event()

        def done(sub: Submission, error: str | None, what: str = "graded") -> None:
            """Count ``sub`` as done (``error``: its internal error text, or None)."""
            nonlocal finished
            student = sub.student
            if error and (student not in first_errors
                          or rank[student, sub.stem] < first_errors[student][0]):
                first_errors[student] = (rank[student, sub.stem], error)
            left[student] -= 1
            progress.advance(f"{what} {student}/{Path(sub.file).name}")
            if not left[student]:  # the student's last file
                finished += 1
                atomic_write_text(gradebook, gradebook_from_results(out, book_notes))

        with contextlib.ExitStack() as stack, \
                GradingProgress(err, len(jobs_of)) as progress:
            options: dict[str, Any] = {
                "mp_context": context, "max_tasks_per_child": 1,
                "initializer": _ignore_interrupts, "initargs": (stop, _start_zygote(stack))}

            def grade(pool: ProcessPoolExecutor, sub: Submission) -> Future:
                return pool.submit(_grade_submission, sub.student, sub.stem, str(sub.file),
                                   sub.assignment, str(out), timeout, budget, only)

            broken: set[int] = set()  # id() of the files whose grader the broken pool took
            with ProcessPoolExecutor(max_workers=jobs, **options) as pool:
                futures = {grade(pool, sub): sub for sub in jobs_of}
                try:
                    for future in as_completed(futures):
                        sub = futures[future]
                        ending = _finish(future, sub, done)
                        if ending == "died":
                            # A grader process died (the OOM killer, a crash, a kill; or a
                            # Ctrl-C that reached it before it could ignore it): the pool
                            # ends every file not finished yet. Graded again below.
                            broken.add(id(sub))
                        interrupted |= ending == "interrupted"
                except KeyboardInterrupt:
                    # The running files stop on their own Ctrl-C; the others return at
                    # once. (Futures are not cancelled: Python 3.11's pool can then fail
                    # in a thread.)
                    interrupted = True
                    stop.set()
                    progress.stop()
                    wait(futures)
            if broken and not interrupted:
                interrupted = _grade_alone(out, [sub for sub in jobs_of if id(sub) in broken],
                                           jobs, options, grade, done, book_notes, stop,
                                           progress)
    atomic_write_text(gradebook, gradebook_from_results(out, book_notes))
    if pending and interrupted:
        raise BatchInterrupted(finished, len(pending) - finished)
    errors = [f"{student}: {error}" for student, (_, error) in first_errors.items()]
    return BatchOutcome(len(pending), done_before, errors)


def summary_rows(out: Path) -> list[dict[str, Any]]:
    """The gradebook's rows (dicts) as written."""
    with open(out / GRADEBOOK, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
