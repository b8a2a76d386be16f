"""Handouts are generated from solutions/, stay in sync, and leak no solution line.

`graders.release.handouts` turns every ``### BEGIN SOLUTION`` … ``### END SOLUTION``
region of ``solutions/<stem>.py`` into ``raise NotImplementedError("Need to
implement for Task N.M")``, N.M being the ``Task N.M`` that opens the
enclosing function's docstring (or the nearest ``# Task N.M`` comment above).
The leak check below reads the regions with its own small scanner, not with
the release code, so a bug in one is not mirrored by the other.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from graders.course.catalog import ASSIGNMENTS as DISCOVERED
from graders.release import handouts as release

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
ASSIGNMENTS = ROOT / "assignments"
STEMS = sorted(p.stem for p in SOLUTIONS.glob("*.py") if not p.name.startswith("_"))

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = re.compile(r'^raise NotImplementedError\("Need to implement for Task (\d+\.\d+)"\)$')
DOCSTRING_TASK = re.compile(r"^Task (\d+\.\d+)\b")

# The graded student API (docs/student-api.md): each function and its task, from the labs' records.
API_TASKS = {a.stem: a.functions for a in DISCOVERED.values()}


def solution_text(stem: str) -> str:
    return (SOLUTIONS / f"{stem}.py").read_text(encoding="utf-8")


def handout_text(stem: str) -> str:
    return (ASSIGNMENTS / f"{stem}.py").read_text(encoding="utf-8")


def lines_inside_regions(source: str) -> list[str]:
    """Stripped, non-blank lines strictly between the markers of every region."""
    inside, found = False, []
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            inside = True
        elif marker == END:
            inside = False
        elif inside and marker:
            found.append(marker)
    return found


def stubs_by_function(source: str) -> dict[str, list[str]]:
    """Function name -> task ids of the NotImplementedError stubs directly in its body."""
    stubs: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for stmt in node.body:
                if not isinstance(stmt, ast.Raise):
                    continue
                match = STUB.match(ast.get_source_segment(source, stmt) or "")
                if match:
                    stubs.setdefault(node.name, []).append(match.group(1))
    return stubs


def test_every_discovered_assignment_has_a_solution_and_nothing_else_does():
    assert set(STEMS) == {a.stem for a in DISCOVERED.values()}


@pytest.mark.parametrize("stem", STEMS)
def test_committed_handout_is_exactly_what_release_generates(stem):
    committed = ASSIGNMENTS / f"{stem}.py"
    assert committed.is_file(), f"assignments/{stem}.py is missing: run `pallas-lab release`"
    assert handout_text(stem) == release.render_handout(solution_text(stem)), (
        f"assignments/{stem}.py differs from what solutions/{stem}.py generates: "
        "run `pallas-lab release` and commit the handouts")


@pytest.mark.parametrize("stem", STEMS)
def test_no_solution_line_leaks_into_the_handout(stem):
    # Strict: no exclusions are needed, because no line inside a region of our
    # solutions is repeated verbatim outside one (the solutions are written so).
    secret = set(lines_inside_regions(solution_text(stem)))
    assert secret, f"solutions/{stem}.py has no solution region"
    leaked = [line for line in handout_text(stem).splitlines() if line.strip() in secret]
    assert not leaked, f"solution lines found in assignments/{stem}.py: {leaked}"
    assert BEGIN not in handout_text(stem) and END not in handout_text(stem)


@pytest.mark.parametrize("stem", STEMS)
def test_every_stub_names_the_task_of_its_function(stem):
    source = handout_text(stem)
    raising = [line.strip() for line in source.splitlines()
               if line.strip().startswith("raise NotImplementedError")]
    assert all(STUB.match(line) for line in raising), (
        f"every stub must read exactly raise NotImplementedError(\"Need to implement for "
        f"Task N.M\"); found {raising}")
    stubs = stubs_by_function(source)
    checked = 0
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef) or node.name not in stubs:
            continue
        tasks = stubs[node.name]
        docstring_task = DOCSTRING_TASK.match(ast.get_docstring(node) or "")
        assert docstring_task, f"{node.name} has a stub but its docstring names no task"
        assert tasks == [docstring_task.group(1)], (
            f"{node.name}: the stub says Task {tasks}, its docstring Task "
            f"{docstring_task.group(1)}")
        checked += 1
    assert checked >= len(API_TASKS.get(stem, {}))


@pytest.mark.parametrize("stem", sorted(API_TASKS))
def test_every_graded_function_is_a_stub_with_its_student_api_task(stem):
    stubs = stubs_by_function(handout_text(stem))
    for name, task in API_TASKS[stem].items():
        assert stubs.get(name) == [task], (
            f"{name} in assignments/{stem}.py should raise NotImplementedError(\"Need to "
            f"implement for Task {task}\"); found {stubs.get(name)}")


@pytest.mark.parametrize("stem", STEMS)
def test_one_stub_per_solution_region_and_everything_else_kept(stem):
    solution, handout = solution_text(stem), handout_text(stem)
    regions = solution.count(BEGIN)
    stubs_before = sum(len(t) for t in stubs_by_function(solution).values())
    stubs_after = sum(len(t) for t in stubs_by_function(handout).values())
    assert stubs_after - stubs_before == regions
    # Outside the regions nothing changes: markdown, imports, signatures, docstrings.
    def without_stubs(lines: list[str]) -> list[str]:
        return [line for line in lines if not STUB.match(line.strip())]

    assert without_stubs(handout.splitlines()) == without_stubs(_without_regions(solution))


def _without_regions(source: str) -> list[str]:
    kept, inside = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            inside = True
        elif marker == END:
            inside = False
        elif not inside:
            kept.append(line)
    return kept


@pytest.mark.parametrize("stem", STEMS)
def test_handout_starts_with_the_student_api_imports(stem):
    code = [line for line in handout_text(stem).splitlines()
            if line.strip() and not line.startswith("#")]
    assert code[0] == "import numpy as np"
    assert code[1].startswith("from pallas_sim import jax, jnp, pl, pltpu")


@pytest.mark.parametrize("stem", STEMS)
def test_untouched_sample_submission_is_the_handout(stem):
    sample = ROOT / "examples" / "submissions" / "cleo_untouched" / f"{stem}.py"
    assert sample.read_text(encoding="utf-8") == handout_text(stem), (
        f"examples/submissions/cleo_untouched/{stem}.py must be a copy of assignments/{stem}.py")


# --- the release command ------------------------------------------------------------------

def test_release_check_reports_the_repository_in_sync(capsys):
    assert release.main(["--root", str(ROOT), "--check"]) == 0
    assert "stale" not in capsys.readouterr().out


def test_release_writes_every_handout_and_check_catches_drift(tmp_path, capsys):
    shutil.copytree(SOLUTIONS, tmp_path / "solutions")
    assert release.main(["--root", str(tmp_path)]) == 0
    for stem in STEMS:
        assert (tmp_path / "assignments" / f"{stem}.py").read_text() == handout_text(stem)
    assert release.main(["--root", str(tmp_path), "--check"]) == 0

    edited = tmp_path / "assignments" / f"{STEMS[0]}.py"
    edited.write_text(edited.read_text() + "\n# edited by hand\n")
    assert release.main(["--root", str(tmp_path), "--check"]) == 1
    assert f"stale       assignments/{STEMS[0]}.py" in capsys.readouterr().out
    assert release.main(["--root", str(tmp_path), STEMS[0]]) == 0
    assert edited.read_text() == handout_text(STEMS[0])


def test_release_fails_cleanly_on_a_region_without_a_task(tmp_path, capsys):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "a9_bad.py").write_text(
        "# %%\ndef f(x):\n    \"\"\"No task id here.\"\"\"\n    ### BEGIN SOLUTION\n"
        "    return x\n    ### END SOLUTION\n")
    assert release.main(["--root", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "solutions/a9_bad.py" in error and "(in f)" in error and "Task N.M" in error
    assert not (tmp_path / "assignments" / "a9_bad.py").exists()


# --- render_handout on small sources ------------------------------------------------------

def test_region_becomes_one_stub_at_the_markers_indentation():
    source = (
        "# %% [markdown]\n# Explain.\n\n"
        "# %%\n"
        "def outer(x):\n"
        "    \"\"\"Task 2.3: something.\n\n    More.\n    \"\"\"\n"
        "    if x:\n"
        "        ### BEGIN SOLUTION\n"
        "        return 1\n"
        "        ### END SOLUTION\n"
        "    return 0\n")
    handout = release.render_handout(source)
    assert ('    if x:\n        raise NotImplementedError("Need to implement for Task 2.3")\n'
            "    return 0\n") in handout
    assert handout.startswith("# %% [markdown]\n# Explain.\n")


def test_innermost_docstring_wins_then_the_nearest_comment():
    source = (
        "# %%\n"
        "def wrapper(x):\n"
        "    \"\"\"Task 3.2: the wrapper.\"\"\"\n"
        "    def kernel(ref):\n"
        "        \"\"\"Task 3.1: the kernel.\"\"\"\n"
        "        ### BEGIN SOLUTION\n"
        "        ref[...] = 0\n"
        "        ### END SOLUTION\n"
        "    ### BEGIN SOLUTION\n"
        "    return kernel\n"
        "    ### END SOLUTION\n"
        "\n\n"
        "# %%\n"
        "# Task 3.4\n"
        "### BEGIN SOLUTION\n"
        "CONSTANT = 279\n"
        "### END SOLUTION\n")
    found = [stub for stub in release.render_handout(source).splitlines() if "raise" in stub]
    assert found == [
        '        raise NotImplementedError("Need to implement for Task 3.1")',
        '    raise NotImplementedError("Need to implement for Task 3.2")',
        'raise NotImplementedError("Need to implement for Task 3.4")',
    ]


@pytest.mark.parametrize("body, message", [
    ("    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n", "inside the region"),
    ("    ### END SOLUTION\n", "without a"),
    ("    ### BEGIN SOLUTION\n    return 1\n", "never closed"),
])
def test_malformed_markers_are_reported_with_their_line(body, message):
    source = "# %%\ndef f():\n    \"\"\"Task 1.1: f.\"\"\"\n" + body
    with pytest.raises(release.ReleaseError, match=message):
        release.render_handout(source)


def test_a_marker_in_a_markdown_cell_is_an_error():
    with pytest.raises(release.ReleaseError, match="markdown cell"):
        release.render_handout("# %% [markdown]\n# ### BEGIN SOLUTION\n")
