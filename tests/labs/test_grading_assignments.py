"""End-to-end grading of a1 and a4: why the samples lose points, and determinism.

The scores of the solutions, handouts and samples of every assignment are tested
once, in tests/labs/test_labs.py (from examples/submissions/scores.toml). Single
mistakes are graded by the corpus (tests/corpus), which proves that each graded
behaviour can cost points.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.samples import graded_sample

ROOT = Path(__file__).resolve().parents[2]
A1 = "a1_pallas_basics.py"


def test_the_broken_samples_fail_for_the_documented_reasons() -> None:
    a1 = graded_sample("dev_broken", "a1_pallas_basics")
    assert a1.load_error and "line 118" in a1.load_error and "SyntaxError" in a1.load_error, (
        "a syntax error is reported with its line before anything runs")
    a4 = graded_sample("dev_broken", "a4_flash_attention")
    statuses = {c.status for c in a4.checks if c.task == "4.1"}
    assert statuses == {"timeout"}, "the infinite loop in online_softmax fails 4.1 by timeout"
    ben = graded_sample("ben_typical_mistakes", "a4_flash_attention")
    feedback = "\n".join(c.feedback for c in ben.checks if c.task == "4.1")
    assert "not rescaled by exp(m_old - m_new)" in feedback, (
        "the missing rescale of l is named in the feedback (docs/style.md)")


def test_grading_twice_through_the_cli_gives_identical_results_json(tmp_path: Path) -> None:
    outputs = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.json"
        done = subprocess.run(
            [sys.executable, "-m", "graders.cli.main", "grade", str(ROOT / "solutions" / A1),
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


def test_gradescope_results_carry_leaderboard_entries_for_the_performance_tasks() -> None:
    """Gradescope's results.json had no `leaderboard` although 3.5, 4.8 and 5.7 are
    performance tasks. Now a graded performance task adds its predicted time (ms, lower
    ranks higher), the same number the gradebook's predicted-ms column shows; a file whose
    performance task predicts nothing adds no leaderboard."""
    from graders.reports.gradebook_csv import predicted_ms
    from graders.reports.gradescope import results_json

    ada = graded_sample("ada_correct", "a3_matmul")
    board = results_json(ada)["leaderboard"]
    assert board == [{"name": "Task 3.5 predicted ms",
                      "value": round(predicted_ms(ada)["3.5"], 4), "order": "asc"}]
    assert 0 < board[0]["value"] < 1000
    assert "leaderboard" not in results_json(graded_sample("cleo_untouched", "a3_matmul"))
