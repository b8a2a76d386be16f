"""Turn one solution file into its handout: solution regions become stubs.

``solutions/<stem>.py`` are jupytext "percent" files. Every code cell may hold
solution regions, nbgrader style::

    def blocked_add(x, y, *, block_shape=(256, 256)):
        \"\"\"Task 1.2: x + y block by block with add_kernel.  [lecture §2.2]\"\"\"
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

A release replaces each region, markers included, by one line at the
indentation of its ``### BEGIN SOLUTION`` marker: a ``raise`` of
``NotImplementedError`` whose message is ``Need to implement for Task N.M``
(``STUB_TEMPLATE`` below, with the region's task id),

and leaves every other line (markdown cells, imports, signatures,
docstrings, example cells) as it is.

Task-marker convention: the task ``N.M`` of a region is

1. the ``Task N.M`` that starts the first line of the docstring of the
   innermost function enclosing the region; otherwise
2. the nearest comment line ``# Task N.M`` above the region's BEGIN marker
   in the same code cell (for regions outside a function, or in a function
   whose docstring has no marker).

A region with neither, an unmatched or nested marker, or a marker inside a
markdown cell stops the release with a :class:`ReleaseError` naming the cell
and line. Cells are read and written with jupytext's percent format; a
headerless percent file round-trips through jupytext unchanged, so the
handout differs from its solution only where the regions were.

:func:`render_handout` is the pure text-to-text transformation (the ``.py``
handout; the tests use it); :func:`find_solution_regions` is shared with the
notebook form (``graders.release.notebook``). ``pallas-lab release``
(``graders.release.handouts``) writes both.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import jupytext

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
STUB_TEMPLATE = 'raise NotImplementedError("Need to implement for Task {task}")'
JUPYTEXT_FORMAT = "py:percent"

_DOCSTRING_TASK = re.compile(r"^\s*Task\s+(\d+\.\d+)\b")
_COMMENT_TASK = re.compile(r"^\s*#\s*Task\s+(\d+\.\d+)\b")


class ReleaseError(ValueError):
    """A solution file cannot be turned into a handout (bad markers, no task id)."""


@dataclass(frozen=True)
class SolutionRegion:
    """One ``### BEGIN SOLUTION`` … ``### END SOLUTION`` region of a code cell.

    Line numbers are 0-based within the cell's source; ``end`` is the END
    marker's line. ``task`` is the ``N.M`` id found by the marker convention.
    """

    begin: int
    end: int
    indent: str
    task: str


def render_handout(solution_source: str) -> str:
    """Return the handout text for one solution file's text.

    Raises:
      ReleaseError: unmatched or nested markers, markers in a markdown cell, or
        a region whose task cannot be found (see the module docstring).
    """
    notebook = jupytext.reads(solution_source, fmt=JUPYTEXT_FORMAT)
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type == "code":
            regions = find_solution_regions(cell.source, where=f"cell {number}")
            cell.source = _replace_regions(cell.source, regions)
        elif BEGIN_MARKER in cell.source or END_MARKER in cell.source:
            raise ReleaseError(
                f"cell {number} is a {cell.cell_type} cell but contains a solution marker; "
                "solution regions belong in code cells")
    return jupytext.writes(notebook, fmt=JUPYTEXT_FORMAT)


def find_solution_regions(source: str, *, where: str = "cell") -> list[SolutionRegion]:
    """The solution regions of one code cell's source, each with its task id."""
    lines = source.split("\n")
    spans: list[tuple[int, int]] = []
    open_at: int | None = None
    for index, line in enumerate(lines):
        marker = line.strip()
        if marker == BEGIN_MARKER:
            if open_at is not None:
                raise ReleaseError(
                    f"{where}, line {index + 1}: {BEGIN_MARKER!r} inside the region opened "
                    f"at line {open_at + 1}")
            open_at = index
        elif marker == END_MARKER:
            if open_at is None:
                raise ReleaseError(
                    f"{where}, line {index + 1}: {END_MARKER!r} without a {BEGIN_MARKER!r}")
            spans.append((open_at, index))
            open_at = None
    if open_at is not None:
        raise ReleaseError(f"{where}, line {open_at + 1}: {BEGIN_MARKER!r} is never closed")
    if not spans:
        return []

    try:
        functions = _functions(ast.parse(source))
    except SyntaxError:
        functions = []  # only the comment convention can name the task then
    regions = []
    for begin, end in spans:
        task = _task_of(begin, lines, functions)
        if task is None:
            raise ReleaseError(
                f"{where}, line {begin + 1}{_in_function(begin, functions)}: "
                "cannot tell which task this solution region "
                "belongs to; start the enclosing function's docstring with 'Task N.M' "
                "or put a '# Task N.M' comment above the region")
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        regions.append(SolutionRegion(begin, end, indent, task))
    return regions


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _enclosing(begin: int, functions: list[ast.FunctionDef | ast.AsyncFunctionDef]
               ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    line_no = begin + 1  # ast line numbers are 1-based
    enclosing = [f for f in functions if f.lineno <= line_no <= (f.end_lineno or f.lineno)]
    return max(enclosing, key=lambda f: f.lineno) if enclosing else None


def _in_function(begin: int, functions: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> str:
    function = _enclosing(begin, functions)
    return f" (in {function.name})" if function is not None else ""


def _task_of(begin: int, lines: list[str],
             functions: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> str | None:
    innermost = _enclosing(begin, functions)
    if innermost is not None:
        docstring = ast.get_docstring(innermost) or ""
        match = _DOCSTRING_TASK.match(docstring)
        if match:
            return match.group(1)
    for line in reversed(lines[:begin]):
        match = _COMMENT_TASK.match(line)
        if match:
            return match.group(1)
    return None


def _replace_regions(source: str, regions: list[SolutionRegion]) -> str:
    if not regions:
        return source
    lines = source.split("\n")
    for region in sorted(regions, key=lambda r: r.begin, reverse=True):
        stub = region.indent + STUB_TEMPLATE.format(task=region.task)
        lines[region.begin:region.end + 1] = [stub]
    return "\n".join(lines)
