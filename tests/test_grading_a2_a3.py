"""End-to-end grading of a2_pipelining and a3_matmul.

Every submission goes through the real pipeline: the static check, a worker
subprocess, the hypothesis checks against the hidden reference. The expected
scores of the sample submissions are those in
``examples/submissions/README.md``. Single mistakes are graded by the corpus
(tests/corpus).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graders.grading import SubmissionResult, grade_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "examples" / "submissions"
A2, A3 = "a2_pipelining.py", "a3_matmul.py"
FULL = {A2: {"2.1": 40, "2.2": 25, "2.3": 20, "2.4": 15},
        A3: {"3.1": 30, "3.2": 30, "3.3": 20, "3.4": 20}}


def task_points(result: SubmissionResult) -> dict[str, float]:
    """Points per graded task, e.g. {"2.1": 40, ...}."""
    return {t.task: t.points for t in result.tasks() if t.graded}


@functools.cache
def graded(student: str, stem: str) -> SubmissionResult:
    """One grading of a sample, shared by the tests that read it (grading is deterministic)."""
    # A short timeout keeps dev_broken's endless loop cheap; correct calls take milliseconds.
    return grade_file(SAMPLES / student / stem, timeout=2.0)


def failures(result: SubmissionResult) -> list[tuple[str, str]]:
    return [(c.task, c.reason) for c in result.checks if c.status != "passed"]


@pytest.mark.parametrize("stem", [A2, A3])
def test_the_solutions_get_100_of_100(stem: str) -> None:
    result = grade_file(ROOT / "solutions" / stem)
    assert (result.score, result.max_score) == (100, 100), (
        f"solutions/{stem} must get full marks; failures: {failures(result)}")
    assert task_points(result) == FULL[stem]


@pytest.mark.parametrize("stem", [A2, A3])
def test_the_untouched_handouts_get_zero_and_say_not_started(stem: str) -> None:
    result = grade_file(ROOT / "assignments" / stem)
    assert result.score == 0, "a handout whose stubs all raise NotImplementedError earns nothing"
    assert {c.status for c in result.checks} == {"not started"}, (
        "every check of an untouched handout reports 'not started'")


EXPECTED = {
    ("ada_correct", A2): FULL[A2],
    ("ada_correct", A3): FULL[A3],
    # single buffering whatever n_buffers (invariants 10 kept), int() cells (the single-buffer
    # chart with whole boundaries kept), the double-buffer shortcut (its worked case kept).
    ("ben_typical_mistakes", A2): {"2.1": 10, "2.2": 5, "2.3": 4, "2.4": 15},
    # no zero-init + ReLU every k (3.1 lost), K first (only the ValueErrors of 3.2 kept).
    ("ben_typical_mistakes", A3): {"3.1": 0, "3.2": 4, "3.3": 20, "3.4": 20},
    ("cleo_untouched", A2): {"2.1": 0, "2.2": 0, "2.3": 0, "2.4": 0},
    ("cleo_untouched", A3): {"3.1": 0, "3.2": 0, "3.3": 0, "3.4": 0},
    ("dev_broken", A2): {"2.1": 0, "2.2": 0, "2.3": 0, "2.4": 0},
    ("dev_broken", A3): {"3.1": 0, "3.2": 4, "3.3": 20, "3.4": 12},
}


@pytest.mark.parametrize("student, stem", sorted(EXPECTED))
def test_sample_submissions_get_their_documented_scores(student: str, stem: str) -> None:
    result = graded(student, stem)
    assert task_points(result) == EXPECTED[student, stem], (
        f"{student}/{stem}: per-task points differ from examples/submissions/README.md; "
        f"failures: {failures(result)}")


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
        [sys.executable, "-m", "graders.cli", "grade", str(student), "--format", "gradescope",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for stem in (A2, A3):
        data = json.loads((out / "solutions" / Path(stem).stem / "results.json").read_text())
        assert data["score"] == 100, f"pallas-lab grade gives solutions/{stem} {data['score']}"
        numbers = {t["number"] for t in data["tests"]}
        assert numbers == set(FULL[stem]), "results.json numbers the tests by task id"
