"""Red-team suite for the performance tasks: code that detects it
is being measured must not change a predicted time.

Each submission in ``tests/redteam/submissions/performance/`` is named
``<attack>__<stem>.py`` and holds the functions an attacker replaces in the solution of
that assignment (appended to it). Before the grader timed its own standard call around
the student's kernel, each earned the task's points with a time it did not have: index
maps that reuse one block only under ``pallas_sim.estimate`` (3.5: 3/10 -> 10/10), a
64 MiB ``vmem_limit_bytes`` only under estimate (an over-VMEM choice, 0/10 -> 10/10), a
kernel that multiplies float8 copies of its blocks only when they are abstract (3.5 and
4.8), a Flash kernel that drops scale, exp, max and rescale only then (4.8). The class,
with an honest student who submits the solution, goes through ``pallas-lab grade --format
gradescope`` once, as in production.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import pallas_lab

REPO = Path(__file__).resolve().parents[2]
ATTACKS_DIR = Path(__file__).resolve().parent / "submissions" / "performance"
RUN_LIMIT = 600


@dataclass(frozen=True)
class PerformanceAttack:
    """One attack: its file's ``name`` and ``stem``, the performance ``task``, the points
    it may earn there (``points``: what its honest counterpart earns), the phrases its
    feedback must contain; every other task keeps its full points."""

    name: str
    stem: str
    task: str
    points: float
    says: tuple[str, ...]


ATTACKS = [
    # Honest (512, 2048, 1024) is 3.09 ms in the standard call: legal, not fast (3 of 10).
    PerformanceAttack("reuse_block_under_estimate", "a3_matmul", "3.5", 3.0,
                      ("(512, 2048, 1024) are predicted",
                       "the best candidate for your own kernel")),
    PerformanceAttack("vmem_limit_under_estimate", "a3_matmul", "3.5", 0.0,
                      ("do not fit the 32 MiB scoped VMEM",)),
    # The next three tell a shapes-only run by a kernel value's repr. A kernel value now
    # prints as a JAX tracer does (shape and dtype only), so they cannot: each runs the
    # solution's kernel everywhere and earns what its honest counterpart does (before the
    # repr showed no data, the counts differed between the two runs: 0 of 10, "different
    # work when it runs on shapes only", which tests/labs/test_performance_a3.py still tests).
    # (1024, 2048, 1024) is the best candidate: 10 of 10.
    PerformanceAttack("fp8_under_estimate", "a3_matmul", "3.5", 10.0, ()),
    # (1024, 2048, 70.0) is 22 % slower than (2048, 2048, 70.0): 3 of 10.
    PerformanceAttack("drop_softmax_under_estimate", "a4_flash_attention", "4.8", 3.0,
                      ("22 % slower than (2048, 2048, 70.0)",)),
    PerformanceAttack("fp8_under_estimate", "a4_flash_attention", "4.8", 3.0,
                      ("22 % slower than (2048, 2048, 70.0)",)),
]


def _student(attack: str, stem: str) -> str:
    return f"{attack}__{stem}"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """results.json per student folder of the graded class."""
    base = tmp_path_factory.mktemp("performance-attacks")
    klass, out = base / "class", base / "results"
    (klass / "honest").mkdir(parents=True)
    for stem in {attack.stem for attack in ATTACKS}:
        shutil.copy(REPO / "solutions" / f"{stem}.py", klass / "honest" / f"{stem}.py")
    for attack in ATTACKS:
        folder = klass / _student(attack.name, attack.stem)
        folder.mkdir()
        solution = (REPO / "solutions" / f"{attack.stem}.py").read_text(encoding="utf-8")
        text = (ATTACKS_DIR / f"{attack.name}__{attack.stem}.py").read_text(encoding="utf-8")
        (folder / f"{attack.stem}.py").write_text(solution + "\n\n" + text, encoding="utf-8")
    done = subprocess.run([*pallas_lab(), "grade", str(klass), "--jobs", "2", "--format",
                           "gradescope", "--out", str(out)], cwd=base, capture_output=True,
                          text=True, timeout=RUN_LIMIT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return {f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text("utf-8"))
            for p in out.glob("*/*/results.json")}


def _feedback(result: dict[str, Any]) -> str:
    return "\n".join(test.get("output", "") for test in result["tests"])


def _task_scores(result: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in result["tests"]:
        scores[test["number"]] = scores.get(test["number"], 0.0) + test["score"]
    return scores


def test_the_honest_student_keeps_full_marks(results: dict[str, dict[str, Any]]) -> None:
    honest = {key: r for key, r in results.items() if key.startswith("honest/")}
    assert honest, sorted(results)
    for key, result in honest.items():
        assert result["score"] == 100, (key, _feedback(result))


@pytest.mark.parametrize("attack", ATTACKS, ids=[f"{a.name}-{a.stem}" for a in ATTACKS])
def test_detecting_the_measurement_buys_no_time(results: dict[str, dict[str, Any]],
                                                attack: PerformanceAttack) -> None:
    result = results[f"{_student(attack.name, attack.stem)}/{attack.stem}"]
    feedback = _feedback(result)
    scores = _task_scores(result)
    assert scores[attack.task] == attack.points, (attack.name, scores, feedback)
    others = {task: points for task, points in scores.items() if task != attack.task}
    honest = _task_scores(results[f"honest/{attack.stem}"])
    assert others == {task: honest[task] for task in others}, (
        "the attack is graded on its own task only")
    for phrase in attack.says:
        assert phrase in feedback, (phrase, feedback)
