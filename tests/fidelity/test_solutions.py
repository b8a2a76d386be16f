"""Every solution runs unchanged on real JAX Pallas and agrees with pallas_sim.

Parametrized over the files present in ``solutions/`` (new assignments join
automatically) × the cases of graders/fidelity/cases.py whose function the
file defines × JAX's two CPU interpreters.  Inputs are hypothesis-drawn and
small; see graders/fidelity/compare.py for the tolerances.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from graders.fidelity.cases import cases_for
from graders.fidelity.compare import run_case
from pallas_sim.backends import real_jax
from pallas_sim.backends.swap import load

SOLUTIONS = sorted((Path(__file__).resolve().parents[2] / "solutions").glob("a*_*.py"))
_USES_BACKEND = re.compile(r"\b(pl|pltpu|jnp|jax)\.")


@functools.cache
def modules(path: Path):
    """(pallas_sim module, JAX module) of one file, loaded once per session."""
    return load(path, "sim"), load(path, "jax")


def public_functions_using_the_backend(path: Path) -> set[str]:
    """Top-level functions whose body spells pl./pltpu./jnp./jax."""
    source = path.read_text(encoding="utf-8")
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            if _USES_BACKEND.search(ast.get_source_segment(source, node) or ""):
                names.add(node.name)
    return names


def _params():
    out = []
    for path in SOLUTIONS:
        defined = {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body
                   if isinstance(n, ast.FunctionDef)}
        for case in cases_for(path.stem):
            if case.func in defined:
                for mode in real_jax.MODES:
                    out.append(pytest.param(path, case, mode,
                                            id=f"{path.stem}.{case.func}-{mode}"))
    return out


def test_there_are_solutions_to_check():
    assert any(p.stem.startswith("a1_") for p in SOLUTIONS), "solutions/ lost a1"


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_every_function_that_uses_pallas_has_a_fidelity_case(path):
    covered = set()
    for case in cases_for(path.stem):
        covered |= {case.func, *case.covers}
    missing = public_functions_using_the_backend(path) - covered
    assert not missing, (
        f"{path.name}: {sorted(missing)} use pl/pltpu/jnp/jax but no case in "
        "graders/fidelity/cases.py runs them on real JAX; add one")


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_the_file_imports_real_jax_once_swapped(path):
    sim, jx = modules(path)
    uses = "from pallas_sim import" in path.read_text(encoding="utf-8")
    assert uses, f"{path.name} must start with 'from pallas_sim import jax, jnp, pl, pltpu'"
    assert jx.pl.pallas_call is real_jax.pallas_call and jx.jnp.__name__ == "jax.numpy"
    assert sim.pl.__name__ == "pallas_sim.pl"


@pytest.mark.parametrize("path, case, mode", _params())
def test_solution_agrees_with_pallas_sim_on_real_jax(path, case, mode):
    sim, jx = modules(path)
    stats = run_case(sim, jx, case, mode)
    assert stats.compared >= 1, f"{case.func}: no input was compared"
    assert stats.not_implemented == 0, f"solutions/{path.name}: {case.func} is still a stub"
