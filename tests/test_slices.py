"""The suite's slices (docs/contributors.md, "Running tests"): the markers conftest.py applies,
the fidelity suite without JAX, and test modules that share helpers only through non-test
modules."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from graders.course.catalog import ASSIGNMENTS
from tests.helpers.slices import E2E_PATTERN, e2e_module, lab_markers

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


@pytest.mark.parametrize("text", [
    'subprocess.run([sys.executable, "-m", "graders.cli.main", "grade", str(klass)])',
    "from graders.cli.main import main",
    'subprocess.run([sys.executable, "-m", "graders.student.cli", "check"])',
    'subprocess.run([sys.executable, "-m",'
    ' "graders.integrations.gradescope.autograder", "dry-run"])',
    "from tests.helpers.cli import pallas_lab",
    "result = grade_file(path, assignment)",
    "from tests.helpers.samples import graded_sample",
    "from graders.student.selfcheck import SELF_CHECK_SETTINGS, check_file",
    "from graders.batch.run import pending_students, run_batch, schedule",
    "import venv",
])
def test_the_e2e_rule_takes_a_module_that_runs_a_cli_or_grades_whole_files(text: str) -> None:
    assert E2E_PATTERN.search(text), f"{text!r} should make its module e2e"


@pytest.mark.parametrize("text", [
    "from graders.worker.static_check import check_file, check_source",
    "from graders.grading.grade import SubmissionResult",
    "import pallas_sim as pl",
])
def test_the_e2e_rule_leaves_a_module_that_does_neither(text: str) -> None:
    assert not E2E_PATTERN.search(text), f"{text!r} should not make its module e2e"


def test_the_corpus_and_the_attacks_are_e2e_and_the_simulator_tests_are_not() -> None:
    assert e2e_module(TESTS / "corpus" / "test_corpus.py")
    assert e2e_module(TESTS / "redteam" / "test_attacks.py")
    assert e2e_module(TESTS / "redteam" / "test_keyring.py"), (
        "grades through the CLI of its helper module tests/redteam/replies.py")
    assert not any(e2e_module(path) for path in (TESTS / "sim").glob("test_*.py")), (
        "no test of the simulator runs the CLI")


@pytest.mark.parametrize(("nodeid", "labs"), [
    ("tests/reference/test_reference_a2_a3.py::test_x", ["a2", "a3"]),
    ("tests/reference/test_reference_a5.py::test_y[b0]", ["a5"]),
    ("tests/grading/test_x.py::test_grades[a4_flash_attention]", ["a4"]),
    ("tests/sim/test_data1.py::test_a10", []),
    ("tests/release/test_release.py::test_a1_handout", ["a1"]),
])
def test_a_lab_marker_goes_to_a_test_whose_node_id_names_the_lab(
        nodeid: str, labs: list[str]) -> None:
    assert lab_markers(nodeid) == labs


def test_the_lab_markers_are_the_discovered_labs_and_every_marker_is_declared(
        pytestconfig: pytest.Config) -> None:
    assert [lab for lab in ("a1", "a2", "a3", "a4", "a5") if lab in ASSIGNMENTS] == list(
        ASSIGNMENTS), "the labs the documentation lists are the discovered ones"
    declared = {line.split(":")[0].split("(")[0] for line in pytestconfig.getini("markers")}
    missing = {"e2e", "fidelity", "slow", "task", *ASSIGNMENTS} - declared
    assert not missing, f"markers applied but not declared: {sorted(missing)}"
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    in_pyproject = {line.split(":")[0] for line in ini["tool"]["pytest"]["ini_options"]["markers"]}
    assert {"e2e", "fidelity", "slow"} <= in_pyproject


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "submissions" not in p.parts)


def test_no_test_module_imports_from_another_test_module() -> None:
    offenders = []
    for path in _test_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[-1].startswith("test_"):
                    offenders.append(f"{path.relative_to(ROOT)}: from {node.module}")
    assert not offenders, "shared helpers belong in a non-test module (tests/helpers/): " + (
        "; ".join(offenders))


def test_nothing_outside_tests_fidelity_imports_jax_at_module_level() -> None:
    offenders = []
    files = [ROOT / "conftest.py", *TESTS.rglob("*.py")]
    for path in files:
        if "fidelity" in path.relative_to(ROOT).parts or "submissions" in path.parts:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name == "jax" or name.startswith("jax.") for name in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"import jax inside the test that needs it: {offenders}"


def test_without_jax_tests_fidelity_is_skipped_with_one_line(tmp_path: Path) -> None:
    """A ``jax`` package that fails to import shadows the real one (PYTHONPATH comes first)."""
    shim = tmp_path / "shim" / "jax"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("jax hidden by the test")\n',
                                      encoding="utf-8")
    # CI=true makes a missing jax a failure (tests/fidelity/conftest.py): a developer's
    # machine without jax is what this run plays
    env = {**{k: v for k, v in os.environ.items() if k != "CI"}, "PYTHONPATH": os.pathsep.join(
        [str(shim.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         "tests/fidelity"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        check=False)
    out = done.stdout + done.stderr
    assert done.returncode in (0, 5), out[-3000:]
    lines = [line for line in out.splitlines() if "install the jax extra" in line]
    assert len(lines) == 1, f"one skip line naming the jax extra, got {lines}:\n{out[-3000:]}"
    assert lines[0].startswith("SKIPPED") and " skipped" in out and "error" not in out, (
        out[-3000:])
