"""Per-student feedback files: ``feedback.md`` and ``feedback.html`` beside results.json.

Both show what ``pallas-lab grade FILE --feedback`` prints (``graders.reports.table``),
laid out for reading: the score, the lateness and adjustments, the task table, then a
section per failed check with its fields apart (``graders.reports.feedback_view``):
the problem, the smallest failing input, expected and got, the verified diagnosis, the
hint, the student's traceback and printed output.

``feedback.html`` is a page of its own (no script, no external file, styles inline) that
reads on a phone: long names and values wrap, the task table turns into one block per
task below 40 em, and nothing scrolls sideways. ``feedback.md`` is Markdown a course
site or Gradescope renders. Every string a student chose is escaped: HTML's ``<&>"'`` in
the page; in the Markdown, the characters that make markup, ``<>&`` as entities, no
autolinks, and blocks (a traceback, what the code printed) as indented code blocks, which
every dialect keeps literal (an indented fence is not a fence in Python-Markdown).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING

from graders.grading.result import SubmissionResult
from graders.reports.feedback_view import DIAGNOSIS, FeedbackView, feedback_view
from graders.reports.files import atomic_write_text
from graders.reports.html_page import page, stacked_table_style

if TYPE_CHECKING:
    from graders.reports.ledger import Standing

#: Characters backslash-escaped in Markdown text that is not at the start of a line:
#: emphasis, code, links, tables, strikethrough and attribute lists (Python-Markdown's
#: ``attr_list`` reads ``{onmouseover=...}`` at a table cell's end); ``<``, ``>``, ``&``
#: become entities.
MARKDOWN_INLINE = frozenset("\\`*_[]{}|~")
#: Field labels shown as a block (their values are code or text a student's code printed).
BLOCK_FIELDS = frozenset({"smallest failing input", "expected", "got", "in your file",
                          "your code printed"})
#: The page's styles: readable at 400 px (no sideways scrolling) and on a desktop.
#: The feedback page's own styles (``graders.reports.html_page`` has the shared ones).
PAGE_STYLE = """
col.task{width:4.5rem}col.points{width:9rem}col.status{width:7.5rem}col.title{width:30%}
td.points,th.points{text-align:right}
tfoot td{font-weight:600;border-bottom:0}
dl{margin:0}dt{font-weight:600;margin-top:.5rem}dd{margin:0 0 0 1rem}
.score{font-size:1.2rem;font-weight:600}
.status{display:inline-block;padding:0 .4rem;border-radius:4px;font-size:.9rem}
.passed{background:#dafbe1}.partial{background:#fff8c5}.failed,.error{background:#ffebe9}
.timeout{background:#fbefff}.not-started{background:#eaeef2}
section.check{border-left:4px solid #cf222e;padding-left:.8rem;margin-bottom:1rem}
.diagnosis dd{font-weight:600}
@media (max-width:40rem){table.tasks .total-label{display:none}}
""" + stacked_table_style("tasks")


# -- HTML ------------------------------------------------------------------------------------


def feedback_html(result: SubmissionResult, standing: Standing | None = None) -> str:
    """``feedback.html``: a standalone page (module docstring) for ``result``."""
    view = feedback_view(result, standing)
    e = html.escape
    out = [f"<h1>{e(view.title)}</h1>", f'<p class="score">Score: {e(view.score)}</p>']
    if view.standing:
        out.append(f"<h2>{e(view.standing_heading)}</h2>")
        out.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in view.standing) + "</ul>")
    out.extend(_html_tasks(view))
    if view.load_error:
        out += ["<h2>Your file</h2>", f"<pre>{e(view.load_error)}</pre>"]
    if view.checks:
        out.append("<h2>What went wrong</h2>")
    for check in view.checks:
        out.append('<section class="check">')
        out.append(f"<h3>{e(check.heading)} {_badge(check.status)}</h3>")
        out.append("<dl>")
        for label, value in check.fields:
            css = ' class="diagnosis"' if label == DIAGNOSIS else ""
            shown = (f"<pre>{e(value)}</pre>" if label in BLOCK_FIELDS or "\n" in value
                     else e(value))
            out.append(f"<div{css}><dt>{e(label or 'details')}</dt><dd>{shown}</dd></div>")
        out += ["</dl>", "</section>"]
    return page(f"{view.title}: {view.score}", PAGE_STYLE, out)


def _badge(status: str) -> str:
    css = status.replace(" ", "-")
    return f'<span class="status {html.escape(css)}">{html.escape(status)}</span>'


def _html_tasks(view: FeedbackView) -> list[str]:
    e = html.escape
    head = ("Task", "Function(s)", "Points", "Status", "Reason")
    out = ["<h2>Tasks</h2>", '<table class="tasks">',
           '<colgroup><col class="task"><col class="title"><col class="points">'
           '<col class="status"><col></colgroup>', "<thead><tr>",
           *(f'<th{" class=points" if h == "Points" else ""}>{h}</th>' for h in head),
           "</tr></thead>", "<tbody>"]
    for row in view.rows:
        out.append(
            f'<tr><td data-label="Task">{e(row.task)}</td>'
            f'<td data-label="Function(s)">{e(row.title)}</td>'
            f'<td class="points" data-label="Points">{e(row.points)}</td>'
            f'<td data-label="Status">{_badge(row.status)}</td>'
            f'<td data-label="Reason">{e(row.reason)}</td></tr>')
    out += ["</tbody>", f'<tfoot><tr><td class="total-label">total</td><td></td><td class="points" '
            f'data-label="Total">{e(view.total)}</td><td></td><td></td></tr></tfoot>',
            "</table>"]
    return out


# -- Markdown --------------------------------------------------------------------------------


def feedback_markdown(result: SubmissionResult, standing: Standing | None = None) -> str:
    """``feedback.md``: a heading naming the student, assignment, file and score, then the
    lateness and adjustments, the task table and a section per failed check."""
    view = feedback_view(result, standing)
    out = [f"# {_md(f'{view.title}: {view.score}')}", ""]
    if view.standing:
        out += [f"## {_md(view.standing_heading)}", "",
                *(f"- {_md(line)}" for line in view.standing), ""]
    out += ["## Tasks", "", "| Task | Function(s) | Points | Status | Reason |",
            "|---|---|--:|---|---|"]
    out += [f"| {_md(r.task)} | {_md(r.title)} | {_md(r.points)} | {_md(r.status)} | "
            f"{_md(r.reason)} |" for r in view.rows]
    out += [f"| **total** | | **{_md(view.total)}** | | |", ""]
    if view.load_error:
        out += ["## Your file", "", *_md_block(view.load_error), ""]
    if view.checks:
        out += ["## What went wrong", ""]
    for check in view.checks:
        out += [f"### {_md(check.heading)} ({_md(check.status)})", ""]
        for label, value in check.fields:
            name = _md(label or "details")
            if label in BLOCK_FIELDS or "\n" in value:
                out += [f"**{name}:**", "", *_md_block(value), ""]
            else:
                out += [f"**{name}:** {_md(value)}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _md(text: str) -> str:
    """``text`` as one line of Markdown text: line breaks become spaces, markup escaped,
    ``<``, ``>`` and ``&`` written as entities (inert in every Markdown dialect) and no
    autolink (``_unlinked``)."""
    flat = _unlinked(" ".join(text.split("\n")))
    escaped = "".join(f"\\{ch}" if ch in MARKDOWN_INLINE else ch for ch in flat)
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _unlinked(text: str) -> str:
    """``text`` with a zero-width space before ``://`` and ``@`` and after ``www``, so that
    no renderer turns a URL or an address a student wrote into a link (GitHub's
    autolinks, e-mail links)."""
    text = text.replace("://", "\u200b://").replace("@", "\u200b@")
    return re.sub(r"(?i)(www)\.", "\\1\u200b.", text)


def _md_block(text: str) -> list[str]:
    """``text`` as an indented code block (four spaces): literal in every Markdown dialect,
    blank lines included, and nothing in it can end it early (a fence could be, in a
    dialect without fenced blocks)."""
    return [f"    {line}" if line.strip() else "" for line in text.split("\n")]


def write_feedback_files(result: SubmissionResult, folder: Path,
                         standing: Standing | None = None) -> tuple[Path, Path]:
    """Write ``feedback.md`` and ``feedback.html`` for ``result`` (with ``standing``: its
    lateness and adjustments section) into ``folder`` (created when missing), each
    atomically; returns their paths. Raises ``OSError`` when they cannot be written."""
    md = atomic_write_text(folder / "feedback.md", feedback_markdown(result, standing))
    return md, atomic_write_text(folder / "feedback.html", feedback_html(result, standing))
