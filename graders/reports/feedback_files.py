"""Per-student feedback files: ``feedback.md`` and ``feedback.html`` beside results.json.

Both hold the text ``pallas-lab grade FILE --feedback`` prints for the submission
(``graders.reports.table.print_report``): the task table, then the full text of
every failed check. The Markdown file puts that text in a fenced block, so it
shows exactly as in the terminal; the HTML file is rich's own export of the same
console output (``Console.export_html``), which escapes every character a
student chose, so a name or message holding ``<script>`` stays text.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from graders.grading.result import SubmissionResult
from graders.reports.files import atomic_write_text
from graders.reports.table import print_report
from graders.safety.safe_text import terminal_text

if TYPE_CHECKING:
    from graders.reports.ledger import Standing

#: Width, in characters, of the text in the feedback files.
WIDTH = 100
#: ASCII punctuation Markdown may read as markup or inline HTML: escaped with a backslash
#: in the heading (CommonMark: any ASCII punctuation may be backslash-escaped).
MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!<>|~&")


def feedback_text(result: SubmissionResult, standing: Standing | None = None
                  ) -> tuple[str, str]:
    """(plain text, HTML) of ``result``'s report with feedback, as ``--feedback`` prints it;
    with ``standing`` (its lines not empty) a section headed ``table.STANDING_HEADING`` follows the
    table: due date, submission time and its source, lateness, penalty, adjustments and
    the final score."""
    console = Console(record=True, width=WIDTH, file=io.StringIO(), color_system=None)
    standings = {(result.student, result.assignment): standing} if standing else None
    print_report([result], console, feedback=True, standings=standings)
    return console.export_text(clear=False), console.export_html(inline_styles=True)


def feedback_markdown(result: SubmissionResult, standing: Standing | None = None) -> str:
    """The Markdown feedback file: a heading naming the student, assignment and score, then
    the ``--feedback`` text in a fenced block (backticks in it cannot close the fence)."""
    text, _ = feedback_text(result, standing)
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    heading = terminal_text(
        f"{result.student}: {result.info.id} {result.info.title} "
        f"({Path(result.file).name}): {_score(result, standing)}")
    heading = "".join(f"\\{ch}" if ch in MARKDOWN_SPECIAL else ch for ch in heading)
    return f"# {heading}\n\n{fence}text\n{text.rstrip()}\n{fence}\n"


def _score(result: SubmissionResult, standing: Standing | None) -> str:
    """"90/100"; with a standing, the final score first: "80/100 (raw 100/100)"."""
    top = f"/{result.max_score:g}"
    if standing is None or not standing.lines:
        return f"{result.score:g}{top}"
    return f"{standing.final:g}{top} (raw {standing.raw:g}{top})"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def write_feedback_files(result: SubmissionResult, folder: Path,
                         standing: Standing | None = None) -> tuple[Path, Path]:
    """Write ``feedback.md`` and ``feedback.html`` for ``result`` (with ``standing``: its
    lateness and adjustments section) into ``folder`` (created when missing), each
    atomically; returns their paths. Raises ``OSError`` when they cannot be written."""
    _, html = feedback_text(result, standing)
    md = atomic_write_text(folder / "feedback.md", feedback_markdown(result, standing))
    return md, atomic_write_text(folder / "feedback.html", html)
