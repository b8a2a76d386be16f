"""The sample submissions and their expected scores, read from the one place they are written.

``examples/submissions/scores.toml`` holds the per-task points of every sample
(``<student>/<stem>.py``); tests read them through :func:`expected_points` and
grade a sample once per test process through :func:`graded_sample`.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from graders.grading.grade import grade_file
from graders.grading.result import SubmissionResult

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
SCORES_FILE = SAMPLES / "scores.toml"
#: Seconds per call when grading a sample: keeps dev_broken's endless loops cheap
#: (correct calls take milliseconds).
SAMPLE_TIMEOUT = 2.0


@functools.cache
def expected_points() -> dict[tuple[str, str], dict[str, float]]:
    """``{(student, stem): {task id: points}}`` from ``scores.toml``."""
    data = tomllib.loads(SCORES_FILE.read_text(encoding="utf-8"))
    return {(student, stem): {task: float(points) for task, points in tasks.items()}
            for student, stems in data.items() for stem, tasks in stems.items()}


def expected_score(student: str, stem: str) -> float:
    """The total a sample earns: the sum of its expected task points."""
    return sum(expected_points()[student, stem].values())


def sample_students() -> list[str]:
    """The student folders under ``examples/submissions/``."""
    return sorted(p.name for p in SAMPLES.iterdir() if p.is_dir())


@functools.cache
def graded_sample(student: str, stem: str) -> SubmissionResult:
    """One grading of ``examples/submissions/<student>/<stem>.py`` (deterministic, cached)."""
    return grade_file(SAMPLES / student / f"{stem}.py", timeout=SAMPLE_TIMEOUT)


def task_points(result: SubmissionResult) -> dict[str, float]:
    """Points per graded task of a result, e.g. ``{"1.1": 15.0, ...}``."""
    return {t.task: float(t.points) for t in result.tasks() if t.graded}
