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
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Literal

# INTERRUPTED: what a grader reports for a file whose grading Ctrl-C stopped (the Dask
# worker's side reports the same string).
from graders.batch.dask_worker import INTERRUPTED
from graders.batch.schedule import drop_stale_result
from graders.batch.store import merge_tasks, read_result, result_path, write_result
from graders.grading.submission import Submission
from graders.reports.progress import GradingProgress

#: Seconds the batch waits for a file to end before it looks for Ctrl-C or SIGTERM again.
POLL = 0.1


def grade_in_child(sub: Submission, out: str, timeout: float, budget: float | None = None,
                      tasks: tuple[str, ...] | None = None,
                      stamp: dict[str, Any] | None = None,
                      ) -> tuple[str, str, float | None, str | None]:
    """Grade the submission record ``sub`` (runs in a pool child); never raises.

    Writes its results.json (stamped ``stamp``: ``graders.batch.regrade.batch_stamp``) and
    feedback files (with ``tasks``, merged into a current result: the file's content
    unchanged since that result; a file changed since is graded in full). Returns
    (student, stem, the score or None when none was written, the internal error text or
    None; ``INTERRUPTED`` after Ctrl-C).

    Every temporary folder made while grading (the worker's, ...) is made in a private
    folder of this call (``pallas-lab-grader-*``), removed on the way out whatever
    happened: a Ctrl-C that came while a folder was being made or removed leaves nothing.
    Ctrl-C is raised here once at most (``_interrupt_once``), so the way out is never
    interrupted itself.
    """
    import shutil
    import tempfile
    import warnings

    # Third-party warnings (nbformat on an old notebook, ...) are not the TA's business:
    # what matters reaches them as feedback. This process grades one file, then ends.
    warnings.simplefilter("ignore")
    if _STOP is not None and _STOP.is_set():
        return sub.student, sub.stem, None, INTERRUPTED  # Ctrl-C: before this file's turn
    private = tempfile.mkdtemp(prefix="pallas-lab-grader-")  # Ctrl-C is ignored here
    os.chmod(private, 0o711)  # as /tmp is to a uid-level worker: it enters its own folder
    tempfile.tempdir = private
    try:
        return _grade_here(sub, out, timeout, budget, tasks, stamp)
    except KeyboardInterrupt:  # on the way out of _grade_here, before it ignored Ctrl-C
        return sub.student, sub.stem, None, INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        tempfile.tempdir = None
        shutil.rmtree(private, ignore_errors=True)


def _interrupt_once(signum: int, frame: Any) -> None:
    """A grader's SIGINT handler: Ctrl-C (or the batch's own SIGINT after a SIGTERM) raises
    KeyboardInterrupt once; any later one is ignored. It is remembered
    (``_INTERRUPTED``): wherever it was raised, even inside a check that turned it into a
    failure of its own, the file's result is not kept."""
    global _INTERRUPTED
    _INTERRUPTED = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _grade_here(sub: Submission, out: str, timeout: float, budget: float | None,
                tasks: tuple[str, ...] | None, stamp: dict[str, Any] | None = None,
                ) -> tuple[str, str, float | None, str | None]:
    """``grade_in_child``'s work, stopped by Ctrl-C (the pool ignores it while idle,
    ``start_child``): the worker is closed on the way out and the submission keeps no
    result, so a rerun grades it."""
    from graders.batch.regrade import merged_stamp, stamp_at
    from graders.grading.grade import grade_submission
    from graders.reports.feedback_files import write_feedback_files
    from graders.reports.late import submission_time

    signal.signal(signal.SIGINT, _interrupt_once)
    try:
        # The batch sets the event, then interrupts its graders: a grader that found it
        # clear before it could be interrupted looks again now that it can.
        if _STOP is not None and _STOP.is_set():
            raise KeyboardInterrupt
        # the submission time, taken before the submission runs, kept with its result
        submitted = submission_time(sub)
        path = result_path(Path(out), sub.student, sub.stem)
        previous = read_result(path, sub.assignment) if tasks else None
        current = previous is not None and previous.sha256 == sub.sha256 != ""
        result = grade_submission(sub, timeout=timeout, budget=budget,
                                  tasks=tasks if current else None)
        if current and previous is not None and tasks:
            if result.sha256 == previous.sha256:
                if stamp is not None:
                    stamp = merged_stamp(stamp_at(path), stamp, tasks)
                result = merge_tasks(previous, result)
            else:  # changed after the class was read: its new content, graded in full
                result = grade_submission(sub, timeout=timeout, budget=budget)
        if _INTERRUPTED:  # Ctrl-C came while grading, whatever became of it there
            raise KeyboardInterrupt
        # Graded: a Ctrl-C from now on is too late to save time, and the result is kept
        # whole (results.json with its feedback files).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        write_result(result, path, submitted, stamp)
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


#: Set in a pool child once a Ctrl-C reached it while it graded: the file is then not
#: kept, whatever became of the KeyboardInterrupt (raised where Python could not pass it
#: on, in a garbage-collector callback such as hypothesis' gc timer; or caught by the code
#: it interrupted and turned into a check's failure: a TA's walk saw a result with an
#: internal grader error kept, 90 where the file scores 100).
_INTERRUPTED = False


def _note_lost_interrupt(unraisable: Any) -> None:
    """``sys.unraisablehook`` of a pool child: a KeyboardInterrupt that could not be raised
    is remembered (``_INTERRUPTED``) rather than printed as a traceback; anything else
    goes to Python's own hook."""
    global _INTERRUPTED
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _INTERRUPTED = True
        return
    sys.__unraisablehook__(unraisable)


def grader_context() -> Any:
    """The multiprocessing context of a batch's grader processes: forkserver, so each file's
    grader is a fresh process forked from a server that has already imported the grader
    and every lab's checks (a file costs no interpreter start-up nor imports)."""
    import multiprocessing

    from graders.course.catalog import ASSIGNMENTS

    context = multiprocessing.get_context("forkserver")
    labs = [a.checks_module for a in ASSIGNMENTS.values() if a.checks_module]
    context.set_forkserver_preload(["graders.grading.grade", "graders.reports.gradescope",
                                    "graders.reports.feedback_files", *labs])
    return context


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


def start_zygote(stack: contextlib.ExitStack,
                 stopped: Callable[[], bool] | None = None) -> str | None:
    """Start the batch's worker zygote (closed with ``stack``); its config file, or None
    where this machine cannot have one (then every worker starts by exec, as before) or
    ``stopped()`` became true while it started."""
    from graders.worker import zygote

    try:
        return str(stack.enter_context(zygote.Zygote(stopped)).config_path)
    except zygote.ZygoteUnavailable:
        return None


class StopRequests:
    """While active, in the main thread: SIGINT (Ctrl-C) and SIGTERM (``kill PID``, a job
    scheduler, ``timeout``) stop the batch without raising anywhere: the first one is noted
    in ``signum`` and the batch's loops look at it between waits, so no cleanup (a pool's
    shutdown, the zygote's folder, a gradebook write) is ever cut short. A SIGINT that this
    process ignores (a batch started in the background from a script inherits that) stays
    ignored. Previous handlers are restored on exit."""

    def __init__(self) -> None:
        self.signum: int | None = None
        #: The forkserver's pid while the pool starts (``start_forkserver``), else None.
        self.starting: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self._previous[sig] = signal.signal(sig, self._note)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _note(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
        if self.starting is not None:  # the pool's start waits for it: stop waiting
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.starting, signal.SIGKILL)
            self.starting = None


#: The thread counts of NumPy's BLAS (OpenBLAS, an OpenMP build, MKL) a batch's grader
#: processes get unless set: 1 each (``start_forkserver``).
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def start_forkserver(requests: StopRequests) -> str:
    """Start the forkserver with SIGINT ignored, so every grader process forked from it is
    born ignoring Ctrl-C (``start_child`` would be too late: a grader killed by a Ctrl-C
    while it starts breaks the pool, which then SIGTERMs the other graders in the middle
    of their files, leaving their folders behind). It is given a folder of ours for its
    hypothesis files (``graders.checking.registry``), returned: ``stop_forkserver``
    removes it. Until ``requests.starting`` is cleared, a Ctrl-C or SIGTERM kills the
    forkserver, which may still be importing the checks (seconds on a busy machine) while
    the pool waits for it: the pool's start then fails and the batch stops at once. Its
    graders use one BLAS thread each unless the environment sets a count
    (``BLAS_THREAD_VARS``): a batch is already one grader per core."""
    from multiprocessing import forkserver

    from graders.checking.registry import HYPOTHESIS_HOME_VAR

    _short_multiprocessing_tempdir()
    home = tempfile.mkdtemp(prefix="pallas-lab-forkserver-")
    os.environ[HYPOTHESIS_HOME_VAR] = home
    # N graders run at once, each computing references with NumPy: one BLAS thread each
    # (two threads per grader on two cores made each 128^3 product slower, not faster),
    # unless the TA set a count. The forkserver takes its environment now; ours is restored.
    threads = [var for var in BLAS_THREAD_VARS if var not in os.environ]
    os.environ.update(dict.fromkeys(threads, "1"))
    try:
        if threading.current_thread() is not threading.main_thread():
            forkserver.ensure_running()  # signals are the main thread's
        else:
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                forkserver.ensure_running()
            finally:
                signal.signal(signal.SIGINT, previous)
    except BaseException:  # no forkserver: its folder is not left behind
        shutil.rmtree(home, ignore_errors=True)
        raise
    finally:
        os.environ.pop(HYPOTHESIS_HOME_VAR, None)
        for var in threads:
            os.environ.pop(var, None)
    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if pid is not None:
        requests.starting = pid
    return home


def _short_multiprocessing_tempdir() -> None:
    """Have multiprocessing make its folder (the forkserver's socket is in it) under a
    short temporary directory (``graders.worker.socket_dir``) when ``TMPDIR`` is too long
    for a socket path. multiprocessing makes that folder once per process, at its first
    ``get_temp_dir()``, and removes it at exit. Raises ``SocketDirError`` when no short
    directory is writable."""
    from multiprocessing import util

    from graders.worker.socket_dir import socket_parent

    parent = socket_parent()
    if parent == tempfile.gettempdir():
        return
    saved = tempfile.tempdir
    tempfile.tempdir = parent  # only while multiprocessing makes its folder
    try:
        util.get_temp_dir()
    finally:
        tempfile.tempdir = saved


def stop_forkserver(home: str) -> None:
    """Stop the forkserver and wait for it, then remove its folder ``home``, so that
    nothing it made is left when the batch returns. The next pool starts a new one."""
    from multiprocessing import forkserver

    stop = getattr(getattr(forkserver, "_forkserver", None), "_stop", None)
    if stop is not None:
        with contextlib.suppress(OSError, ChildProcessError):
            stop()
    shutil.rmtree(home, ignore_errors=True)


def halt(stop: Any, pools: Sequence[ProcessPoolExecutor]) -> None:
    """Stop the batch's graders: ``stop`` set (the files not started return at once), then
    SIGINT to each grader process of ``pools`` (after a SIGTERM, which only this process
    got; after Ctrl-C a second one is ignored, ``_interrupt_once``)."""
    stop.set()
    for pool in pools:
        for process in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if process.pid is not None:
                    os.kill(process.pid, signal.SIGINT)


def death_of(workers: Sequence[Any]) -> str:
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
                 progress: GradingProgress, requests: StopRequests) -> bool:
    """Grade ``subs`` again, the files a broken pool did not finish, each in a pool of its
    own (one grader process, ``options`` as the batch's pool: the same zygote), at most
    ``jobs`` at a time, in order: a grader that dies now took only its own file down.
    Such a file gets no result (``drop_stale_result`` under the batch folder ``out``),
    an error for ``done`` and the note "grader died: FILE" in ``notes``;
    every file is passed to ``done`` (except after Ctrl-C or SIGTERM, noted in
    ``requests``: ``stop`` is set and the files not started are left). Returns whether
    Ctrl-C or SIGTERM stopped the batch."""
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
            ended, _ = wait(running, timeout=POLL, return_when=FIRST_COMPLETED)
            if requests.signum is not None and not interrupted:
                interrupted = True
                halt(stop, [pool for _, pool, _ in running.values()])
                progress.stop()
            for future in ended:
                sub, pool, workers = running.pop(future)
                pool.shutdown()
                ending = ending_of(future, sub, done)
                if ending != "died":
                    interrupted |= ending == "interrupted"
                    continue
                how = death_of(workers)
                if interrupted or how == "killed by SIGINT":  # Ctrl-C came first
                    interrupted = True
                    continue
                name = Path(sub.file).name
                notes.setdefault(sub.student, []).append(f"grader died: {name}")
                kept = ("an earlier result of the same content is kept"
                        if drop_stale_result(out, sub) else "no result was written")
                done(sub, f"the grader process died while grading {name} ({how}), "
                          f"also when graded alone; {kept}", "grader died:")
    finally:
        for _, pool, _ in running.values():
            pool.shutdown()
    return interrupted
