"""Stand-ins for ``graders.batch.pool.grade_in_child`` whose grader process dies (SIGKILL, as
the kernel's OOM killer does) for the student ``abe``, for tests/batch/test_batch_grader_death.py.

They are module-level functions so that a batch's pool can send them to its grader
processes (by name: the forkserver's children import this module from the parent's
sys.path); every other student is graded by the real ``grade_in_child``. The state
they share with the test is kept in marker files in the batch's ``out`` folder (not in
the environment: forkserver children have the server's, not the test's).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from graders.batch.pool import grade_in_child as _real_grade_submission
from graders.grading.submission import Submission

DYING = "abe"
#: Written by ``dies_once`` before it dies: the next attempt grades.
DIED_ONCE = "abe.died"
#: Written by ``dies_while_amy_grades`` just before ``abe``'s grader dies.
DYING_NOW = "abe.dying"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def always_dies(sub: Submission, out: str, *args: Any) -> Any:
    """``abe``'s grader process dies every time."""
    if sub.student == DYING:
        _die()
    return _real_grade_submission(sub, out, *args)


def dies_once(sub: Submission, out: str, *args: Any) -> Any:
    """``abe``'s grader process dies the first time only (``DIED_ONCE`` in ``out``)."""
    marker = Path(out) / DIED_ONCE
    if sub.student == DYING and not marker.exists():
        marker.write_text("", encoding="utf-8")
        _die()
    return _real_grade_submission(sub, out, *args)


def attempts(out: Path, student: str) -> int:
    """How many times ``dies_while_amy_grades`` began grading ``student``'s files."""
    return len(list(out.glob(f"{student}.started.*")))


def dies_while_amy_grades(sub: Submission, out: str, *args: Any) -> Any:
    """``abe``'s grader dies every time, the first time while ``amy``'s is grading: ``abe``
    waits until the graders of ``amy`` and ``al`` have started, amy's first grader waits
    (before grading) until abe's is about to die and then until the broken pool ends it.

    ``al`` is graded once abe's grader is dying: its result wakes the pool's manager
    thread. (Python 3.11's pool wakes that thread before it starts a process for a new
    task, so it may be waiting on the processes it knew before, without abe's: a death
    it does not watch is seen at the next result, and amy's, still waiting, is not one.)"""
    folder, student = Path(out), sub.student
    (folder / f"{student}.started.{os.getpid()}").write_text("", encoding="utf-8")
    deadline = time.monotonic() + 60
    if student == DYING:
        while (not (attempts(folder, "amy") and attempts(folder, "al"))
               and time.monotonic() < deadline):
            time.sleep(0.02)
        (folder / DYING_NOW).write_text("", encoding="utf-8")
        _die()
    if student in ("amy", "al") and attempts(folder, student) == 1:
        while not (folder / DYING_NOW).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if student == "amy":  # the pool, broken by abe's death, terminates this process
            while time.monotonic() < deadline:
                time.sleep(0.1)
    return _real_grade_submission(sub, out, *args)


#: The student whose file ``interrupted_at_bob`` reports as stopped by Ctrl-C.
INTERRUPTED_STUDENT = "bob"


def interrupted_at_bob(sub: Submission, out: str, *args: Any) -> Any:
    """``bob``'s file ends as a Ctrl-C during its grading ends it (no result written);
    every other file is graded."""
    from graders.batch.pool import INTERRUPTED

    if sub.student == INTERRUPTED_STUDENT:
        return sub.student, sub.stem, None, INTERRUPTED
    return _real_grade_submission(sub, out, *args)
