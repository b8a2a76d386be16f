"""pallas_sim is laid out as JAX is: the public modules re-export, ``pallas_sim/_src`` implements.

Read from the source files' syntax trees, without importing pallas_sim: every import
counts, at module level or inside a function. The rules:

* no import circle among pallas_sim's modules;
* no module under ``pallas_sim/_src`` imports a module outside it (a public module, the
  package itself, ``extend``);
* a public module at the top of the package (``pallas_sim/pl.py``, ``lax.py``, ...) defines
  no function or class of its own: it imports names from ``_src`` and lists them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pallas_sim

PACKAGE = Path(pallas_sim.__file__).resolve().parent
INTERNALS = "pallas_sim._src"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of pallas_sim by dotted name: its file and whether it is a package."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The pallas_sim modules one import statement imports (``from . import lax`` imports
    ``pallas_sim.lax``; ``from .values import lift`` imports ``pallas_sim._src.values``)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in MODULES}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    submodules = {f"{origin}.{alias.name}" for alias in node.names} & MODULES.keys()
    if len(submodules) < len(node.names) and origin in MODULES:
        submodules.add(origin)
    return submodules


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module, (path, is_package) in MODULES.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _targets(module, is_package, node)
        graph[module] = edges - {module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _public_modules() -> list[str]:
    return sorted(m for m, (path, _) in MODULES.items()
                  if path.parent == PACKAGE and not path.name.startswith("_"))


def test_the_graph_sees_both_kinds_of_import() -> None:
    graph = _graph()
    assert "pallas_sim._src.values" in graph["pallas_sim._src.refs"]  # module level
    assert "pallas_sim._src.lax_elementwise" in graph["pallas_sim._src.pallas_call"]  # in cdiv
    assert {"pallas_sim.lax", "pallas_sim.jnp"} <= graph["pallas_sim.jax"]  # from . import


def test_no_import_circle_in_pallas_sim() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_src_imports_no_public_module() -> None:
    outside = sorted((module, target) for module, targets in _graph().items()
                     if module.startswith(INTERNALS) for target in targets
                     if not target.startswith(INTERNALS))
    assert outside == []


def test_public_modules_only_re_export() -> None:
    assert {"pallas_sim.jax", "pallas_sim.jnp", "pallas_sim.lax", "pallas_sim.pl"} <= set(
        _public_modules())
    own = []
    for module in _public_modules():
        tree = ast.parse(MODULES[module][0].read_text(encoding="utf-8"))
        own += [f"{module}.{node.name}" for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    assert own == []
