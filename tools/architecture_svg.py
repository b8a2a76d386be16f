"""Write ``docs/images/architecture.svg``, the picture of the README and the site's home page.

The trusted grader and the untrusted worker, what crosses between them, and who runs
what. Plain SVG (no dependencies), so ``python tools/architecture_svg.py`` redraws it
after a change here; the file is committed.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "docs" / "images" / "architecture.svg"
WIDTH, HEIGHT = 760, 330

#: (x, y, width, height, fill, title, lines below the title)
BOXES = (
    (20, 20, 200, 70, "#e8f0fe", "student",
     ("pallas-lab check: public checks", "in the student's own Python")),
    (280, 20, 200, 70, "#e8f0fe", "TA", ("pallas-lab grade", "tables, CSV, results.json")),
    (540, 20, 200, 70, "#e8f0fe", "instructor", ("nbgrader course,", "Gradescope autograder")),
    (20, 150, 300, 150, "#e6f4ea", "trusted grader process",
     ("graders/ + reference/ + hypothesis", "draws inputs, computes expected values,",
      "compares outputs and traces,", "awards points, writes feedback")),
    (440, 150, 300, 150, "#fce8e6", "untrusted worker (sandboxed)",
     ("the submission + pallas_sim only", "RestrictedPython policy, audit hook,",
      "namespaces, cgroup, no network", "runs the student's functions")),
)
#: (x1, y1, x2, y2, label lines, label x, label y)
ARROWS = (
    (320, 200, 440, 200, ("request:", "name + inputs"), 380, 176),
    (440, 250, 320, 250, ("reply: outputs", "+ trace records"), 380, 268),
    (380, 90, 240, 150, (), 0, 0),
    (640, 90, 300, 160, (), 0, 0),
)


def _text(x: float, y: float, words: str, *, size: int = 13, bold: bool = False,
          anchor: str = "middle") -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}"{weight}>'
            f"{escape(words)}</text>")


def svg() -> str:
    """The picture as SVG text."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="Helvetica, Arial, sans-serif">',
             '<defs><marker id="a" markerWidth="10" markerHeight="8" refX="9" refY="4" '
             'orient="auto"><path d="M0,0 L10,4 L0,8 z" fill="#444"/></marker></defs>',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    for x, y, w, h, fill, title, lines in BOXES:
        parts.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8" fill="{fill}" '
                     'stroke="#555"/>')
        parts.append(_text(x + w / 2, y + 22, title, size=14, bold=True))
        for i, line in enumerate(lines):
            parts.append(_text(x + w / 2, y + 42 + 18 * i, line, size=12))
    for x1, y1, x2, y2, label, lx, ly in ARROWS:
        parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#444" '
                     'stroke-width="1.5" marker-end="url(#a)"/>')
        for i, line in enumerate(label):
            parts.append(_text(lx, ly + 13 * i, line, size=11))
    parts.append(_text(380, 318, "JSON + .npz, signed, never pickled; a crash or timeout "
                                 "fails only its check", size=11))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> None:
    """Write the picture to ``OUT``."""
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(svg(), encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
