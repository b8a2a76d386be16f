"""Static check of a submission's source before any of it runs.

student-api.md fixes what a submission may import: numpy, math, functools,
itertools, dataclasses, typing and ``pallas_sim``'s public names (plus
``__future__``, which only changes how the file compiles). Every ``import``
and ``from ... import`` anywhere in the file (module level or inside a
function) is checked; relative imports are rejected because a submission is a
single file. The check never raises on bad source: a file that cannot be read
or parsed becomes a problem in the result, with line, column and the line.

Imports written as statements are not the only way to reach a module, so the
check also refuses the usual ways around it (docs/security.md, "Static
check"): the builtins that import, run strings or reach namespaces
(``__import__``, ``exec``, ``eval``, ``compile``, ``globals``, ``locals``,
``vars``, ``open``, ``input``, ``breakpoint``); ``getattr``/``setattr``/
``delattr`` unless called with a literal, harmless attribute name (and never
``setattr``/``delattr`` on an imported module); attributes with double
underscores (``__globals__``, ``__subclasses__``, ``__builtins__``, ...)
other than a few harmless ones; attributes that are modules of the standard
library reachable through an allowed one (``dataclasses.sys``,
``typing.types``, ``np.ctypeslib``); and assigning to or deleting an
attribute of an imported module (monkeypatching ``np.allclose`` or
``pl.pallas_call``). This is a first filter that names the line; the
operating-system sandbox (``graders.worker.sandbox``) is what holds when a
submission finds a way around it.
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

#: Builtins that import modules, run code from strings or expose namespaces or files.
FORBIDDEN_BUILTINS = frozenset({
    "__import__", "__builtins__", "exec", "eval", "compile", "globals", "locals", "vars",
    "open", "input", "breakpoint", "memoryview",
})
#: Builtins allowed only as a direct call with a literal, harmless attribute name.
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
#: Double-underscore names a submission may use (defining dunder methods is always allowed).
ALLOWED_DUNDERS = frozenset({
    "__name__", "__doc__", "__init__", "__post_init__", "__call__", "__len__", "__repr__",
    "__str__", "__eq__", "__hash__", "__iter__", "__getitem__", "__setitem__", "__contains__",
    "__all__", "__slots__", "__future__", "__annotations__", "__array__", "__version__",
    "__add__", "__mul__", "__sub__", "__truediv__", "__neg__",
})
#: Attribute names that are modules reachable through an allowed module
#: (``dataclasses.sys``, ``typing.types``, ``np.ctypeslib``, ``np.f2py``, ...).
FORBIDDEN_ATTRIBUTES = frozenset({
    "sys", "os", "builtins", "types", "inspect", "importlib", "ctypes", "ctypeslib",
    "subprocess", "socket", "gc", "posix", "shutil", "signal", "resource", "f2py",
    "distutils", "copyreg", "pickle", "marshal", "threading", "multiprocessing", "io",
})


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
        return not any(part.startswith("_") or part in PALLAS_SIM_INTERNALS
                       for part in parts[1:])
    return True


def _reject(node: ast.stmt, what: str) -> StaticProblem:
    return StaticProblem(
        node.lineno,
        node.col_offset + 1,
        f"line {node.lineno}: {what} is not allowed (allowed: {_ALLOWED_TEXT})",
    )


def _refuse(node: ast.AST, what: str, why: str) -> StaticProblem:
    line = getattr(node, "lineno", 0)
    column = getattr(node, "col_offset", -1) + 1
    return StaticProblem(line, column, f"line {line}: {what} is not allowed ({why})")


#: pallas_sim's internal modules: their objects (the active traces, the recorder, the
#: kernel context) are the grader's evidence and are reachable only through these names.
PALLAS_SIM_INTERNALS = frozenset({
    "tracing", "context", "memory", "refs", "specs", "dtypes", "dma", "grid_order",
    "backends", "errors", "record",
})
#: Underscore names that are public API by convention (NamedTuple's methods).
ALLOWED_PRIVATE = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})


def _forbidden_attribute(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    private = name.startswith("_") and not dunder and name not in ALLOWED_PRIVATE
    return ((dunder and name not in ALLOWED_DUNDERS) or name in FORBIDDEN_ATTRIBUTES
            or name in PALLAS_SIM_INTERNALS or (private and name != "_"))


def _own_private_attributes(tree: ast.AST) -> set[int]:
    """ids of ``self._x`` nodes inside a class's methods, where ``self`` is the method's
    first parameter and is never rebound: a class may keep private state of its own."""
    allowed: set[int] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            rebound = any(isinstance(n, ast.Name) and n.id == me and
                          isinstance(n.ctx, ast.Store | ast.Del) for n in ast.walk(fn))
            if rebound:
                continue
            for n in ast.walk(fn):
                if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                        and n.value.id == me and n.attr.startswith("_")
                        and not n.attr.startswith("__")):
                    allowed.add(id(n))
    return allowed


def _module_names(tree: ast.AST) -> set[str]:
    """Names bound to imported modules (or their members) by import statements."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dynamic_problems(tree: ast.AST) -> list[StaticProblem]:
    """Refusals of dynamic imports, string execution, dunder access and monkeypatching."""
    problems: list[StaticProblem] = []
    modules = _module_names(tree)
    own_private = _own_private_attributes(tree)
    direct_calls: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ATTRIBUTE_BUILTINS:
            continue
        direct_calls.add(id(node.func))
        name_arg = node.args[1] if len(node.args) > 1 else None
        literal = isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str)
        if not literal:
            problems.append(_refuse(node, f"'{node.func.id}' with a computed attribute name",
                                    "name the attribute in the code"))
        elif _forbidden_attribute(name_arg.value):
            problems.append(_refuse(node, f"'{node.func.id}' of '{name_arg.value}'",
                                    "it reaches the interpreter's internals"))
        elif node.func.id in ("setattr", "delattr") and node.args and \
                _root_name(node.args[0]) in modules:
            problems.append(_refuse(node, f"'{node.func.id}' on the imported module "
                                    f"'{_root_name(node.args[0])}'",
                                    "monkeypatching changes only your own process"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id in FORBIDDEN_BUILTINS:
                problems.append(_refuse(node, f"use of '{node.id}'",
                                        "it imports, runs strings or opens files"))
            elif node.id in ATTRIBUTE_BUILTINS and id(node) not in direct_calls:
                problems.append(_refuse(node, f"'{node.id}' used as a value",
                                        "call it directly with a literal attribute name"))
        elif isinstance(node, ast.Attribute):
            if id(node) in own_private:
                continue
            if node.attr in PALLAS_SIM_INTERNALS:
                problems.append(_refuse(node, f"access to '.{node.attr}'",
                                        "it is pallas_sim's internals, not its public API"))
            elif _forbidden_attribute(node.attr):
                problems.append(_refuse(node, f"access to '.{node.attr}'",
                                        "it reaches the interpreter's internals or private "
                                        "state"))
            elif isinstance(node.ctx, ast.Store | ast.Del) and _root_name(node) in modules:
                problems.append(_refuse(
                    node, f"assigning to or deleting '{ast.unparse(node)}'",
                    "monkeypatching an imported module changes only your own process"))
    return problems


def _import_problems(tree: ast.AST) -> list[StaticProblem]:
    problems: list[StaticProblem] = _dynamic_problems(tree)
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
            elif node.module.split(".")[0] == "pallas_sim":
                for alias in node.names:
                    if alias.name.startswith("_") or alias.name in PALLAS_SIM_INTERNALS:
                        problems.append(
                            _reject(node, f"import of pallas_sim's internal name "
                                          f"'{node.module}.{alias.name}'")
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
    caret) or one entry per forbidden import or construct, sorted by line,
    e.g. ``line L: import of 'os' is not allowed (allowed: numpy, math, ...)``
    or ``line L: use of 'exec' is not allowed (it imports, runs strings or
    opens files)``.
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
