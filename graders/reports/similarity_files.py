"""The similarity check's files: ``similarity.txt`` (``graders.reports.similarity``'s text)
and ``similarity.html``, the pairs side by side for a person to read.

One page for the class (``graders.reports.similarity.compare``): a table of the pairs at
or above the threshold, most similar first, each linking to its section; in a section the
two files side by side (one above the other on a narrow screen), the code both share
marked. What is marked is what copydetect matched after the handout's fingerprints were
dropped; a matched stretch may run over a line of the handout (a stub's signature or
docstring between two students' lines), and such a line is left unmarked, so the
handout's own text is never marked. Then the submissions not compared and why.

Every character of a submission is shown as text: control characters and bidirectional
overrides as escapes (``graders.safety.safe_text.terminal_text``, so a file cannot hide
code from the reader), then ``html.escape``. The page holds no script. Unshared stretches
longer than a few lines are folded, so the marked code is what the eye meets; a very long
one shows only its start and end. Every piece also gets the feedback page's line-break
opportunities (``graders.reports.feedback_view.breakable``), so no run of combining marks
widens the page.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from graders.grading.submission import Submission
from graders.reports.feedback_view import breakable
from graders.reports.files import atomic_write_text
from graders.reports.html_page import page, stacked_table_style
from graders.reports.similarity import Comparison, Pair, compare, pairs_text
from graders.safety.safe_text import terminal_text

#: The similarity check's text file in a batch's results folder (beside similarity.html).
SIMILARITY_FILE = "similarity.txt"
#: Characters of one folded (unshared) stretch shown, its start and its end.
MAX_FOLD_CHARS = 20_000
#: Unmarked lines shown around a marked one; a longer run of unmarked lines than
#: ``FOLD_LINES`` is folded (open it to read it).
CONTEXT_LINES, FOLD_LINES = 3, 8
#: The similarity page's own styles (``graders.reports.html_page`` has the shared ones).
PAGE_STYLE = """
table.pairs{table-layout:auto}
.pair{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem}
.pair h3{font-size:1rem;margin:.3rem 0}
.pair pre{padding:.1rem .7rem;margin:0;font-size:13px}
summary{background:#eaeef2;padding:0 .7rem;font-size:.85rem;color:#57606a;cursor:pointer}
mark{background:#ffd8b5}
@media (max-width:60rem){.pair{grid-template-columns:minmax(0,1fr)}}
""" + stacked_table_style("pairs")


def similarity_html(found: Comparison, threshold: float) -> str:
    """The page (module docstring) for ``found``, the pairs at or above ``threshold``
    (0-1)."""
    e = html.escape
    out = ["<h1>Similarity (copydetect winnowing, handout excluded)</h1>",
           f"<p>Pairs of submissions of one assignment whose similarity is at least "
           f"{threshold:.0%}: {len(found.pairs)}. A flagged pair is for a person to read; "
           "it proves nothing by itself. Marked: the code the two files share.</p>"]
    if found.pairs:
        out += ['<table class="pairs">', "<thead><tr><th>Assignment</th><th>Similarity</th>"
                "<th>Students</th><th>Share of each file</th><th>Tokens in common</th></tr>"
                "</thead>", "<tbody>"]
        for n, pair in enumerate(found.pairs, 1):
            out.append(
                f'<tr><td data-label="Assignment">{e(pair.assignment)}</td>'
                f'<td data-label="Similarity">{pair.similarity:.0%}</td>'
                f'<td data-label="Students"><a href="#pair-{n}">{_name(pair.first)} and '
                f"{_name(pair.second)}</a></td>"
                f'<td data-label="Share of each file">{pair.shares[0]:.0%} / '
                f"{pair.shares[1]:.0%}</td>"
                f'<td data-label="Tokens in common">{pair.tokens}</td></tr>')
        out += ["</tbody>", "</table>"]
    for n, pair in enumerate(found.pairs, 1):
        out += _pair_section(n, pair, found)
    if found.skipped:
        out += ["<h2>Not compared</h2>", "<ul>"]
        out += [f"<li>{e(s.assignment)} {_name(s.student)} ({_name(s.name)}: "
                f"{_name(s.reason)})</li>" for s in found.skipped]
        out.append("</ul>")
    return page("Similarity", PAGE_STYLE, out, width="110rem")


def _name(text: str) -> str:
    return html.escape(breakable(terminal_text(text)))


def _pair_section(n: int, pair: Pair, found: Comparison) -> list[str]:
    out = [f'<h2 id="pair-{n}">{html.escape(pair.assignment)} {pair.similarity:.0%}: '
           f"{_name(pair.first)} and {_name(pair.second)}</h2>", '<div class="pair">']
    for student, share, spans in ((pair.first, pair.shares[0], pair.spans[0]),
                                  (pair.second, pair.shares[1], pair.spans[1])):
        text = found.sources.get((pair.assignment, student), "")
        handout = found.handouts.get(pair.assignment, "")
        out += ["<div>", f"<h3>{_name(student)}: {share:.0%} of its tokens shared</h3>",
                marked_code(text, spans, handout), "</div>"]
    out.append("</div>")
    return out


def marked_code(text: str, spans: tuple[tuple[int, int], ...], handout: str = "") -> str:
    """``text`` as HTML with each (start, end) character span of ``spans`` in a ``<mark>``,
    except blank lines and the lines ``handout`` holds too (compared without their
    indentation); every piece escaped (module docstring). Each marked line is shown with
    ``CONTEXT_LINES`` around it; a longer run of unmarked lines is folded into a
    ``<details>`` the reader can open, and one longer than ``MAX_FOLD_CHARS`` shows only
    its start and end there: however a file is padded, its marked code is on the page."""
    mask = _mask(text, spans, handout)
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    hot = [any(mask[starts[i]:starts[i + 1]]) for i in range(len(lines))]
    near = [any(hot[max(0, i - CONTEXT_LINES):i + CONTEXT_LINES + 1]) for i in range(len(lines))]
    pieces: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and near[j] == near[i]:
            j += 1
        if near[i] or j - i < FOLD_LINES:
            pieces.append(f"<pre>{_marked(text, mask, starts[i], starts[j])}</pre>")
        else:
            start, stop = starts[i], starts[j]
            if stop - start > MAX_FOLD_CHARS:
                half = MAX_FOLD_CHARS // 2
                left_out = f"\n... ({stop - start - 2 * half} characters not shown) ...\n"
                body = (f"{_text(text[start:start + half])}{html.escape(left_out)}"
                        f"{_text(text[stop - half:stop])}")
            else:
                body = _text(text[start:stop])
            pieces.append(f"<details><summary>{j - i} lines not shared</summary>"
                          f"<pre>{body}</pre></details>")
        i = j
    return "".join(pieces)


def _mask(text: str, spans: tuple[tuple[int, int], ...], handout: str) -> bytearray:
    """One byte per character of ``text``: 1 where it is marked (module docstring)."""
    mask = bytearray(len(text))
    for start, end in spans:
        start, end = max(start, 0), min(end, len(text))
        if start < end:
            mask[start:end] = b"\x01" * (end - start)
    theirs = {line.strip() for line in handout.splitlines() if line.strip()}
    at = 0
    for line in text.splitlines(keepends=True):
        if not line.strip() or line.strip() in theirs:
            mask[at:at + len(line)] = bytes(len(line))
        at += len(line)
    return mask


def _marked(text: str, mask: bytearray, start: int, stop: int) -> str:
    """``text[start:stop]`` as HTML, its marked runs in ``<mark>``."""
    pieces = []
    at = start
    while at < stop:
        end = at
        while end < stop and mask[end] == mask[at]:
            end += 1
        piece = _text(text[at:end])
        pieces.append(f"<mark>{piece}</mark>" if mask[at] else piece)
        at = end
    return "".join(pieces)


def _text(piece: str) -> str:
    return html.escape(breakable(terminal_text(piece, multiline=True)), quote=False)


def similarity_report(submissions: Sequence[Submission], folder: Path, *,
                      threshold: float = 0.5) -> tuple[str, list[Path]]:
    """Compare ``submissions`` (``graders.reports.similarity.compare``) and write the text
    to ``folder/similarity.txt`` (the pairs, then the submissions not compared and why) and
    the page to ``folder/similarity.html``; returns (the text, the paths written). Raises
    ``ImportError`` without copydetect and ``OSError`` when a file cannot be written."""
    found = compare(submissions, threshold=threshold)
    text = pairs_text(found.pairs, threshold, found.skipped)
    return text, [atomic_write_text(folder / SIMILARITY_FILE, text),
                  atomic_write_text(folder / "similarity.html", similarity_html(found, threshold))]
