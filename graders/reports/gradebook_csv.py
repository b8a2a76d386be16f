"""The CSV gradebook for a batch: one row per student, one column per graded task, total.

Written atomically (temp file + ``os.replace``) so an interrupted run never
leaves a half-written gradebook; rows of students already in an existing
gradebook but not in this run are kept, so a batch can be graded in parts.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from graders.assignments import ASSIGNMENTS
from graders.feedback import format_points
from graders.grading import SubmissionResult
from graders.reports.files import atomic_write_text


def gradebook_columns(assignment_ids: Sequence[str]) -> list[str]:
    """``student``, the graded task ids of these assignments (course order), each
    assignment's total, then ``total``."""
    ids = [a for a in ASSIGNMENTS if a in set(assignment_ids)]
    tasks = [task.id for a in ids for task in ASSIGNMENTS[a].graded_tasks]
    return ["student", *tasks, *ids, "total"]


def _read_existing(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        return [row for row in csv.DictReader(handle) if row.get("student")]


def gradebook_rows(results: Sequence[SubmissionResult]) -> dict[str, dict[str, str]]:
    """Per student, the cells of their row (task points, assignment totals, total)."""
    rows: dict[str, dict[str, str]] = {}
    totals: dict[str, float] = {}
    for result in results:
        row = rows.setdefault(result.student, {"student": result.student})
        for task in result.tasks():
            if task.graded:
                row[task.task] = format_points(task.points)
        row[result.assignment] = format_points(result.score)
        totals[result.student] = totals.get(result.student, 0.0) + result.score
    for student, row in rows.items():
        row["total"] = format_points(round(totals[student], 6))
    return rows


def write_gradebook(
    results: Sequence[SubmissionResult], path: str | Path, *, keep_existing: bool = True
) -> Path:
    """Write the gradebook to ``path`` atomically; returns the path.

    With ``keep_existing`` the rows of students graded earlier (present in an
    existing file, absent from ``results``) are kept, and their columns merged;
    a student's total then sums the assignment columns of their row.
    """
    path = Path(path)
    fresh = gradebook_rows(results)
    existing = _read_existing(path) if keep_existing else []
    merged: dict[str, dict[str, str]] = {}
    for row in existing:
        merged[row["student"]] = {k: v for k, v in row.items() if k and v not in (None, "")}
    for student, row in fresh.items():
        merged.setdefault(student, {}).update(row)
    ids = {a for row in merged.values() for a in ASSIGNMENTS if a in row}
    for row in merged.values():
        row["total"] = format_points(
            round(sum(float(row[a]) for a in ASSIGNMENTS if row.get(a)), 6)
        )
    columns = gradebook_columns(sorted(ids))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for student in sorted(merged):
        writer.writerow(merged[student])
    return atomic_write_text(path, buffer.getvalue())
