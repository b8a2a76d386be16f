r"""Student-controlled text made safe to show in a terminal and to write into reports.

Student names are folder names, file names come from the file system, and
reasons and feedback quote what a submission raised or printed: an attacker
chooses all of it (docs/security.md, "Class folders"). Everything the grader
shows or writes goes through this module first:

* ``terminal_text``: every control character becomes a visible escape,
  spelled as Python's ``repr`` spells it (``\x1b``, ``\r``, ``\x9b``,
  ``\u202e``): C0 controls (the newline and tab survive in multi-line text),
  DEL, C1 controls (U+009B is a one-character CSI on some terminals), the
  bidirectional overrides and isolates ("Trojan source") and the line and
  paragraph separators. Lone surrogates, which cannot be encoded at all,
  become ``\xNN`` when they stand for an undecodable byte of a file name (what
  ``os.fsdecode`` makes of it) and ``\udNNN`` otherwise. The result is valid
  Unicode. It is then printed as rich ``Text`` (``show``), never as markup,
  so ``[bold]`` or ``:smile:`` in a name stays those characters. rich's own
  ``strip_control_codes`` removes only BEL, BS, VT, FF and CR, and leaves ESC.
* ``csv_text``, the one CSV writer (``csv_cell`` / ``csv_value``): OWASP's
  CSV-injection rule, applied wherever a spreadsheet could start a cell: at the
  start of a cell and after every ``,``, ``;``, tab or line break inside it (a
  spreadsheet splitting on ``;`` ignores the quotes of a ``,`` file), a ``=``,
  ``+``, ``-``, ``@``, tab or CR gets a single quote before it, so that it shows
  as text; every text cell is quoted; points and times (never negative) are
  written as bare numbers.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal

from rich.console import Console
from rich.text import Text

#: Bidirectional formatting characters: marks, embeddings, overrides, isolates.
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
#: Every code point ``terminal_text`` escapes (newline and tab are kept in multi-line text).
UNSAFE_CODEPOINTS = frozenset([*range(0x00, 0x20), *range(0x7F, 0xA0), *BIDI_CONTROLS,
                               0x2028, 0x2029, *range(0xD800, 0xE000)])
_SHORT = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(code: int) -> str:
    if code in _SHORT:
        return _SHORT[code]
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


_ONE_LINE = {code: _escape(code) for code in UNSAFE_CODEPOINTS}
_MULTI_LINE = {code: text for code, text in _ONE_LINE.items() if code not in (0x09, 0x0A)}


def terminal_text(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character, bidi control and lone surrogate replaced
    by its visible escape (see the module docstring); idempotent.

    With ``multiline`` newlines and tabs are kept (feedback, tracebacks); without it
    they are escaped too (names, one-line reasons). Never raises.
    """
    return text.translate(_MULTI_LINE if multiline else _ONE_LINE)


def show(console: Console, text: str, *, style: str = "", multiline: bool = False) -> None:
    """Print ``text`` on ``console`` safely: escaped by ``terminal_text`` (newlines kept
    only with ``multiline``, so a name cannot start a forged line) and printed as
    plain ``Text``, so nothing in it is read as rich markup, an emoji code or a
    highlight."""
    console.print(Text(terminal_text(text, multiline=multiline), style=style))


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Where a spreadsheet may start a new cell inside a cell's text: the separators of every
#: locale (a spreadsheet that splits on ``;`` or tab ignores the quotes of a ``,`` file)
#: and line breaks (a reader that ignores quotes starts a row there).
CELL_BREAKS = frozenset(",;\t\r\n")
#: The only numbers the project writes into a CSV: points and times, never negative.
_NUMBER = re.compile(r"\d+(\.\d+)?")


def csv_cell(value: str) -> str:
    """The CSV text for ``value`` with every place a spreadsheet could start a formula
    neutralised (OWASP's CSV-injection rule): the start of the cell and every position
    after a ``CELL_BREAKS`` character, leading spaces skipped (a reader may trim them),
    gets a ``'`` before a ``FORMULA_STARTS`` character, and before a ``'`` itself, so
    that ``csv_value`` undoes it exactly. ``"x;=1+2;"`` -> ``"x;'=1+2;"``, ``"-2.5"`` ->
    ``"'-2.5"`` (a name is text; numbers are written by ``csv_text``, unquoted)."""
    out: list[str] = []
    start = True
    for char in value:
        if start and char != " ":
            if char in FORMULA_STARTS or char == "'":
                out.append("'")
            start = False
        out.append(char)
        if char in CELL_BREAKS:
            start = True
    return "".join(out)


def csv_value(cell: str) -> str:
    """The value ``csv_cell`` wrote as ``cell``: the ``'`` it put at the start of the cell
    and after each ``CELL_BREAKS`` character (leading spaces skipped) removed."""
    out: list[str] = []
    start = True
    for char in cell:
        if start and char != " ":
            start = False
            if char == "'":
                continue  # the character after it is the value's own, taken as it is
        out.append(char)
        if char in CELL_BREAKS:
            start = True
    return "".join(out)


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, str]], *,
             text_columns: Collection[str]) -> str:
    """The CSV document of ``rows`` (values by column; missing ones empty, others ignored)
    under a header of ``columns``: the one writer of every CSV the project writes.

    A value of a column not in ``text_columns`` that is a plain non-negative decimal
    (``15``, ``2.5``, ``1.5200``: points and predicted times) is written bare, as a number,
    exactly as given. Every other cell, the header included, is text: neutralised by
    ``csv_cell`` and quoted (``QUOTE_NONNUMERIC``), so no spreadsheet, whatever separator
    it splits on, reads a formula (docs/security.md, "Class folders"). Source: OWASP,
    "CSV Injection"; Python's ``csv`` module quotes and doubles ``"``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerow([csv_cell(column) for column in columns])
    for row in rows:
        cells: list[str | Decimal] = []
        for column in columns:
            value = row.get(column) or ""
            if column not in text_columns and _NUMBER.fullmatch(value):
                cells.append(Decimal(value))  # a number to csv: written bare, as given
            else:
                cells.append(csv_cell(value))
        writer.writerow(cells)
    return buffer.getvalue()
