"""``pallas-lab check --backend jax FILE``: a student's own file on real Pallas.

Runs the real command in a subprocess on real files: the a1 solution (every
Pallas task passes on JAX), the a1 handout (stubs: not started), and a
submission that only works because pallas_sim updates an aliased input in
place — JAX arrays are immutable, so the JAX run exposes it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def check(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graders.cli", "check", "--backend", "jax",
                           str(path), *extra], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, check=False)


def test_the_a1_solution_passes_every_pallas_task_on_real_jax():
    done = check(ROOT / "solutions" / "a1_pallas_basics.py")
    out = done.stdout
    for task in ("1.1", "1.2", "1.3", "1.4", "1.5"):
        assert re.search(rf"Task {re.escape(task)} \w+: passed", out), out
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_untouched_handout_is_not_started(tmp_path):
    done = check(ROOT / "assignments" / "a1_pallas_basics.py", "--task", "1.2")
    assert "Task 1.2 blocked_add: not started" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1


def test_relying_on_an_in_place_update_fails_on_jax_only(tmp_path):
    source = (ROOT / "solutions" / "a1_pallas_basics.py").read_text(encoding="utf-8")
    start = source.index("    return pl.pallas_call(\n        _accumulate_kernel,")
    end = source.index(")(acc, x)", start) + len(")(acc, x)")
    broken = source[:start] + source[start:end].replace("return pl.pallas_call(",
                                                        "pl.pallas_call(") + "\n    return acc"
    broken += source[end:]
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text(broken, encoding="utf-8")
    done = check(path, "--task", "1.4")
    assert "Task 1.4 accumulate_inplace: failing" in done.stdout, done.stdout + done.stderr
    assert "accumulate_inplace on" in done.stdout and "differ" in done.stdout, done.stdout
    assert done.returncode == 1
