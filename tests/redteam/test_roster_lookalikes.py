"""Red team: a look-alike folder name against the roster match (``--roster``).

Kim Lee is on the roster and has not submitted; Mallory names her folder "Kim Lee" with a
look-alike character. The roster took the first entry sharing a folded key (case-folded,
letters and digits only), so Mallory's folder was Kim's entry: Kim was never "missing",
and an LMS import keyed by the roster would have carried Mallory's grade on Kim's row.
The roster now matches through ``graders.reports.names.resolve_student``, the rule the
extensions and adjustments files use, which never matches a look-alike by folding.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from graders.cli.main import main
from graders.course.catalog import Assignment
from tests.helpers.fake_lab import GOOD, write

KIM = "Kim Lee"
#: Look-alikes of "Kim Lee" that fold to "kimlee": U+212A KELVIN SIGN for the K, and a
#: zero-width space inside (folding drops it).
LOOKALIKES = ["\u212aim Lee", "Ki\u200bm Lee"]


def _book(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.mark.parametrize("lookalike", LOOKALIKES, ids=["kelvin-sign", "zero-width-space"])
def test_a_lookalike_folder_does_not_take_an_absent_classmates_roster_row(
        tmp_path: Path, fake_assignment: Assignment, lookalike: str) -> None:
    """Kim Lee is on the roster and has not submitted; Mallory's folder is "Kim Lee"
    spelled with a look-alike. The roster matched folded keys, so Mallory's folder was
    Kim's: Kim was not "missing" and Mallory not "not on the roster". Now a look-alike is
    never matched by folding: Kim's row says she is missing, Mallory's that she is not on
    the roster."""
    klass = tmp_path / "class"
    write(klass / lookalike, "t9_fake.py", GOOD)
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student\n{KIM}\n", encoding="utf-8")
    book = tmp_path / "book.csv"
    assert main(["grade", str(klass), "--timeout", "2", "--roster", str(roster), "--format", "csv",
                 "--out", str(book)]) == 0
    rows = _book(book)
    assert rows[KIM]["notes"] == "missing: no submission" and rows[KIM]["t9"] == "", rows
    assert rows[lookalike]["notes"] == "not on the roster", rows
