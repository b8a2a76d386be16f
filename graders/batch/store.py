"""The batch's results store: one ``<student>/<stem>/results.json`` per submission under
the batch folder (Gradescope's schema; ``extra_data`` holds pallas-lab's record: the file's
SHA-256 and each check's status, reason, measures and diagnosis), read back into
``SubmissionResult``s, merged when only some tasks were graded again, and the gradebook and
per-task scores rebuilt from those files (docs/ta-guide.md, "A class at once").
"""

from __future__ import annotations

import csv
import json
import math
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders.checking.feedback import format_points
from graders.checking.status import RESULT_STATUSES
from graders.course.catalog import ASSIGNMENTS, Assignment, assignment_for_stem
from graders.grading.result import CheckResult, SubmissionResult
from graders.reports.files import (
    atomic_write_text,
    is_cut,
    student_folder_name,
    student_of_folder_name,
)
from graders.safety import submission_files
from graders.safety.safe_text import terminal_text

if TYPE_CHECKING:
    from graders.reports.late import SubmissionTime
    from graders.reports.ledger import Ledger

GRADEBOOK = "gradebook.csv"


#: The key of pallas-lab's own record in results.json's ``extra_data``.
RECORD = "pallas_lab"
#: The longest recorded student name read back (``student_of_result``), percent-encoded.
MAX_STUDENT_CHARS = 4 * 4096


def student_of_result(path: Path, data: Any = None) -> str:
    """The student whose results.json is ``path`` (``data``: its parsed content, read here
    when not given): the folder's name decoded (``student_of_folder_name``), or for a
    folder whose name was cut (``graders.reports.files.is_cut``) the whole name recorded
    in the file, when that name's folder is this one (a record cannot claim another
    student's name). Never raises."""
    folder = path.parent.parent.name
    if not is_cut(folder):
        return student_of_folder_name(folder)
    try:
        if data is None:
            data = json.loads(submission_files.read_bytes(path, MAX_RESULT_BYTES)
                              .decode("utf-8"))
        quoted = data["extra_data"][RECORD]["student"]
        if isinstance(quoted, str) and len(quoted) <= MAX_STUDENT_CHARS:
            student = urllib.parse.unquote(quoted, errors="surrogateescape")
            if student_folder_name(student) == folder:
                return student
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return student_of_folder_name(folder)


def result_path(out: Path, student: str, stem: str) -> Path:
    """Where a submission's results.json goes under the batch folder ``out``
    (``student_folder_name`` keeps it clear of the gradebook and other students)."""
    return out / student_folder_name(student) / stem / "results.json"


def result_document(result: SubmissionResult, submitted: SubmissionTime | None = None,
                    stamp: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """results.json for ``result`` (``graders.reports.gradescope.results_json``) with
    pallas-lab's record in ``extra_data[RECORD]``: the file's name and SHA-256, the load
    error, and per check its status, one-line reason (what the table shows), measures and
    the diagnosis the check verified (``CheckResult.diagnosis``, which the class report
    counts: never the feedback's text); with ``stamp``, what the batch graded it with
    (``graders.batch.regrade.batch_stamp``)."""
    from graders.reports.gradescope import results_json

    document = results_json(result)
    document["extra_data"][RECORD] = {
        # The whole name, percent-encoded (ASCII): read back for a folder whose name was cut.
        "student": urllib.parse.quote(result.student, safe="", errors="surrogateescape"),
        "file": terminal_text(Path(result.file).name),
        "sha256": result.sha256,
        "load_error": (terminal_text(result.load_error, multiline=True)
                       if result.load_error else None),
        "checks": [{"status": c.status, "reason": terminal_text(c.reason),
                    **({"measures": dict(c.measures)} if c.measures else {}),
                    **({"diagnosis": terminal_text(c.diagnosis)} if c.diagnosis else {})}
                   for c in result.checks],
    }
    if stamp is not None:
        document["extra_data"][RECORD]["stamp"] = dict(stamp)
    if submitted is not None:
        document["extra_data"][RECORD]["submitted"] = {
            "time": submitted.when.isoformat() if submitted.when is not None else None,
            "source": terminal_text(submitted.source), "late_flag": submitted.late_flag}
    return document


def write_result(result: SubmissionResult, path: Path,
                 submitted: SubmissionTime | None = None,
                 stamp: Mapping[str, Any] | None = None) -> Path:
    """Write ``result_document(result, submitted, stamp)`` to ``path`` atomically; returns
    the path."""
    text = json.dumps(result_document(result, submitted, stamp), indent=2,
                      ensure_ascii=False) + "\n"
    return atomic_write_text(path, text)


#: The longest submission-time source a results.json may record.
MAX_SOURCE_CHARS = 200


def stored_time(data: Any) -> SubmissionTime | None:
    """The submission time a results.json's parsed ``data`` records
    (``result_document``'s ``submitted``: the grader took it from the file before the
    submission ran, never from anything the submission wrote), or None when it records
    none or one pallas-lab could not have written. Never raises."""
    import datetime as dt

    from graders.reports.late import SubmissionTime

    try:
        record = data["extra_data"][RECORD]["submitted"]
        when, source, flag = record["time"], record["source"], record["late_flag"]
        if not isinstance(source, str) or not source or len(source) > MAX_SOURCE_CHARS:
            return None
        if flag is not None and not isinstance(flag, bool):
            return None
        moment = None
        if when is not None:
            moment = dt.datetime.fromisoformat(_text(when) or "")
            if moment.tzinfo is None:
                return None
        return SubmissionTime(moment, source, flag)
    except (KeyError, TypeError, ValueError):
        return None


def stored_time_at(path: Path) -> SubmissionTime | None:
    """``stored_time`` of the results.json at ``path`` (read as ``read_result`` reads
    it), or None."""
    try:
        data = json.loads(submission_files.read_bytes(path, MAX_RESULT_BYTES).decode("utf-8"))
    except (OSError, ValueError, submission_files.RefusedFile):
        return None
    return stored_time(data)


#: The largest results.json the store reads, in bytes (one a grader writes is a few
#: hundred KiB at most; a bigger one was not written by pallas-lab).
MAX_RESULT_BYTES = 16 << 20


class _NotOurs(ValueError):
    """A results.json that pallas-lab did not write, or whose values cannot be its."""


def read_result(path: Path, info: Assignment | None = None) -> SubmissionResult | None:
    """The ``SubmissionResult`` a results.json under a batch folder holds (student from its
    folders; the assignment ``info``, else the one its folder's name is the stem of), or
    None when it cannot be read (bounded, a regular file, never through a link:
    ``graders.safety.submission_files``) or is not one pallas-lab could have written: every
    field has the type ``result_document`` gives it, every check names a task of the
    assignment, its points lie within 0 and its maximum, and the maximum within the task's
    points. Never raises for what the file holds."""
    if info is None:
        info = assignment_for_stem(path.parent.name)
    if info is None:
        return None
    try:
        data = json.loads(submission_files.read_bytes(path, MAX_RESULT_BYTES).decode("utf-8"))
        return _result_of(data, path, info)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _text(value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _NotOurs(f"{value!r} is not text")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _NotOurs(f"{value!r} is not a finite number")
    return float(value)


def _result_of(data: Any, path: Path, info: Assignment) -> SubmissionResult:
    extra = data["extra_data"]
    record = extra[RECORD]
    tests, statuses = data["tests"], record["checks"]
    if not isinstance(tests, list) or not isinstance(statuses, list) or len(tests) != len(
            statuses):
        raise _NotOurs("tests and statuses do not match")
    file = _text(record.get("file", info.file_name))
    if not file or Path(file).name != file or file in (".", ".."):
        raise _NotOurs("the file is not a file name")
    seconds = _number(data.get("execution_time", 0))
    sha256 = _text(record.get("sha256", ""))
    if sha256 and (len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256)):
        raise _NotOurs("the digest is not a SHA-256")
    result = SubmissionResult(
        student=student_of_result(path, data), stem=info.stem,
        assignment=info.id, file=str(path.parent / file),
        load_error=_text(record.get("load_error"), optional=True),
        sandbox=_text(extra.get("sandbox", "")) or "", sha256=sha256 or "",
        seconds=max(seconds, 0.0),
    )
    result.checks.extend(_check_of(info, test, state)
                         for test, state in zip(tests, statuses, strict=True))
    return result


def _check_of(info: Assignment, test: dict, state: dict) -> CheckResult:
    """One check's result from its Gradescope test entry and its recorded status; raises
    ``_NotOurs`` (or ``KeyError``, ``TypeError``) when it cannot be one of ``info``'s."""
    task = info.task(_text(test["number"]) or "")
    points, max_points = _number(test["score"]), _number(test["max_score"])
    if not 0 <= points <= max_points <= task.points:
        raise _NotOurs(f"{points:g} of {max_points:g} points for Task {task.id}")
    status = _text(state["status"])
    if status not in RESULT_STATUSES:
        raise _NotOurs(f"status {status!r}")
    tags = test.get("tags", [])
    if not isinstance(tags, list):
        raise _NotOurs("tags are not a list")
    measures = state.get("measures") or {}
    if not isinstance(measures, dict):
        raise _NotOurs("measures are not a mapping")
    return CheckResult(
        assignment=info.id, task=task.id, check=_text(test["name"]) or "",
        points=points, max_points=max_points, status=status,
        feedback=_text(test.get("output", "")) or "", seconds=0.0,
        graded="not graded" not in tags, reason=_text(state.get("reason", "")) or "",
        measures={_text(k) or "": _number(v) for k, v in measures.items()},
        diagnosis=_text(state.get("diagnosis", "")) or "")


def read_results(out: Path) -> list[SubmissionResult]:
    """Every result under the batch folder ``out``, by student then assignment."""
    order = {a: i for i, a in enumerate(ASSIGNMENTS)}
    found = [r for r in map(read_result, sorted(out.glob("*/*/results.json"))) if r]
    return sorted(found, key=lambda r: (r.student, order.get(r.assignment, 99)))


def merge_tasks(previous: SubmissionResult, fresh: SubmissionResult) -> SubmissionResult:
    """``previous`` with the checks of ``fresh.only_tasks`` replaced by ``fresh``'s."""
    from graders.checking.framework import load_checks

    tasks = set(fresh.only_tasks or ())
    kept = [c for c in previous.checks if c.task not in tasks]
    rank = {(c.task, c.name): i for i, c in enumerate(load_checks(previous.assignment))}
    checks = sorted([*kept, *fresh.checks], key=lambda c: rank.get((c.task, c.check), 999))
    return SubmissionResult(
        student=fresh.student, stem=fresh.stem, assignment=fresh.assignment, file=fresh.file,
        checks=checks, load_error=fresh.load_error or previous.load_error,
        seconds=fresh.seconds, sandbox=fresh.sandbox, sha256=fresh.sha256)


def gradebook_from_results(out: Path, notes: Mapping[str, Sequence[str]] | None = None,
                           ledger: Ledger | None = None) -> str:
    """The CSV gradebook text of every ``<student>/<stem>/results.json`` under ``out``.

    Columns as ``graders.reports.gradebook_csv``: ``student``, graded task ids, each
    performance task's predicted ms, assignment totals, ``total``, each assignment's and
    the total's maximum and percentage (``add_scale_cells``); one row per student,
    sorted; cells written as that module writes them (names escaped, formulas
    neutralised). ``notes`` (student -> lines such as "missing: a1", "misnamed:
    a1.txt") adds a ``notes`` column, and a row for every student it names, with or
    without results. ``ledger`` (``graders.reports.ledger.Ledger``) applies lateness and
    adjustments: each assignment it is active for gets its raw score, adjusted score,
    submission time, late hours and source, and penalty before its column, which then
    holds the final score (the total adds those), its task columns the task points after
    adjustments, and the lines explaining them go into ``notes``; a student this run did
    not find keeps the submission time recorded with their result (``stored_time``).
    Nothing is regraded for it.
    """
    from graders.reports.gradebook_csv import (
        add_scale_cells,
        format_ms,
        gradebook_columns,
        gradebook_text,
        predicted_column,
        predicted_ms,
        standing_notes,
        student_cell_value,
        total_cell,
        with_standing_columns,
    )

    all_notes = {student: list(lines) for student, lines in (notes or {}).items()}

    rows: dict[str, dict[str, str]] = {}
    ids: set[str] = set()
    stems = {a.stem: a for a in ASSIGNMENTS.values()}
    for path in sorted(out.glob("*/*/results.json")):
        stem = path.parent.name
        info = stems.get(stem)
        if info is None:
            continue
        try:  # bounded, a regular file, never through a link, as read_result reads it
            data = json.loads(submission_files.read_bytes(path, MAX_RESULT_BYTES)
                              .decode("utf-8"))
        except (OSError, ValueError):
            continue
        student = student_of_result(path, data)
        row = rows.setdefault(student, {"student": student_cell_value(student)})
        points: dict[str, float] = {t.id: 0.0 for t in info.graded_tasks}
        for test in data.get("tests", []):
            if test.get("number") in points and "not graded" not in test.get("tags", []):
                points[test["number"]] += float(test.get("score", 0))
        for task, value in points.items():
            row[task] = format_points(round(value, 6))
        row[info.id] = format_points(float(data.get("score", 0)))
        if ledger is not None and ledger.active(info.id):
            standing = ledger.standing(student, info, points, stored=stored_time(data))
            row.update(ledger.cells(standing))
            row.update({t: format_points(v) for t, v in standing.tasks.items()})
            all_notes.setdefault(student, []).extend(standing_notes(standing))
        result = read_result(path)
        for task_id, value in (predicted_ms(result) if result else {}).items():
            row[predicted_column(task_id)] = format_ms(value)
        ids.add(info.id)
    columns = gradebook_columns(sorted(ids))
    if ledger is not None:
        columns = with_standing_columns(columns, [a for a in ids if ledger.active(a)])
    in_order = [a for a in ASSIGNMENTS if a in ids]
    if any(all_notes.values()):
        columns.append("notes")
        for student, lines in all_notes.items():
            row = rows.setdefault(student, {"student": student_cell_value(student)})
            if lines:
                row["notes"] = terminal_text("; ".join(lines))
    for student, row in rows.items():
        row["total"] = total_cell(row, in_order, all_notes.get(student, ()))
        add_scale_cells(row, in_order)
    return gradebook_text(columns, sorted(rows.values(), key=lambda row: row["student"]))


#: The gradebook notes of a results folder's students as the last batch into it left them
#: (discovery's "misnamed: hw.py", the roster's, "not graded yet: FILE", "grader died:
#: FILE"), so that a one-folder regrade keeps its classmates' (a TA's walk: they were
#: lost; read back from gradebook.csv, its hand edits and lateness lines piled up).
NOTES_FILE = ".pallas-lab-notes.json"
#: The largest notes file read back, in bytes.
MAX_NOTES_BYTES = 16 << 20


def write_notes(out: Path, notes: Mapping[str, Sequence[str]]) -> None:
    """Record ``notes`` (student -> lines) as the results folder ``out``'s
    (``NOTES_FILE``), atomically."""
    atomic_write_text(out / NOTES_FILE, json.dumps(
        {student: list(lines) for student, lines in sorted(notes.items()) if lines},
        ensure_ascii=True, indent=0))


def read_notes(out: Path) -> dict[str, list[str]]:
    """The notes ``write_notes`` recorded in ``out`` (student -> lines); empty when there
    are none, or the file is larger than ``MAX_NOTES_BYTES``, a link, or not such a
    mapping of strings."""
    data = submission_files.read_json(out / NOTES_FILE, MAX_NOTES_BYTES)
    if not isinstance(data, dict):
        return {}
    return {student: [line for line in lines if isinstance(line, str)]
            for student, lines in data.items()
            if isinstance(student, str) and isinstance(lines, list)}


def task_scores_from_results(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(student, stem) -> points per graded task, read back from the results.json files."""
    scores: dict[tuple[str, str], dict[str, float]] = {}
    for path in sorted(out.glob("*/*/results.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        points: dict[str, float] = {}
        for test in data.get("tests", []):
            if "not graded" not in test.get("tags", []):
                points[test["number"]] = points.get(test["number"], 0.0) + float(test["score"])
        scores[(student_of_result(path, data), path.parent.name)] = points
    return scores


def summary_rows(out: Path) -> list[dict[str, Any]]:
    """The gradebook's rows (dicts) as written."""
    with open(out / GRADEBOOK, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def refresh_feedback(out: Path, ledger: Ledger) -> int:
    """Rewrite the feedback files of every result under the batch folder ``out`` whose
    standing (``ledger``) has something to say, or whose files still show a section an
    earlier policy wrote: a policy or adjustment changed without regrading. Returns how
    many were rewritten. Raises ``OSError`` when one cannot be written."""
    from graders.reports.feedback_files import write_feedback_files
    from graders.reports.table import STANDING_HEADING

    count = 0
    for result in read_results(out):
        folder = result_path(out, result.student, result.stem).parent
        standing = (ledger.standing(result.student, result.info, _graded_task_points(result),
                                    stored=stored_time_at(folder / "results.json"))
                    if ledger.active(result.assignment) else None)
        if standing is not None and not standing.lines:
            standing = None
        try:
            shown = STANDING_HEADING in (folder / "feedback.md").read_text(encoding="utf-8")
        except OSError:
            shown = False
        if standing is None and not shown:
            continue
        write_feedback_files(result, folder, standing)
        count += 1
    return count


def _graded_task_points(result: SubmissionResult) -> dict[str, float]:
    return {task.task: task.points for task in result.tasks() if task.graded}
