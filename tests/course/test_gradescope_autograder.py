"""The Gradescope autograder zip, run in a temporary /autograder-like tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from graders.autograder import build_zip
from tests.samples import expected_score

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"

# Gradescope's documented results.json format (autograder specifications).
TEST = {
    "type": "object",
    "required": ["score", "max_score", "status", "name", "number", "output", "visibility"],
    "properties": {
        "score": {"type": "number"}, "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]}, "name": {"type": "string"},
        "number": {"type": "string"}, "output": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
    },
}
SCHEMA = {
    "type": "object",
    "required": ["score", "tests"],
    "properties": {
        "score": {"type": "number"}, "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "stdout_visibility": {"enum": ["hidden", "after_due_date", "after_published",
                                       "visible"]},
        "tests": {"type": "array", "items": TEST},
    },
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("autograder")
    archive = build_zip(root / "autograder.zip")
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder", "requirements.txt"} <= set(names)
        assert not any(n.startswith(("pallas-lab/solutions", "pallas-lab/tests")) for n in names)
        assert "numpy==" in z.read("requirements.txt").decode()
        z.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / script, 0o755)
    return root


def run_autograder(tree: Path, files: dict[str, Path | str]) -> dict:
    shutil.rmtree(tree / "submission", ignore_errors=True)
    shutil.rmtree(tree / "results", ignore_errors=True)
    (tree / "submission").mkdir()
    for name, content in files.items():
        target = tree / "submission" / name
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content, encoding="utf-8")
    env = {"AUTOGRADER_ROOT": str(tree), "PALLAS_LAB_PYTHON": sys.executable,
           "PYTHONPATH": str(tree / "source" / "pallas-lab"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([str(tree / "source" / "run_autograder")], env=env, cwd=tree,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    data = json.loads((tree / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(data, SCHEMA)
    return data


def test_a_correct_submission_scores_full_with_public_tests_visible(tree: Path) -> None:
    data = run_autograder(tree, {"a1_pallas_basics.py": SAMPLES / "ada_correct" /
                                 "a1_pallas_basics.py"})
    assert data["score"] == 100
    public = [t for t in data["tests"] if "public" in t.get("tags", [])]
    hidden = [t for t in data["tests"] if "public" not in t.get("tags", [])]
    assert public and hidden
    assert {t["visibility"] for t in public} == {"visible"}
    assert {t["visibility"] for t in hidden} == {"after_published"}
    assert {t["status"] for t in data["tests"]} == {"passed"}
    assert sum(t["score"] for t in public) == 0, "public tests carry no points"


def test_mistakes_broken_and_missing_submissions_still_write_results(tree: Path) -> None:
    ben = run_autograder(tree, {"a1_pallas_basics.py": SAMPLES / "ben_typical_mistakes" /
                                "a1_pallas_basics.py"})
    assert ben["score"] == expected_score("ben_typical_mistakes", "a1_pallas_basics")
    broken = run_autograder(tree, {"a1_pallas_basics.py": SAMPLES / "dev_broken" /
                                   "a1_pallas_basics.py"})
    assert broken["score"] == 0 and "SyntaxError" in broken["tests"][-1]["output"]
    nothing = run_autograder(tree, {"notes.txt": "hello"})
    assert nothing["score"] == 0 and "no assignment file was submitted" in nothing["output"]
