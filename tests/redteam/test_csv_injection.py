"""No spreadsheet runs the gradebook, whatever separator it splits on
(docs/security.md, "Class folders").

A folder, file or roster name such as ``x;=1+2;`` was written unquoted, and only a cell's
first character was guarded: Excel in many locales and LibreOffice split a CSV on ``;``
(or tab), and then ``=1+2`` is a cell of its own, a formula. Now every text cell is
quoted and every place a spreadsheet could start a cell inside it (after ``,``, ``;``,
tab or a line break, leading spaces skipped) is neutralised with a ``'`` (OWASP's CSV
injection rule); scores, never negative, stay unquoted numbers. Both gradebook writers
(``--format csv`` and a batch's ``gradebook.csv``) are read back with ``,``, ``;`` and tab
as the separator, honouring quotes and ignoring them, and no cell may start a formula.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.csv_cells import formula_cells

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "solutions" / "a1_pallas_basics.py"
STUB = REPO / "examples" / "submissions" / "cleo_untouched" / "a1_pallas_basics.py"
STEM = "a1_pallas_basics"
#: Student folders: each hides a formula after a separator, or is a "number" with a sign.
FOLDERS = {"x;=1+2;": SOLUTION, "a,@SUM(A1:A9)": STUB, "b; -3+4": STUB,
           "c\t=tab": STUB, "-2.5": STUB, ";+cmd": STUB, "alice": SOLUTION}
#: A file that is not graded (its name goes to alice's notes) and roster entries without a
#: submission (their names get rows of their own).
MISNAMED = ";=cmd|' \\C calc'!A0.py"
ROSTER = ["x;=1+2;", "alice", "r;=HYPERLINK(1)", "@mallory", "s,-1"]


def grade(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "graders.cli.main", "grade", *map(str, args),
                           "--timeout", "5"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The class graded twice: ``--format csv`` (one gradebook file) and ``--jobs 2``."""
    base = tmp_path_factory.mktemp("csv")
    klass = base / "class"
    for name, source in FOLDERS.items():
        (klass / name).mkdir(parents=True)
        shutil.copyfile(source, klass / name / f"{STEM}.py")
    (klass / "alice" / MISNAMED).write_text("x = 1\n", encoding="utf-8")
    roster = base / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["student"], *([name] for name in ROSTER)])
    single = grade(klass, "--format", "csv", "--out", base / "book.csv", "--roster", roster)
    assert single.returncode == 0, single.stderr[-3000:]
    batch = grade(klass, "--jobs", "2", "--out", base / "results", "--roster", roster)
    assert batch.returncode == 0, batch.stderr[-3000:]
    return {"csv": base / "book.csv", "jobs": base / "results" / "gradebook.csv"}


@pytest.mark.parametrize("mode", ["csv", "jobs"])
def test_no_cell_starts_a_formula_whatever_the_separator(
        books: dict[str, Path], mode: str) -> None:
    text = books[mode].read_text(encoding="utf-8")
    found = formula_cells(text)
    assert not found, f"{mode}: {len(found)} formula cells, e.g. {found[:6]}\n{text}"


@pytest.mark.parametrize("mode", ["csv", "jobs"])
def test_text_is_quoted_and_scores_stay_plain_numbers(
        books: dict[str, Path], mode: str) -> None:
    text = books[mode].read_text(encoding="utf-8")
    header, *rows = csv.reader(io.StringIO(text, newline=""))
    by_name = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert by_name["x;'=1+2;"]["a1"] == "100" and by_name["alice"]["a1"] == "100"
    assert by_name["'-2.5"]["a1"] == "0", "a name is text, even one that looks like a number"
    numeric = [c for c in header if c not in ("student", "notes")]
    for line, row in zip(text.splitlines()[1:], rows, strict=True):
        assert line.startswith('"'), f"the student cell is quoted: {line}"
        values = dict(zip(header, row, strict=True))
        assert all(re.fullmatch(r"(\d+(\.\d+)?)?", values[c]) for c in numeric), (
            f"scores and times are plain non-negative numbers (or empty): {row}")
        if values["a1"]:
            assert f",{values['a1']},{values['total']}" in line, (
                f"scores are written as bare numbers, not quoted text: {line}")
    assert set(by_name) >= {"r;'=HYPERLINK(1)", "'@mallory", "s,'-1"}, sorted(by_name)
    assert "misnamed: ;'=cmd|' \\C calc'!A0.py" in by_name["alice"]["notes"]


def test_a_regraded_student_keeps_one_row_and_names_read_back(
        books: dict[str, Path], tmp_path: Path) -> None:
    from graders.safety.safe_text import csv_value

    book = tmp_path / "book.csv"
    shutil.copyfile(books["csv"], book)
    klass = books["csv"].parent / "class"
    before = book.read_text(encoding="utf-8")
    again = grade(klass / "x;=1+2;", "--format", "csv", "--out", book)
    assert again.returncode == 0, again.stderr[-3000:]
    assert book.read_text(encoding="utf-8") == before, "one row, as it was"
    with open(book, newline="", encoding="utf-8") as handle:
        names = {csv_value(row["student"]) for row in csv.DictReader(handle)}
    assert names == {*FOLDERS, *ROSTER} - {"c\t=tab"} | {"c\\t=tab"}, sorted(names)
