"""Red-team: replies the grader must not believe, decode blindly or spend unbounded work on,
and limits that hold for a submission's whole process tree (docs/security.md, rows
"vacuous comparisons" to "slow but correct").

Each hostile submission in ``tests/redteam/submissions/`` is a solution followed by the
attack (later definitions replace the solution's functions). A class folder of them, with
an honest student, goes through ``pallas-lab grade --format gradescope`` in a subprocess,
as a TA would run it. Submissions that forge replies or fork reach past the in-process
defences with the smuggling trick of ``_smuggle.txt``; their runs set
``PALLAS_LAB_POLICY=off`` so that the layer under test is tested on its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
#: Seconds a CLI run may take before the test calls the grader hung (a hang guard only).
RUN_LIMIT = 300
STEMS = {"a1": "a1_pallas_basics", "a2": "a2_pipelining", "a3": "a3_matmul",
         "a4": "a4_flash_attention", "a5": "a5_splash_attention"}


def solution(assignment: str) -> str:
    """The solution of ``assignment`` (an honest student's file)."""
    return (REPO / "solutions" / f"{STEMS[assignment]}.py").read_text(encoding="utf-8")


def compose(assignment: str, attack: str, *, smuggle: bool = False) -> str:
    """The solution of ``assignment`` followed by the attack (and the smuggling trick)."""
    parts = [solution(assignment)]
    if smuggle:
        parts.append((SUBMISSIONS / "_smuggle.txt").read_text(encoding="utf-8"))
    parts.append((SUBMISSIONS / f"{attack}.py").read_text(encoding="utf-8"))
    return "\n\n".join(parts)


@dataclass
class Graded:
    """One CLI run: results.json per (student, stem), the exit status and the output."""

    results: dict[tuple[str, str], dict[str, Any]]
    returncode: int
    stdout: str
    stderr: str

    def of(self, student: str, assignment: str) -> dict[str, Any]:
        """The results.json of one student's file."""
        return self.results[(student, STEMS[assignment])]


def grade_class(base: Path, students: dict[str, dict[str, str]], *args: str,
                env: dict[str, str] | None = None) -> Graded:
    """Write ``students`` ({name: {assignment: source}}) under ``base/class`` and grade the
    class through the CLI with ``args``; ``env`` is added to this process's environment."""
    klass, out = base / "class", base / "results"
    for student, files in students.items():
        (klass / student).mkdir(parents=True)
        for assignment, text in files.items():
            (klass / student / f"{STEMS[assignment]}.py").write_text(text, encoding="utf-8")
    script = Path(sys.executable).parent / "pallas-lab"
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "graders.cli"]
    run = subprocess.run(
        [*cli, "grade", str(klass), "--format", "gradescope", "--out", str(out), *args],
        cwd=base, capture_output=True, text=True, timeout=RUN_LIMIT, check=False,
        env={**os.environ, "PALLAS_LAB_POLICY": "off", **(env or {})},
    )
    results = {}
    for path in out.glob("*/*/results.json"):
        results[(path.parent.parent.name, path.parent.name)] = json.loads(
            path.read_text(encoding="utf-8"))
    return Graded(results, run.returncode, run.stdout, run.stderr)


def task_points(result: dict[str, Any]) -> dict[str, float]:
    """Points per task id in a results.json."""
    points: dict[str, float] = {}
    for test in result["tests"]:
        points[test["number"]] = points.get(test["number"], 0) + test["score"]
    return points


def feedback(result: dict[str, Any], task: str | None = None) -> str:
    """The feedback of every check (of one task)."""
    return "\n".join(t["output"] for t in result["tests"] if task in (None, t["number"]))


# -- vacuous comparisons and unbounded grader work -------------------------------------------


@pytest.fixture(scope="module")
def replies(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("replies")
    students = {
        "honest": {"a2": solution("a2")},
        "nan_schedule": {"a2": compose("a2", "nan_schedule")},
        "many_patterns": {"a5": compose("a5", "many_patterns")},
    }
    return grade_class(base, students)


def test_the_run_finishes_with_every_student_graded(replies: Graded) -> None:
    assert replies.returncode == 0, replies.stderr[-3000:]
    assert replies.of("honest", "a2")["score"] == 100, feedback(replies.of("honest", "a2"))
    assert {("nan_schedule", STEMS["a2"]), ("many_patterns", STEMS["a5"])} <= set(
        replies.results), sorted(replies.results)


def test_a_nan_schedule_breaks_every_rule_and_is_named(replies: Graded) -> None:
    result = replies.of("nan_schedule", "a2")
    points = task_points(result)
    assert points["2.1"] == 0, (
        "NaN intervals obey no rule of the model: all 40 points of Task 2.1 are lost\n"
        + feedback(result, "2.1"))
    for test in result["tests"]:
        if test["number"] == "2.1":
            assert "NaN" in test["output"], test["output"]
    assert points["2.3"] == 0 and "NaN" in feedback(result, "2.3"), feedback(result, "2.3")
    assert points["2.4"] == 0 and "inf" in feedback(result, "2.4"), feedback(result, "2.4")
    assert points["2.2"] == 25, "render_gantt is the solution's: its 25 points stay"


def test_many_distinct_patterns_are_refused_before_any_pairwise_work(replies: Graded) -> None:
    result = replies.of("many_patterns", "a5")
    by_name = {t["name"]: t for t in result["tests"] if t["number"] == "5.3"}
    fields = next(t for name, t in by_name.items() if name.startswith("build_mask_info equals"))
    invariants = next(t for name, t in by_name.items() if name.startswith("MaskInfo invariants"))
    assert fields["score"] == 0 and invariants["score"] == 0, (fields, invariants)
    assert "holds more patterns than the mask has partial tiles" in fields["output"], fields
    assert "at most one pattern per partial tile" in invariants["output"], invariants
    assert "30001 patterns" in invariants["output"], invariants["output"]
    points = task_points(result)
    # Worked answers use tiles of more than 64 elements and the errors check raises: the
    # attack leaves them as honest as the solution (5 + 5). mask_stats counts the
    # solution's own patterns, so its drawn check (6) fails too.
    assert points["5.3"] == 10 and points["5.5"] == 4, feedback(result)
    assert result["score"] == 100 - 15 - 6, feedback(result)
