"""Gradescope ``results.json``: the canonical machine-readable result (docs/grading-design.md,
"Reports").

One test per check: ``name`` (the check), ``number`` (the task id), ``score``,
``max_score``, ``status`` ("passed"/"failed"), ``output`` (the feedback text),
``tags`` and ``visibility``. Checks of tasks that are not graded yet appear
with ``max_score`` 0. Everything except ``execution_time`` is a pure function
of the results, so grading twice gives identical files apart from timing.
The texts are escaped by ``graders.safety.safe_text.terminal_text``: the file is
valid UTF-8 JSON with no control character, whatever the submission raised,
printed or was called.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from graders.checking.feedback import format_points
from graders.grading.result import SubmissionResult
from graders.reports.files import atomic_write_text
from graders.reports.gradebook_csv import predicted_ms
from graders.safety.safe_text import terminal_text


def _number(value: float) -> float | int:
    rounded = round(value, 6)
    return int(rounded) if rounded == int(rounded) else rounded


def results_json(result: SubmissionResult) -> dict[str, Any]:
    """The results.json document for one submission (a dict ready for ``json.dump``)."""
    tests = []
    for check in result.checks:
        tags = [result.assignment, f"task {check.task}", check.status]
        if not check.graded:
            tags.append("not graded")
        tests.append({
            "name": check.check,
            "number": check.task,
            "score": _number(check.points if check.graded else 0),
            "max_score": _number(check.max_points if check.graded else 0),
            "status": "passed" if check.status == "passed" else "failed",
            "output": terminal_text(check.feedback, multiline=True),
            "tags": tags,
            "visibility": "visible",
        })
    info = result.info
    lines = [
        f"{info.id} {info.title} ({Path(result.file).name}): "
        f"{format_points(result.score)}/{format_points(result.max_score)}"
    ]
    if result.load_error:
        lines.append(result.load_error)
    for task in result.tasks():
        points = (f"{format_points(task.points)}/{format_points(task.max_points)}"
                  if task.graded else "not graded")
        lines.append(f"Task {task.task} {task.title}: {points} {task.shown_status}")
    document: dict[str, Any] = {
        "score": _number(result.score),
        "max_score": _number(result.max_score),
        "execution_time": round(result.seconds, 3),
        "output": terminal_text("\n".join(lines), multiline=True),
        "output_format": "text",
        "test_output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"sandbox": result.sandbox},
        "tests": tests,
    }
    board = leaderboard(result)
    if board:
        document["leaderboard"] = board
    return document


def leaderboard(result: SubmissionResult) -> list[dict[str, Any]]:
    """Gradescope's ``leaderboard`` entries of a result: per performance task whose checks
    predicted a time (``graders.reports.gradebook_csv.predicted_ms``: Tasks 3.5, 4.8 and
    5.7), ``{"name": "Task 4.8 predicted ms", "value": ms, "order": "asc"}`` (lower ranks
    higher), in task order. The time is the grader's own prediction for the file's kernel
    at the task's size (docs/performance-model.md), never a number the submission reports.
    Empty when no performance task was graded (Gradescope then shows no leaderboard)."""
    return [{"name": f"Task {task} predicted ms", "value": round(ms, 4), "order": "asc"}
            for task, ms in sorted(predicted_ms(result).items(),
                                   key=lambda item: tuple(map(int, item[0].split("."))))
            if math.isfinite(ms)]


def results_text(result: SubmissionResult) -> str:
    """results.json's text: indented JSON, keys in a fixed order, a final newline."""
    return json.dumps(results_json(result), indent=2, ensure_ascii=False) + "\n"


def write_results_json(result: SubmissionResult, path: str | Path) -> Path:
    """Write one submission's results.json atomically to ``path`` (parents created)."""
    return atomic_write_text(path, results_text(result))
