"""The CSV gradebook for a batch: one row per student, one column per graded task, total.

After ``total`` come each assignment's maximum and percentage and the total's
(``"a1 max"``, ``"a1 percent"``, ..., ``"total max"``, ``"total percent"``:
``add_scale_cells``), so an LMS or a spreadsheet can show a score out of its maximum; the
columns before them keep their places and ``notes`` stays last.

A performance task (``Task.performance``) also gets a column
``"<task> predicted ms"``: the predicted time of the student's own kernel, in
milliseconds, as its checks measured it (``CheckResult.measures``); empty when there is
no prediction (the kernel did not run, the blocks did not fit, not submitted).

Written atomically (temp file + ``os.replace``) so an interrupted run never
leaves a half-written gradebook; rows of students already in an existing
gradebook but not in this run are kept, so a batch can be graded in parts.

A student's name is a folder name (or a roster entry), chosen by the student: its
cell holds the name escaped by ``graders.safety.safe_text.terminal_text``, quoted, with a
single quote before every ``=``, ``+``, ``-``, ``@``, tab or CR that starts the cell
or follows a ``,``, ``;``, tab or line break inside it (OWASP's CSV-injection rule
wherever a spreadsheet could start a cell, whatever separator it splits on:
``graders.safety.safe_text.csv_text``), so that a spreadsheet shows it as text. The notes
column likewise. Scores and predicted times, never negative, are written as bare
numbers.
"""

from __future__ import annotations

import csv
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graders.checking.feedback import format_points
from graders.checking.measures import PREDICTED_MS
from graders.course.catalog import ASSIGNMENTS
from graders.grading.result import SubmissionResult
from graders.reports.files import atomic_write_text
from graders.safety.safe_text import csv_text, csv_value, terminal_text

if TYPE_CHECKING:
    from graders.reports.late import SubmissionTime
    from graders.reports.ledger import Ledger, Standing

#: How a performance task's predicted-time column is named: ``"3.5 predicted ms"``.
PREDICTED_COLUMN = "{task} predicted ms"


def predicted_column(task_id: str) -> str:
    """The gradebook column of a performance task's predicted time (milliseconds)."""
    return PREDICTED_COLUMN.format(task=task_id)


def performance_task_ids(assignment_ids: Sequence[str]) -> list[str]:
    """The graded performance tasks of these assignments, in course order."""
    ids = [a for a in ASSIGNMENTS if a in set(assignment_ids)]
    return [task.id for a in ids for task in ASSIGNMENTS[a].graded_tasks if task.performance]


def gradebook_columns(assignment_ids: Sequence[str]) -> list[str]:
    """``student``, the graded task ids of these assignments (course order), a
    ``"<task> predicted ms"`` column per performance task, each assignment's total,
    ``total``, then the scale columns (``scale_columns``: each assignment's maximum and
    percentage, the total's). The scale columns come after ``total``, so the columns
    before them keep their places, and ``notes`` (when written) stays last."""
    ids = [a for a in ASSIGNMENTS if a in set(assignment_ids)]
    tasks = [task.id for a in ids for task in ASSIGNMENTS[a].graded_tasks]
    predicted = [predicted_column(task) for task in performance_task_ids(ids)]
    return ["student", *tasks, *predicted, *ids, "total", *scale_columns(ids)]


def scale_columns(assignment_ids: Sequence[str]) -> list[str]:
    """``"<aN> max"`` and ``"<aN> percent"`` per assignment (in the order given), then
    ``"total max"`` and ``"total percent"``."""
    return [*(f"{a} {kind}" for a in assignment_ids for kind in ("max", "percent")),
            "total max", "total percent"]


def assignment_maximum(assignment_id: str) -> float:
    """The most an assignment scores, in points: the sum of its graded tasks' points."""
    return float(sum(t.points for t in ASSIGNMENTS[assignment_id].graded_tasks))


def add_scale_cells(row: dict[str, str], assignment_ids: Sequence[str]) -> None:
    """Fill ``row``'s scale columns from its assignment columns (final scores) and
    ``total``: ``"<aN> max"`` the assignment's maximum in points and ``"<aN> percent"`` the
    final score as a percentage of it (2 decimals), both empty when the row has no score
    for it; ``"total max"`` the maxima of every assignment of the gradebook added (an
    assignment without a score counts 0 of its maximum) and ``"total percent"``
    ``total`` as a percentage of that."""
    top = 0.0
    for a in assignment_ids:
        maximum = assignment_maximum(a)
        top += maximum
        if row.get(a):
            row[f"{a} max"] = format_points(maximum)
            row[f"{a} percent"] = _percent(float(row[a]), maximum)
        else:
            row.pop(f"{a} max", None)
            row.pop(f"{a} percent", None)
    if row.get("total") and top:
        row["total max"] = format_points(top)
        row["total percent"] = _percent(float(row["total"]), top)


#: The gradebook note of a student with a file a stopped batch has not graded yet: their
#: row has no total (a partial one would read as their score).
NOT_GRADED_YET = "not graded yet"


def total_cell(row: Mapping[str, str], assignment_ids: Iterable[str],
               notes: Sequence[str] = ()) -> str:
    """The ``total`` of a gradebook row: its assignment columns (final scores) added; empty
    while one of its ``notes`` lines says a file of theirs is not graded yet (a stopped
    batch); for a row without any score, "0" when a line is the roster's "no submission"
    (a roster student without a submission scores nothing), else empty (a folder the
    roster could not tell apart: no score is known). Lines are matched whole or by their
    start, which is ours: a file name a student chose only ever follows a prefix (a red
    team named a file "not graded yet: hw.py" to blank its own total)."""
    from graders.reports.roster import NO_SUBMISSION

    scores = [float(row[a]) for a in assignment_ids if row.get(a)]
    pending = any(line.startswith(f"{NOT_GRADED_YET}:") for line in notes)
    if pending or (not scores and NO_SUBMISSION not in notes):
        return ""
    return format_points(round(sum(scores), 6))


def _percent(score: float, maximum: float) -> str:
    """``score`` as a percentage of ``maximum``, 2 decimals, no trailing zeros."""
    return format_points(round(100.0 * score / maximum, 2)) if maximum else ""


def with_standing_columns(columns: Sequence[str], active: Collection[str]) -> list[str]:
    """``columns`` with a ledger's columns (``graders.reports.ledger.standing_columns``: raw,
    adjusted, submitted, late hours, late source, penalty) before the column of each
    assignment in ``active``, whose own column then holds the final score."""
    from graders.reports.ledger import standing_columns

    out: list[str] = []
    for column in columns:
        if column in active:
            out.extend(standing_columns(column))
        out.append(column)
    return out


def standing_notes(standing: Standing) -> list[str]:
    """The notes a standing adds to its student's row: each line explaining it, but the
    summary (the columns hold those numbers)."""
    return [f"{standing.assignment}: {line}" for line in standing.lines[:-1]]


def predicted_ms(result: SubmissionResult) -> dict[str, float]:
    """Task id -> the predicted time (ms) its checks measured, for the performance tasks of
    ``result`` that have one (``graders.checking.measures.PREDICTED_MS``)."""
    performance = {task.id for task in result.info.graded_tasks if task.performance}
    times: dict[str, float] = {}
    for check in result.checks:
        if check.task in performance and PREDICTED_MS in check.measures:
            times.setdefault(check.task, float(check.measures[PREDICTED_MS]))
    return times


def format_ms(value: float) -> str:
    """A predicted time in ms as the gradebook writes it: 4 decimals (0.1 µs)."""
    return f"{value:.4f}"


def final_score(result: SubmissionResult, ledger: Ledger | None = None,
                stored: SubmissionTime | None = None) -> float:
    """``result``'s final score in points, as the gradebook's assignment column holds it:
    the graded score, or, when ``ledger`` is active for its assignment, the standing's
    final score (task adjustments, assignment deltas, late penalty, then an assignment
    ``points`` override: ``graders.reports.ledger.Ledger.standing``; ``stored``: the
    submission time recorded with the result, for a student this run did not find)."""
    if ledger is None or not ledger.active(result.assignment):
        return result.score
    points = {t.task: t.points for t in result.tasks() if t.graded}
    return ledger.standing(result.student, result.info, points, stored=stored).final


#: The gradebook's text columns; every other column holds points or milliseconds.
TEXT_COLUMNS = frozenset({"student", "notes"})


def gradebook_text(columns: Sequence[str], rows: Iterable[dict[str, str]]) -> str:
    """The CSV text of a gradebook: a header of ``columns``, then ``rows`` (values by
    column; missing ones empty, others ignored), written by ``graders.safety.safe_text.csv_text``:
    names and notes quoted and neutralised wherever a spreadsheet could start a formula,
    points and times as bare numbers."""
    return csv_text(columns, rows, text_columns=TEXT_COLUMNS)


def student_cell_value(student: str) -> str:
    """What a gradebook shows for ``student`` (a folder name): the name with control
    characters escaped (``terminal_text``); ``csv_cell`` then guards every place a cell could
    start in it."""
    return terminal_text(student)


def _read_existing(path: Path) -> list[dict[str, str]]:
    """The rows of an existing gradebook, as values (``csv_value`` undoes ``csv_cell``)."""
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [{key: csv_value(value) for key, value in row.items() if key and value}
                for row in csv.DictReader(handle)]
    return [{**row, "student": student_cell_value(row["student"])}
            for row in rows if row.get("student")]


def gradebook_rows(results: Sequence[SubmissionResult], ledger: Ledger | None = None,
                   notes: dict[str, list[str]] | None = None) -> dict[str, dict[str, str]]:
    """Per student (as shown, ``student_cell_value``), the values of their row (task
    points, assignment totals, total). With ``ledger``, each assignment it is active for
    (``Ledger.active``) gets its standing's cells, its task columns the task points after
    adjustments and its column the final score; the lines explaining it are added to
    ``notes`` (student -> lines)."""
    rows: dict[str, dict[str, str]] = {}
    totals: dict[str, float] = {}
    for result in results:
        student = student_cell_value(result.student)
        row = rows.setdefault(student, {"student": student})
        points: dict[str, float] = {}
        for task in result.tasks():
            if task.graded:
                row[task.task] = format_points(task.points)
                points[task.task] = task.points
        for task_id, value in predicted_ms(result).items():
            row[predicted_column(task_id)] = format_ms(value)
        row[result.assignment] = format_points(result.score)
        score = result.score
        if ledger is not None and ledger.active(result.assignment):
            standing = ledger.standing(result.student, result.info, points)
            row.update(ledger.cells(standing))
            row.update({t: format_points(v) for t, v in standing.tasks.items()})
            score = standing.final
            if notes is not None:
                notes.setdefault(result.student, []).extend(standing_notes(standing))
        totals[student] = totals.get(student, 0.0) + score
    for student, row in rows.items():
        row["total"] = format_points(round(totals[student], 6))
    return rows


def write_gradebook(
    results: Sequence[SubmissionResult], path: str | Path, *, keep_existing: bool = True,
    notes: Mapping[str, Sequence[str]] | None = None, ledger: Ledger | None = None,
) -> Path:
    """Write the gradebook to ``path`` atomically; returns the path.

    With ``keep_existing`` the rows of students graded earlier (present in an
    existing file, absent from ``results``) are kept, and their columns merged;
    a student's total then sums the assignment columns of their row. ``ledger``
    (``graders.reports.ledger``) adds raw score, lateness, penalty and adjustments before
    each assignment it is active for, whose column holds the final score. ``notes``
    (student -> lines: "misnamed: a1.txt", "missing: no submission") adds a
    ``notes`` column and a row for each student it names.
    """
    path = Path(path)
    all_notes = {student: list(lines) for student, lines in (notes or {}).items()}
    fresh = gradebook_rows(results, ledger, all_notes)
    for student, lines in all_notes.items():
        if lines:
            row = fresh.setdefault(student_cell_value(student),
                                   {"student": student_cell_value(student)})
            row["notes"] = terminal_text("; ".join(lines))
    existing = _read_existing(path) if keep_existing else []
    merged: dict[str, dict[str, str]] = {}
    for row in existing:
        merged[row["student"]] = row
    for student, row in fresh.items():
        merged.setdefault(student, {}).update(row)
    ids = {a for row in merged.values() for a in ASSIGNMENTS if a in row}
    in_order = [a for a in ASSIGNMENTS if a in ids]
    lines_of = {student_cell_value(student): lines for student, lines in all_notes.items()}
    for cell, row in merged.items():
        if cell in lines_of or any(row.get(a) for a in ASSIGNMENTS):
            row["total"] = total_cell(row, ASSIGNMENTS, lines_of.get(cell, ()))
        # else a row kept from the file with no score: its total as it was written
        add_scale_cells(row, in_order)
    columns = gradebook_columns(sorted(ids))
    if ledger is not None:
        columns = with_standing_columns(columns, [a for a in ids if ledger.active(a)])
    if any(row.get("notes") for row in merged.values()):
        columns.append("notes")
    text = gradebook_text(columns, (merged[student] for student in sorted(merged)))
    return atomic_write_text(path, text)
