"""The compile-time half of the submission policy: RestrictedPython with this project's rules.

``compile_submission(source, filename)`` parses a submission, checks it
against :mod:`.rules` and rewrites it with RestrictedPython's
``RestrictingNodeTransformer`` so that every attribute read, attribute or
item store, iteration and import goes through a guard of :mod:`.guards`.
It returns the code object and a list of :class:`Problem` (line, column,
student-facing message); a submission with problems is not run.

Where this policy departs from RestrictedPython's default one, it is to
accept ordinary kernel code, never to let more reach the interpreter:

* names may start with an underscore (``_x``, ``_init``), but never take the
  form of a guard (``_getattr_``, ``_write_``: leading and trailing
  underscore) or a double-underscore name other than ``__name__`` and a few
  harmless ones;
* augmented assignment to items and attributes (``acc_ref[...] += x``, the
  heart of a Pallas kernel) is allowed: it becomes a guarded read, the
  operator and a guarded store, each operand evaluated once;
* annotated assignments and ``nonlocal`` are allowed;
* ``print`` is Python's own (the worker captures what it prints);
* class definitions keep their own metaclass rules (no ``__metaclass__``);
* item stores use their own guard, ``_write_item_``, so that writing into an
  array or a ref does not also allow setting its attributes.

What the default policy refuses stays refused (``exec``, ``eval``, async
code, ``except*``, ``match``), and the module allowlists of :mod:`.rules`
are checked here too, so that ``np.lib`` or ``from typing import
get_type_hints`` is reported with its line before anything runs.
"""

from __future__ import annotations

import ast
import importlib
import io
import tokenize
import types
from dataclasses import dataclass

from RestrictedPython.transformer import (
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
    copy_locations,
)

from . import rules


@dataclass(frozen=True)
class Problem:
    """One reason a submission is refused: 1-based ``line`` (0 when unknown), 1-based
    ``column`` (0 when unknown) and a student-facing ``message`` that names the line."""

    line: int
    column: int
    message: str


@dataclass(frozen=True)
class CompiledSubmission:
    """``code`` (None when there are problems) and the ``problems`` found, sorted by line."""

    code: types.CodeType | None
    problems: tuple[Problem, ...]


# -- the allowlists, resolved against the real modules -------------------------------------------

_NAMES_CACHE: dict[str, frozenset[str] | None] = {}


def allowed_names(module: str) -> frozenset[str] | None:
    """The names a submission may use from ``module`` (dotted), or None when the module
    itself is not allowed.

    numpy and its allowed submodules, math, functools, itertools, dataclasses,
    typing, warnings and ``__future__`` come from :mod:`.rules`; pallas_sim's
    public modules allow their ``__all__``.
    """
    if module in _NAMES_CACHE:
        return _NAMES_CACHE[module]
    names: frozenset[str] | None
    if module == "numpy":
        names = rules.NUMPY_NAMES
    elif module in rules.NUMPY_SUBMODULES:
        names = rules.NUMPY_SUBMODULES[module]
    elif module == "math":
        import math
        names = frozenset(n for n in dir(math) if not n.startswith("_"))
    elif module == "functools":
        names = rules.FUNCTOOLS_NAMES
    elif module == "itertools":
        names = rules.ITERTOOLS_NAMES
    elif module == "dataclasses":
        names = rules.DATACLASSES_NAMES
    elif module == "typing":
        names = rules.TYPING_NAMES
    elif module == "warnings":
        names = rules.WARNINGS_NAMES
    elif module == "__future__":
        names = rules.FUTURE_NAMES
    elif module in rules.PALLAS_SIM_MODULES:
        names = frozenset(getattr(importlib.import_module(module), "__all__", ()))
    else:
        names = None
    _NAMES_CACHE[module] = names
    return names


def _trusted_reason(module: str) -> str | None:
    """The reason given when ``module`` is pallas_sim's trusted surface (``pallas_sim.extend``,
    refused naming what it is); None otherwise, where the message stays as it was."""
    reason = rules.refusal_reason(module)
    return reason if reason == rules.TRUSTED_REASON else None


def is_allowed_module(module: str) -> bool:
    """True when ``module`` (dotted, absolute) may be imported by a submission."""
    return allowed_names(module) is not None


def _submodule(module: str, name: str) -> str | None:
    """``module.name`` when that is itself an allowed module (``numpy`` + ``linalg``,
    ``pallas_sim`` + ``pl``, ``pallas_sim.jax`` + ``numpy`` → ``pallas_sim.jnp``)."""
    dotted = f"{module}.{name}"
    if is_allowed_module(dotted):
        return dotted
    if module.startswith("pallas_sim"):
        value = getattr(importlib.import_module(module), name, None)
        if isinstance(value, types.ModuleType) and is_allowed_module(value.__name__):
            return value.__name__
    return None


_ALLOWED_TEXT = ", ".join(rules.ALLOWED_TOP_LEVEL)


def _is_guard_name(name: str) -> bool:
    """Names of the form RestrictedPython gives its guards (``_getattr_``, ``_write_``)."""
    return len(name) > 2 and name[0] == "_" and name[-1] == "_" and not name.startswith("__")


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


# -- the transformer ------------------------------------------------------------------------------


class SubmissionTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer with this project's rules (see the module docstring).

    ``problems`` collects a :class:`Problem` per refusal; ``modules`` maps the
    names bound by import statements to the allowed module they name.
    """

    def __init__(self, modules: dict[str, str], own_private: set[int]) -> None:
        super().__init__()
        self.problems: list[Problem] = []
        self.modules = modules
        self.own_private = own_private
        self._class_depth = 0
        self._aug_index = 0

    # errors ---------------------------------------------------------------------------------

    def error(self, node: ast.AST, info: str) -> None:  # RestrictedPython's hook
        """RestrictedPython's error hook: record ``info`` as a problem at ``node``'s line."""
        line = getattr(node, "lineno", 0) or 0
        column = getattr(node, "col_offset", -1) + 1
        self.problems.append(Problem(line, column, f"line {line}: {info}"))

    def refuse(self, node: ast.AST, what: str, why: str) -> None:
        """Record ``line N: <what> is not allowed (<why>)``."""
        self.error(node, f"{what} is not allowed ({why})")

    # names ----------------------------------------------------------------------------------

    def check_name(self, node: ast.AST, name: str | None,
                   allow_magic_methods: bool = False) -> None:
        """Refuse a name the policy forbids (exec, dunder names, the guards' names)."""
        if name is None or name == "_":
            return
        if name in rules.FORBIDDEN_NAMES:
            self.refuse(node, f"use of '{name}'", "it imports, runs strings or reaches the "
                        "interpreter's internals")
        elif _is_guard_name(name):
            self.refuse(node, f"the name '{name}'", "names of the form _x_ belong to the "
                        "grader's guards")
        elif _is_dunder(name) and not allow_magic_methods:
            self.refuse(node, f"the name '{name}'", "double-underscore names are the "
                        "interpreter's")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        """Refuse a forbidden name read or bound (a few dunder names may be read or set)."""
        name = node.id
        if isinstance(node.ctx, ast.Load) and name in rules.READABLE_DUNDER_NAMES:
            return node
        if isinstance(node.ctx, ast.Store) and name in rules.ASSIGNABLE_DUNDER_NAMES:
            return node
        self.check_name(node, name)
        return node

    def visit_Global(self, node: ast.Global) -> ast.AST:
        """Check the names a ``global`` statement binds."""
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        """Check the names a ``nonlocal`` statement binds."""
        for name in node.names:
            self.check_name(node, name)
        return node

    # definitions ----------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        """Check a function's name (dunder methods only in a class) and argument names."""
        in_class = self._class_depth > 0
        self.check_name(node, node.name, allow_magic_methods=in_class)
        self.check_function_argument_names(node)
        depth, self._class_depth = self._class_depth, 0
        try:
            return self.node_contents_visit(node)
        finally:
            self._class_depth = depth

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        """Check a lambda's arguments."""
        self.check_function_argument_names(node)
        return self.node_contents_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        """Check a class's name and refuse a metaclass."""
        self.check_name(node, node.name)
        if any(keyword.arg == "metaclass" for keyword in node.keywords):
            self.refuse(node, "a metaclass", "a class of the submission uses Python's own")
        self._class_depth += 1
        try:
            return self.node_contents_visit(node)
        finally:
            self._class_depth -= 1

    # imports --------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> ast.AST:
        """``import X``: only allowed modules, under names the policy allows."""
        for alias in node.names:
            if not is_allowed_module(alias.name):
                why = _trusted_reason(alias.name) or f"allowed: {_ALLOWED_TEXT}"
                self.error(node, f"import of '{alias.name}' is not allowed ({why})")
            if alias.asname:
                self.check_name(node, alias.asname)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        """``from X import Y``: no relative imports, only the names X offers a submission."""
        if node.level:
            dots = "." * node.level
            self.error(node, f"relative import 'from {dots}{node.module or ''}' is not allowed "
                             "(a submission is a single file)")
            return node
        module = node.module or ""
        names = allowed_names(module)
        if names is None:
            why = _trusted_reason(module) or f"allowed: {_ALLOWED_TEXT}"
            self.error(node, f"import of '{module}' is not allowed ({why})")
            return node
        for alias in node.names:
            if alias.name == "*":
                self.refuse(node, f"'from {module} import *'", "import the names you use")
            elif alias.name not in names and _submodule(module, alias.name) is None:
                why = (_trusted_reason(f"{module}.{alias.name}") or rules.INTERNALS_REASON
                       if module.startswith("pallas_sim") else
                       f"it is not among the names of {module} a submission may use")
                self.error(node, f"import of '{module}.{alias.name}' is not allowed ({why})")
            if alias.asname:
                self.check_name(node, alias.asname)
        return node

    # attributes and items -------------------------------------------------------------------

    def _module_of(self, node: ast.expr) -> str | None:
        """The allowed module an expression names (``np``, ``np.random``, ``jax.numpy``)."""
        if isinstance(node, ast.Name):
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self._module_of(node.value)
            if parent is not None:
                return _submodule(parent, node.attr)
        return None

    def check_attribute(self, node: ast.Attribute) -> None:
        """The compile-time attribute rules: introspection attributes, double-underscore
        attributes, and names an allowed module does not offer (read) or any name of
        an imported module (write: monkeypatching)."""
        attr = node.attr
        module = self._module_of(node.value)
        if attr in rules.INTROSPECTION_ATTRIBUTES:
            self.refuse(node, f"access to '.{attr}'", "it reaches the interpreter's frames "
                        "and code")
        elif _is_dunder(attr) and attr not in rules.ALLOWED_DUNDER_ATTRIBUTES:
            self.refuse(node, f"access to '.{attr}'", "it reaches the interpreter's internals")
        elif (attr.startswith("_") and not _is_dunder(attr) and attr != "_"
              and attr not in rules.NAMEDTUPLE_PRIVATE and id(node) not in self.own_private):
            self.refuse(node, f"access to '.{attr}'", "it is private state; a class may keep "
                        "its own as self._x")
        elif module is not None:
            self._check_module_attribute(node, module)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        """Apply the attribute rules, then rewrite a read as ``_getattr_(obj, name)``."""
        self.check_attribute(node)
        attr = node.attr
        node = self.node_contents_visit(node)
        if isinstance(node.ctx, ast.Load):
            new = ast.Call(func=ast.Name("_getattr_", ast.Load()),
                           args=[node.value, ast.Constant(attr)], keywords=[])
            copy_locations(new, node)
            return new
        node.value = self._wrap("_write_", node.value, node)
        return node

    def _check_module_attribute(self, node: ast.Attribute, module: str) -> None:
        """Writes to a module are refused here; so are reads of its private names and of
        pallas_sim's internal modules. A public name a submission may not use (``np.save``)
        or that does not exist (a typo) is left to the run-time guard, which fails only
        the call that reaches it."""
        attr = node.attr
        if not isinstance(node.ctx, ast.Load):
            self.refuse(node, f"assigning to or deleting '{ast.unparse(node)}'",
                        "monkeypatching an imported module")
            return
        names = allowed_names(module) or frozenset()
        if attr in names or attr in rules.HARMLESS_DUNDER_ATTRIBUTES:
            return
        if _submodule(module, attr) is not None:
            return
        if module.startswith("pallas_sim") and (hasattr(importlib.import_module(module), attr)
                                                or attr in rules.PALLAS_SIM_INTERNAL_NAMES):
            self.refuse(node, f"access to '.{attr}'",
                        _trusted_reason(f"{module}.{attr}") or rules.INTERNALS_REASON)

    def _wrap(self, guard: str, value: ast.expr, where: ast.AST) -> ast.Call:
        call = ast.Call(func=ast.Name(guard, ast.Load()), args=[value], keywords=[])
        copy_locations(call, where)
        return call

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        """Rewrite an item read as ``_getitem_(obj, key)``, a store through ``_write_item_``."""
        node = self.node_contents_visit(node)
        if isinstance(node.ctx, ast.Load):
            new = ast.Call(func=ast.Name("_getitem_", ast.Load()),
                           args=[node.value, node.slice], keywords=[])
            copy_locations(new, node)
            return new
        node.value = self._wrap("_write_item_", node.value, node)
        return node

    # statements -----------------------------------------------------------------------------

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        """Visit an annotated assignment's parts under the same rules as any other code."""
        return self.node_contents_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | list[ast.AST]:
        """Rewrite ``obj.attr += v`` (and subscripts) through the read and write guards."""
        target = node.target
        if isinstance(target, ast.Name):
            return super().visit_AugAssign(node)
        operator = IOPERATOR_TO_STR[type(node.op)]
        value = self.visit(node.value)
        statements: list[ast.stmt] = []

        def temporary(expr: ast.expr) -> ast.Name:
            name = f"_aug{self._aug_index}_"
            self._aug_index += 1
            statements.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=expr))
            return ast.Name(name, ast.Load())

        if isinstance(target, ast.Subscript):
            if self._module_of(target.value) is not None:
                self.refuse(target, f"assigning to '{ast.unparse(target)}'",
                            "monkeypatching an imported module")
            obj = temporary(self.visit(target.value))
            key = temporary(self.visit(target.slice))
            current = ast.Call(func=ast.Name("_getitem_", ast.Load()), args=[obj, key],
                               keywords=[])
            store: ast.expr = ast.Subscript(
                value=ast.Call(func=ast.Name("_write_item_", ast.Load()), args=[obj],
                               keywords=[]),
                slice=key, ctx=ast.Store())
        else:
            assert isinstance(target, ast.Attribute)
            self.check_attribute(target)  # Store context: refuses writes to modules
            obj = temporary(self.visit(target.value))
            current = ast.Call(func=ast.Name("_getattr_", ast.Load()),
                               args=[obj, ast.Constant(target.attr)], keywords=[])
            store = ast.Attribute(
                value=ast.Call(func=ast.Name("_write_", ast.Load()), args=[obj], keywords=[]),
                attr=target.attr, ctx=ast.Store())
        new_value = ast.Call(func=ast.Name("_inplacevar_", ast.Load()),
                             args=[ast.Constant(operator), current, value], keywords=[])
        statements.append(ast.Assign(targets=[store], value=new_value))
        for statement in statements:
            copy_locations(statement, node)
        return statements

    def visit_Match(self, node: ast.AST) -> ast.AST:
        """Refuse ``match``: its class patterns read attributes unguarded."""
        self.refuse(node, "the match statement", "its class patterns read attributes "
                    "without the grader's guard; use if/elif")
        return node


def _own_private_attributes(tree: ast.AST) -> set[int]:
    """ids of ``self._x`` nodes inside a class's methods, where ``self`` is the method's
    first parameter and is never rebound: a class may keep private state of its own
    (the run-time guard then checks that the object really is the submission's)."""
    allowed: set[int] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            if any(isinstance(n, ast.Name) and n.id == me and isinstance(n.ctx, ast.Store | ast.Del)
                   for n in ast.walk(fn)):
                continue
            for n in ast.walk(fn):
                if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                        and n.value.id == me and n.attr.startswith("_")):
                    allowed.add(id(n))
    return allowed


def _import_bindings(tree: ast.AST) -> dict[str, str]:
    """Names bound to allowed modules by import statements, unless rebound elsewhere."""
    modules: dict[str, str] = {}
    rebound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    if is_allowed_module(alias.name):
                        modules[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    if is_allowed_module(top):
                        modules[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if not is_allowed_module(node.module):
                continue
            for alias in node.names:
                sub = _submodule(node.module, alias.name)
                if sub is not None:
                    modules[alias.asname or alias.name] = sub
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            rebound.add(node.id)
        elif isinstance(node, ast.arg):
            rebound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            rebound.add(node.name)
    return {name: module for name, module in modules.items() if name not in rebound}


def syntax_problem(exc: SyntaxError, source: str) -> Problem:
    """A ``SyntaxError`` as a Problem: ``line L, column C: SyntaxError: msg`` then the line
    and a caret under the column."""
    line = exc.lineno or 0
    column = exc.offset or 0
    text = exc.text
    if text is None and 0 < line <= len(source.splitlines()):
        text = source.splitlines()[line - 1]
    where = f"line {line}, column {column}: " if line else ""
    message = f"{where}{type(exc).__name__}: {exc.msg}"
    if text:
        raw = text.rstrip("\r\n")
        stripped = raw.lstrip()
        indent = len(raw) - len(stripped)
        message += f"\n    {stripped}"
        if indent < column <= len(raw) + 1:
            message += "\n    " + " " * (column - 1 - indent) + "^"
    return Problem(line, column, message)


def decode_source(data: bytes) -> str:
    """Decode Python source bytes the way the interpreter does (coding cookie, BOM, UTF-8).

    Raises ``SyntaxError`` for an unknown coding and ``UnicodeDecodeError`` for bad bytes.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def compile_submission(source: str, filename: str) -> CompiledSubmission:
    """Check and compile a submission's source under the policy; never raises.

    Returns the module's code object (compiled from the transformed tree, with
    ``filename`` in every frame) or, when the source is refused, no code and
    the problems sorted by line: a single syntax error, or one entry per
    refused import, name or attribute.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        return CompiledSubmission(None, (syntax_problem(exc, source),))
    except (ValueError, MemoryError, RecursionError) as exc:
        return CompiledSubmission(None, (Problem(0, 0, f"cannot parse the file: {exc}"),))
    transformer = SubmissionTransformer(_import_bindings(tree), _own_private_attributes(tree))
    try:
        tree = transformer.visit(tree)
    except RecursionError:
        return CompiledSubmission(None, (Problem(0, 0, "the file is nested too deeply"),))
    problems = tuple(sorted(dict.fromkeys(transformer.problems),
                            key=lambda p: (p.line, p.column)))
    if problems:
        return CompiledSubmission(None, problems)
    ast.fix_missing_locations(tree)
    try:
        code = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        problem = (syntax_problem(exc, source) if isinstance(exc, SyntaxError)
                   else Problem(0, 0, f"cannot compile the file: {exc}"))
        return CompiledSubmission(None, (problem,))
    return CompiledSubmission(code, ())
