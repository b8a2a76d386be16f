"""The corpus's layout cases (tests/corpus/layouts.py) graded through the CLI in one batch:
each student folder holds a .py and an .ipynb, and the file the rule picks is the one
graded, with the choice in the gradebook's notes.

Before the rule, `pallas-lab grade` always graded the .py: the filled notebook beside an
untouched .py scored 0 with no note in the gradebook.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jupytext
import pytest

from tests.corpus.layouts import BEN, LAYOUTS, Layout
from tests.helpers.samples import expected_score

ROOT = Path(__file__).resolve().parents[2]
RUN_LIMIT = 900


def _write(source: str, stem: str, target: Path) -> None:
    if source == "handout":
        shutil.copyfile(ROOT / "assignments" / f"{stem}{target.suffix}", target)
        return
    py = (ROOT / "solutions" / f"{stem}.py" if source == "solution"
          else ROOT / "examples" / "submissions" / source / f"{stem}.py")
    if target.suffix == ".py":
        shutil.copyfile(py, target)
    else:
        jupytext.write(jupytext.read(py), target)


def _student(layout: Layout) -> str:
    return f"layout-{layout.stem.split('_')[0]}-{layout.name}"


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, str]]:
    """(results.json by student, gradebook notes by student) of the whole layout corpus."""
    base = tmp_path_factory.mktemp("layouts")
    klass, out = base / "class", base / "results"
    for layout in LAYOUTS:
        folder = klass / _student(layout)
        folder.mkdir(parents=True)
        for suffix, source in ((".py", layout.py), (".ipynb", layout.nb)):
            _write(source, layout.stem, folder / f"{layout.stem}{suffix}")
        older = folder / f"{layout.stem}{layout.older}"
        when = older.stat().st_mtime - 3600
        os.utime(older, (when, when))
    script = Path(sys.executable).parent / "pallas-lab"
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "graders.cli.main"]
    done = subprocess.run([*cli, "grade", str(klass), "--jobs", "2", "--format", "gradescope",
                           "--out", str(out)], cwd=base, capture_output=True, text=True,
                          timeout=RUN_LIMIT, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = {p.parent.parent.name: json.loads(p.read_text(encoding="utf-8"))
               for p in out.glob("*/*/results.json")}
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        notes = {row["student"]: row.get("notes", "") for row in csv.DictReader(handle)}
    return results, notes


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS, ids=[layout.name for layout in LAYOUTS])
def test_the_file_the_rule_picks_is_graded_and_the_gradebook_says_why(
        graded: tuple[dict[str, Any], dict[str, str]], layout: Layout) -> None:
    results, notes = graded
    result = results[_student(layout)]
    record = result["extra_data"]["pallas_lab"]
    assert record["file"] == f"{layout.stem}{layout.graded}", record["file"]
    want = layout.score if layout.score >= 0 else expected_score(BEN, layout.stem)
    assert result["score"] == want, (layout.name, result["score"])
    names = {"py": f"{layout.stem}.py", "nb": f"{layout.stem}.ipynb"}
    assert notes[_student(layout)] == layout.says.format(**names)
