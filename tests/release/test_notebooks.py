"""Notebook handouts and notebook submissions.

The handout .ipynb is checked against the solutions line by line (no
solution line leaks), against the .py handout cell by cell, and against
nbgrader's own metadata validator; a notebook submission is graded by the
real worker exactly like the .py it stands for, whatever display, plot,
magic or test cells it also holds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graders.grading.grade import grade_file
from graders.release.handouts import render_handout
from graders.release.notebook import handout_notebook, notebook_text
from graders.student.notebook import cells_to_module
from graders.worker.static_check import check_source

ROOT = Path(__file__).resolve().parents[2]
STEMS = sorted(p.stem for p in (ROOT / "solutions").glob("*.py") if not p.name.startswith("_"))
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def solution_lines(stem: str) -> set[str]:
    inside, found = False, set()
    for line in (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8").splitlines():
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif inside and line.strip():
            found.add(line.strip())
    return found


@pytest.mark.parametrize("stem", STEMS)
def test_notebook_handout_has_no_solution_line_and_no_outputs(stem: str) -> None:
    notebook = nbformat.read(ROOT / "assignments" / f"{stem}.ipynb", as_version=4)
    secret = solution_lines(stem)
    for number, cell in enumerate(notebook.cells, start=1):
        leaked = [line for line in cell.source.splitlines() if line.strip() in secret
                  and len(line.strip()) > 12]
        assert not leaked, f"{stem}.ipynb cell {number} leaks solution lines: {leaked}"
        assert BEGIN not in cell.source and END not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{stem}.ipynb cell {number} stores outputs; handouts must not")


@pytest.mark.parametrize("stem", STEMS)
def test_notebook_handout_equals_the_py_handout_cell_by_cell(stem: str) -> None:
    source = (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
    notebook = handout_notebook(source)
    py = jupytext.reads(render_handout(source), fmt="py:percent")
    assert [c.source for c in notebook.cells] == [c.source for c in py.cells]
    committed = (ROOT / "assignments" / f"{stem}.ipynb").read_text(encoding="utf-8")
    assert committed == notebook_text(notebook), (
        f"assignments/{stem}.ipynb is stale: run `pallas-lab release`")


@pytest.mark.parametrize("stem", STEMS)
def test_notebook_handout_carries_valid_nbgrader_metadata(stem: str) -> None:
    from nbgrader.preprocessors import CheckCellMetadata

    notebook = nbformat.read(ROOT / "assignments" / f"{stem}.ipynb", as_version=4)
    CheckCellMetadata().preprocess(notebook, {})  # raises ValidationError on bad metadata
    kinds = [(c.cell_type, c.metadata["nbgrader"]["solution"], c.metadata["nbgrader"]["locked"])
             for c in notebook.cells]
    solution_cells = [c for c in notebook.cells if c.metadata["nbgrader"]["solution"]]
    assert solution_cells, "every handout has solution cells"
    assert all("Need to implement for Task" in c.source for c in solution_cells)
    assert all(locked for kind, solution, locked in kinds if not solution), (
        "given cells are read-only")


DEFS = ["import numpy as np\nfrom pallas_sim import jax, jnp, pl, pltpu",
        "def twice(x):\n    return 2 * x", "SCALE = 3\n\ndef scaled(x):\n    return SCALE * x"]
NOISE = ["%matplotlib inline", "%%time\ntwice(3)", "!pip list", "display(twice(2))",
         "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nfig = plt.gcf()",
         "assert twice(2) == 4", "twice?", "for i in range(3):\n    print(twice(i))",
         "import os\nos.system('echo hi')", "x = !ls\nprint(x)"]


@given(st.lists(st.sampled_from(NOISE), max_size=6), st.randoms(use_true_random=False))
def test_display_magic_and_plot_cells_never_reach_the_module(noise: list[str], rnd) -> None:
    cells = DEFS + noise
    rnd.shuffle(cells)
    cells = sorted(cells, key=lambda c: c not in DEFS[:1])  # imports first, as students do
    converted = cells_to_module([(i, "code", c) for i, c in enumerate(cells, start=1)])
    static = check_source(converted.source)
    assert static.ok, f"{static.message()}\n---\n{converted.source}"
    tree = ast.parse(converted.source)
    kept = [type(node).__name__ for node in tree.body]
    assert set(kept) <= {"Import", "ImportFrom", "FunctionDef", "Assign"}, kept
    assert {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} == {"twice", "scaled"}
    assert len(converted.source.splitlines()) >= sum(len(c.splitlines()) for c in cells)


def _notebook_file(path: Path, cells: list[tuple[str, str]]) -> Path:
    notebook = nbformat.v4.new_notebook()
    for kind, source in cells:
        maker = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        notebook.cells.append(maker(source))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    return path


def test_a_notebook_submission_grades_like_its_py(tmp_path: Path) -> None:
    solution = jupytext.reads((ROOT / "solutions" / "a4_flash_attention.py").read_text(
        encoding="utf-8"), fmt="py:percent")
    cells = [(c.cell_type, c.source) for c in solution.cells]
    cells.insert(2, ("code", "%matplotlib inline\nimport matplotlib.pyplot as plt"))
    cells.append(("code", "probs, trace = online_softmax(np.arange(6.0), 2)\ndisplay(trace)\n"
                          "plt.plot(probs)"))
    cells.append(("code", "%%timeit\nonline_softmax(np.arange(6.0), 2)"))
    path = _notebook_file(tmp_path / "nina" / "a4_flash_attention.ipynb", cells)
    as_notebook = grade_file(path)
    as_py = grade_file(ROOT / "solutions" / "a4_flash_attention.py")
    assert as_notebook.load_error is None
    assert (as_notebook.score, as_notebook.max_score) == (as_py.score, as_py.max_score)
    assert [c.status for c in as_notebook.checks] == [c.status for c in as_py.checks]


def test_a_broken_notebook_costs_only_its_own_checks_with_a_clear_message(
        tmp_path: Path) -> None:
    bad = tmp_path / "olga" / "a1_pallas_basics.ipynb"
    bad.parent.mkdir(parents=True)
    bad.write_text("{ this is not json", encoding="utf-8")
    result = grade_file(bad)
    assert result.score == 0 and "is not a Jupyter notebook" in (result.load_error or "")
    forbidden = _notebook_file(tmp_path / "pat" / "a1_pallas_basics.ipynb", [
        ("markdown", "# my work"), ("code", "import numpy as np"),
        ("code", "def add_kernel(x_ref, y_ref, z_ref):\n    import os\n    z_ref[...] = 0")])
    result = grade_file(forbidden)
    assert result.score == 0
    assert "cell 3, line 2: import of 'os' is not allowed" in (result.load_error or ""), (
        result.load_error)


def test_a_function_set_aside_for_a_disallowed_import_is_reported_as_that_import(
        tmp_path: Path) -> None:
    """A notebook that decorates its kernel with real JAX (`import jax`, `@jax.jit`): the
    import and the kernel are set aside, the decorator line with them (it was left behind,
    a SyntaxError), and every check of the kernel says which import cost it, not "function
    not defined"; the tasks that do not use it keep their points."""
    solution = jupytext.reads((ROOT / "solutions" / "a1_pallas_basics.py").read_text(
        encoding="utf-8"), fmt="py:percent")
    cells = [(c.cell_type, c.source) for c in solution.cells]
    index = next(i for i, (_, source) in enumerate(cells) if "def add_kernel" in source)
    kernel = cells[index][1]
    cells[index] = ("code", "import jax\n\n@jax.jit\n" + kernel[kernel.index("def add_kernel"):])
    path = _notebook_file(tmp_path / "quinn" / "a1_pallas_basics.ipynb", cells)
    result = grade_file(path)
    assert result.load_error is None, result.load_error
    kernel_checks = [c for c in result.checks if c.task == "1.1"]
    assert kernel_checks and all(c.status == "error" for c in kernel_checks)
    for check in kernel_checks:
        assert check.reason.startswith(
            "function 'add_kernel' was set aside: import of 'jax', which a submission may "
            "not use"), check.reason
        assert f"(cell {index + 1}, line 1: `import jax`); cell {index + 1}, line 3 " \
               "(`@jax.jit`) uses 'jax'" in check.feedback, check.feedback
        assert "is not defined" not in check.feedback
    wrapper = [c for c in result.checks if c.task == "1.2" and c.status != "passed"]
    assert wrapper and all("set aside: import of 'jax'" in c.feedback for c in wrapper)
    assert {t.task: t.points for t in result.tasks()}["1.3"] == 25, (
        "bias_add does not use add_kernel: it keeps its 25 points")


def test_a_notebook_without_cell_ids_is_graded_without_nbformat_warnings(
        tmp_path: Path) -> None:
    """nbformat 4.5 notebooks should carry cell ids; one saved without them (or with
    duplicates) is graded all the same, and nbformat's MissingIDFieldWarning does not reach
    the TA's output."""
    import json
    import warnings

    data = json.loads((ROOT / "assignments" / "a1_pallas_basics.ipynb").read_text(
        encoding="utf-8"))
    data["nbformat_minor"] = 5
    for cell in data["cells"]:
        cell.pop("id", None)
    path = tmp_path / "zed" / "a1_pallas_basics.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(data), encoding="utf-8")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = grade_file(path)
    assert result.load_error is None and result.score == 0
    assert {c.status for c in result.checks} == {"not started"}
    noisy = [str(w.message) for w in seen if "nbformat" in (w.filename or "")]
    assert not noisy, noisy


def test_a_notebooks_traceback_names_its_cell_and_line_for_the_ta_and_the_student(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TA's walk: an error in a notebook was shown to the TA as "a1_pallas_basics.py, line
    60" (a file the student never wrote, a line of the joined code) and to the student's
    self-check as line 60 of the notebook's JSON, quoting a markdown sentence. Both now
    name the notebook's cell and the line in it, and quote the code."""
    from graders.cli.main import main

    solution = jupytext.reads((ROOT / "solutions" / "a1_pallas_basics.py").read_text(
        encoding="utf-8"), fmt="py:percent")
    cells = [(c.cell_type, c.source) for c in solution.cells]
    cells.append(("markdown", "My own vmem_bytes:\n\n* it *raises*"))
    cells.append(("code", "def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):"
                          "\n    count = len(shapes)\n    raise ValueError(f'no {count}')"))
    path = _notebook_file(tmp_path / "nina" / "a1_pallas_basics.ipynb", cells)
    last = len(cells)
    result = grade_file(path)
    traces = [c.feedback for c in result.checks if c.task == "1.5"]
    assert traces and all(f"a1_pallas_basics.ipynb, cell {last}, line 3, in vmem_bytes" in t
                          and "raise ValueError(f'no {count}')" in t for t in traces), traces
    assert not any("a1_pallas_basics.py, line" in t for t in traces), traces
    assert main(["check", str(path)]) in (0, 1)
    out = capsys.readouterr().out
    assert f'File "{path}", cell {last}, line 3, in vmem_bytes' in " ".join(out.split()) or (
        f"cell {last}, line 3, in vmem_bytes" in out), out[-3000:]
    assert "it *raises*" not in out, "no line of the notebook's JSON is quoted"
