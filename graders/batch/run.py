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
import signal
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from graders.batch.lock import batch_lock
from graders.batch.pool import (
    POLL,
    StopRequests,
    ending_of,
    grade_alone,
    grade_in_child,
    grader_context,
    halt,
    start_child,
    start_forkserver,
    start_zygote,
    stop_forkserver,
)
from graders.batch.regrade import (
    batch_stamp,
    close_regrade,
    left_by_stopped_regrades,
    open_regrade,
    regrade_stamp,
    regraded,
)
from graders.batch.schedule import plan_batch
from graders.batch.store import (
    GRADEBOOK,
    gradebook_from_results,
    result_path,
    write_notes,
)
from graders.grading.submission import Submission
from graders.reports.files import atomic_write_text
from graders.reports.gradebook_csv import NOT_GRADED_YET
from graders.reports.progress import GradingProgress

if TYPE_CHECKING:
    from graders.reports.ledger import Ledger


class BatchInterrupted(Exception):  # noqa: N818 - it is what happened, not a failure
    """Ctrl-C or SIGTERM (``signum``) stopped a batch: ``graded`` students were finished
    (their results kept, the gradebook rewritten), ``pending`` were not; a rerun grades
    those."""

    def __init__(self, graded: int, pending: int, signum: int = signal.SIGINT) -> None:
        super().__init__(f"interrupted after {graded} of {graded + pending} student(s)")
        self.graded, self.pending, self.signum = graded, pending, signum


@dataclass(frozen=True)
class BatchOutcome:
    """What ``run_batch`` did: ``graded`` students graded now, ``skipped`` students whose
    results were current (in a resumed regrade: regraded before it was stopped),
    ``errors`` internal error texts ("student: text"); ``resumed``: whether it finished a
    stopped regrade (``graders.batch.regrade``); ``unfinished``: files a stopped regrade
    has not reached, which this batch left as they are."""

    graded: int
    skipped: int
    errors: list[str]
    resumed: bool = False
    unfinished: int = 0


def run_batch(submissions: Sequence[Submission], *, out: Path, jobs: int, timeout: float,
              err: Console, budget: float | None = None, force: bool = False,
              tasks: Collection[str] | None = None, gradebook: Path | None = None,
              notes: Mapping[str, Sequence[str]] | None = None,
              ledger: Ledger | None = None, client: Any = None) -> BatchOutcome:
    """Grade the pending files of ``submissions`` (``plan_batch``: with ``tasks`` every
    file, those tasks only) with ``jobs`` processes, one file per job in the plan's order
    (``timeout`` per call, ``budget`` per file as in ``grade_file``),
    showing N/M files, the file just done and the time left on ``err``.

    The gradebook (``gradebook``, default ``out/gradebook.csv``; ``notes`` as in
    ``gradebook_from_results``; ``ledger``: lateness and adjustments, applied there) is
    rewritten each time a student's last file is done and
    once at the end; ``BatchOutcome`` counts students.

    A grader process that dies breaks the pool: the files it had not finished are
    graded again, each in a one-process pool of its own (``grade_alone``, at most
    ``jobs`` at a time). A file whose grader dies again gets no result; it is named in
    ``BatchOutcome.errors`` and its student's gradebook row has the note "grader died:
    FILE" (added to a copy of ``notes``). Every file advances the progress once.
    Raises ``ValueError`` when ``jobs`` < 1, and ``BatchInterrupted`` after Ctrl-C or
    SIGTERM (``pool.StopRequests``: noted, never raised, while the batch runs; the graders
    are stopped, the students finished keep their results, the gradebook is rewritten and
    every temporary folder of the batch is removed first).

    With ``client`` (a ``distributed.Client``, ``graders.batch.cluster.open_client``) the
    files are graded on that Dask cluster's workers instead of ``jobs`` local processes
    (``graders.batch.cluster.grade_on_cluster``); the plan, results, resuming, gradebook
    and stopping are the same. Raises ``graders.batch.lock.BatchBusy`` (nothing graded)
    when another batch is grading into ``out``.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    out.mkdir(parents=True, exist_ok=True)
    with batch_lock(out):  # BatchBusy when another batch grades into ``out``
        return _run_locked(submissions, out=out, jobs=jobs, timeout=timeout, err=err,
                           budget=budget, force=force, tasks=tasks, gradebook=gradebook,
                           notes=notes, ledger=ledger, client=client)


def _run_locked(submissions: Sequence[Submission], *, out: Path, jobs: int, timeout: float,
                err: Console, budget: float | None, force: bool,
                tasks: Collection[str] | None, gradebook: Path | None,
                notes: Mapping[str, Sequence[str]] | None, ledger: Ledger | None,
                client: Any) -> BatchOutcome:
    """``run_batch``'s work, with the results folder ``out`` held (``batch_lock``)."""
    gradebook = gradebook if gradebook is not None else out / GRADEBOOK
    # Half-written by a batch that was killed: the temp files of atomic_write_text.
    for stale in [*gradebook.parent.glob(f".{gradebook.name}.*.tmp"),
                  *out.glob("*/*/.*.tmp")]:
        if stale.is_file():
            stale.unlink(missing_ok=True)
    only = tuple(tasks) if tasks else None
    # What every result of this batch is stamped with; a regrade stopped before its end
    # is resumed by the same command (the files with an equivalent result are kept), and
    # any other batch notes the files a stopped regrade has not reached.
    base = batch_stamp(timeout, budget)
    regrade = bool(force or only)
    resumed = regrade and open_regrade(out, submissions, force=force, tasks=only, batch=base)
    stamp = (regrade_stamp(out, submissions, force=force, tasks=only, batch=base)
             if regrade else base)
    plan = plan_batch(submissions, out, force=force, tasks=only,
                      done=(lambda sub: regraded(out, sub, stamp, only)) if resumed else None)
    left = set() if regrade else left_by_stopped_regrades(out, submissions)
    pending, jobs_of = plan.pending, plan.order
    first_errors: dict[str, tuple[int, str]] = {}  # per student: its first file's error
    # The caller's notes and the batch's own ("grader died: <stem>.py").
    book_notes = {student: list(lines) for student, lines in (notes or {}).items()}
    # Per student, the files not graded yet: every gradebook written before the batch is
    # over says so in their rows ("not graded yet: FILE"; "not regraded yet ...: FILE"
    # where an earlier result is what the row shows), so a stopped batch's gradebook never
    # looks finished. A file leaves it when done (graded, failed or its grader died).
    waiting = {student: [Path(sub.file).name for sub in subs]
               for student, subs in pending.items()}
    earlier = {(sub.student, Path(sub.file).name) for subs in pending.values() for sub in subs
               if result_path(out, sub.student, sub.stem).is_file()}
    pending_keys = {(sub.student, sub.stem) for subs in pending.values() for sub in subs}
    # Left by a stopped regrade that this batch does not grade: they stay marked.
    stale: dict[str, list[str]] = {}
    for sub in submissions:
        if (sub.student, sub.stem) in left and (sub.student, sub.stem) not in pending_keys:
            stale.setdefault(sub.student, []).append(Path(sub.file).name)

    def write_book() -> None:
        """The gradebook as things stand, and the notes behind it (``store.write_notes``:
        a later one-folder regrade keeps those of the students it does not find)."""
        now = notes_now()
        write_notes(out, now)
        atomic_write_text(gradebook, gradebook_from_results(out, now, ledger))

    def notes_now() -> dict[str, list[str]]:
        """``book_notes`` with each student's "not (re)graded yet" lines, if any."""
        now = {student: list(lines) for student, lines in book_notes.items()}
        for student, files in waiting.items():
            new = [name for name in files if (student, name) not in earlier]
            old = [name for name in files if (student, name) in earlier]
            if new:
                now.setdefault(student, []).append(f"{NOT_GRADED_YET}: {', '.join(new)}")
            if old:
                now.setdefault(student, []).append(
                    f"not regraded yet (an earlier result is shown): {', '.join(old)}")
        for student, files in stale.items():
            now.setdefault(student, []).append(
                f"not regraded yet by a stopped regrade (an earlier result is shown): "
                f"{', '.join(files)}")
        return now

    finished = 0
    interrupted = False
    # Ctrl-C and SIGTERM are noted, never raised, until the gradebook is written.
    with StopRequests() as requests:
        if pending:
            left = {student: len(subs) for student, subs in pending.items()}
            rank = {(s.student, s.stem): i for subs in pending.values() for i, s in enumerate(subs)}
            context = grader_context()
            stop = context.Event()

            def done(sub: Submission, error: str | None, what: str = "graded") -> None:
                """Count ``sub`` as done (``error``: its internal error text, or None)."""
                nonlocal finished
                student = sub.student
                if error and (student not in first_errors
                              or rank[student, sub.stem] < first_errors[student][0]):
                    first_errors[student] = (rank[student, sub.stem], error)
                left[student] -= 1
                name = Path(sub.file).name
                if name in waiting[student]:
                    waiting[student].remove(name)
                progress.advance(f"{what} {student}/{name}")
                if not left[student]:  # the student's last file
                    finished += 1
                    write_book()

            with contextlib.ExitStack() as stack, \
                    GradingProgress(err, len(jobs_of)) as progress:
                if requests.signum is not None:
                    pass  # stopped before anything started
                elif client is not None:
                    from graders.batch.cluster import grade_on_cluster

                    interrupted = grade_on_cluster(client, jobs_of, out, timeout, budget, only,
                                                   stamp, done, book_notes, progress, requests)
                else:
                    options: dict[str, Any] = {
                        "mp_context": context, "max_tasks_per_child": 1,
                        "initializer": start_child, "initargs": (stop, start_zygote(
                            stack, lambda: requests.signum is not None))}

                    def grade(pool: ProcessPoolExecutor, sub: Submission) -> Future:
                        """``sub`` handed to one of ``pool``'s grader processes."""
                        return pool.submit(grade_in_child, sub, str(out), timeout, budget, only,
                                           stamp)

                    broken: set[int] = set()  # id() of the files the broken pool took
                    # Stopped while the zygote started: no forkserver, no grader is started
                    # (it would import every lab's checks, seconds, only to be stopped).
                    started = requests.signum is None
                    if started:  # after the pools and the zygote are done:
                        stack.callback(stop_forkserver, start_forkserver(requests))
                    with ProcessPoolExecutor(max_workers=jobs, **options) as pool:
                        futures: dict[Future, Submission] = {}
                        try:
                            for sub in jobs_of if started else ():  # the first starts them
                                futures[grade(pool, sub)] = sub
                                requests.starting = None
                        except (EOFError, OSError):
                            if requests.signum is None:
                                raise
                            # Stopped while the forkserver was importing: it was killed.
                        requests.starting = None
                        running = set(futures)
                        while running:
                            ended, running = wait(running, timeout=POLL,
                                                  return_when=FIRST_COMPLETED)
                            if requests.signum is not None and not interrupted:
                                # Ctrl-C or SIGTERM: the files not started return at once, the
                                # running ones stop (their worker closed, no result written).
                                # (Futures are not cancelled: Python 3.11's pool can then fail
                                # in a thread.)
                                interrupted = True
                                halt(stop, [pool])
                                progress.stop()
                            for future in ended:
                                sub = futures[future]
                                ending = ending_of(future, sub, done)
                                if ending == "died":
                                    # A grader process died (the OOM killer, a crash, a kill):
                                    # the pool ends every file not finished yet. Graded again
                                    # below.
                                    broken.add(id(sub))
                                interrupted |= ending == "interrupted"
                    if broken and not interrupted:
                        interrupted = grade_alone(
                            out, [sub for sub in jobs_of if id(sub) in broken], jobs, options,
                            grade, done, book_notes, stop, progress, requests)
                interrupted |= requests.signum is not None
        write_book()
    if pending and interrupted:
        raise BatchInterrupted(finished, len(pending) - finished,
                               requests.signum or signal.SIGINT)
    if regrade:
        close_regrade(out, submissions, force=force, tasks=only, batch=base)
    errors = [f"{student}: {error}" for student, (_, error) in first_errors.items()]
    return BatchOutcome(len(pending), plan.skipped, errors, resumed=resumed,
                        unfinished=sum(len(files) for files in stale.values()))
