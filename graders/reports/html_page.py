"""The frame and shared styles of the standalone HTML pages a batch writes
(``feedback.html``, ``similarity.html``): no script, no external file, styles inline,
readable from a phone (400 px, nothing scrolls sideways) to a desktop.

``page`` wraps a body; ``BASE_STYLE`` sets type, wrapping, tables and code blocks;
``stacked_table_style`` turns a table's rows into one block per row on a narrow screen,
each cell labelled by its ``data-label`` attribute.
"""

from __future__ import annotations

import html

#: Type, wrapping (a long word or value breaks rather than widening the page), tables and
#: code blocks; ``{width}`` is the page's largest width.
BASE_STYLE = """
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;
  max-width:{width};margin:0 auto;padding:1rem;overflow-wrap:break-word}
h1,h2,h3,dd,li,p{overflow-wrap:anywhere}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.15rem;margin-top:1.6rem}
h3{font-size:1rem;margin:1.2rem 0 .4rem}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top;
  overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;
  padding:.5rem .7rem;margin:.2rem 0;font:14px/1.4 ui-monospace,Menlo,Consolas,monospace}
"""


def stacked_table_style(css_class: str) -> str:
    """CSS that, below 40 em, shows each row of the tables of class ``css_class`` as a block
    of "label: value" lines (the label from each cell's ``data-label``); empty cells are
    hidden."""
    t = f"table.{css_class}"
    return (f"@media (max-width:40rem){{{t} thead{{display:none}}"
            f"{t},{t} tbody,{t} tfoot,{t} tr{{display:block}}"
            f"{t} tr{{border-bottom:1px solid #d0d7de;padding:.3rem 0}}"
            f"{t} td{{display:block;border:0;padding:.05rem .3rem;text-align:left}}"
            f'{t} td::before{{content:attr(data-label) ": ";font-weight:600}}'
            f"{t} td:empty{{display:none}}}}\n")


def page(title: str, style: str, body: list[str], *, width: str = "60rem") -> str:
    """A whole HTML document: ``title`` (escaped here), ``BASE_STYLE`` at ``width`` (a CSS
    length) then the page's own ``style``, and the ``body`` lines (HTML, already escaped by
    the caller)."""
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{BASE_STYLE.replace('{width}', width)}{style}</style>", "</head>", "<body>",
        *body, "</body>", "</html>", ""])
