"""The closing line of a `--task` batch says what happened: that task's checks were run
again and every student kept the rest of their results (found by a TA trying the tool)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graders.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
STEM = "a1_pallas_basics"


@pytest.mark.slow
def test_a_task_rerun_does_not_say_that_no_student_keeps_their_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    for name, sample in (("ada", "ada_correct"), ("ben", "ben_typical_mistakes")):
        (klass / name).mkdir(parents=True)
        shutil.copyfile(SAMPLES / sample / f"{STEM}.py", klass / name / f"{STEM}.py")
    grade = ["grade", str(klass), "--jobs", "2", "--out", str(out)]
    assert main(grade) == 0
    capsys.readouterr()
    assert main([*grade, "--task", "1.3"]) == 0
    line = " ".join(capsys.readouterr().out.split()).rpartition("Totals")[2]
    # It said "graded 2 student(s) selected by --task 1.3; 0 other student(s) keep their
    # results": both students kept every result but Task 1.3's checks, which were merged
    # back into them (docs/ta-guide.md, "Regrades"), and nobody was graded in full.
    assert "0 other student(s) keep their results" not in line, line
    assert "--task 1.3" in line, line
    assert "re-ran the checks of --task 1.3 for 2 student(s), merged into their results" in (
        line), line
    # A TA's walk: it ended "(a file changed since its result was graded in full)" when
    # no file had changed; the rule is the guide's, not news of this run.
    assert "a file changed" not in line, line
