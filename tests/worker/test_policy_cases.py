"""Submission-policy cases (imports, input(), warnings), graded through the CLI as a TA runs it.

* ``import warnings`` is allowed: a file that imports it and warns gets full marks;
* ``input()`` in a ``.py`` fails only the checks whose calls reach it, with the policy's
  message naming the line;
* in a notebook, a top-level statement that would wait for ``input()`` while the module is
  imported (directly, or by calling a notebook function that asks) is set aside like other
  interactive cells, and the notebook grades like its ``.py``; ``pallas-lab check`` says
  what it set aside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat

from graders.student.notebook import cells_to_module

ROOT = Path(__file__).resolve().parents[2]
A2 = "a2_pipelining"
WARNED = "    dma_seconds = compute_time * (1.0 / utilization - 1.0)\n"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "graders.cli.main", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=600, env=env)


def _grade(klass: Path, out: Path) -> dict[str, dict]:
    done = _cli("grade", str(klass), "--format", "gradescope", "--out", str(out), cwd=klass)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {p.parent.parent.name: json.loads(p.read_text(encoding="utf-8"))
            for p in out.glob("*/*/results.json")}


def _tasks(result: dict) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in result["tests"]:
        scores[test["number"]] = scores.get(test["number"], 0.0) + test["score"]
    return scores


def _solution(stem: str) -> str:
    return (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")


def _notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    notebook = nbformat.v4.new_notebook()
    for kind, source in cells:
        maker = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        notebook.cells.append(maker(source))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    return path


def test_warnings_input_in_a_py_and_input_in_a_notebook(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    source = _solution(A2)
    assert source.count(WARNED) == 1
    # warnings: imported and used on every call of effective_bandwidth.
    warns = source.replace("import numpy as np\n", "import warnings\n\nimport numpy as np\n", 1)
    warns = warns.replace(WARNED, "    warnings.warn('bandwidth from a single-buffer model')\n"
                          + WARNED)
    (klass / "wren").mkdir(parents=True)
    (klass / "wren" / f"{A2}.py").write_text(warns, encoding="utf-8")
    # input() inside effective_bandwidth only.
    asks = source.replace(WARNED, "    scale = float(input('scale? '))  # left from a try-out\n"
                          + WARNED)
    (klass / "ike").mkdir()
    (klass / "ike" / f"{A2}.py").write_text(asks, encoding="utf-8")
    # A notebook of the solution with cells that ask at import time.
    cells = [(c.cell_type, c.source) for c in jupytext.reads(source, fmt="py:percent").cells]
    cells.insert(3, ("code", "blocks = int(input('how many blocks? '))\n"
                             "demo = pipeline_schedule([1.0] * blocks, [2.0] * blocks, 2)"))
    cells.append(("code", "def ask_width():\n    return int(input('width? '))\n\n\n"
                          "chart = render_gantt(*demo, width=ask_width())"))
    _notebook(klass / "nora" / f"{A2}.ipynb", cells)

    results = _grade(klass, tmp_path / "out")
    full = {"2.1": 30.0, "2.2": 20.0, "2.3": 15.0, "2.4": 10.0, "2.5": 25.0}
    assert _tasks(results["wren"]) == full, "import warnings and warnings.warn cost nothing"
    assert _tasks(results["nora"]) == full, (
        "cells that wait for input() are set aside; the notebook grades like its .py")
    ike = results["ike"]
    assert _tasks(ike) == {**full, "2.4": 0.0}, "only the checks that call input() fail"
    message = "\n".join(t["output"] for t in ike["tests"] if t["number"] == "2.4")
    assert "input() is not available while grading" in message
    assert "take values as arguments" in message and "line" in message

    check = _cli("check", str(klass / "nora" / f"{A2}.ipynb"), cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "set aside (calls input()" in check.stdout and "set aside (calls ask_width()" in (
        check.stdout), check.stdout


def test_only_statements_that_ask_at_import_time_are_set_aside() -> None:
    cells = [
        (1, "code", "import numpy as np\nbs = int(input('block size? '))"),
        (2, "code", "def ask():\n    return input('name? ')\n\n\n"
                    "class Config:\n    def prompt(self):\n        return ask()\n\n\n"
                    "size = bs * 2"),
        (3, "code", "name = ask()\nif True:\n    other = input()\nkeep = np.zeros(3)"),
        (4, "code", "def uses_default(n=input()):\n    return n"),
    ]
    converted = cells_to_module(cells)
    reasons = {(note.cell, note.line): note.reason for note in converted.set_aside}
    assert reasons[(1, 2)].startswith("calls input()")
    assert "uses 'bs'" in reasons[(2, 10)], "what depends on an answer goes with it"
    assert reasons[(3, 1)].startswith("calls ask()"), "a notebook function that asks"
    assert reasons[(3, 2)].startswith("calls input()")
    assert reasons[(4, 1)].startswith("calls input()"), "a default runs on definition"
    kept = [line for line in converted.source.splitlines() if line and not line.startswith("#")]
    assert "def ask():" in kept and "class Config:" in kept and "keep = np.zeros(3)" in kept, (
        "a def or class whose body asks is kept: calling it fails only that call")
