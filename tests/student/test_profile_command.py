"""``pallas-lab profile`` through the real command line, on the files students have:
a notebook or a ``.py`` whose tasks are not all done, and files it cannot read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _profile(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "graders.cli.main", "profile", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("suffix", [".ipynb", ".py"])
def test_an_unfinished_splash_handout_is_profiled_without_a_traceback(
        tmp_path: Path, suffix: str) -> None:
    """``pallas-lab profile a5_splash_attention.ipynb`` on a student's notebook whose
    Task 5.1 is not done printed a Python traceback (the lecture's configuration builds
    its MaskInfo with the student's ``causal_mask`` before anything is profiled, outside
    any ``try``), with the notebook's JSON as the traceback's source lines. Now it says
    in one line what the file raised, as for any other failing configuration, and exits 1."""
    name = f"a5_splash_attention{suffix}"
    shutil.copyfile(REPO / "assignments" / name, tmp_path / name)
    run = _profile(tmp_path, name)
    both = run.stdout + run.stderr
    assert run.returncode == 1 and "Traceback" not in both, both[-2000:]
    assert "NotImplementedError: Need to implement for Task 5.1" in both, both
    line = next(x for x in both.splitlines() if "NotImplementedError" in x)
    assert "causal_mask" in line or "mask" in line, line


@pytest.mark.parametrize(("make", "says"), [
    (lambda p: p.mkdir(), "is a folder, not a file"),
    (lambda p: p.write_text("{not json", encoding="utf-8"), "is not a Jupyter notebook"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00\x01"), "not valid UTF-8"),
], ids=["folder", "not JSON", "not UTF-8"])
def test_a_notebook_it_cannot_read_is_one_line_and_exit_2(tmp_path: Path, make,
                                                          says: str) -> None:
    """A file profile cannot read is named in one line that says why, exit 2 (a folder
    was reported as "no such file"; a broken notebook as "does not compile: ... was not
    run: ...")."""
    path = tmp_path / "a3_matmul.ipynb"
    make(path)
    run = _profile(tmp_path, path.name)
    assert run.returncode == 2 and run.stdout == "", run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("pallas-lab profile: cannot read a3_matmul.ipynb"), run.stderr
    assert says in run.stderr and "does not compile" not in run.stderr, run.stderr


@pytest.mark.parametrize("suffix", [".ipynb", ".py"])
def test_a_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path,
                                                           suffix: str) -> None:
    # Not a file's mode (root, as CI runs, reads any file whatever its mode): a link to a
    # file that is not there, which every user fails to open.
    path = tmp_path / f"a3_matmul{suffix}"
    path.symlink_to(tmp_path / "gone" / path.name)
    run = _profile(tmp_path, path.name)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stdout + run.stderr
    assert run.stderr.startswith(f"pallas-lab profile: cannot read {path.name}"), run.stderr
