"""A small class graded with a late policy through the real CLI: the helpers the late-work
red-team tests share (tests/redteam/test_late_attacks.py, test_late_attacks_2.py)."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from pathlib import Path

from tests.helpers.cli import pallas_lab

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "examples" / "submissions" / "ada_correct" / "a1_pallas_basics.py"
STEM = "a1_pallas_basics"
#: Scores 0 and loads in no time: for students whose own score does not matter.
NOTHING = "x = 1\n"
RUN_LIMIT = 300
DUE = "2026-03-01 12:00 UTC"
DUE_EPOCH = 1772366400.0  # 2026-03-01 12:00 UTC
DAY = 86400.0


def _put(path: Path, *, solution: bool, when: float) -> Path:
    """A submission at ``path``: the solution (100 points) or ``NOTHING``, modified at
    ``when`` (seconds since the epoch)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if solution:
        shutil.copyfile(SOLUTION, path)
    else:
        path.write_text(NOTHING, encoding="utf-8")
    os.utime(path, (when, when))
    return path


def grade(*args: object, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([*pallas_lab(), "grade", *map(str, args), "--timeout", "5"],
                          cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=RUN_LIMIT)


def book(results: Path) -> dict[str, dict[str, str]]:
    with open(results / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def late_flags(due: str = DUE) -> list[str]:
    return ["--due", f"a1={due}", "--late-policy", "zero"]


# --------------------------------------------------------------------------------------
# Attacks that work (each test fails on the current code)
# --------------------------------------------------------------------------------------
