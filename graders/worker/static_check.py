"""Static check of a submission's source before any of it runs (the compile-time half of
the submission policy).

docs/student-api.md fixes what a submission may import: numpy, math, functools,
itertools, dataclasses, typing and ``pallas_sim``'s public names (plus
``__future__`` and ``warnings``). The check compiles the file under the
submission policy (:mod:`graders.worker.policy.transform`: RestrictedPython
with this project's allowlists), in the trusted process, without running
anything. It refuses, naming the line: imports and module names outside the
allowlists (``import os``, ``np.lib``, ``from typing import
get_type_hints``, ``pallas_sim.tracing``), names that run strings or reach
the interpreter (``exec``, ``eval``, ``__import__``, ``__builtins__``),
double-underscore attributes other than a few harmless ones, the
interpreter's introspection attributes (``gi_frame``, ``tb_frame``,
``f_globals``), assigning to an imported module's attributes, the names of
the grader's guards, and the statements RestrictedPython refuses (``match``,
``async``, ``except*``). The check never raises on bad source: a file that
cannot be read or parsed becomes a problem in the result, with line,
column and the line.

The same compiler runs again in the worker, whose guards apply the run-time
half of the allowlists, so a name computed at run time meets the same rule
(docs/security.md, "The submission policy"). With ``PALLAS_LAB_POLICY=off``
(only for the red-team tests of the layers below the policy) the check
keeps only the import allowlist.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from graders.safety import submission_files
from graders.worker.policy import policy_enabled, rules
from graders.worker.policy.transform import (
    compile_submission,
    decode_source,
    syntax_problem,
)
from graders.worker.policy.transform import is_allowed_module as _allowed

__all__ = ["ALLOWED_MODULES", "StaticCheckResult", "StaticProblem", "check_file",
           "check_source", "decode_source", "is_allowed_module"]

#: Top-level modules a submission may import (docs/student-api.md), in the order messages list them.
ALLOWED_MODULES: tuple[str, ...] = rules.ALLOWED_TOP_LEVEL
_ALLOWED_TEXT = ", ".join(ALLOWED_MODULES)


@dataclass(frozen=True)
class StaticProblem:
    """One reason a submission is rejected: 1-based ``line`` (0 when the file is unreadable),
    1-based ``column`` (0 when unknown) and a student-facing ``message``."""

    line: int
    column: int
    message: str


@dataclass(frozen=True)
class StaticCheckResult:
    """Outcome of ``check_source``/``check_file``; ``ok`` is True when ``problems`` is empty."""

    filename: str
    problems: tuple[StaticProblem, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing was rejected."""
        return not self.problems

    def message(self) -> str:
        """All problems as student-facing text, one per line (empty when ``ok``)."""
        return "\n".join(problem.message for problem in self.problems)


def is_allowed_module(module: str) -> bool:
    """True when ``module`` (dotted, absolute) may be imported by a submission: numpy and
    its allowed submodules, math, functools, itertools, dataclasses, typing, warnings,
    ``__future__`` and pallas_sim's public modules."""
    return _allowed(module)


def _imports_only(source: str, filename: str) -> StaticCheckResult:
    """The import allowlist alone (``PALLAS_LAB_POLICY=off``)."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        problem = syntax_problem(exc, source)
        return StaticCheckResult(filename, (StaticProblem(problem.line, problem.column,
                                                          problem.message),))
    except (ValueError, MemoryError, RecursionError) as exc:
        return StaticCheckResult(filename, (StaticProblem(0, 0, f"cannot parse the file: {exc}"),))
    problems = []
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [("." * node.level) + (node.module or "")]
        for module in modules:
            if module.startswith(".") or not _allowed(module.split(".")[0]):
                problems.append(StaticProblem(node.lineno, node.col_offset + 1,
                                              f"line {node.lineno}: import of '{module}' is "
                                              f"not allowed (allowed: {_ALLOWED_TEXT})"))
    return StaticCheckResult(filename, tuple(problems))


def check_source(source: str, filename: str = "<submission>") -> StaticCheckResult:
    """Check submission source text; never raises.

    Returns a ``StaticCheckResult`` whose problems are either one syntax error
    (``line L, column C: SyntaxError: ...`` followed by the offending line and a
    caret) or one entry per refused import, name or attribute, sorted by line,
    e.g. ``line L: import of 'os' is not allowed (allowed: numpy, math, ...)``
    or ``line L: use of 'exec' is not allowed (it imports, runs strings or
    reaches the interpreter's internals)``.
    """
    if len(source) > MAX_SOURCE_BYTES:
        return StaticCheckResult(filename, (StaticProblem(
            0, 0, f"{filename} has {len(source)} characters; a submission may be at most "
            f"{MAX_SOURCE_BYTES} bytes"),))
    if not policy_enabled():
        return _imports_only(source, filename)
    compiled = compile_submission(source, filename)
    return StaticCheckResult(filename, tuple(
        StaticProblem(p.line, p.column, p.message) for p in compiled.problems))


#: The largest submission the grader reads, in bytes (``graders.safety.submission_files``, where
#: the limits live: a handout is about 30 KiB, and the compile-time check's time and memory
#: grow with the source; a 10 MB file took 5 GB).
MAX_SOURCE_BYTES = submission_files.MAX_SOURCE_BYTES


def check_file(path: str | Path) -> StaticCheckResult:
    """Read and check a submission file; never raises.

    A file that is not a regular file, is larger than ``MAX_SOURCE_BYTES`` (its size
    from ``lstat``, before it is opened), cannot be read or cannot be decoded gives a
    single problem with line 0 (``graders.safety.submission_files``).
    """
    data = read_source(path)
    return data if isinstance(data, StaticCheckResult) else check_bytes(data, Path(path).name)


def read_source(path: str | Path) -> bytes | StaticCheckResult:
    """A submission file's bytes, read once as the grader reads student files (a regular
    file, never past ``MAX_SOURCE_BYTES``), or the one problem (line 0) saying why they
    cannot be read; never raises. The grader checks these bytes (:func:`check_bytes`) and
    gives the very same bytes to the worker, so what runs is what was checked."""
    path = Path(path)
    try:
        return submission_files.read_bytes(path, MAX_SOURCE_BYTES)
    except submission_files.RefusedFile as exc:
        return StaticCheckResult(path.name, (StaticProblem(0, 0, f"{path.name}: {exc.reason}"),))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        problem = StaticProblem(0, 0, f"cannot read {path.name}: {reason}")
        return StaticCheckResult(path.name, (problem,))


def check_bytes(data: bytes, filename: str) -> StaticCheckResult:
    """Decode submission bytes as Python source (PEP 263) and check them
    (:func:`check_source`); bytes that cannot be decoded give one problem with line 0.
    Never raises."""
    try:
        source = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        problem = StaticProblem(0, 0, f"cannot decode {filename} as Python source: {exc}")
        return StaticCheckResult(filename, (problem,))
    return check_source(source, filename)
