"""Batch grading of a class: parallel, one result file per submission, resumable.

``pallas-lab grade CLASS_DIR --jobs N --out DIR`` grades students N at a
time. Each student is graded by a fresh trusted grader process (a
``ProcessPoolExecutor`` child used for one student only) which starts its own
untrusted worker per submission, as ``grade_file`` always does. Results land
in ``DIR/<student>/<stem>/results.json`` (Gradescope's schema) and the
gradebook ``DIR/gradebook.csv`` is rebuilt from those files after every
student; every file is replaced atomically. ``<student>`` is the student's
name, percent-encoded where it could collide with the gradebook, a temp file
or another student (``graders.reports.files.student_folder_name``).

Resuming: a student whose every submission already has its results.json is
not graded again (temporary files left by a killed write are removed), so a
batch killed half-way and started again grades only the students without a
result and ends with the same gradebook. Delete a
student's folder under DIR to grade them again.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import traceback
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from graders.assignments import ASSIGNMENTS
from graders.discovery import Submission
from graders.feedback import format_points
from graders.reports.files import atomic_write_text, student_folder_name, student_of_folder_name
from graders.safe_text import terminal_text

GRADEBOOK = "gradebook.csv"


def result_path(out: Path, student: str, stem: str) -> Path:
    """Where a submission's results.json goes under the batch folder ``out``
    (``student_folder_name`` keeps it clear of the gradebook and other students)."""
    return out / student_folder_name(student) / stem / "results.json"


def _grade_student(student: str, items: list[tuple[str, str, str]], out: str,
                   timeout: float, budget: float | None = None
                   ) -> tuple[str, list[tuple[str, float]], str | None]:
    """Grade one student's submissions (runs in a pool child); never raises.

    ``items``: (stem, file, assignment id). Returns (student, [(stem, score)],
    the internal error text or None).
    """
    from graders.grading import grade_file
    from graders.reports.gradescope import write_results_json

    scores = []
    try:
        for stem, file, assignment in items:
            result = grade_file(file, assignment=assignment, timeout=timeout, student=student,
                                budget=budget)
            write_results_json(result, result_path(Path(out), student, stem))
            scores.append((stem, result.score))
            if result.internal_errors:
                first = result.internal_errors[0]
                return student, scores, (f"internal error in check {first.assignment} "
                                         f"{first.task} {first.check!r}: {first.reason}")
    except Exception:  # noqa: BLE001 - the grader's bug: report it, keep the batch going
        return student, scores, traceback.format_exc()
    return student, scores, None


def pending_students(submissions: Sequence[Submission], out: Path
                     ) -> dict[str, list[Submission]]:
    """Students (with their submissions) that still lack a results.json, in order."""
    by_student: dict[str, list[Submission]] = {}
    for sub in submissions:
        by_student.setdefault(sub.student, []).append(sub)
    return {student: subs for student, subs in by_student.items()
            if not all(result_path(out, student, s.stem).is_file() for s in subs)}


def gradebook_from_results(out: Path) -> str:
    """The CSV gradebook text of every ``<student>/<stem>/results.json`` under ``out``.

    Columns as ``graders.reports.gradebook_csv``: ``student``, graded task ids,
    assignment totals, ``total``; one row per student, sorted; cells written as that
    module writes them (names escaped, formulas neutralised).
    """
    from graders.reports.gradebook_csv import gradebook_columns, gradebook_text, student_cell_value

    rows: dict[str, dict[str, str]] = {}
    ids: set[str] = set()
    stems = {a.stem: a for a in ASSIGNMENTS.values()}
    for path in sorted(out.glob("*/*/results.json")):
        student, stem = student_of_folder_name(path.parent.parent.name), path.parent.name
        info = stems.get(stem)
        if info is None:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        row = rows.setdefault(student, {"student": student_cell_value(student)})
        points: dict[str, float] = {t.id: 0.0 for t in info.graded_tasks}
        for test in data.get("tests", []):
            if test.get("number") in points and "not graded" not in test.get("tags", []):
                points[test["number"]] += float(test.get("score", 0))
        for task, value in points.items():
            row[task] = format_points(round(value, 6))
        row[info.id] = format_points(float(data.get("score", 0)))
        ids.add(info.id)
    columns = gradebook_columns(sorted(ids))
    for row in rows.values():
        row["total"] = format_points(round(sum(float(row[a]) for a in ids if a in row), 6))
    return gradebook_text(columns, sorted(rows.values(), key=lambda row: row["student"]))


def task_scores_from_results(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(student, stem) -> points per graded task, read back from the results.json files."""
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for path in sorted(out.glob("*/*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        points: dict[str, float] = {}
        for test in data.get("tests", []):
            if "not graded" not in test.get("tags", []):
                points[test["number"]] = points.get(test["number"], 0.0) + float(test["score"])
        scores[(student_of_folder_name(path.parent.parent.name), path.parent.name)] = points
    return scores


def run_batch(submissions: Sequence[Submission], *, out: Path, jobs: int, timeout: float,
              err: Console, budget: float | None = None) -> tuple[int, int, list[str]]:
    """Grade the pending students of ``submissions`` with ``jobs`` processes (``timeout``
    per call, ``budget`` per file as in ``grade_file``).

    Returns (students graded now, students already done, internal error texts).
    The gradebook is rewritten after each student and once at the end.
    """
    out.mkdir(parents=True, exist_ok=True)
    # Half-written by a batch that was killed: the temp files of atomic_write_text.
    for stale in [*out.glob(f".{GRADEBOOK}.*.tmp"), *out.glob("*/*/.results.json.*.tmp")]:
        if stale.is_file():
            stale.unlink(missing_ok=True)
    pending = pending_students(submissions, out)
    students = {s.student for s in submissions}
    done_before = len(students) - len(pending)
    errors: list[str] = []
    gradebook = out / GRADEBOOK
    if pending:
        # forkserver: each student's grader is a fresh process forked from a server that
        # has already imported the grader, so a student costs no interpreter start-up.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["graders.grading", "graders.reports.gradescope"])
        # The last student's name is shown escaped and never read as markup.
        columns = [TextColumn("grading"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[last]}", markup=False), TimeElapsedColumn()]
        with Progress(*columns, console=err, transient=False) as progress, \
                ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context,
                                    max_tasks_per_child=1) as pool:
            bar = progress.add_task("batch", total=len(pending), last="")
            futures = [pool.submit(_grade_student, student,
                                   [(s.stem, str(s.file), s.assignment) for s in subs],
                                   str(out), timeout, budget)
                       for student, subs in pending.items()]
            for future in as_completed(futures):
                student, _scores, error = future.result()
                if error:
                    errors.append(f"{student}: {error}")
                atomic_write_text(gradebook, gradebook_from_results(out))
                progress.update(bar, advance=1, last=terminal_text(student))
    atomic_write_text(gradebook, gradebook_from_results(out))
    return len(pending), done_before, errors


def summary_rows(out: Path) -> list[dict[str, Any]]:
    """The gradebook's rows (dicts) as written."""
    with open(out / GRADEBOOK, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
