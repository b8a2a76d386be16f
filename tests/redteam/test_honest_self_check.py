"""Honest students (rt-honest): the public self-check of a performance task agrees with the
grade. A student reads only the handout, runs the sweep it describes with
``pallas_sim.estimate`` and picks the fastest legal choice for their own kernel; the grade
credits it (Task 4.8 compares with the best candidate for the student's own kernel), so
``pallas-lab check`` must not call the same choice failing.

``honest_students/uma/a4_flash_attention.py`` is a correct Flash kernel (Tasks 4.3 and 4.4
pass) that is slower than the reference's: it multiplies q and k in float32 and computes
``l``'s row sums from a second ``exp(s - m)``. Its own sweep's best is (2048, 2048, 70.0)
at 3.1045 ms, and ``pallas-lab grade`` gives Task 4.8 10/10. Found failing: the self-check
said "your configuration (2048, 2048, 70.0) is predicted slower than 10 % above the
fastest legal candidate ... expected: at most 3.0009 ms (fastest 2.7281 ms)", the
reference kernel's fastest, not the student's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cli import pallas_lab

HERE = Path(__file__).resolve().parent
STUDENT = HERE / "honest_students" / "uma" / "a4_flash_attention.py"


def test_the_self_check_credits_the_best_choice_for_the_students_own_flash_kernel() -> None:
    done = subprocess.run([*pallas_lab(), "check", "--task", "4.8", str(STUDENT)],
                          cwd=STUDENT.parent, capture_output=True, text=True, timeout=600,
                          check=False)
    out = done.stdout + done.stderr
    text = " ".join(out.split())  # the table wraps at the terminal's width
    assert "Task 4.8 choose_flash_config (performance): passed" in text, out[-2000:]
    assert done.returncode == 0, out[-2000:]
