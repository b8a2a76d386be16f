"""The batch's grader processes: each file is graded by a fresh trusted grader process (a
``ProcessPoolExecutor`` child used for one file only, forked from a forkserver that has
imported the grader and every lab's checks), which starts its own untrusted worker from
the batch's worker zygote and sends back only the student's name, the stem, the score and
an error text; everything else is read back from the files it wrote. Here too: how an idle
grader ignores Ctrl-C, how a file's grading stops on it, how a grader's death is told
apart, and the second pass that grades each file a broken pool left in a pool of its own
(``graders.batch.run`` describes the batch as a whole).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Literal

from graders.batch.schedule import drop_stale_result
from graders.batch.store import merge_tasks, read_result, result_path, write_result
from graders.grading.submission import Submission
from graders.reports.progress import GradingProgress

#: What a pool child reports for a student whose grading Ctrl-C stopped.
INTERRUPTED = "interrupted"


def grade_in_child(sub: Submission, out: str, timeout: float, budget: float | None = None,
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
    from graders.reports.late import submission_time

    # Third-party warnings (nbformat on an old notebook, ...) are not the TA's business:
    # what matters reaches them as feedback. This process grades one file, then ends.
    warnings.simplefilter("ignore")
    # Ctrl-C (the pool ignores it while idle, start_child) stops this file: the
    # worker is closed on the way out and the submission keeps no result, so a rerun
    # grades it.
    if _STOP is not None and _STOP.is_set():
        return sub.student, sub.stem, None, INTERRUPTED  # Ctrl-C: before this file's turn
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # the submission time, taken before the submission runs, kept with its result
        submitted = submission_time(sub)
        path = result_path(Path(out), sub.student, sub.stem)
        previous = read_result(path, sub.assignment) if tasks else None
        current = previous is not None and previous.sha256 == sub.sha256 != ""
        result = grade_submission(sub, timeout=timeout, budget=budget,
                                  tasks=tasks if current else None)
        if current and previous is not None:
            result = merge_tasks(previous, result)
        if _LOST_INTERRUPT:  # Ctrl-C came while grading, where it could not be raised
            raise KeyboardInterrupt
        write_result(result, path, submitted)
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


#: Set in each pool child by ``start_child``: the batch's "stop" event.
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


def start_child(stop: Any, zygote_config: str | None = None) -> None:
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


def start_zygote(stack: contextlib.ExitStack) -> str | None:
    """Start the batch's worker zygote (closed with ``stack``); its config file, or None
    where this machine cannot have one (then every worker starts by exec, as before)."""
    from graders.worker import zygote

    try:
        return str(stack.enter_context(zygote.Zygote()).config_path)
    except zygote.ZygoteUnavailable:
        return None


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


def ending_of(future: Future, sub: Submission, done: Callable[..., None]
            ) -> Literal["done", "interrupted", "died"]:
    """How ``sub``'s ended ``future`` (a ``grade_in_child`` call) went: "done" (passed
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


def grade_alone(out: Path, subs: Sequence[Submission], jobs: int,
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
                ending = ending_of(future, sub, done)
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
