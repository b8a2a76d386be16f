"""The class report's chart: every mistake's label is drawn whole and inside the picture,
however long the diagnosis and however many mistakes (matplotlib, from results built
here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.grading.result import CheckResult, SubmissionResult
from graders.reports.class_report import class_figure, class_stats, write_class_report

LONG = ("the kv blocks past the diagonal are still fetched and multiplied although every "
        "score in them is masked, so the causal kernel does the work of the full one "
        "(lecture §5.4)")


def _results(diagnoses: list[str]) -> list[SubmissionResult]:
    results = []
    for i, diagnosis in enumerate(diagnoses):
        result = SubmissionResult(f"s{i}", "a1_pallas_basics", "a1", "a1_pallas_basics.py")
        result.checks.append(CheckResult(
            assignment="a1", task="1.3", check="grid order", points=0, max_points=25,
            status="failed", feedback="", reason="wrong", diagnosis=diagnosis))
        results.append(result)
    return results


@pytest.mark.parametrize("count", [1, 12])
def test_every_mistake_label_is_whole_and_inside_the_picture(count: int) -> None:
    diagnoses = [f"variant {i}: {LONG}" for i in range(count)]
    figure = class_figure("a1", class_stats(_results(diagnoses))["a1"])
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    box = figure.bbox
    bars = figure.axes[-1]
    labels = [t for t in bars.get_yticklabels() if t.get_text()]
    assert len(labels) == count
    for label in labels:
        extent = label.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, (
            f"{label.get_text()[:40]!r} runs past the picture's edge")
        assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1
        text = label.get_text().replace("\n", " ")
        assert text.endswith("the work of the full one") and "…" not in text, (
            "the diagnosis is not cut")
    for first, second in zip(labels, labels[1:], strict=False):
        assert not first.get_window_extent(renderer).overlaps(
            second.get_window_extent(renderer)), "two labels overlap"


def test_the_report_writes_the_chart(tmp_path: Path) -> None:
    paths = write_class_report(_results([LONG, LONG]), tmp_path, ["s0", "s1"])
    png = next(p for p in paths if p.suffix == ".png")
    assert png.read_bytes()[:4] == b"\x89PNG"
