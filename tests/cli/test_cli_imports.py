"""The command line's main process imports neither pallas_sim nor ml_dtypes until it
grades something itself: in a batch the grader processes and the worker zygote load them,
and ml_dtypes alone takes most of a second of CPU to import (it registers its casts and
ufunc loops with numpy), which every ``pallas-lab`` run would otherwise pay once more."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_building_the_command_line_loads_no_simulator() -> None:
    probe = ("import sys\n"
             "from graders.cli.main import build_parser\n"
             "import graders.cli.grade, graders.worker.protocol, graders.student.selfcheck\n"
             "build_parser()\n"
             "print(sorted(m for m in ('pallas_sim', 'ml_dtypes') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout


def test_the_lazily_loaded_names_are_the_grading_sanitizers() -> None:
    from graders.grading import grade
    from graders.student import selfcheck
    from pallas_sim.extend import GRADING_SANITIZERS

    assert grade.GRADING_SIM_OPTIONS is GRADING_SANITIZERS
    assert selfcheck.SIM_OPTIONS is GRADING_SANITIZERS
