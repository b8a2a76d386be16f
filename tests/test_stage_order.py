"""graders/ by stage, its dependencies pointing one way (docs/architecture.md, "Stages").

Each stage is a package of graders/; the lab packages (``graders/labs/``) sit on top:
their checks use every stage. An import, at module level or inside a function, from a stage to
one listed after it fails this test, as does a module left at the top of graders/.
"""

from __future__ import annotations

import ast
from pathlib import Path

GRADERS = Path(__file__).resolve().parents[1] / "graders"

#: Bottom first: a stage may import only the stages before it.
ORDER = (
    "safety", "course", "worker", "harnesses", "checking", "fidelity", "student",
    "grading", "reports", "batch", "release", "integrations", "cli", "labs",
)


def _stage(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "graders" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from graders.course import catalog`` names the stage
            found.extend([node.module, *(f"{node.module}.{a.name}" for a in node.names
                                         if node.module.count(".") < 2)])
    return found


def _module(path: Path) -> str:
    parts = path.relative_to(GRADERS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_is_left_at_the_top_of_graders() -> None:
    assert sorted(p.name for p in GRADERS.glob("*.py")) == ["__init__.py"]


def test_every_package_of_graders_is_a_stage() -> None:
    packages = {p.parent.name for p in GRADERS.glob("*/__init__.py")}
    assert packages == set(ORDER)


def test_stages_import_only_the_stages_below_them() -> None:
    rank = {stage: i for i, stage in enumerate(ORDER)}
    upward = []
    for path in sorted(GRADERS.rglob("*.py")):
        own = _stage(_module(path))
        for name in _imports(path):
            target = _stage(name)
            if own is None or target is None or target == own:
                continue
            if rank[target] > rank[own]:
                upward.append(f"{path.relative_to(GRADERS.parent)} imports {name} "
                              f"({own} -> {target})")
    assert upward == []
