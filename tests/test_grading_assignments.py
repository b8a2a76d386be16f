"""End-to-end grading of the real assignments (a1, a4).

Each submission runs through the real pipeline: static check, a worker
subprocess, the hypothesis checks against the hidden reference.  The expected
scores of the sample submissions are the ones documented in
``examples/submissions/README.md``. Single mistakes are graded by the corpus
(tests/corpus), which proves that each graded behaviour can cost points.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graders.grading import SubmissionResult, grade_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "examples" / "submissions"
A1, A4 = "a1_pallas_basics.py", "a4_flash_attention.py"


def task_points(result: SubmissionResult) -> dict[str, float]:
    """Points per graded task, e.g. {"1.1": 15, ...}."""
    return {t.task: t.points for t in result.tasks() if t.graded}


@pytest.mark.parametrize("stem, full", [(A1, 100), (A4, 100)])
def test_the_solutions_get_every_graded_point(stem: str, full: int) -> None:
    result = grade_file(ROOT / "solutions" / stem)
    assert (result.score, result.max_score) == (full, full), (
        f"solutions/{stem} must get full marks on every graded task; feedback of the "
        f"failures: {[c.feedback for c in result.checks if c.status != 'passed']}")


@pytest.mark.parametrize("stem", [A1, A4])
def test_the_untouched_handouts_get_zero_and_say_not_started(stem: str) -> None:
    result = grade_file(ROOT / "assignments" / stem)
    assert result.score == 0, "a handout whose stubs all raise NotImplementedError earns nothing"
    assert {t.status for t in result.tasks() if t.graded} == {"not started"}, (
        "every graded task of an untouched handout is reported as not started")


EXPECTED = {
    ("ada_correct", A1): {"1.1": 15, "1.2": 25, "1.3": 25, "1.4": 20, "1.5": 15},
    # ada's a4 predates the handout's edge cases (issue 12): online_softmax gives NaN for a
    # block of only -inf (4.1 loses the masked-rows check, 3) and flash_attention does not
    # refuse k, v of another length than q (4.4 loses the length check, 2).
    ("ada_correct", A4): {"4.1": 12, "4.2": 15, "4.3": 30, "4.4": 18, "4.5": 5, "4.6": 15},
    # column-block axis inner (1.3 keeps its 10 value points), buffer_count ignored (1.5
    # keeps the 6 worked-answer points); 4.1 without the rescale of l; 4.2 asymmetric
    # merge keeps only finalize's 3 points; 4.3's causal mask hides the diagonal too (only
    # the 10 points of the unmasked kernel check kept), and 4.4 keeps its 8 trace points.
    ("ben_typical_mistakes", A1): {"1.1": 15, "1.2": 25, "1.3": 10, "1.4": 20, "1.5": 6},
    ("ben_typical_mistakes", A4): {"4.1": 0, "4.2": 3, "4.3": 10, "4.4": 8, "4.5": 5,
                                   "4.6": 15},
    ("cleo_untouched", A1): {"1.1": 0, "1.2": 0, "1.3": 0, "1.4": 0, "1.5": 0},
    ("cleo_untouched", A4): {"4.1": 0, "4.2": 0, "4.3": 0, "4.4": 0, "4.5": 0, "4.6": 0},
    ("dev_broken", A1): {"1.1": 0, "1.2": 0, "1.3": 0, "1.4": 0, "1.5": 0},
    # 4.3's kernel indexes lane 128 of a 128-lane scratch; 4.4 passes no scratch_shapes.
    ("dev_broken", A4): {"4.1": 0, "4.2": 15, "4.3": 0, "4.4": 0, "4.5": 5, "4.6": 15},
}


@pytest.mark.parametrize("student, stem", sorted(EXPECTED))
def test_sample_submissions_get_their_documented_scores(student: str, stem: str) -> None:
    # A short timeout keeps dev_broken's infinite loop cheap; correct calls take milliseconds.
    result = grade_file(SAMPLES / student / stem, timeout=2.0)
    assert task_points(result) == EXPECTED[student, stem], (
        f"{student}/{stem}: per-task points differ from examples/submissions/README.md; "
        f"reasons: {[(t.task, t.reason) for t in result.tasks() if t.points < t.max_points]}")


def test_the_broken_samples_fail_for_the_documented_reasons() -> None:
    a1 = grade_file(SAMPLES / "dev_broken" / A1)
    assert a1.load_error and "line 118" in a1.load_error and "SyntaxError" in a1.load_error, (
        "a syntax error is reported with its line before anything runs")
    a4 = grade_file(SAMPLES / "dev_broken" / A4, timeout=1.0)
    statuses = {c.status for c in a4.checks if c.task == "4.1"}
    assert statuses == {"timeout"}, "the infinite loop in online_softmax fails 4.1 by timeout"
    ben = grade_file(SAMPLES / "ben_typical_mistakes" / A4)
    feedback = "\n".join(c.feedback for c in ben.checks if c.task == "4.1")
    assert "not rescaled by exp(m_old - m_new)" in feedback, (
        "the missing rescale of l is named in the feedback (style.md)")


def test_grading_twice_through_the_cli_gives_identical_results_json(tmp_path: Path) -> None:
    outputs = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.json"
        done = subprocess.run(
            [sys.executable, "-m", "graders.cli", "grade", str(ROOT / "solutions" / A1),
             "--format", "gradescope", "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        data = json.loads(out.read_text())
        data.pop("execution_time", None)
        for test in data["tests"]:
            test.pop("execution_time", None)
        outputs.append(data)
    assert outputs[0] == outputs[1], "the grading profile is deterministic"
    assert outputs[0]["score"] == 100 and {t["number"] for t in outputs[0]["tests"]} == {
        "1.1", "1.2", "1.3", "1.4", "1.5"}, "results.json numbers tests by task id"
