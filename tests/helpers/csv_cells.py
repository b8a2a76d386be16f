"""Reading a CSV as a spreadsheet could: the formula check the CSV red-team tests share
(tests/redteam/test_csv_injection.py, tests/redteam/test_lms_attacks.py)."""

from __future__ import annotations

import csv
import io

#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def formula_cells(text: str) -> list[str]:
    """Every cell of ``text`` that starts a formula when a spreadsheet splits it on ``,``,
    ``;`` or tab, honouring the quotes or not (then leading quotes and spaces are
    skipped too, as a reader that trims would)."""
    found = []
    for delimiter in (",", ";", "\t"):
        for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_NONE):
            reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter,
                                quoting=quoting)
            for row in reader:
                for cell in row:
                    shown = cell.lstrip(' "') if quoting == csv.QUOTE_NONE else cell.lstrip(" ")
                    if shown.startswith(FORMULA_STARTS):
                        found.append(f"{delimiter!r}/{quoting}: {cell!r}")
    return found
