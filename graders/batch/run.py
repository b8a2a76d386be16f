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

from graders.batch.schedule import drop_stale_result, pending_students, schedule
from graders.batch.store import (
    GRADEBOOK,
    gradebook_from_results,
    merge_tasks,
    read_result,
    result_path,
    write_result,
)
from graders.course.catalog import ASSIGNMENTS
from graders.grading.submission import Submission
from graders.reports.files import atomic_write_text
from graders.reports.progress import GradingProgress

#: What a pool child reports for a student whose grading Ctrl-C stopped.
INTERRUPTED = "interrupted"


def _grade_submission(sub: Submission, out: str, timeout: float, budget: float | None = None,
                      tasks: tuple[str, ...] | None = None,
                      ) -> tuple[str, str, float | None, str | None]:
    """Grade the submission record ``sub`` (runs in a pool child); never raises.

    Writes its results.json and feedback files (with ``tasks``, merged into a current
    result). Returns (student, stem, the score or None when none was written, the
    internal error text or None; ``INTERRUPTED`` after Ctrl-C).
    """
    import warnings

    from graders.grading.grade import grade_submission
    from graders.reports.feedback_files import write_feedback_files

    # Third-party warnings (nbformat on an old notebook, ...) are not the TA's business:
    # what matters reaches them as feedback. This process grades one file, then ends.
    warnings.simplefilter("ignore")
    # Ctrl-C (the pool ignores it while idle, _ignore_interrupts) stops this file: the
    # worker is closed on the way out and the submission keeps no result, so a rerun
    # grades it.
    if _STOP is not None and _STOP.is_set():
        return sub.student, sub.stem, None, INTERRUPTED  # Ctrl-C: before this file's turn
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        path = result_path(Path(out), sub.student, sub.stem)
        previous = read_result(path, sub.assignment) if tasks else None
        current = previous is not None and previous.sha256 == sub.sha256 != ""
        result = grade_submission(sub, timeout=timeout, budget=budget,
                                  tasks=tasks if current else None)
        if current and previous is not None:
            result = merge_tasks(previous, result)
        if _LOST_INTERRUPT:  # Ctrl-C came while grading, where it could not be raised
            raise KeyboardInterrupt
        write_result(result, path)
        write_feedback_files(result, path.parent)
        if result.internal_errors:
            first = result.internal_errors[0]
            return sub.student, sub.stem, result.score, (
                f"internal error in check {first.assignment} {first.task} {first.check!r}: "
                f"{first.reason}")
    except KeyboardInterrupt:
        return sub.student, sub.stem, None, INTERRUPTED
    except Exception:  # noqa: BLE001 - the grader's bug: report it, keep the batch going
        return sub.student, sub.stem, None, traceback.format_exc()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return sub.student, sub.stem, result.score, None


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
    Such a file gets no result (``drop_stale_result`` under the batch folder ``out``),
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
                        if drop_stale_result(out, sub) else "no result was written")
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
        context.set_forkserver_preload(["graders.grading.grade", "graders.reports.gradescope",
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
                return pool.submit(_grade_submission, sub, str(out), timeout, budget, only)

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
