"""Turn a Jupyter notebook submission into the Python module that gets graded.

A notebook is graded exactly like a ``.py`` file once its code cells have
been joined into one module. The conversion runs in the trusted process
BEFORE the static check and never executes anything: it reads the JSON with
nbformat and looks at each code cell with ``ast`` only.

What is kept and what is set aside (commented out, so line numbers stay put):

* markdown and raw cells are left out entirely; every code cell becomes a
  block that starts with a ``# %% [cell N]`` line (jupytext's percent
  format), N counting all cells of the notebook from 1;
* IPython syntax: a cell magic (``%%time`` on the first line) sets aside the
  whole cell; line magics, shell escapes and help lines (``%matplotlib
  inline``, ``!pip list``, ``x = !ls``, ``f?``) are set aside line by line;
* of each cell's top-level statements, imports, ``def``, ``class``,
  assignments, ``if``/``try`` blocks and ``pass`` are the module; everything
  else only displays or tests (``display(x)``, ``plt.plot(...)``, a bare
  ``x``, ``assert``, loops, ``with`` blocks) and is set aside;
* an import of a module a submission may not use (``import matplotlib.pyplot
  as plt``) is set aside, and so is every later top-level statement that
  reads a name bound only by something set aside (``fig = plt.figure()``).
  Imports inside functions are left alone: the static check judges them.
* a top-level statement that would ask for keyboard input while the module
  is imported (``n = int(input("block? "))``, or a call of a notebook
  function that calls ``input()``) is set aside like any interactive cell:
  there is no one to answer it while grading. A function that calls
  ``input()`` is kept; calling it fails only the check that calls it, with a
  message, as in a ``.py``.
* a cell that does not parse is kept as it is, so the static check reports
  the syntax error the way it does for a ``.py``.

Setting code aside can only remove code, never add any, so the static check
and the worker's isolation apply to the result unchanged.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from graders.worker.static_check import is_allowed_module

#: Names that exist only inside IPython; statements reading them are set aside.
IPYTHON_NAMES = frozenset({"display", "get_ipython", "In", "Out"})
_KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
         ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.Try, ast.Pass)
_MAGIC_LINE = re.compile(r"^\s*([%!]|\w[\w.]*\s*=\s*[%!])|^\s*\?|\?\??\s*$")


class NotebookError(ValueError):
    """The file is not a readable Jupyter notebook (the message says why)."""


@dataclass(frozen=True)
class SetAside:
    """One piece of a code cell left out of the module: 1-based ``cell`` and ``line``
    within the cell, the first line of its ``text``, and the ``reason``; ``names``: the
    module names it would have bound; ``uses``: the name it read that was itself set
    aside (None when it was set aside for another reason)."""

    cell: int
    line: int
    text: str
    reason: str
    names: tuple[str, ...] = ()
    uses: str | None = None


@dataclass
class ConvertedNotebook:
    """The module made from a notebook.

    ``source``: the module text; ``cell_lines``: per code cell, (cell number,
    first module line of the cell's body, number of lines), lines 1-based;
    ``set_aside``: what was left out, in order.
    """

    source: str
    cell_lines: list[tuple[int, int, int]] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)

    def why_unbound(self, name: str) -> str | None:
        """Why module name ``name`` is missing when code that binds it was set aside, first
        cause first (e.g. an import a submission may not use); None otherwise.

        E.g. "import of 'jax', which a submission may not use (cell 5, line 1:
        `import jax`); cell 5, line 3 (`@jax.jit`) uses 'jax'".
        """
        if name in self._kept_names():
            return None
        chain: list[SetAside] = []
        while name not in {n for note in chain for n in note.names}:
            note = next((n for n in reversed(self.set_aside) if name in n.names), None)
            if note is None:
                break
            chain.append(note)
            if note.uses is None:
                break
            name = note.uses
        if not chain:
            return None
        root = chain[-1]
        parts = [f"{root.reason} (cell {root.cell}, line {root.line}: `{root.text}`)"]
        parts += [f"cell {n.cell}, line {n.line} (`{n.text}`) uses '{n.uses}'"
                  for n in reversed(chain[:-1])]
        return "; ".join(parts)

    def _kept_names(self) -> set[str]:
        try:
            tree = ast.parse(self.source)
        except SyntaxError:
            return set()
        return {name for stmt in tree.body for name in _bound_names(stmt)}

    def frames_in_cells(self, text: str, module_name: str, file_name: str) -> str:
        """``text``, a worker's trimmed traceback of the module ``module_name``
        (``graders.worker.main``: frame lines "  <module_name>, line N, in F"), with each
        frame's module line given as the notebook's: "  <file_name>, cell C, line L, in F".
        Other lines, and frames on no cell's line, are kept as they are."""
        frame = re.compile(rf"^(\s*){re.escape(module_name)}, line (\d+)(, in .*)?$")
        lines = []
        for line in text.splitlines():
            found = frame.match(line)
            where = self.location(int(found.group(2))) if found else None
            if found and where is not None:
                line = (f"{found.group(1)}{file_name}, cell {where[0]}, line {where[1]}"
                        f"{found.group(3) or ''}")
            lines.append(line)
        return "\n".join(lines)

    def location(self, line: int) -> tuple[int, int] | None:
        """(cell number, line within the cell) of a 1-based module line, or None for a
        ``# %% [cell N]`` header line or a line past the end."""
        for cell, first, count in self.cell_lines:
            if first <= line < first + count:
                return cell, line - first + 1
        return None


def read_notebook_cells(path: str | Path) -> list[tuple[int, str, str]]:
    """(cell number, cell type, source) of every cell of a notebook file, in order.

    Uses nbformat (notebook format 4; older formats are upgraded). The file is read as
    ``graders.safety.submission_files.read_bytes`` reads it (a regular file of at most 16 MiB,
    never a FIFO or a device). Raises
    ``NotebookError`` when the file cannot be read, is not valid UTF-8, is not a
    notebook, or has a code cell holding a lone surrogate (the message names the
    cell, line and column).
    """
    from graders.safety.submission_files import read_bytes

    path = Path(path)
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise NotebookError(f"cannot read {path.name}: {exc}") from None
    return notebook_cells(data, path.name)


def notebook_cells(data: bytes, file_name: str) -> list[tuple[int, str, str]]:
    """(cell number, cell type, source) of every cell of the notebook whose file bytes are
    ``data`` (its name ``file_name`` is used in messages). Raises ``NotebookError`` as
    :func:`read_notebook_cells` does, but for reading."""
    import nbformat
    from nbformat.warnings import DuplicateCellId, MissingIDFieldWarning

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(
            f"{file_name} is not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); a notebook is UTF-8 JSON") from None
    try:
        with warnings.catch_warnings():  # cell ids do not matter here; no noise for the TA
            warnings.simplefilter("ignore", MissingIDFieldWarning)
            warnings.simplefilter("ignore", DuplicateCellId)
            notebook = nbformat.reads(text, as_version=4)
        cells = [(number, str(cell.cell_type), _text(cell.source))
                 for number, cell in enumerate(notebook.cells, start=1)]
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds for bad input
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NotebookError(f"{file_name} is not a Jupyter notebook ({first})") from None
    for number, kind, source in cells:
        if kind == "code":
            _refuse_surrogates(file_name, number, source)
    return cells


_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_surrogates(file_name: str, number: int, source: str) -> None:
    r"""Raise ``NotebookError`` when a code cell holds a lone surrogate: JSON can spell
    one (``"\ud800"``) but it is not a character, so no Python source holds it."""
    found = _SURROGATE.search(source)
    if found is None:
        return
    before = source[:found.start()]
    line = before.count("\n") + 1
    column = found.start() - (before.rfind("\n") + 1) + 1
    raise NotebookError(
        f"{file_name}: cell {number}, line {line}, column {column} holds "
        f"U+{ord(found.group()):04X}, a lone surrogate: not a character (not valid UTF-8), "
        "so it cannot be Python source")


def _text(source: object) -> str:
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return str(source)


def notebook_to_module(path: str | Path) -> ConvertedNotebook:
    """Convert a ``.ipynb`` file to a module (see the module docstring for the rules).

    Raises ``NotebookError`` for a file that is not a notebook.
    """
    return cells_to_module(read_notebook_cells(path))


def cells_to_module(cells: list[tuple[int, str, str]]) -> ConvertedNotebook:
    """The module for ``(cell number, cell type, source)`` triples; never raises."""
    out: list[str] = []
    converted = ConvertedNotebook(source="")
    dropped = set(IPYTHON_NAMES)
    prompting = set(PROMPTING_NAMES)
    for number, kind, source in cells:
        if kind != "code":
            continue
        lines, notes = _convert_cell(number, source, dropped, prompting)
        converted.set_aside.extend(notes)
        out.append(f"# %% [cell {number}]")
        converted.cell_lines.append((number, len(out) + 1, len(lines)))
        out.extend(lines)
        out.append("")
    converted.source = "\n".join(out).rstrip("\n") + "\n" if out else ""
    return converted


def _comment(line: str) -> str:
    return f"# {line}" if line.strip() else line


def _convert_cell(number: int, source: str, dropped: set[str], prompting: set[str]
                  ) -> tuple[list[str], list[SetAside]]:
    """The cell's lines with what is set aside commented out, and the notes saying why.
    ``dropped``: names bound only by set-aside code; ``prompting``: names whose call asks
    for input (``input`` and the notebook's functions that call it). Both grow as the
    cells are read in order."""
    lines = source.split("\n")
    notes: list[SetAside] = []
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("%%"):
        notes.append(SetAside(number, 1, first.strip(), "a cell magic runs only in Jupyter"))
        return [_comment(line) for line in lines], notes
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    if tree is None:
        patched = list(lines)
        magic = [i for i, line in enumerate(lines) if _MAGIC_LINE.search(line)]
        for i in magic:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            patched[i] = f"{indent}pass  # {lines[i].strip()}" if indent else _comment(lines[i])
        try:
            tree = ast.parse("\n".join(patched))
        except SyntaxError:
            return lines, notes  # the static check reports it, as for a .py file
        lines = patched
        notes.extend(SetAside(number, i + 1, lines[i].split("# ", 1)[-1].strip(),
                              "IPython syntax (magic, shell or help) runs only in Jupyter")
                     for i in magic)
    commented: set[int] = set()
    for group in _line_groups(tree.body):
        reason, uses = next(((r, u) for r, u in (_why_set_aside_using(stmt, dropped, prompting)
                                                 for stmt in group) if r), (None, None))
        if reason is None:
            for stmt in group:
                dropped.difference_update(_bound_names(stmt))
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and _calls(
                        stmt.body, prompting):
                    prompting.add(stmt.name)
            continue
        names: list[str] = []
        for stmt in group:
            bound = _bound_names(stmt)
            dropped.update(bound)
            names.extend(sorted(bound))
            start, end = _first_line(stmt), stmt.end_lineno or stmt.lineno
            commented.update(range(start, end + 1))
        head = _first_line(group[0])
        notes.append(SetAside(number, head, lines[head - 1].strip(), reason, tuple(names),
                              uses))
    return [_comment(line) if i + 1 in commented else line
            for i, line in enumerate(lines)], notes


def _line_groups(body: list[ast.stmt]) -> list[list[ast.stmt]]:
    """Top-level statements grouped so that statements sharing a line stay together."""
    groups: list[list[ast.stmt]] = []
    last_line = 0
    for stmt in body:
        start = _first_line(stmt)
        if groups and start <= last_line:
            groups[-1].append(stmt)
        else:
            groups.append([stmt])
        last_line = max(last_line, stmt.end_lineno or stmt.lineno)
    return groups


def _first_line(stmt: ast.stmt) -> int:
    """The first line of a top-level statement: its first decorator's, if it has any."""
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])


def _why_set_aside_using(stmt: ast.stmt, dropped: set[str], prompting: set[str]
                         ) -> tuple[str | None, str | None]:
    """``_why_set_aside`` and, when the reason is a set-aside name it reads, that name."""
    reason = _why_set_aside(stmt, dropped, prompting)
    used = sorted(_names_read_on_definition(stmt) & dropped)
    if reason is None or not used or reason != _uses_reason(used[0]):
        return reason, None
    return reason, used[0]


def _is_main_guard(stmt: ast.stmt) -> bool:
    test = getattr(stmt, "test", None)
    return (isinstance(stmt, ast.If) and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name) and test.left.id == "__name__")


def _why_set_aside(stmt: ast.stmt, dropped: set[str], prompting: set[str] = frozenset()
                   ) -> str | None:
    """The reason to leave ``stmt`` out of the module, or None to keep it."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return None  # a docstring or a bare literal: harmless
    if not isinstance(stmt, _KEPT):
        return "only displays or tests: not part of the graded module"
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        modules = ([alias.name for alias in stmt.names] if isinstance(stmt, ast.Import)
                   else [stmt.module or ""])
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            return None  # the static check rejects relative imports with a clear message
        banned = [m for m in modules if not is_allowed_module(m)]
        if banned:
            return f"import of '{banned[0]}', which a submission may not use"
        return None
    if _is_main_guard(stmt):
        return None  # never runs when the grader imports the module
    asks = _calls(_run_on_definition(stmt), prompting)
    if asks:
        return (f"calls {asks}(), which waits for keyboard input: there is no one to answer "
                "it while grading")
    used = _names_read_on_definition(stmt) & dropped
    if used:
        return _uses_reason(sorted(used)[0])
    return None


def _uses_reason(name: str) -> str:
    return f"uses '{name}', which is not part of the graded module"


#: Builtins that wait for keyboard input (statements calling them are set aside).
PROMPTING_NAMES = frozenset({"input"})


def _calls(parts: list[ast.AST], names: set[str]) -> str | None:
    """The first of ``names`` that ``parts`` call by name (``input(...)``), else None."""
    for part in parts:
        for node in ast.walk(part):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                    node.func.id in names):
                return node.func.id
    return None


def _run_on_definition(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a top-level statement that run when the module is imported: for a
    ``def``, its decorators, defaults and annotations, not its body; for any other
    statement its expressions, and those of the statements it holds, by the same rule
    (a class body runs, its methods' bodies do not)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        args = stmt.args
        parts: list[ast.AST] = [*stmt.decorator_list, *args.defaults,
                                *(d for d in args.kw_defaults if d is not None)]
        annotated = [*args.posonlyargs, *args.args, *args.kwonlyargs,
                     *(a for a in (args.vararg, args.kwarg) if a is not None)]
        parts += [a.annotation for a in annotated if a.annotation is not None]
        if stmt.returns is not None:
            parts.append(stmt.returns)
        return parts
    return _run_parts(stmt)


def _run_parts(node: ast.AST) -> list[ast.AST]:
    """The expressions of ``node``'s fields, nested statements by ``_run_on_definition``."""
    parts: list[ast.AST] = []
    for _, value in ast.iter_fields(node):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.stmt):
                parts += _run_on_definition(item)
            elif isinstance(item, ast.excepthandler | ast.match_case):
                parts += _run_parts(item)
            elif isinstance(item, ast.AST):
                parts.append(item)
    return parts


def _names_read_on_definition(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement reads when the module is imported."""
    parts = _run_on_definition(stmt)
    return {node.id for part in parts for node in ast.walk(part)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _bound_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module namespace."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in stmt.names}
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        targets = [stmt.target]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    return {node.id for target in targets for node in ast.walk(target)
            if isinstance(node, ast.Name)}
