"""The class report counts the diagnoses the grader verified, never text a student wrote
(docs/security.md, "Class folders").

Before the fix ``--report`` found its "mistakes seen" in the feedback's lines that start
with "  looks like: ", and the feedback quotes what the student's code raised: an
exception message holding "\\n  looks like: ..." was counted, in the table and the chart,
as a diagnosis the grader had verified. Now the grader records the diagnosis it computed
in its own field (``CheckResult.diagnosis``, results.json's
``extra_data.pallas_lab.checks[].diagnosis``) and the report counts only that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "solutions" / "a1_pallas_basics.py"
BEN = REPO / "examples" / "submissions" / "ben_typical_mistakes" / "a1_pallas_basics.py"
STEM = "a1_pallas_basics"
#: The solution with Task 1.3's bias_add raising a message that forges a diagnosis line.
FORGER = '''

def bias_add(*args, **kwargs):
    raise ValueError("no\\n  looks like: FORGED the grid reads every block twice (lecture §2.2)")
'''


def test_a_forged_looks_like_line_is_not_counted_and_a_verified_one_is(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    for name, source in (("ben", BEN.read_text(encoding="utf-8")),
                         ("mallory", SOLUTION.read_text(encoding="utf-8") + FORGER)):
        (klass / name).mkdir(parents=True)
        (klass / name / f"{STEM}.py").write_text(source, encoding="utf-8")
    out = tmp_path / "results"
    run = subprocess.run(
        [sys.executable, "-m", "graders.cli.main", "grade", str(klass), "--jobs", "2", "--out",
         str(out), "--report", "--timeout", "5"], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    mallory = json.loads((out / "mallory" / STEM / "results.json").read_text(encoding="utf-8"))
    assert any("looks like: FORGED" in test["output"] for test in mallory["tests"]), (
        "the forged line does reach the feedback, as the student's message")
    assert not any("\n  looks like: FORGED" in test["output"] for test in mallory["tests"]), (
        "indented under the problem it quotes, never where the grader's own label stands")
    report = (out / "class_report.txt").read_text(encoding="utf-8")
    assert "FORGED" not in report, report
    assert "column-block axis" in report, f"ben's verified 1.3 mistake is counted:\n{report}"
    ben = json.loads((out / "ben" / STEM / "results.json").read_text(encoding="utf-8"))
    recorded = [c.get("diagnosis", "") for c in ben["extra_data"]["pallas_lab"]["checks"]]
    assert any("column-block axis" in d for d in recorded), recorded
