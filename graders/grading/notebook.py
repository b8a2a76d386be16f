"""Grading ``.ipynb`` submissions: the notebook becomes module source, then grading as usual.

The conversion (``graders.student.notebook``) runs here, in the trusted
process, before the static check, and never executes the notebook. The module's
source is checked and run exactly like a submitted ``<stem>.py``'s (its bytes go to
the static check and to the worker, never through a file). Problems the static check
finds are reported with the notebook's cell and line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from graders.checking.framework import CheckFailure
from graders.safety import submission_files
from graders.student.notebook import (
    ConvertedNotebook,
    NotebookError,
    cells_to_module,
    notebook_cells,
)
from graders.worker.static_check import StaticCheckResult, StaticProblem

_LINE_PREFIX = re.compile(r"^line (\d+)(, column \d+)?:")


@dataclass(frozen=True)
class NotebookModule:
    """The module made from a notebook: the ``name`` it is checked as (``<stem>.py``), its
    ``source`` bytes (UTF-8), the conversion record and ``file_sha256``, the hex SHA-256 of
    the notebook's bytes as they were read for the conversion (what was graded)."""

    name: str
    source: bytes
    converted: ConvertedNotebook
    file_sha256: str


#: The largest notebook the grader reads, in bytes (outputs and pictures included; its code
#: then meets graders.worker.static_check.MAX_SOURCE_BYTES). Kept in
#: ``graders.safety.submission_files`` with the other limits.
MAX_NOTEBOOK_BYTES = submission_files.MAX_NOTEBOOK_BYTES


@contextmanager
def notebook_module(
    path: str | Path, stem: str
) -> Iterator[tuple[NotebookModule | None, CheckFailure | None]]:
    """Yield ``(module, None)`` for a readable notebook, else ``(None, failure)``.

    ``module.source`` is the converted module's bytes, checked as ``<stem>.py``. The failure
    has status "error" and says why the file is not a notebook, or why it was not read
    (not a regular file, larger than ``MAX_NOTEBOOK_BYTES``: ``graders.safety.submission_files``).
    Raises ``FileNotFoundError`` when ``path`` does not exist.
    """
    path = Path(path)
    try:
        data = submission_files.read_bytes(path, MAX_NOTEBOOK_BYTES)
    except submission_files.RefusedFile as exc:
        large = exc.reason.startswith("file too large")
        yield None, CheckFailure(
            f"{path.name} was not run: {exc.reason}", status="error",
            hint="clear the outputs (Kernel > Restart & Clear Output) and save again" if large
            else "submit the notebook file itself")
        return
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"no submission file at {path}") from exc
    except OSError as exc:  # there, but not readable: said as the conversion says it
        data, unread = b"", NotebookError(f"cannot read {path.name}: {exc}")
    else:
        unread = None
    try:
        if unread is not None:
            raise unread
        converted = cells_to_module(notebook_cells(data, path.name))
    except NotebookError as exc:
        yield None, CheckFailure(
            f"{path.name} was not run: {exc}", status="error",
            hint="submit the notebook as Jupyter saved it (File > Save), or the .py handout")
        return
    yield NotebookModule(f"{stem}.py", converted.source.encode("utf-8"), converted,
                         hashlib.sha256(data).hexdigest()), None


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
