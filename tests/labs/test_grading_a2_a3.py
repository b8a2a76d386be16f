"""End-to-end grading of a2_pipelining and a3_matmul: why the samples lose points.

Every submission goes through the real pipeline: the static check, a worker
subprocess, the hypothesis checks against the hidden reference. The scores of
the solutions, handouts and samples are tested once, in tests/labs/test_labs.py
(from examples/submissions/scores.toml). Single mistakes are graded by the corpus
(tests/corpus).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from graders.course.catalog import assignment_for_stem
from graders.grading.result import SubmissionResult
from tests.helpers.labs import file_of
from tests.helpers.samples import graded_sample

ROOT = Path(__file__).resolve().parents[2]
A2, A3 = file_of("a2"), file_of("a3")


def graded(student: str, stem: str) -> SubmissionResult:
    """The sample ``student``'s ``stem`` file, graded once (tests/helpers/samples.py)."""
    return graded_sample(student, Path(stem).stem)


def feedback_of(result: SubmissionResult, task: str) -> str:
    return "\n".join(c.feedback for c in result.checks if c.task == task)


def test_ben_a2_feedback_names_each_mistake() -> None:
    result = graded("ben_typical_mistakes", A2)
    assert "n_buffers is ignored" in feedback_of(result, "2.1")
    assert "truncated with int()" in feedback_of(result, "2.2")
    assert "double-buffer shortcut" in feedback_of(result, "2.3")


def test_ben_a3_feedback_shows_the_revisit_error_the_poison_and_the_relu() -> None:
    result = graded("ben_typical_mistakes", A3)
    wrapper = feedback_of(result, "3.2")
    assert "RevisitedOutputBlockError" in wrapper and "Put the reduction axis last" in wrapper, (
        "a grid with K first fails with the simulator's revisit error in the feedback")
    assert "the K axis is not the last grid axis" in wrapper
    kernel = feedback_of(result, "3.1")
    assert "nan" in kernel and "not zeroed at k == 0" in kernel, (
        "poisoned output buffers make the missing initialization visible")
    assert "ReLU is applied at every k step" in kernel


def test_dev_broken_fails_for_the_documented_reasons() -> None:
    a2 = graded("dev_broken", A2)
    assert a2.load_error and "line 26" in a2.load_error and "collections" in a2.load_error
    a3 = graded("dev_broken", A3)
    timeouts = [c.reason for c in a3.checks if c.task == "3.4" and c.status == "timeout"]
    assert len(timeouts) == 2 and all("min_compute_bound_block" in r for r in timeouts), (
        "the endless loop in min_compute_bound_block fails its two checks by timeout")
    assert "TypeError" in feedback_of(a3, "3.1")


def test_pallas_lab_grade_gives_both_solutions_100(tmp_path: Path) -> None:
    student = tmp_path / "solutions"
    student.mkdir()
    for stem in (A2, A3):
        shutil.copy(ROOT / "solutions" / stem, student / stem)
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "graders.cli.main", "grade", str(student), "--format", "gradescope",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for stem in (A2, A3):
        data = json.loads((out / "solutions" / Path(stem).stem / "results.json").read_text())
        assert data["score"] == 100, f"pallas-lab grade gives solutions/{stem} {data['score']}"
        numbers = {t["number"] for t in data["tests"]}
        assignment = assignment_for_stem(Path(stem).stem)
        assert assignment is not None
        tasks = {t.id for t in assignment.graded_tasks}
        assert numbers == tasks, "results.json numbers the tests by task id"
