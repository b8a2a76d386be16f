"""Student-facing feedback text for one check (docs/style.md, "Feedback a student reads").

The task and its points first, then what was checked, what went wrong, the
smallest failing input, expected vs got, the known mistake it looks like (with
the lecture section), a hint, and only then the student's own traceback and
printed output. Nothing here mentions the grader's own code, temp paths or
timings, so the same submission always gets the same text. What the student's
code raised or printed may hold terminal escapes: the text comes out with
every control character shown as an escape (``graders.safety.safe_text``).
"""

from __future__ import annotations

from graders.checking.framework import CheckFailure
from graders.safety.safe_text import terminal_text

MAX_OUTPUT_LINES = 12
#: Characters kept of any one field (problem, input, expected, got, traceback): replies are
#: the submission's, and a 1 MiB string returned by render_gantt must not become 1 MiB of
#: feedback in every report.
MAX_FIELD_CHARS = 4000


def cap_text(text: str) -> str:
    """``text`` cut to ``MAX_FIELD_CHARS`` characters, saying how many were left out."""
    if len(text) <= MAX_FIELD_CHARS:
        return text
    return f"{text[:MAX_FIELD_CHARS]}... ({len(text) - MAX_FIELD_CHARS} more characters)"


def format_points(points: float) -> str:
    """``10`` for 10.0, ``2.5`` for 2.5 (no trailing zeros)."""
    return f"{points:g}"


def _indent_block(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _field(label: str, value: str, width: int) -> str:
    head = f"  {label}:".ljust(width + 3)
    # Only a newline starts a line: a "\r" or "\x1c" a student's message holds stays in
    # its line, where terminal_text shows it as an escape.
    lines = value.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # a final newline ends the value, as splitlines reads it
    pad = " " * len(head)
    return "\n".join([head + lines[0], *(pad + line for line in lines[1:])])


def _with_section(text: str, section: str) -> str:
    if not section or "lecture §" in text:
        return text
    return f"{text} (lecture {section})"


def header(task_id: str, task_title: str, earned: float, points: float, status: str) -> str:
    """``Task 1.2 blocked_add — 0/10`` (plus the status when it is not a plain pass/fail)."""
    line = f"Task {task_id} {task_title} — {format_points(earned)}/{format_points(points)}"
    if status not in ("passed", "failed"):
        line += f" ({status})"
    return line


def failure_text(
    failure: CheckFailure,
    *,
    task_id: str,
    task_title: str,
    check_name: str,
    points: float,
    lecture: str,
) -> str:
    """Feedback for a failed check, following docs/style.md's example; ``lecture`` is "§N".

    Control characters in it (from the student's messages and output) are escaped
    (``graders.safety.safe_text.terminal_text``); newlines and tabs are kept.
    """
    lines = [
        header(task_id, task_title, 0, points, failure.status),
        f"  check: {check_name}",
        # A message's later lines are indented under its first, so no line of it starts
        # where a field's label does (graders/reports/feedback_view.py reads the fields).
        _field("problem", cap_text(failure.what), len("problem:")),
    ]
    fields: list[tuple[str, str]] = []
    if failure.input is not None:
        fields.append(("smallest failing input", failure.input))
    if failure.expected is not None:
        fields.append(("expected", failure.expected))
    if failure.got is not None:
        fields.append(("got", failure.got))
    paired = failure.expected is not None and failure.got is not None
    for label, value in fields:
        width = len("expected:") if paired and label in ("expected", "got") else len(label) + 1
        lines.append(_field(label, cap_text(value), width))
    if failure.diagnosis:
        lines.append(f"  looks like: {_with_section(failure.diagnosis, lecture)}")
    if failure.hint:
        lines.append(f"  hint: {failure.hint}")
    if failure.traceback:
        lines.append("  in your file:")
        lines.append(_indent_block(cap_text(failure.traceback), "    "))
    if failure.output and failure.output.strip():
        printed = failure.output.rstrip("\n").splitlines()
        if len(printed) > MAX_OUTPUT_LINES:
            printed = ["...", *printed[-MAX_OUTPUT_LINES:]]
        lines.append("  your code printed:")
        lines.extend(f"    {line}" for line in printed)
    return terminal_text("\n".join(lines), multiline=True)


def passed_text(*, task_id: str, task_title: str, check_name: str, points: float) -> str:
    """Feedback for a passed check."""
    return "\n".join([
        header(task_id, task_title, points, points, "passed"),
        f"  check: {check_name}",
        "  passed",
    ])
