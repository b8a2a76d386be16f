"""LMS rosters and import files for the tests: the export layouts the roster reader accepts
(Canvas, Moodle, Blackboard) and readers of the import files ``pallas-lab grade --format
canvas|moodle|blackboard`` writes, each reading as that LMS does
(``graders.reports.lms_layouts`` cites the sources).

Shared by tests/cli/test_grade_options.py, tests/cli/test_lms_export.py and
tests/redteam/test_lms_attacks.py.
"""

from __future__ import annotations

import csv
from pathlib import Path

#: A Canvas gradebook export: the "Points Possible" row, one assignment column.
CANVAS = '''Student,ID,SIS User ID,SIS Login ID,Section,A1 (123)
    Points Possible,,,,,100.00
"Smith, Jane",11,S001,jsmith,Sec 1,
"Doe, John",12,S002,jdoe,Sec 1,
"Roe, Rita",13,S003,rroe,Sec 1,
'''
#: A Blackboard Grade Center download (Jane's username is empty).
BLACKBOARD = '''"Last Name","First Name","Username","Student ID","Last Access","Availability"
"Smith","Jane","","","2026-11-30","Yes"
"Doe","John","jdoe","S002","2026-11-30","Yes"
'''
#: A Moodle grades export.
MOODLE = '''First name,Last name,ID number,Institution,Department,Email address
Jane,Smith,S001,,,jane.smith@uni.example
John,Doe,S002,,,jdoe@uni.example
'''


def write_roster(path: Path, text: str) -> Path:
    """Write ``text`` (one of the exports above, indented lines stripped) to ``path``."""
    path.write_text("\n".join(line.strip() for line in text.splitlines()) + "\n",
                    encoding="utf-8")
    return path


def _records(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        header, *rows = [r for r in csv.reader(handle) if r]
    return header, rows


def read_canvas_import(path: Path) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(column -> points possible, student key -> row) as Canvas reads an import: the
    "Points Possible" row gives the new assignments' points; a student is found by
    ``ID``, else ``SIS User ID``, else ``SIS Login ID`` (the first non-empty one is the
    key here)."""
    header, rows = _records(path)
    points: dict[str, str] = {}
    students: dict[str, dict[str, str]] = {}
    for row in rows:
        cells = dict(zip(header, row, strict=True))
        if cells["Student"].strip() == "Points Possible":
            points = cells
            continue
        key = next(cells[c] for c in ("ID", "SIS User ID", "SIS Login ID") if cells.get(c))
        assert key not in students, f"Canvas would apply two rows to {key!r}"
        students[key] = cells
    return points, students


def read_keyed_import(path: Path, key: str) -> dict[str, dict[str, str]]:
    """Key -> row, as Moodle (mapped from ``key``: ``ID number`` or ``Email address``) or
    Blackboard (``Username``) read an import: every row must carry a key (Moodle aborts
    the import, or files the row under the previous user, otherwise)."""
    header, rows = _records(path)
    students: dict[str, dict[str, str]] = {}
    for row in rows:
        cells = dict(zip(header, row, strict=True))
        assert cells[key].strip(), f"a row without {key!r}: {cells}"
        assert cells[key] not in students, f"two rows for {cells[key]!r}"
        students[cells[key]] = cells
    return students


def read_side_file(path: Path) -> dict[str, dict[str, str]]:
    """The side file of an import (``<out>_unmatched.csv``): name -> row."""
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}
