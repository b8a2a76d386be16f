"""The student bundle ships no answer: no line of it is a solution line the handout hides.

The bundle is written (``graders.release.bundle.write_bundle``) and every text file in it is read
line by line (a notebook's code cells cell by cell). A line is an *answer line* of an
assignment when it is in ``solutions/<stem>.py`` but not in ``assignments/<stem>.py``
(``### BEGIN SOLUTION`` regions are what the handout replaces by a stub). No shipped line
may equal an answer line of any assignment.

The comparison rule (:func:`tokens`), chosen so that it is hard to dodge and does not
flag idioms:

* lines are compared as token sequences (names, numbers, string literals, each
  punctuation character): whitespace, line-end comments, a trailing comma and the quote
  style do not count, so re-spacing, re-quoting or commenting a copied line does not
  hide it;
* a line counts when it has at least :data:`MIN_TOKENS` (9) tokens and is not an import.
  Shorter lines are idioms that independent code writes the same way (``x =
  np.asarray(x)``, ``if window is not None:``, ``bm, bn = block_shape``, ``return
  candidate``: 2 to 8 tokens); every line that says something about an intended
  ``pallas_call`` has 9 or more (``pl.BlockSpec((bm, bn), lambda i, j: (i, j))``: 23,
  ``dimension_semantics=("parallel", "arbitrary"))``: 9, ``out_shape=jax.ShapeDtypeStruct(
  (m, n), jnp.float32)``: 19).

Before the fix the bundle held 17 such lines (15 distinct): the
intended calls of Tasks 1.2, 3.2, 4.4 and 5.4 in the labs' harnesses and a4's fidelity
driver, and two lines of Task 2.2's answer in a2's public checks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from graders.release.bundle import write_bundle
from tests.helpers.labs import stem_of

ROOT = Path(__file__).resolve().parents[2]
#: Fewer tokens than this: an idiom, not an answer (see the module docstring).
MIN_TOKENS = 9
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\w+|[^\w\s]')


def tokens(line: str) -> tuple[str, ...]:
    """The line's tokens without a line-end comment or a trailing comma, strings in
    double quotes."""
    found = _TOKEN.findall(line.strip())
    if "#" in found:
        found = found[:found.index("#")]
    found = [f'"{t[1:-1]}"' if t.startswith("'") else t for t in found]
    while found and found[-1] == ",":
        found.pop()
    return tuple(found)


def significant(line: tuple[str, ...]) -> bool:
    """Whether a tokenised line is long enough to be an answer and not an import."""
    return len(line) >= MIN_TOKENS and not (line[0] in ("import", "from") and "import" in line)


def answer_lines(root: Path = ROOT) -> dict[tuple[str, ...], str]:
    """Every significant solutions/ line the handout does not contain -> its stem."""
    found: dict[tuple[str, ...], str] = {}
    for solution in sorted((root / "solutions").glob("*.py")):
        handout = root / "assignments" / solution.name
        shown = {tokens(line) for line in handout.read_text(encoding="utf-8").splitlines()}
        for line in solution.read_text(encoding="utf-8").splitlines():
            key = tokens(line)
            if significant(key) and key not in shown:
                found.setdefault(key, solution.stem)
    return found


def _lines(path: Path) -> list[str]:
    """A shipped file's lines (a notebook's: its cells' source lines); [] for binaries."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    if path.suffix == ".ipynb":
        cells = json.loads(text).get("cells", [])
        return [line for cell in cells for line in
                "".join(cell.get("source", [])).splitlines()]
    return text.splitlines()


def shipped_answers(bundle: Path, answers: dict[tuple[str, ...], str]) -> list[str]:
    """``path:line: text (answer of stem)`` for every shipped line that is an answer line."""
    hits = []
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        for number, line in enumerate(_lines(path), 1):
            stem = answers.get(tokens(line))
            if stem is not None:
                hits.append(f"{path.relative_to(bundle)}:{number}: {line.strip()}  "
                            f"(an answer line of solutions/{stem}.py)")
    return hits


def test_the_rule_sees_through_reformatting_and_ignores_idioms() -> None:
    copied = "spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))"
    assert tokens("  spec=pl.BlockSpec( (bm,bn), lambda i,j:(i,j) ),  # mine") == tokens(copied)
    assert tokens("x = f('a')") == tokens('x = f("a")')
    assert significant(tokens(copied))
    assert not significant(tokens("if window is not None:"))
    assert not significant(tokens("from pallas_sim import jax, jnp, pl, pltpu"))


def test_the_answers_are_found_where_they_are() -> None:
    """The rule finds the intended calls in the solutions (so an empty result below is not
    an empty rule)."""
    answers = answer_lines()
    stems = set(answers.values())
    assert {stem_of("a1"), stem_of("a3"), stem_of("a4"), stem_of("a5")} <= stems
    assert tokens("        pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h // group, j, "
                  "0)),") in answers


def test_the_bundle_ships_no_answer_line(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    hits = shipped_answers(bundle, answer_lines())
    assert not hits, (f"{len(hits)} shipped lines are solution lines the handouts do not "
                      "show:\n" + "\n".join(hits))
