"""What an nbgrader autograder-tests cell of the pallas-lab course runs: one task's grade.

Each graded task of a course notebook has one locked tests cell
(``graders.release.notebook``) whose hidden part (nbgrader's ``### BEGIN
HIDDEN TESTS``, so the student's notebook shows only the comment) is::

    from graders.integrations.nbgrader.tests import grade_task
    grade_task("1.3")

``nbgrader autograde`` runs these cells, and only these, in a kernel whose
working folder holds nothing but a copy of the notebook being graded
(``graders.integrations.nbgrader.execute.SandboxedExecute``). :func:`grade_task` grades
that notebook exactly as ``pallas-lab grade`` does: the notebook becomes a
module without running anything (``graders.student.notebook``) and the
student's code runs only in the sandboxed worker (``graders.grading.grade``). The
whole notebook is graded once per kernel; each cell then prints its task's
feedback and returns the task's points, which nbgrader records as the
cell's partial credit (an ``execute_result`` holding one number between 0
and the cell's points). Anything that goes wrong raises, and nbgrader gives
a cell with an error 0 points.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from graders.course.catalog import ASSIGNMENTS, Assignment

#: Call timeout (s) of ``pallas-lab grade``'s default, so both give the same scores.
TIMEOUT = 10.0
_CACHE: dict[tuple[str, str], object] = {}


def assignment_of_task(task: str) -> Assignment:
    """The assignment that has Task ``task`` ("1.3" -> a1); raises ``KeyError`` otherwise."""
    for assignment in ASSIGNMENTS.values():
        if any(t.id == task and t.graded for t in assignment.tasks):
            return assignment
    raise KeyError(f"no assignment has a graded Task {task}")


def _graded(path: Path, assignment: Assignment):  # -> SubmissionResult
    from graders.grading.grade import grade_file
    from graders.grading.submission import file_digest

    # The grader's own bounded hash (never past the notebook limit, never a FIFO): "" for a
    # file it does not read, which grade_file then scores 0 with the reason.
    key = (str(path.resolve()), file_digest(path)[0])
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = grade_file(path, assignment=assignment.id, timeout=TIMEOUT,
                                 student=path.parent.name)
    return _CACHE[key]


@contextlib.contextmanager
def _no_stderr() -> Iterator[None]:
    """Python's ``sys.stderr`` and file descriptor 2 go nowhere for the duration (a kernel
    sends what reaches fd 2 to the cell as stderr, which nbgrader scores 0)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        saved = None
    if saved is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


def grade_task(task: str, notebook: str | Path | None = None, *,
               out: TextIO | None = None) -> float:
    """Grade ``notebook`` (default ``<stem>.ipynb`` in the working folder) and return the
    points Task ``task`` earned, printing the task's feedback to ``out`` (stdout).

    The notebook is graded in pallas-lab's sandboxed worker, once per content
    (later calls for other tasks reuse the result). Python warnings and
    stderr output of the grading are kept out of the cell (nbgrader gives a
    cell that writes to stderr 0 points). Raises ``KeyError`` for an unknown
    task, ``FileNotFoundError`` when the notebook is missing, and whatever the
    grader itself raises (the cell then shows the error and earns 0).
    """
    out = sys.stdout if out is None else out
    assignment = assignment_of_task(task)
    path = Path(notebook) if notebook is not None else Path.cwd() / f"{assignment.stem}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"no notebook to grade at {path}")
    with warnings.catch_warnings(), _no_stderr():
        warnings.simplefilter("ignore")
        result = _graded(path, assignment)
    from graders.checking.feedback import format_points
    from graders.safety.safe_text import terminal_text

    rollup = next(t for t in result.tasks() if t.task == task)
    lines = [f"Task {task} {rollup.title}: {format_points(rollup.points)}/"
             f"{format_points(rollup.max_points)} {rollup.shown_status}"]
    lines += [c.feedback.rstrip() for c in result.checks
              if c.task == task and c.status != "passed"]
    print(terminal_text("\n".join(lines), multiline=True), file=out)
    return float(rollup.points)
