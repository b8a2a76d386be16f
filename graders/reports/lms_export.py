"""Grades back into the LMS: the import file of Canvas, Moodle or Blackboard, from a roster.

``pallas-lab grade CLASS --roster EXPORT.csv --format canvas|moodle|blackboard`` writes,
besides the usual results, the CSV that LMS imports (``graders.reports.lms_layouts`` has
each layout and its sources): one row per roster student, in the roster's order, keyed
by the roster's own identifiers and keeping its identity columns, and one column per
assignment graded holding the *final* score in points (after the late policy and the
adjustments, exactly the gradebook's ``aN`` column, ``graders.reports.gradebook_csv.
final_score``). Canvas gets its "Points Possible" row (each assignment's maximum).

Nobody is dropped silently:

* a roster student without a submission keeps their row with an empty cell (Canvas
  leaves that grade as it was, Moodle reads it as no grade);
* a graded folder that is not on the roster, or that could not be told apart from a
  classmate (``graders.reports.roster.match_entries``), is not written to the import
  file: it gets a warning line and a row in the side file ``<out>_unmatched.csv`` (kind,
  name, reason and its final scores) for the TA to enter by hand;
* a roster student whose key cell is empty (Moodle and Blackboard refuse or misfile such
  a row), or would have to be altered to be written safely (it starts like a formula),
  is left out of the import file the same way;
* a roster entry several folders match keeps its row, empty, and is listed there too.

Every cell is written by ``graders.safety.safe_text.csv_text``: names and roster cells
(both untrusted) escaped by ``terminal_text`` and neutralised wherever a spreadsheet
could start a formula; scores as bare numbers (quoted for Blackboard).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graders.checking.feedback import format_points
from graders.course.catalog import ASSIGNMENTS
from graders.grading.result import SubmissionResult
from graders.reports.files import atomic_write_text
from graders.reports.gradebook_csv import final_score
from graders.reports.lms_layouts import LAYOUTS, assignment_column, columns, key_column
from graders.reports.roster import Roster, RosterEntry, RosterMatch
from graders.safety.safe_text import csv_cell, csv_text, terminal_text

if TYPE_CHECKING:
    from graders.reports.late import SubmissionTime
    from graders.reports.ledger import Ledger

#: The side file's columns before one column per assignment (its id: final points).
SIDE_COLUMNS = ("kind", "name", "reason")


@dataclass
class LmsExport:
    """What ``write_lms_import`` wrote: the import file (``path``) and its rows
    (``students``: roster students written, ``graded``: those with a score, ``empty``:
    those without any), the side file (``side``) and one warning line per student or
    folder listed there (``warnings``); ``key``: the column the LMS must find students by
    (for Moodle, the one to map when uploading: the others may be empty)."""

    path: Path
    side: Path
    key: str = ""
    students: int = 0
    graded: int = 0
    empty: int = 0
    warnings: list[str] = field(default_factory=list)


def side_path(path: Path) -> Path:
    """The side file beside the import file ``path``: ``<stem>_unmatched.csv``."""
    return path.with_name(f"{path.stem}_unmatched.csv")


def final_scores(results: Sequence[SubmissionResult], ledger: Ledger | None,
                 stored: Mapping[tuple[str, str], SubmissionTime | None] | None = None
                 ) -> dict[str, dict[str, float]]:
    """Folder name -> assignment id -> final score in points (``final_score``; ``stored``:
    (student, assignment) -> the submission time recorded with the result, for the
    students whose files this run did not find)."""
    scores: dict[str, dict[str, float]] = {}
    for result in results:
        when = (stored or {}).get((result.student, result.assignment))
        scores.setdefault(result.student, {})[result.assignment] = final_score(
            result, ledger, stored=when)
    return scores


def write_lms_import(lms: str, path: Path, roster: Roster, match: RosterMatch,
                     results: Sequence[SubmissionResult], ledger: Ledger | None,
                     stored: Mapping[tuple[str, str], SubmissionTime | None] | None = None,
                     ) -> LmsExport:
    """Write ``lms``'s import file to ``path`` and the side file beside it (atomically,
    both, every run: an empty side file means nobody was left out); returns what was
    written.

    ``roster`` and ``match``: the roster read and how the folders found match it;
    ``results``: the results to export (the class's); ``ledger``: the run's lateness and
    adjustments (None: raw scores are final); ``stored``: the submission times recorded
    with the results, (student, assignment) -> time, used for the students this run did
    not find, as the gradebook uses them. Every folder ``match`` leaves without an
    entry is listed in the side file, with its scores when it has results. Assignment
    columns: every assignment of ``results``, in course order. Raises
    ``KeyError`` for an unknown ``lms`` (``LMS_FORMATS`` are known) and ``OSError`` when a
    file cannot be written."""
    layout = LAYOUTS[lms]
    infos = [ASSIGNMENTS[a] for a in ASSIGNMENTS if any(r.assignment == a for r in results)]
    scores = final_scores(results, ledger, stored)
    header = columns(layout, roster, infos)
    item_of = {info.id: assignment_column(layout, roster, info) for info in infos}
    key = key_column(layout, roster) or ""
    folder_of = {entry: folder for folder, entry in match.matched.items()}
    out = LmsExport(path, side_path(path), key)
    rows: list[dict[str, str]] = []
    if layout.points_row:
        first = header[0]
        rows.append({first: layout.points_row, **{
            item_of[i.id]: format_points(sum(t.points for t in i.graded_tasks))
            for i in infos}})
    side: list[dict[str, str]] = []

    def set_aside(kind: str, name: str, why: str, folder: str | None) -> None:
        marks = _score_cells(scores.get(folder or "", {}), {i.id: i.id for i in infos})
        name, why = terminal_text(name), terminal_text(why)
        side.append({"kind": kind, "name": name, "reason": why, **marks})
        out.warnings.append(f"{lms}: {kind} {name!r}: {why}; listed in {out.side}")

    for entry in roster.entries:
        folder = folder_of.get(entry)
        why = _key_problem(entry.cell(key), key, lms)
        first_cell = entry.cell(header[0])
        if not why and layout.points_row and layout.points_row.casefold() in \
                first_cell.casefold():
            # Canvas reads any row whose first cell holds "Points Possible" as the points
            # row (each assignment's maximum): a name chosen so would set the points
            why = (f"its {header[0]!r} holds {layout.points_row!r}, which "
                   f"{lms.capitalize()} reads as the points row, not a student")
        if why:
            set_aside("roster student", entry.name, f"{why}: not in {path}", folder)
            continue
        row = _identity_cells(entry, header[:len(header) - len(infos)])
        row.update(_score_cells(scores.get(folder or "", {}), item_of))
        rows.append(row)
        out.students += 1
        if folder is not None and scores.get(folder):
            out.graded += 1
        else:
            out.empty += 1
        if entry in match.contested:
            set_aside("roster student", entry.name, f"{match.contested[entry]}: row left "
                      "empty", None)
    for folder in match.strangers:
        set_aside("folder", folder, f"not on the roster: not in {path}", folder)
    for folder, why in match.unclear.items():
        set_aside("folder", folder, f"not matched to the roster ({why}): not in {path}",
                  folder)
    text_columns = header if layout.quote_numbers else header[:len(header) - len(infos)]
    atomic_write_text(path, csv_text(header, rows, text_columns=text_columns))
    atomic_write_text(out.side, csv_text([*SIDE_COLUMNS, *(i.id for i in infos)], side,
                                         text_columns=SIDE_COLUMNS))
    return out


def _key_problem(value: str, key: str, lms: str) -> str:
    """Why a roster student's key cell ``value`` (column ``key``) cannot key their row
    (``""`` when it can): it is empty, so the LMS could not find them (Moodle would even
    file the row under the previous student), or writing it safely would change it (it
    starts like a formula, or holds control characters), so it would name nobody."""
    if not value.strip():
        return f"no {key!r} on the roster, so {lms.capitalize()} could not find this student"
    if csv_cell(terminal_text(value)) != value:
        return (f"the roster's {key!r} starts like a spreadsheet formula or holds control "
                "characters: written safely it would name nobody")
    return ""


def _identity_cells(entry: RosterEntry, identity: Sequence[str]) -> dict[str, str]:
    """An entry's roster cells under the import file's identity columns (control
    characters escaped: the cells are untrusted)."""
    return {column: terminal_text(entry.cell(column)) for column in identity}


def _score_cells(scores: Mapping[str, float], column_of: Mapping[str, str]) -> dict[str, str]:
    """Final scores under their columns (``column_of``: assignment id -> column)."""
    return {column_of[a]: format_points(round(v, 6)) for a, v in scores.items()
            if a in column_of}
