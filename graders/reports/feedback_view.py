"""What a student's feedback page shows, as data: the title, the score, the lateness and
adjustments lines, the task table and one section per failed check, its fields apart.

``graders.reports.feedback_files`` renders it as HTML and as Markdown. A failed check's
text (``CheckResult.feedback``, written by ``graders.checking.feedback.failure_text``) is
read back into its labelled fields: the first line is the heading, then ``  label: value``
lines in the order that function writes them, each value running on over the lines
indented under it. A student's own text (an exception message, what their code printed) may
hold a line that looks like a label: only a label that comes after the ones already seen
starts a field, and a ``looks like`` line starts the diagnosis field only when it is the
diagnosis the check verified (``CheckResult.diagnosis``); anything else stays part of the
value it was printed in.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from graders.checking.feedback import format_points
from graders.grading.result import CheckResult, SubmissionResult
from graders.reports.table import STANDING_HEADING, TaskRow, task_rows, total_text
from graders.safety.safe_text import terminal_text

if TYPE_CHECKING:
    from graders.reports.ledger import Standing

#: The labels of a failed check's text, in the order ``failure_text`` writes them.
LABELS = ("check", "problem", "smallest failing input", "expected", "got", "looks like",
          "hint", "in your file", "your code printed")
#: The label of the verified diagnosis.
DIAGNOSIS = "looks like"
#: Non-ASCII characters in a row after which ``breakable`` lets a line break: no line can
#: break inside a grapheme cluster, so one of a thousand combining marks would make a page
#: scroll sideways.
MAX_CLUSTER_GROWTH = 24
#: Where a cluster may be split: a zero-width space (a line may break after it).
CLUSTER_BREAK = "\u200b"


@dataclass(frozen=True)
class CheckSection:
    """One failed check: its ``heading`` ("Task 1.3 bias_add — this check: 0 of 10 points"),
    its ``status`` and its fields, (label, value) in the order written; a value may span
    lines."""

    heading: str
    status: str
    fields: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class FeedbackView:
    """A student's feedback for one file: ``title`` (student, assignment, file), ``score``
    ("80/100 (raw 100/100)" with a standing), ``standing_heading`` and ``standing`` lines
    (empty without lateness or adjustments), the task ``rows`` and their ``total``,
    ``load_error`` (the file did not load: "" otherwise) and the failed ``checks``."""

    title: str
    score: str
    rows: list[TaskRow]
    total: str
    standing_heading: str = STANDING_HEADING
    standing: list[str] = field(default_factory=list)
    load_error: str = ""
    checks: list[CheckSection] = field(default_factory=list)


def score_text(result: SubmissionResult, standing: Standing | None) -> str:
    """"90/100"; with a standing, the final score first: "80/100 (raw 100/100)"."""
    top = f"/{result.max_score:g}"
    if standing is None or not standing.lines:
        return f"{result.score:g}{top}"
    return f"{standing.final:g}{top} (raw {standing.raw:g}{top})"


def feedback_view(result: SubmissionResult, standing: Standing | None = None) -> FeedbackView:
    """The view of ``result`` (with ``standing``: its lateness and adjustments), every
    string escaped for a terminal (``terminal_text``); HTML and Markdown escaping is the
    renderer's. A file that did not load shows its error once, not once per check."""
    shown = standing if standing is not None and standing.lines else None
    title = breakable(terminal_text(f"{result.student} — {result.info.id} "
                                    f"{result.info.title} ({Path(result.file).name})"))
    checks = [] if result.load_error else [
        check_section(check) for check in result.checks if check.status != "passed"]
    rows = [TaskRow(r.task, r.title, r.points, r.status, breakable(r.reason))
            for r in task_rows(result, shown)]
    return FeedbackView(
        title=title, score=score_text(result, shown), rows=rows,
        total=total_text(result, shown),
        standing=[breakable(terminal_text(line)) for line in shown.lines] if shown else [],
        load_error=breakable(terminal_text(result.load_error or "", multiline=True)),
        checks=checks)


def check_section(check: CheckResult) -> CheckSection:
    """``check``'s feedback text read back into its heading and labelled fields (module
    docstring: how a student's text that looks like a label is kept in its value)."""
    lines = breakable(terminal_text(check.feedback, multiline=True)).splitlines() or [
        check.check]
    fields: list[list[str]] = []
    seen = -1
    for line in lines[1:]:
        label, value = _label_of(line)
        rank = LABELS.index(label) if label in LABELS else -1
        starts = rank > seen and (label != DIAGNOSIS or _is_verified(value, check.diagnosis))
        if starts:
            seen = rank
            fields.append([label, value])
        elif fields:
            fields[-1].append(line)
        else:
            fields.append(["", line])
    heading = check_heading(lines[0].removesuffix(f" ({check.status})"), check)
    return CheckSection(heading=heading, status=check.status,
                        fields=[(f[0], _value(f[1], f[2:])) for f in fields])


def check_heading(first_line: str, check: CheckResult) -> str:
    """A failed check's heading: its feedback's first line ("Task 1.3 bias_add — 0/10")
    with the points said to be this check's ("... — this check: 0 of 10 points"), so they
    are not read as the task's (the task table shows those)."""
    start, dash, points = first_line.rpartition(" — ")
    if not dash or points != f"{format_points(check.points)}/{format_points(check.max_points)}":
        return first_line
    return (f"{start} — this check: {format_points(check.points)} of "
            f"{format_points(check.max_points)} points")


def _label_of(line: str) -> tuple[str, str]:
    """(label, rest) of a ``  label: value`` line (two spaces, a known label), else
    ("", line)."""
    if line.startswith("  ") and not line.startswith("   "):
        label, colon, rest = line[2:].partition(":")
        if colon and label in LABELS:
            return label, rest.strip()
    return "", line


def _is_verified(value: str, diagnosis: str) -> bool:
    """The ``looks like`` value is the check's own diagnosis (``failure_text`` may add the
    lecture section after it)."""
    return bool(diagnosis) and (value == diagnosis or value.startswith(f"{diagnosis} (lecture "))


def _value(first: str, more: list[str]) -> str:
    """A field's value: its first line, then the lines under it without their common
    indentation."""
    if not more:
        return first
    rest = textwrap.dedent("\n".join(more))
    return f"{first}\n{rest}" if first else rest


def breakable(text: str) -> str:
    """``text`` with a zero-width space (``CLUSTER_BREAK``, a grapheme-cluster break by
    Unicode's rules, where a line may break) after every ``MAX_CLUSTER_GROWTH``
    consecutive non-ASCII characters without a space: no run of combining marks, joiners,
    jamo, prepended or conjunct letters can make one unbreakable cluster hundreds of
    characters wide. ASCII text (a traceback's ``^^^^``) is returned unchanged; a browser
    breaks it anywhere."""
    out = []
    run = 0
    for char in text:
        run = run + 1 if char >= "\x80" and not char.isspace() else 0
        out.append(char)
        if run >= MAX_CLUSTER_GROWTH:
            out.append(CLUSTER_BREAK)
            run = 0
    return "".join(out)
