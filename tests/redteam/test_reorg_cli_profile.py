"""Red-team pass after the reorganisation: ``pallas-lab profile`` on a file it cannot load.

The command's own contract (``graders.student.kernel_profile.main``): "returns the exit
status (2: bad input)". A FILE that does not compile (a syntax error, bytes that are not
UTF-8) is bad input, but ``load_module`` runs outside any ``try``: the TA gets a Python
traceback and exit status 1, the status the CLI reserves for a grader failure.

This failed before ``main`` caught a file that does not load (exit 2 with one line now).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("source", [b"def f(:\n", b"\xff\xfe def f(): pass\n"],
                         ids=["syntax error", "not UTF-8"])
def test_profile_of_a_file_that_does_not_compile_is_a_usage_error(
        tmp_path: Path, source: bytes) -> None:
    file = tmp_path / "broken.py"
    file.write_bytes(source)
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    run = subprocess.run([sys.executable, "-m", "graders.cli.main", "profile", str(file),
                          "--function", "f"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, (
        f"exit {run.returncode}\n{run.stderr[-1200:]}")
