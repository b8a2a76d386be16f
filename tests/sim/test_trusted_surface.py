"""Trusted code reaches the simulator's internals through one named surface,
``pallas_sim.extend`` (as JAX has ``jax.extend``): no module in graders/, reference/ or
bench/ imports ``pallas_sim._src`` or an underscored pallas_sim name directly."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pallas_sim.extend

ROOT = Path(__file__).resolve().parents[2]
TRUSTED_FOLDERS = ("graders", "reference", "bench")


def _private(dotted: str) -> bool:
    """True when a part of the dotted name (below ``pallas_sim``) has a leading underscore."""
    return any(part.startswith("_") for part in dotted.split(".")[1:])


def internal_imports(path: Path) -> list[str]:
    """``line N: <import>`` for each import in ``path`` of pallas_sim's internals: a module
    under ``pallas_sim._src`` (or any underscored module) or an underscored name of a
    pallas_sim module (what it is bound to locally does not matter)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names
                     if alias.name.split(".")[0] == "pallas_sim" and _private(alias.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and (
                node.module.split(".")[0] == "pallas_sim"):
            names = ([node.module] if _private(node.module) else
                     [f"{node.module}.{alias.name}" for alias in node.names
                      if alias.name.startswith("_")])
        else:
            continue
        found += [f"line {node.lineno}: {name}" for name in names]
    return found


def trusted_modules() -> list[Path]:
    return sorted(path for folder in TRUSTED_FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_the_trusted_folders_have_modules() -> None:
    assert len(trusted_modules()) > 20


@pytest.mark.parametrize("folder", TRUSTED_FOLDERS)
def test_trusted_code_imports_no_internal_pallas_sim_name(folder: str) -> None:
    offenders = {str(path.relative_to(ROOT)): found
                 for path in sorted((ROOT / folder).rglob("*.py"))
                 if (found := internal_imports(path))}
    assert not offenders, f"import these through pallas_sim.extend instead: {offenders}"


def test_the_finder_sees_an_internal_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import pallas_sim._src.tracing\nfrom pallas_sim._src import config\n"
                      "from pallas_sim.jax import _private\nfrom pallas_sim import pl as _pl\n"
                      "from pallas_sim.extend import sim_options\n", encoding="utf-8")
    assert internal_imports(module) == ["line 1: pallas_sim._src.tracing",
                                        "line 2: pallas_sim._src",
                                        "line 3: pallas_sim.jax._private"]


def test_the_surface_exports_public_names_that_exist() -> None:
    names = pallas_sim.extend.__all__
    for name in names:
        assert not name.startswith("_") and hasattr(pallas_sim.extend, name), name
        assert name in (pallas_sim.extend.__doc__ or ""), f"{name} is not documented"
