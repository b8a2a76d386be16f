"""A new assignment touches only its own places: a throwaway lab, end to end.

A temporary copy of the repository gets a one-task assignment ``a6_fixture``:
its lab package (record, hidden check in ``hidden/``, public check in ``public/``)
and its solution, nothing else. The copy's own commands then discover it, release
its handout, grade the solution (100) and the handout (0), and write a student
bundle that ships its public checks but not its hidden ones, where ``pallas-lab
check`` runs them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEM = "a6_fixture"
LAB_FILES = {
    "__init__.py": '''
        """A fixture assignment (tests/course/test_new_lab.py)."""

        from graders.course.records import Assignment, Task

        ASSIGNMENT = Assignment(
            id="a6", stem="a6_fixture", title="Fixture", lecture="§9",
            tasks=(Task(id="6.1", functions=("double",), points=100),),
            package=__name__,
        )
        ''',
    "public/__init__.py": '''"""Shipped to students."""''',
    "hidden/__init__.py": '''"""Never shipped."""''',
    "hidden/checks.py": '''
        """Hidden checks of the fixture assignment."""

        import numpy as np

        from graders.checking.framework import CheckFailure, Session, check


        @check("a6", "6.1", 100, "double doubles")
        def double_values(s: Session) -> None:
            """Task 6.1: double(x) == 2 x."""
            x = np.arange(6, dtype=np.float32)
            got = np.asarray(s.call("double", x).value)
            if got.shape != x.shape or not np.array_equal(got, 2 * x):
                raise CheckFailure("double(x) differs from 2 x", expected=str(2 * x),
                                   got=str(got))
        ''',
    "public/public_checks.py": '''
        """Public checks of the fixture assignment."""

        import numpy as np

        from graders.student.public import Api, Mismatch, public_check


        @public_check("a6", "6.1", "double(x) == 2 x")
        def double_public(api: Api) -> None:
            """Task 6.1: double(x) == 2 x."""
            x = np.arange(4, dtype=np.float32)
            got = np.asarray(api.call("double", x).value)
            if not np.array_equal(got, 2 * x):
                raise Mismatch("double(x) differs", expected=str(2 * x), got=str(got))
        ''',
}
SOLUTION = '''
    # %% [markdown]
    # # Assignment 6 — Fixture

    # %%
    import numpy as np


    # %%
    def double(x):
        """Task 6.1: twice x.

        x: a NumPy array; returns 2 x, same shape and dtype.
        """
        ### BEGIN SOLUTION
        return 2 * np.asarray(x)
        ### END SOLUTION
    '''


def _copy_repository(dest: Path) -> None:
    """The tracked files of the parts a course needs (no tests, examples or bench)."""
    listed = subprocess.run(["git", "ls-files", "pallas_sim", "reference", "graders",
                             "solutions", "assignments", "pyproject.toml"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in listed.splitlines():
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / name)


def _run(copy: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd or copy)}
    return subprocess.run([sys.executable, *args], cwd=cwd or copy, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.slow
def test_a_new_lab_is_discovered_graded_released_and_bundled(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    _copy_repository(copy)
    lab = copy / "graders" / "labs" / STEM
    lab.mkdir()
    for name, text in LAB_FILES.items():
        (lab / name).parent.mkdir(parents=True, exist_ok=True)
        (lab / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (copy / "solutions" / f"{STEM}.py").write_text(textwrap.dedent(SOLUTION).lstrip(),
                                                   encoding="utf-8")

    found = _run(copy, "-c", "import graders, graders.course.catalog as a; "
                             "print(graders.__file__); print(list(a.ASSIGNMENTS))")
    assert found.returncode == 0, found.stderr
    where, ids = found.stdout.splitlines()
    assert Path(where).is_relative_to(copy), "the copy's own graders package is imported"
    assert ids == str(["a1", "a2", "a3", "a4", "a5", "a6"]), "the new lab is discovered"

    released = _run(copy, "-m", "graders.cli.main", "release", STEM)
    assert released.returncode == 0, released.stderr
    handout = (copy / "assignments" / f"{STEM}.py").read_text(encoding="utf-8")
    assert 'raise NotImplementedError("Need to implement for Task 6.1")' in handout
    assert (copy / "assignments" / f"{STEM}.ipynb").is_file()

    for folder, score in (("solutions", 100), ("assignments", 0)):
        out = tmp_path / f"{folder}.json"
        graded = _run(copy, "-m", "graders.cli.main", "grade", f"{folder}/{STEM}.py",
                      "--format", "gradescope", "--out", str(out))
        assert graded.returncode == 0, graded.stderr
        data = json.loads(out.read_text(encoding="utf-8"))
        assert data["score"] == score, (folder, data)
        assert [t["number"] for t in data["tests"]] == ["6.1"]

    bundle = tmp_path / "bundle"
    bundled = _run(copy, "-m", "graders.cli.main", "release", "--bundle", str(bundle))
    assert bundled.returncode == 0, bundled.stderr
    shipped = bundle / "graders" / "labs" / STEM
    assert (shipped / "public" / "public_checks.py").is_file()
    assert (shipped / "__init__.py").is_file()
    assert not (shipped / "hidden").exists(), "the hidden checks never ship"
    solution_copy = bundle / f"{STEM}.py"
    shutil.copyfile(copy / "solutions" / f"{STEM}.py", solution_copy)
    checked = _run(copy, "-m", "graders.student.cli", "check", str(solution_copy), cwd=bundle)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "6.1" in checked.stdout and "passed" in checked.stdout, checked.stdout
