"""A ``Session`` for one submission file: refuse a link, turn a notebook into its module
in this trusted process, run the static check, start the worker and import the file in
it; a file that fails any of these gives ``Session.failed``, whose every call says why
(docs/security.md)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graders.checking.framework import (
    CheckFailure,
    Session,
    raised_hint,
    raised_text,
)
from graders.checking.status import Status
from graders.course.catalog import Assignment
from graders.grading.notebook import notebook_module, notebook_static_result
from graders.grading.submission import link_failure
from graders.safety import submission_files
from graders.student.notebook import ConvertedNotebook
from graders.worker.client import LoadResult, Worker
from graders.worker.static_check import (
    MAX_SOURCE_BYTES,
    StaticCheckResult,
    StaticProblem,
    check_bytes,
    read_source,
)


def _static_failure(result: StaticCheckResult, file_name: str) -> CheckFailure:
    first = result.problems[0].message.splitlines()[0]
    more = len(result.problems) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return CheckFailure(
        f"{file_name} was not run: {first}{extra}",
        status=Status.ERROR,
        traceback="\n".join("  " + line for line in result.message().splitlines()),
        hint="fix the file so that it imports only the allowed modules and compiles",
    )


def _load_failure(load: LoadResult, file_name: str) -> CheckFailure:
    error = load.error
    if error is None:  # pragma: no cover - a failed LoadResult always has an error
        return CheckFailure(f"{file_name} could not be loaded", status=Status.ERROR)
    hint = "code at the top level of the file runs on import: keep it to definitions"
    if error.kind in ("exception", "not_implemented"):
        what = raised_text(f"importing {file_name}", error.type, error.message)
        hint = raised_hint(error.type, error.message) or hint
    elif error.kind == "timeout":
        what = f"importing {file_name} {error.message}"
    else:
        what = f"{file_name} could not be loaded: {error.message}"
    return CheckFailure(
        what, status=Status.ERROR, traceback=error.traceback or None, output=error.output or None,
        hint=hint,
    )


@contextmanager
def open_session(
    path: str | Path, assignment: Assignment, *, timeout: float = 10.0
) -> Iterator[Session]:
    """A ``Session`` for one submission file, its worker closed on exit.

    The file is read once: the static check and the worker get the same bytes (a
    notebook's: its module converted from the bytes read), and ``session.file_sha256``
    is their digest, what the result records as graded.

    Runs the static check first; a rejected file or one that fails to import
    gives a Session whose every call raises that failure. A ``.ipynb`` file is
    first turned into its module here, in the trusted process, without running
    anything (``graders.student.notebook``); a file that is not a notebook
    fails every call with status "error". Raises ``FileNotFoundError`` when
    ``path`` does not exist.
    """
    path = Path(path)
    file_name = path.name
    link = link_failure(path)
    if link is not None:
        yield Session.failed(assignment, link, file_name)
        return
    if path.suffix.casefold() == ".ipynb":
        with notebook_module(path, assignment.stem) as (module, failure):
            if failure is not None:
                yield Session.failed(assignment, failure, file_name)
                return
            with _module_session(path, module.source, module.name, assignment, timeout,
                                 file_name, module.converted) as session:
                session.file_sha256 = module.file_sha256
                yield session
        return
    source = read_source(path)
    if isinstance(source, StaticCheckResult):  # not a regular file, too large, unreadable
        yield Session.failed(assignment, _static_failure(source, file_name), file_name)
        return
    with _module_session(path, source, file_name, assignment, timeout, file_name) as session:
        session.file_sha256 = hashlib.sha256(source).hexdigest()
        yield session


@contextmanager
def _module_session(
    path: Path, source: bytes, checked_as: str, assignment: Assignment, timeout: float,
    file_name: str, notebook: ConvertedNotebook | None = None,
) -> Iterator[Session]:
    """The session of ``source`` (the file's bytes, or a notebook's module): statically
    checked as ``checked_as``, then the very same bytes run in the worker."""
    if len(source) > MAX_SOURCE_BYTES:  # a notebook whose code alone is over the .py limit
        reason = submission_files.too_large(len(source), MAX_SOURCE_BYTES)
        static = StaticCheckResult(checked_as, (StaticProblem(0, 0, f"{checked_as}: {reason}"),))
    else:
        static = check_bytes(source, checked_as)
    if not static.ok:
        if notebook is not None:
            static = notebook_static_result(static, notebook, file_name)
        yield Session.failed(assignment, _static_failure(static, file_name), file_name)
        return
    with Worker(path, timeout=timeout, module_name=assignment.stem, source=source) as worker:
        load = worker.load_result
        assert load is not None
        # a notebook's tracebacks name its cells and lines, not the module's lines
        in_cells = (None if notebook is None else functools.partial(
            notebook.frames_in_cells, module_name=checked_as, file_name=file_name))
        if not load.ok:
            failure = _load_failure(load, file_name)
            if in_cells is not None and failure.traceback:
                failure.traceback = in_cells(failure.traceback)
            session = Session.failed(assignment, failure, file_name)
        else:
            session = Session(
                stem=assignment.stem, assignment=assignment.id, worker=worker,
                names=load.names, file_name=file_name,
                why_unbound=notebook.why_unbound if notebook is not None else None,
                in_cells=in_cells,
            )
        yield session
