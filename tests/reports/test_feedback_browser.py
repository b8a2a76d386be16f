"""The feedback page in a real browser (headless Chromium): it renders, a screenshot is
taken, and a reader at 400 px (a phone) or on a desktop never scrolls sideways, whatever
the student's code printed or raised."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from graders.grading.result import CheckResult, SubmissionResult
from graders.reports.feedback_files import feedback_html
from tests.helpers.browser import page_widths
from tests.helpers.cli import pallas_lab

ROOT = Path(__file__).resolve().parents[2]
BEN = ROOT / "examples" / "submissions" / "ben_typical_mistakes" / "a1_pallas_basics.py"


def test_the_width_check_sees_a_page_that_scrolls_sideways(tmp_path: Path) -> None:
    """The measure itself can fail: a line that does not wrap is wider than the frame."""
    wide = f'<!DOCTYPE html><html><body><pre style="white-space:pre">{"x" * 300}</pre>'
    content, visible = page_widths(wide, 400, tmp_path)
    assert content > visible, (content, visible)


def test_a_graded_files_feedback_page_renders_without_sideways_scrolling(
        tmp_path: Path) -> None:
    klass = tmp_path / "class"
    (klass / "ben").mkdir(parents=True)
    shutil.copy(BEN, klass / "ben" / BEN.name)
    out = tmp_path / "results"
    out.mkdir()  # a folder: one student still gets the class layout
    done = subprocess.run([*pallas_lab(), "grade", str(klass), "--format", "gradescope",
                           "--out", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    folder = out / "ben" / BEN.stem
    page = (folder / "feedback.html").read_text(encoding="utf-8")
    failed = [t for t in json.loads((folder / "results.json").read_text(encoding="utf-8"))[
        "tests"] if t["score"] < t["max_score"]]
    assert failed and page.count('<section class="check">') == len(failed), (
        "one section per failed check")
    assert page.count('class="diagnosis"') >= 1, "ben's mistakes are diagnosed"
    for width in (400, 1100):
        shot = tmp_path / f"feedback-{width}.png"
        content, visible = page_widths(page, width, tmp_path, screenshot=shot)
        assert content <= visible, f"at {width} px the page is {content} px wide"
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000


def test_long_unbroken_text_from_a_student_wraps_at_phone_width(tmp_path: Path) -> None:
    long_name = "s" * 200
    feedback = "\n".join([
        "Task 1.3 bias_add — 0/25",
        "  check: bias_add's values",
        f"  problem: {'E' * 500}",
        f"  smallest failing input:  x = np.zeros(({'9' * 300},))",
        f"  expected: [{', '.join(['1.0'] * 200)}]",
        f"  got:      [{', '.join(['2.0'] * 200)}]",
        "  in your file:",
        f"    File \"a1_pallas_basics.py\", line 3, in {'f' * 300}",
        "  your code printed:",
        f"    {'p' * 400}",
    ])
    result = SubmissionResult(long_name, "a1_pallas_basics", "a1", f"{'n' * 250}.py")
    result.checks.append(CheckResult(
        assignment="a1", task="1.3", check="values", points=0, max_points=25,
        status="failed", feedback=feedback, reason="E" * 500))
    content, visible = page_widths(feedback_html(result), 400, tmp_path)
    assert content <= visible, f"the page is {content} px wide in a {visible} px frame"


@pytest.mark.parametrize("run", [
    pytest.param("\u1100" * 400, id="hangul-jamo"),
    pytest.param("\u200d".join(["\U0001f600"] * 151), id="emoji-joined"),
    pytest.param("\u0915" + "\u093e" * 400, id="devanagari-vowel-signs"),
    pytest.param("Z" + "\u0316" * 400, id="combining-marks"),
    pytest.param("\uff76" + "\uff9e" * 400, id="halfwidth-voiced-marks"),
    pytest.param("\u0d4e" * 300, id="malayalam-prepend"),
    pytest.param("\u0915\u094d" * 200, id="devanagari-conjunct-chain"),
])
def test_one_huge_grapheme_cluster_cannot_widen_the_page(run: str, tmp_path: Path) -> None:
    """Red team: no line may break inside a grapheme cluster, so one cluster of hundreds of
    code points in a message, a name or a reason made the page 3899 px wide."""
    result = SubmissionResult(f"zoe{run}", "a1_pallas_basics", "a1", "a1_pallas_basics.py")
    result.checks.append(CheckResult(
        assignment="a1", task="1.3", check="values", points=0, max_points=25,
        status="failed", reason=run, feedback="\n".join([
            "Task 1.3 bias_add — 0/25", "  check: values", f"  problem: {run}"])))
    content, visible = page_widths(feedback_html(result), 400, tmp_path)
    assert content <= visible, f"the page is {content} px wide in a {visible} px frame"
