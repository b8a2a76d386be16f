"""The Gradescope autograder zip, built from a normal (non-editable) install of pallas-lab, and
run as Gradescope runs it: its own setup.sh, then run_autograder, in a temporary folder laid
out like /autograder, with a bare environment (PATH=/usr/bin:/bin: the system's Python, which
here, like Ubuntu 24.04's, refuses system-wide pip)."""

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

from graders.integrations.gradescope.autograder import main as gradescope_main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
STEM = "a1_pallas_basics"

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
BARE = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The a1 autograder built by `pallas-lab gradescope` from pallas-lab installed as a
    wheel (no pyproject.toml, no source tree: what crashed before)."""
    work = tmp_path_factory.mktemp("install")
    source = work / "src"
    for part in ("pallas_sim", "reference", "graders"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / part, source / part)
    site = work / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                                "--target", str(site), str(source)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    assert not (site / "pyproject.toml").exists() and (site / "graders").is_dir()
    out = work / "autograder-a1.zip"
    run = subprocess.run(
        [sys.executable, "-c", "import graders, sys; "
         "from graders.integrations.gradescope.autograder import main; "
         "print(graders.__file__); sys.exit(main(sys.argv[1:]))",
         "--assignment", "a1", "--out", str(out)],
        cwd=work, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(site)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(str(site)), f"graded from the wheel install: {run.stdout}"
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        assert {"setup.sh", "run_autograder", "requirements.txt"} <= names
        assert "pallas-lab/reference/__init__.py" in names and (
            "pallas-lab/graders/labs/a1_pallas_basics/hidden/checks.py" in names)
        assert not any(n.startswith(("pallas-lab/solutions", "pallas-lab/tests")) for n in names)
        assert "numpy==" in z.read("requirements.txt").decode()
        assert "--assignment a1" in z.read("run_autograder").decode()
    return out


@pytest.fixture(scope="module")
def tree(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An /autograder-like folder where the zip's setup.sh has run (the first dry run)."""
    root = tmp_path_factory.mktemp("autograder")
    empty = tmp_path_factory.mktemp("nothing") / "notes.txt"
    empty.write_text("hello", encoding="utf-8")
    data, log = dry_run(archive, root, empty)
    assert "pallas-lab autograder ready" in log, log
    assert (root / "pallas-lab-venv" / "bin" / "python").exists()
    assert data["score"] == 0 and "no .py or .ipynb file was submitted" in data["output"]
    return root


def dry_run(archive: Path, root: Path, submission: Path) -> tuple[dict, str]:
    """`pallas-lab gradescope dry-run ZIP SUBMISSION --root ROOT` in a bare environment."""
    run = subprocess.run([sys.executable, "-m", "graders.integrations.gradescope.autograder",
                          "dry-run", str(archive),
                          str(submission), "--root", str(root)],
                         capture_output=True, text=True, timeout=600,
                         env=BARE)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    jsonschema.validate(data, SCHEMA)
    assert data == json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    return data, run.stderr


def folder(tmp_path: Path, files: dict[str, Path]) -> Path:
    for name, source in files.items():
        (tmp_path / "sub").mkdir(exist_ok=True)
        shutil.copyfile(source, tmp_path / "sub" / name)
    return tmp_path / "sub"


@pytest.mark.slow
def test_a_correct_submission_scores_full_with_public_tests_visible(
        archive: Path, tree: Path) -> None:
    data, _ = dry_run(archive, tree, SAMPLES / "ada_correct" / f"{STEM}.py")
    assert data["score"] == 100
    public = [t for t in data["tests"] if "public" in t.get("tags", [])]
    hidden = [t for t in data["tests"] if "public" not in t.get("tags", [])]
    assert public and hidden
    assert {t["visibility"] for t in public} == {"visible"}
    assert {t["visibility"] for t in hidden} == {"after_published"}
    assert {t["status"] for t in data["tests"]} == {"passed"}
    assert sum(t["score"] for t in public) == 0, "public tests carry no points"
    assert not data["output"].startswith("Graded"), "one file: nothing to say about a choice"


def _choice_test(data: dict) -> dict:
    """The visible test that names the file graded
    (graders.integrations.gradescope.autograder.choice_test)."""
    [test] = [t for t in data["tests"] if t["name"] == "which file was graded"]
    assert test["visibility"] == "visible" and test["score"] == test["max_score"] == 0
    return test


@pytest.mark.slow
def test_a_filled_notebook_beside_an_untouched_py_is_graded_and_a_visible_test_says_so(
        archive: Path, tree: Path, tmp_path: Path) -> None:
    """The one rule (graders/student/which_file.py): the file that differs from the
    handout is graded. Before it, the untouched .py was graded (0/100) and only the
    after_published output named the notebook left out."""
    import jupytext

    notebook = tmp_path / f"{STEM}.ipynb"
    jupytext.write(jupytext.read(ROOT / "solutions" / f"{STEM}.py"), notebook)
    data, log = dry_run(archive, tree, folder(tmp_path, {
        f"{STEM}.py": ROOT / "assignments" / f"{STEM}.py", f"{STEM}.ipynb": notebook}))
    assert data["score"] == 100
    note = (f"Graded {STEM}.ipynb ({STEM}.py is unchanged from the handout); not graded: "
            f"{STEM}.py.")
    assert data["output"].startswith(note), data["output"]
    assert _choice_test(data)["output"] == note and note in log


@pytest.mark.slow
def test_when_both_differ_the_one_further_from_the_handout_is_graded(
        archive: Path, tree: Path, tmp_path: Path) -> None:
    """ben's .py (a few mistakes) and the whole solution as a notebook both differ from
    the handout; Gradescope's file times need not be the student's, so the one that
    changes more lines is graded, whichever was saved last (the .py here)."""
    import jupytext

    notebook = tmp_path / f"{STEM}.ipynb"
    jupytext.write(jupytext.read(ROOT / "solutions" / f"{STEM}.py"), notebook)
    submission = folder(tmp_path, {f"{STEM}.py": SAMPLES / "ben_typical_mistakes" / f"{STEM}.py",
                                   f"{STEM}.ipynb": notebook})
    os.utime(submission / f"{STEM}.ipynb", (1_000_000_000, 1_000_000_000))  # 2001
    data, _ = dry_run(archive, tree, submission)
    assert data["score"] == 100, "the notebook, not ben's .py, is graded"
    said = _choice_test(data)["output"]
    assert said.startswith(f"Graded {STEM}.ipynb ({STEM}.py differs from the handout too; "
                           f"{STEM}.ipynb differs more from it: "), said


@pytest.mark.slow
def test_only_the_assignment_it_was_built_for_is_graded(
        archive: Path, tree: Path, tmp_path: Path) -> None:
    """An a1 autograder given a4's file scores 0 and says why (it used to grade it as a4);
    a single file under another name is graded as a1 and says so; a broken file scores 0."""
    wrong, _ = dry_run(archive, tree, SAMPLES / "ada_correct" / "a4_flash_attention.py")
    assert wrong["score"] == 0 and wrong["tests"] == []
    assert wrong["output"] == ("this autograder grades a1 (Pallas basics): expected "
                               f"{STEM}.py or {STEM}.ipynb (a4_flash_attention.py is a4's "
                               "file)"), wrong["output"]
    renamed, _ = dry_run(archive, tree, folder(tmp_path, {
        "homework.py": SAMPLES / "ada_correct" / f"{STEM}.py"}))
    assert renamed["score"] == 100
    assert renamed["output"].startswith(f"Graded homework.py as {STEM}.py.")
    broken, _ = dry_run(archive, tree, SAMPLES / "dev_broken" / f"{STEM}.py")
    assert broken["score"] == 0 and "SyntaxError" in broken["tests"][-1]["output"]


@pytest.mark.slow
def test_a_linked_submission_file_is_refused_as_on_gradescope(
        archive: Path, tree: Path, tmp_path: Path) -> None:
    """A link to a file of the TA's (here the solution) is not graded as the student's
    file nor quoted: the dry run copies it as a link and the zip refuses it as the real
    Gradescope run does (before: the dry run copied the solution's bytes, 100 points)."""
    sub = tmp_path / "linked"
    sub.mkdir()
    solution = ROOT / "solutions" / f"{STEM}.py"
    (sub / f"{STEM}.py").symlink_to(solution)
    data, _ = dry_run(archive, tree, sub)
    assert data["score"] == 0
    hidden = [t for t in data["tests"] if "public" not in t.get("tags", [])]
    assert hidden and all(f"{STEM}.py is a symbolic link" in t["output"] for t in hidden)
    text = json.dumps(data)
    quoted = [line for line in solution.read_text(encoding="utf-8").splitlines()
              if len(line.strip()) > 30 and json.dumps(line.strip())[1:-1] in text]
    assert not quoted, f"results.json quotes the linked file: {quoted[:3]}"


def test_building_needs_the_assignment_and_all_builds_one_zip_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        gradescope_main(["--out", str(tmp_path / "autograder.zip")])
    assert stopped.value.code == 2
    assert "the following arguments are required: --assignment" in capsys.readouterr().err
    assert not (tmp_path / "autograder.zip").exists()
    assert gradescope_main(["--assignment", "all", "--out", str(tmp_path / "zips")]) == 0
    built = sorted(p.name for p in (tmp_path / "zips").iterdir())
    assert built == [f"autograder-a{n}.zip" for n in range(1, 6)]
    with zipfile.ZipFile(tmp_path / "zips" / "autograder-a3.zip") as z:
        assert "--assignment a3;" in z.read("run_autograder").decode()
