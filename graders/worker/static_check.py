"""Static check of a submission's source before any of it runs.

student-api.md fixes what a submission may import: numpy, math, functools,
itertools, dataclasses, typing and ``pallas_sim``'s public names (plus
``__future__``, which only changes how the file compiles). Every ``import``
and ``from ... import`` anywhere in the file (module level or inside a
function) is checked; relative imports are rejected because a submission is a
single file. The check never raises on bad source: a file that cannot be read
or parsed becomes a problem in the result, with line, column and the line.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

#: Top-level modules a submission may import (student-api.md), in the order messages list them.
ALLOWED_MODULES: tuple[str, ...] = (
    "numpy",
    "math",
    "functools",
    "itertools",
    "dataclasses",
    "typing",
    "pallas_sim",
)
_ALWAYS_ALLOWED = frozenset({"__future__"})
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
    """True when ``module`` (dotted, absolute) may be imported by a submission.

    numpy and the standard-library modules of the allowed list may be imported
    with any submodule; ``pallas_sim`` only with public submodules (no path
    component starting with an underscore).
    """
    parts = module.split(".")
    if module in _ALWAYS_ALLOWED:
        return True
    if parts[0] not in ALLOWED_MODULES:
        return False
    if parts[0] == "pallas_sim":
        return not any(part.startswith("_") for part in parts[1:])
    return True


def _reject(node: ast.stmt, what: str) -> StaticProblem:
    return StaticProblem(
        node.lineno,
        node.col_offset + 1,
        f"line {node.lineno}: {what} is not allowed (allowed: {_ALLOWED_TEXT})",
    )


def _import_problems(tree: ast.AST) -> list[StaticProblem]:
    problems: list[StaticProblem] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not is_allowed_module(alias.name):
                    problems.append(_reject(node, f"import of '{alias.name}'"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                dots = "." * node.level
                problems.append(_reject(node, f"relative import 'from {dots}{node.module or ''}'"))
            elif node.module is None or not is_allowed_module(node.module):
                problems.append(_reject(node, f"import of '{node.module}'"))
            elif node.module == "pallas_sim":
                for alias in node.names:
                    if alias.name.startswith("_"):
                        problems.append(
                            _reject(node, f"import of private name 'pallas_sim.{alias.name}'")
                        )
    problems.sort(key=lambda p: (p.line, p.column))
    return problems


def _syntax_problem(exc: SyntaxError, source: str) -> StaticProblem:
    line = exc.lineno or 0
    column = exc.offset or 0
    text = exc.text
    if text is None and 0 < line <= len(source.splitlines()):
        text = source.splitlines()[line - 1]
    kind = type(exc).__name__
    where = f"line {line}, column {column}: " if line else ""
    message = f"{where}{kind}: {exc.msg}"
    if text:
        raw = text.rstrip("\r\n")
        stripped = raw.lstrip()
        indent = len(raw) - len(stripped)
        message += f"\n    {stripped}"
        if indent < column <= len(raw) + 1:
            message += "\n    " + " " * (column - 1 - indent) + "^"
    return StaticProblem(line, column, message)


def check_source(source: str, filename: str = "<submission>") -> StaticCheckResult:
    """Check submission source text; never raises.

    Returns a ``StaticCheckResult`` whose problems are either one syntax error
    (``line L, column C: SyntaxError: ...`` followed by the offending line and a
    caret) or one entry per forbidden import, sorted by line, each reading
    ``line L: import of 'os' is not allowed (allowed: numpy, math, ...)``.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return StaticCheckResult(filename, (_syntax_problem(exc, source),))
    except (ValueError, MemoryError, RecursionError) as exc:
        # e.g. "source code string cannot contain null bytes"
        return StaticCheckResult(filename, (StaticProblem(0, 0, f"cannot parse the file: {exc}"),))
    return StaticCheckResult(filename, tuple(_import_problems(tree)))


def decode_source(data: bytes) -> str:
    """Decode Python source bytes the way the interpreter does (coding cookie, BOM, UTF-8).

    Raises ``SyntaxError`` for an unknown coding and ``UnicodeDecodeError`` for bad bytes.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def check_file(path: str | Path) -> StaticCheckResult:
    """Read and check a submission file; never raises.

    An unreadable or undecodable file gives a single problem with line 0.
    """
    path = Path(path)
    try:
        source = decode_source(path.read_bytes())
    except OSError as exc:
        reason = exc.strerror or str(exc)
        problem = StaticProblem(0, 0, f"cannot read {path.name}: {reason}")
        return StaticCheckResult(path.name, (problem,))
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        problem = StaticProblem(0, 0, f"cannot decode {path.name} as Python source: {exc}")
        return StaticCheckResult(path.name, (problem,))
    return check_source(source, path.name)
