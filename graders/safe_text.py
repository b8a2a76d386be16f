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
* ``csv_cell`` / ``csv_value``: OWASP's CSV-injection rule, a cell that
  starts with ``=``, ``+``, ``-``, ``@``, tab or CR gets a leading single
  quote so that a spreadsheet shows it as text; numbers are left as they are.
"""

from __future__ import annotations

import re

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
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: str) -> str:
    """The CSV cell for ``value``: prefixed with ``'`` when it starts with a formula
    character (or with ``'`` itself, so that ``csv_value`` can undo it exactly);
    a number (``-2.5``, ``1e3``) is left as it is so that it stays a number."""
    if value.startswith((*FORMULA_STARTS, "'")) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_value(cell: str) -> str:
    """The value ``csv_cell`` wrote as ``cell`` (its leading ``'`` removed)."""
    return cell[1:] if cell.startswith("'") else cell
