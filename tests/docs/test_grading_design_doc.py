"""The task table of docs/grading-design.md and the points of docs/student-api.md are the
labs' records: every task, its points, its dependencies and its functions, in order."""

from __future__ import annotations

import re
from pathlib import Path

from graders.course.catalog import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\|\s*(\d+\.\d+)\s*\|\s*(\d+)\s*\|\s*([\d., ]*?)\s*\|\s*(.+?)\s*\|$")
API_ROW = re.compile(r"^\| (\d+\.\d+) \| (\d+) \| (.+) \|$")


def _functions(cell: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`(\w+)`", cell))


def _records() -> list[tuple[str, int, tuple[str, ...], tuple[str, ...], bool]]:
    return [(t.id, int(t.points), t.depends, t.functions, t.performance)
            for a in ASSIGNMENTS.values() for t in a.tasks]


def test_the_grading_design_table_is_the_records() -> None:
    text = (ROOT / "docs/grading-design.md").read_text(encoding="utf-8")
    rows = [ROW.match(line) for line in text.splitlines()]
    stated = [(m[1], int(m[2]), tuple(d.strip() for d in m[3].split(",") if d.strip()),
               _functions(m[4]), "(performance)" in m[4]) for m in rows if m]
    assert stated == _records(), (
        "docs/grading-design.md's task table differs from graders/labs/*/__init__.py")


def test_the_student_api_tables_give_the_records_points_and_functions() -> None:
    text = (ROOT / "docs/student-api.md").read_text(encoding="utf-8")
    rows = [API_ROW.match(line) for line in text.splitlines()]
    stated = [(m[1], int(m[2]), _functions(m[3])) for m in rows if m]
    assert stated == [(task, points, functions)
                      for task, points, _, functions, _ in _records()], (
        "docs/student-api.md's task tables differ from graders/labs/*/__init__.py")
