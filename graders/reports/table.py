"""The terminal report: per student and assignment, one row per task, then totals.

docs/grading-design.md, "Reports": per task the points, the status and a one-line reason.
Every string that came from a student (names, file names, reasons, feedback,
printed output) is escaped by ``graders.safety.safe_text.terminal_text`` and added as
``Text``, so control characters show as escapes and markup as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graders.checking.feedback import format_points
from graders.grading.result import SubmissionResult
from graders.safety.safe_text import terminal_text

if TYPE_CHECKING:
    from graders.reports.ledger import Standing

STATUS_STYLE = {
    "passed": "green",
    "partial": "yellow",
    "failed": "red",
    "not started": "dim",
    "timeout": "magenta",
    "error": "bold red",
}
MAX_REASON_CHARS = 90


#: The heading of the lateness and adjustments section (``graders.reports.ledger``), in
#: the table and in the feedback files written from it.
STANDING_HEADING = "Lateness and adjustments"

def short_reason(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """The first line of ``text``, escaped, at most ``limit`` characters: cut at the last
    space that fits (never inside a word, unless one word is longer than the limit),
    marked with "…"."""
    line = terminal_text(text.split("\n", 1)[0])
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:(") + "…"


def load_reason(result: SubmissionResult) -> str:
    """The table's reason for every task of a file that did not load: not run (refused by
    the static check, unreadable, empty, a link) or run and failed on import."""
    error = result.load_error or ""
    name = Path(result.file).name
    if error.startswith(f"importing {name}"):
        return "the file failed when it was imported (see below)"
    if error.startswith(f"{name} could not be loaded"):
        return "the file could not be loaded (see below)"
    if error.startswith("the submission could not be graded"):
        return "the file could not be graded (see below)"
    return "the file was not run (see below)"


@dataclass(frozen=True)
class TaskRow:
    """One task's row as every report shows it (strings, student text escaped): ``task``
    id, ``title`` (what it implements), ``points`` ("25/40", "not graded", or with an
    adjustment "25/40 (graded 40)"), ``status`` (``TaskResult.shown_status``) and the
    one-line ``reason`` ("" for a passed task)."""

    task: str
    title: str
    points: str
    status: str
    reason: str


def task_rows(result: SubmissionResult, standing: Standing | None = None) -> list[TaskRow]:
    """The rows of ``result``'s task table, in the assignment's task order; with
    ``standing`` (``graders.reports.ledger``), a task an adjustment changed shows its
    points after it, then the points graded."""
    adjusted = dict(standing.tasks) if standing is not None else {}
    rows = []
    for task in result.tasks():
        points = f"{format_points(task.points)}/{format_points(task.max_points)}"
        if not task.graded:
            points = "not graded"
        elif task.task in adjusted and abs(adjusted[task.task] - task.points) > 1e-9:
            points = (f"{format_points(adjusted[task.task])}/{format_points(task.max_points)}"
                      f" (graded {format_points(task.points)})")
        if task.status == "passed":
            reason = ""
        elif result.load_error:
            reason = load_reason(result)
        elif task.status == "not started":
            reason = "still the handout's stub (NotImplementedError)"
        else:
            reason = short_reason(task.reason)
        rows.append(TaskRow(task.task, task.title, points, task.shown_status, reason))
    return rows


def total_text(result: SubmissionResult, standing: Standing | None = None) -> str:
    """The table's total: "76/100", or after an adjustment "80/100 (graded 76)"."""
    total = f"{format_points(result.score)}/{format_points(result.max_score)}"
    if standing is not None and abs(standing.adjusted - result.score) > 1e-9:
        total = (f"{format_points(standing.adjusted)}/{format_points(result.max_score)} "
                 f"(graded {format_points(result.score)})")
    return total


def submission_table(result: SubmissionResult, standing: Standing | None = None) -> Table:
    """A rich Table for one submission: Task, Function(s) (what the task implements),
    Points, Status, Reason (``task_rows``); the total in the footer (``total_text``)."""
    info = result.info
    title = Text(terminal_text(
        f"{result.student} — {info.id} {info.title} ({Path(result.file).name})"))
    table = Table(title=title, box=box.SIMPLE_HEAVY, show_footer=True, title_justify="left")
    table.add_column("Task", footer="total")
    table.add_column("Function(s)")
    table.add_column("Points", justify="right", footer=total_text(result, standing))
    table.add_column("Status")
    table.add_column("Reason", overflow="fold")
    for row in task_rows(result, standing):
        # Every dynamic string goes in as escaped Text: a student's "[/]" is text, not markup.
        table.add_row(
            Text(row.task), Text(row.title), Text(row.points),
            Text(row.status, style=STATUS_STYLE.get(row.status, "")), Text(row.reason),
        )
    return table


def print_report(
    results: Sequence[SubmissionResult],
    console: Console | None = None,
    *,
    problems: Sequence[str] = (),
    feedback: bool = False,
    standings: Mapping[tuple[str, str], Standing] | None = None,
) -> None:
    """Print every submission's table (and, with ``feedback``, each failed check's text),
    then a summary of totals and the discovery ``problems``. ``standings`` ((student,
    assignment id) -> ``graders.reports.ledger.Standing``) adds, below a table, the
    lines on lateness and adjustments, and a ``Final`` column to the totals."""
    console = console or Console()
    standings = {k: v for k, v in (standings or {}).items() if v.lines}
    for result in results:
        standing = standings.get((result.student, result.assignment))
        console.print(submission_table(result, standing))
        if standing is not None:
            console.print(Text(f"{STANDING_HEADING}:", style="bold"))
            for line in standing.lines:
                console.print(Text(terminal_text(f"  {line}")))
        if result.load_error:
            console.print(Text(terminal_text(f"  {result.load_error}", multiline=True),
                               style="red"))
        if feedback:
            for check in result.checks:
                if check.status != "passed":
                    console.print(Text(terminal_text(check.feedback, multiline=True)))
                    console.print()
                    if result.load_error:
                        break  # every check failed the same way: once is enough
    if len(results) > 1:
        summary = Table(title="Totals", box=box.SIMPLE, title_justify="left")
        summary.add_column("Student")
        summary.add_column("Assignment")
        summary.add_column("Score", justify="right")
        if standings:
            summary.add_column("Final", justify="right")
        for result in results:
            cells = [
                Text(terminal_text(result.student)), Text(result.assignment),
                Text(f"{format_points(result.score)}/{format_points(result.max_score)}"),
            ]
            if standings:
                standing = standings.get((result.student, result.assignment))
                cells.append(Text(format_points(standing.final if standing
                                                else result.score)))
            summary.add_row(*cells)
        console.print(summary)
    for problem in problems:
        console.print(Text(terminal_text(f"skipped: {problem}"), style="yellow"))
