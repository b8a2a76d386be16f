"""``similarity.html``: the flagged pairs side by side, the shared code marked, the
handout's text never marked, every character a student chose shown as text, and a page a
TA reads on a laptop or a phone without scrolling sideways (headless Chromium)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graders.course.catalog import ASSIGNMENTS
from graders.grading.submission import Submission
from graders.reports.similarity import compare
from graders.reports.similarity_files import marked_code, similarity_html, similarity_report
from tests.helpers.browser import page_widths

ROOT = Path(__file__).resolve().parents[2]
A1 = next(a for a in ASSIGNMENTS.values() if a.id == "a1")
SOLUTION = (ROOT / "solutions" / f"{A1.stem}.py").read_text(encoding="utf-8")
HANDOUT = (ROOT / "assignments" / f"{A1.stem}.py").read_text(encoding="utf-8")
HOSTILE = "<img src=x onerror=alert(1)>\u202e"


def _class(tmp_path: Path, files: dict[str, str]) -> list[Submission]:
    subs = []
    for student, text in files.items():
        folder = tmp_path / "class" / student
        folder.mkdir(parents=True)
        path = folder / f"{A1.stem}.py"
        path.write_text(text, encoding="utf-8")
        subs.append(Submission.of(path, A1, student=student))
    return subs


@pytest.fixture
def page(tmp_path: Path) -> str:
    renamed = SOLUTION.replace("bias_ref", "b_ref").replace("x_ref", "inp_ref")
    hostile = SOLUTION + '\n# </pre><script>alert("x")</script>\x1b[2J\n'
    subs = _class(tmp_path, {"ada": SOLUTION, "dan": renamed, HOSTILE: hostile,
                             "cleo": HANDOUT, "eve": HANDOUT})
    text, paths = similarity_report(subs, tmp_path, threshold=0.8)
    assert [p.name for p in paths] == ["similarity.txt", "similarity.html"]
    assert "ada <-> dan" in text
    return paths[1].read_text(encoding="utf-8")


def test_the_pairs_are_side_by_side_with_the_shared_code_marked(page: str) -> None:
    sections = re.findall(r'<h2 id="pair-\d+">(.*?)</h2>', page)
    assert any("ada and dan" in s for s in sections), sections
    assert not any("cleo" in s for s in sections), "two untouched handouts are no pair"
    assert page.count('<div class="pair">') == len(sections)
    assert page.count("<mark>") >= 2 * len(sections), "each file of a pair has marked code"


def test_the_handouts_own_text_is_never_marked(tmp_path: Path) -> None:
    """Two solutions built on the handout: the handout's lines (signatures, docstrings)
    are in both files and a matched stretch runs over them, but only what the students
    wrote is marked."""
    found = compare(_class(tmp_path, {"ada": SOLUTION, "dan": SOLUTION}), threshold=0.5)
    pair = found.pairs[0]
    text = found.sources[pair.assignment, "ada"]
    raw = "".join(text[a:b] for a, b in pair.spans[0])
    shown = html.unescape("".join(re.findall(r"<mark>(.*?)</mark>", marked_code(
        text, pair.spans[0], found.handouts[pair.assignment]), flags=re.S)))
    handout_lines = [line.strip() for line in HANDOUT.splitlines() if len(line.strip()) > 30]
    assert any(line in raw for line in handout_lines), "copydetect's stretches cross them"
    assert not [line for line in handout_lines if line in shown.splitlines()
                or any(m.strip() == line for m in shown.splitlines())]
    assert "o_ref[...]" in shown or "[...] =" in shown, "the students' own lines are marked"


def test_what_a_student_chose_is_shown_as_text(page: str) -> None:
    assert "<script>" not in page and "<img" not in page
    assert "&lt;/pre&gt;&lt;script&gt;" in page and "&lt;img src=x" in page
    assert "\u202e" not in page and "\\u202e" in page, "a bidi override is shown escaped"
    assert "\x1b" not in page and "\\x1b[2J" in page


def test_the_page_reads_at_phone_and_laptop_width(page: str, tmp_path: Path) -> None:
    for width in (400, 1280):
        content, visible = page_widths(page, width, tmp_path,
                                       screenshot=tmp_path / f"similarity-{width}.png")
        assert content <= visible, f"at {width} px the page is {content} px wide"


def _marked_text(found, student: str, side: int) -> str:
    pair = found.pairs[0]
    page = marked_code(found.sources[pair.assignment, student], pair.spans[side],
                       found.handouts[pair.assignment])
    return html.unescape("".join(re.findall(r"<mark>(.*?)</mark>", page, flags=re.S)))


def test_padding_before_a_copy_cannot_hide_it(tmp_path: Path) -> None:
    """Red team: 211k characters of comments before a copy cut the page before the copy;
    20,000 newlines before it (copydetect's tokenizer drops them) put every mark off by
    20,000 characters, so the copy showed unmarked, folded as "not shared"."""
    for name, padding in (("comments", ("#" * 80 + "\n") * 2700),
                          ("newlines", "\n" * 20000), ("crlf", None)):
        copy = (SOLUTION.replace("\n", "\r\n") if padding is None else padding + SOLUTION)
        found = compare(_class(tmp_path / name, {"alice": SOLUTION, "mallory": copy}),
                        threshold=0.5)
        assert found.pairs, name
        theirs = _marked_text(found, "alice", 0 if found.pairs[0].first == "alice" else 1)
        mine = _marked_text(found, "mallory", 1 if found.pairs[0].first == "alice" else 0)
        assert "z_ref[...] = x_ref[...] + y_ref[...]" in mine, name
        assert len(mine.split()) == len(theirs.split()), (
            f"{name}: the same code is marked in both files")
        page = similarity_html(found, 0.5)
        assert len(page) < 400_000, f"{name}: a folded stretch shows its start and end only"


def test_the_same_files_give_the_same_figures_in_every_process(tmp_path: Path) -> None:
    """TA walk: two runs on identical files gave ben-dev 77 % / 400 tokens, then 83 % / 445
    (copydetect hashes with Python's salted ``hash``)."""
    renamed = SOLUTION.replace("bias_ref", "b_ref")
    subs = _class(tmp_path, {"ada": SOLUTION, "dan": renamed, "cleo": HANDOUT})
    script = (
        "import sys, json; sys.path.insert(0, sys.argv[1])\n"
        "from graders.course.catalog import ASSIGNMENTS\n"
        "from graders.grading.submission import Submission\n"
        "from graders.reports.similarity import compare\n"
        "a1 = next(a for a in ASSIGNMENTS.values() if a.id == 'a1')\n"
        "subs = [Submission.of(p, a1) for p in sys.argv[2:]]\n"
        "print(json.dumps([[p.first, p.second, p.similarity, p.tokens]"
        " for p in compare(subs, threshold=0.0).pairs]))\n")
    runs = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run([sys.executable, "-c", script, str(ROOT),
                               *(str(s.file) for s in subs)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        runs.add(done.stdout)
    assert len(runs) == 1, runs


def test_code_most_of_the_class_shares_is_not_counted(tmp_path: Path) -> None:
    """TA walk: five of six students started from an older handout, and its text made
    innocent pairs 72-83 % similar. A passage in more than half of the class (and more
    than four files) is left out, as MOSS leaves out what more than m programs hold."""
    old_handout = "\n".join(f"print('an older handout line {i}', {i} * {i})"
                             for i in range(150)) + "\n"
    own = {name: (ROOT / "solutions" / f"{a.stem}.py").read_text(encoding="utf-8")
           for name, a in zip(("ben", "dev", "gus", "ivy"), [
               a for a in ASSIGNMENTS.values() if a.id != "a1"], strict=True)}
    files = {name: old_handout + text for name, text in own.items()}
    files["ada"] = old_handout + SOLUTION
    files["eve"] = old_handout + SOLUTION.replace("bias_ref", "b_ref")
    found = compare(_class(tmp_path, files), threshold=0.5)
    flagged = {frozenset((p.first, p.second)) for p in found.pairs}
    assert flagged == {frozenset(("ada", "eve"))}, flagged
