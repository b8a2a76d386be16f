"""Grading ``.ipynb`` submissions: the notebook becomes a module file, then grading as usual.

The conversion (``graders.student.notebook``) runs here, in the trusted
process, before the static check, and never executes the notebook. The module
is written as ``<stem>.py`` into a private temporary folder, which the static
check and the worker then treat exactly like a submitted ``.py``. Problems the
static check finds are reported with the notebook's cell and line.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graders.checking.framework import CheckFailure
from graders.safety import submission_files
from graders.student.notebook import ConvertedNotebook, NotebookError, notebook_to_module
from graders.worker.static_check import StaticCheckResult, StaticProblem

_LINE_PREFIX = re.compile(r"^line (\d+)(, column \d+)?:")


@dataclass(frozen=True)
class NotebookModule:
    """The module made from a notebook: its temporary ``path`` and the conversion record."""

    path: Path
    converted: ConvertedNotebook


#: The largest notebook the grader reads, in bytes (outputs and pictures included; its code
#: then meets graders.worker.static_check.MAX_SOURCE_BYTES). Kept in
#: ``graders.safety.submission_files`` with the other limits.
MAX_NOTEBOOK_BYTES = submission_files.MAX_NOTEBOOK_BYTES


@contextmanager
def notebook_module(
    path: str | Path, stem: str
) -> Iterator[tuple[NotebookModule | None, CheckFailure | None]]:
    """Yield ``(module, None)`` for a readable notebook, else ``(None, failure)``.

    ``module.path`` is ``<tmp>/<stem>.py`` and is deleted on exit. The failure
    has status "error" and says why the file is not a notebook, or why it was not read
    (not a regular file, larger than ``MAX_NOTEBOOK_BYTES``: ``graders.safety.submission_files``).
    Raises ``FileNotFoundError`` when ``path`` does not exist.
    """
    path = Path(path)
    try:
        submission_files.check_file(path, MAX_NOTEBOOK_BYTES)
    except submission_files.RefusedFile as exc:
        large = exc.reason.startswith("file too large")
        yield None, CheckFailure(
            f"{path.name} was not run: {exc.reason}", status="error",
            hint="clear the outputs (Kernel > Restart & Clear Output) and save again" if large
            else "submit the notebook file itself")
        return
    except OSError as exc:
        raise FileNotFoundError(f"no submission file at {path}") from exc
    try:
        converted = notebook_to_module(path)
    except NotebookError as exc:
        yield None, CheckFailure(
            f"{path.name} was not run: {exc}", status="error",
            hint="submit the notebook as Jupyter saved it (File > Save), or the .py handout")
        return
    folder = Path(tempfile.mkdtemp(prefix="pallas-lab-nb-"))
    try:
        module = folder / f"{stem}.py"
        module.write_text(converted.source, encoding="utf-8")
        yield NotebookModule(module, converted), None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def notebook_static_result(
    static: StaticCheckResult, converted: ConvertedNotebook, file_name: str
) -> StaticCheckResult:
    """The static check's problems with module lines replaced by ``cell C, line M``."""
    problems = []
    for problem in static.problems:
        where = converted.location(problem.line) if problem.line else None
        message = problem.message
        if where is not None:
            cell, line = where
            message = _LINE_PREFIX.sub(
                lambda m, c=cell, n=line: f"cell {c}, line {n}{m.group(2) or ''}:", message,
                count=1)
        problems.append(StaticProblem(problem.line, problem.column, message))
    return StaticCheckResult(file_name, tuple(problems))
