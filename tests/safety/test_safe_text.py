"""graders.safety.safe_text: what a student wrote, made safe for the terminal and the reports."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from graders.safety.safe_text import (
    FORMULA_STARTS,
    UNSAFE_CODEPOINTS,
    csv_cell,
    csv_value,
    show,
    terminal_text,
)

#: Any code point, lone surrogates and controls included.
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None,
                                 exclude_categories=()))
DANGEROUS = "\x1b[2J\x1b]0;owned\x07\r\x9b31m\u202e\u2066\x7f\x00\ud800\udcff"


@settings(max_examples=300)
@given(ANY_TEXT)
def test_terminal_text_leaves_only_printable_valid_unicode_and_is_idempotent(text: str) -> None:
    for multiline, kept in ((False, set()), (True, {0x09, 0x0A})):
        shown = terminal_text(text, multiline=multiline)
        shown.encode("utf-8")  # raises on a lone surrogate
        left = {f"U+{ord(c):04X}" for c in shown if ord(c) in UNSAFE_CODEPOINTS - kept}
        assert not left, f"terminal_text({text!r}, multiline={multiline}) keeps {left}"
        assert terminal_text(shown, multiline=multiline) == shown, "escaping twice changes it"


def test_escapes_are_spelled_as_python_spells_them() -> None:
    assert terminal_text(DANGEROUS) == (
        "\\x1b[2J\\x1b]0;owned\\x07\\r\\x9b31m\\u202e\\u2066\\x7f\\x00\\ud800\\xff")
    assert terminal_text("line 1\n\tline 2", multiline=True) == "line 1\n\tline 2"
    assert terminal_text("line 1\n\tline 2") == "line 1\\n\\tline 2"
    assert terminal_text("Zoë [bold]x[/bold] :smile: 名前") == "Zoë [bold]x[/bold] :smile: 名前"


def test_show_prints_markup_and_emoji_codes_as_text() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      width=200)
    show(console, "[bold red]x[/bold red] [link=https://evil.example]y[/link] :smile: \x1b[2J")
    printed = console.file.getvalue()
    assert "[bold red]x[/bold red] [link=https://evil.example]y[/link] :smile: \\x1b[2J" in (
        printed), printed
    assert "\x1b]8;" not in printed and "\x1b[2J" not in printed, (
        f"no hyperlink and no clear-screen escape reach the terminal: {printed!r}")


@given(ANY_TEXT)
def test_csv_cells_never_start_a_formula_and_read_back_exactly(value: str) -> None:
    cell = csv_cell(value)
    assert csv_value(cell) == value
    for segment in re.split(r"[,;\t\r\n]", cell):
        assert not segment.lstrip(" ").startswith(("=", "+", "-", "@")), (
            f"csv_cell({value!r}) = {cell!r}: {segment!r} starts a formula where a "
            "spreadsheet may start a cell")
    assert not cell.startswith(FORMULA_STARTS), f"csv_cell({value!r}) = {cell!r}"


def test_formula_cells_get_a_quote_wherever_a_cell_could_start() -> None:
    for value in ("=HYPERLINK(\"https://evil.example\")", "+1+cmd", "-2+3", "@SUM(A1)",
                  "\tx", "\rx", "'quoted", "-", "+", "-2.5", "+1"):
        assert csv_cell(value) == "'" + value
    for value in ("alice", "15", "2.5", "1e3", "0", "a=b", "a - b"):
        assert csv_cell(value) == value
    assert csv_cell("x;=1+2;") == "x;'=1+2;"
    assert csv_cell("a, @b\t-c\n+d") == "a, '@b\t'-c\n'+d"
    assert csv_cell("x;'y") == "x;''y"
