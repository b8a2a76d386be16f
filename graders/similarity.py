"""Similarity of submissions across a class, per assignment, with copydetect.

``pallas-lab grade CLASS --jobs N --similarity [THRESHOLD]`` compares every
pair of submissions of the same assignment and lists the pairs whose
similarity is at least THRESHOLD (default 0.5) in ``similarity.txt`` in the
results folder, most similar first.

The detector is copydetect (``pip install -e '.[report]'``), a maintained
implementation of winnowing (Schleimer, Wilkerson and Aiken, "Winnowing:
local algorithms for document fingerprinting", SIGMOD 2003, the algorithm
behind MOSS): each file is tokenized by pygments with identifiers, literals
and comments normalised away, hashed as overlapping k-grams and reduced to
fingerprints, so renamed variables, reformatting and reordered functions do not
hide a copy. The handout's own text (``assignments/<stem>.py``, which every
submission starts from) is its boilerplate: fingerprints found in the handout
are dropped before comparing, so two untouched handouts are not "similar".
A pair's similarity is the larger of the two shares of each file's
fingerprinted tokens found in the other. Nothing is run: the files are only read
(notebooks as the module their code cells make, ``graders.student.notebook``).
This flags pairs for a person to read; it proves nothing by itself.

Why copydetect: MOSS is a web service (student code would leave the machine,
and the course machine has no network to it), JPlag needs a Java runtime, and
home-made hashing would be our own code where a maintained library exists.
copydetect is a pure-Python package on PyPI (MIT), implements the same
winnowing as MOSS, takes boilerplate fingerprints directly and compares two
in-memory fingerprints without writing its HTML report.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graders.assignments import get_assignment
from graders.discovery import REPO_ROOT, Submission
from graders.reports.files import atomic_write_text
from graders.safe_text import terminal_text

#: copydetect's defaults: k-grams of 25 tokens (the noise threshold); a match of 30
#: tokens is always found (the guarantee threshold), hence windows of 30 - 25 + 1.
NOISE_TOKENS, GUARANTEE_TOKENS = 25, 30
#: Bytes of a file that are compared (a larger file is compared on its start).
MAX_BYTES = 1_000_000
HANDOUTS = REPO_ROOT / "assignments"


@dataclass(frozen=True)
class Pair:
    """Two students' submissions of ``assignment``: ``similarity`` (the larger share, 0-1),
    each file's share, and the number of overlapping tokens."""

    assignment: str
    first: str
    second: str
    similarity: float
    shares: tuple[float, float]
    tokens: int


def _source(path: Path) -> str:
    """The text compared for a submission: a .py's text, a notebook's code cells as a
    module; "" when it cannot be read."""
    try:
        if path.suffix.casefold() == ".ipynb":
            from graders.student.notebook import notebook_to_module

            return notebook_to_module(path).source[:MAX_BYTES]
        return path.read_bytes()[:MAX_BYTES].decode("utf-8", "replace")
    except (OSError, ValueError, AttributeError):
        return ""


def _fingerprint(name: str, text: str, boilerplate: Sequence[int] | None = None):  # noqa: ANN202
    from copydetect import CodeFingerprint

    return CodeFingerprint(f"{name}.py", NOISE_TOKENS, GUARANTEE_TOKENS - NOISE_TOKENS + 1,
                           boilerplate=list(boilerplate or []), fp=io.StringIO(text))


def similar_pairs(submissions: Sequence[Submission], *, threshold: float = 0.5,
                  handouts: Path = HANDOUTS) -> list[Pair]:
    """Pairs of different students' submissions of one assignment whose similarity is at
    least ``threshold`` (0-1), most similar first. Raises ``ImportError`` without
    copydetect."""
    from copydetect import compare_files

    pairs: list[Pair] = []
    by_assignment: dict[str, list[Submission]] = {}
    for sub in submissions:
        by_assignment.setdefault(sub.assignment, []).append(sub)
    for aid, subs in sorted(by_assignment.items()):
        stem = get_assignment(aid).stem
        handout = handouts / f"{stem}.py"
        boiler = (_fingerprint(stem, handout.read_text(encoding="utf-8")).hashes
                  if handout.is_file() else [])
        prints = []
        for sub in subs:
            text = _source(sub.file)
            if text.strip():
                prints.append((sub.student, _fingerprint(stem, text, sorted(boiler))))
        for (a, fa), (b, fb) in itertools.combinations(prints, 2):
            if a == b or not fa.hashes or not fb.hashes:
                continue
            tokens, (share_a, share_b), _slices = compare_files(fa, fb)
            best = max(share_a, share_b)
            if best >= threshold:
                pairs.append(Pair(aid, a, b, float(best), (float(share_a), float(share_b)),
                                  int(tokens)))
    return sorted(pairs, key=lambda p: (-p.similarity, p.assignment, p.first, p.second))


def pairs_text(pairs: Sequence[Pair], threshold: float) -> str:
    """The report: one line per pair (assignment, similarity, the two students, each
    file's share, overlapping tokens), or a line saying none was found."""
    head = (f"similarity (copydetect winnowing, handout excluded): pairs at or above "
            f"{threshold:.0%}")
    if not pairs:
        return f"{head}: none\n"
    lines = [f"{head}: {len(pairs)}"]
    for p in pairs:
        lines.append(
            f"  {p.assignment}  {p.similarity:4.0%}  {terminal_text(p.first)} <-> "
            f"{terminal_text(p.second)}  ({p.shares[0]:.0%} / {p.shares[1]:.0%} of their "
            f"tokens, {p.tokens} tokens in common)")
    return "\n".join(lines) + "\n"


def similarity_report(submissions: Sequence[Submission], folder: Path, *,
                      threshold: float = 0.5) -> tuple[str, Path]:
    """Compare ``submissions`` (``similar_pairs``) and write the text to
    ``folder/similarity.txt``; returns (the text, its path). Raises ``ImportError``
    without copydetect and ``OSError`` when the file cannot be written."""
    text = pairs_text(similar_pairs(submissions, threshold=threshold), threshold)
    return text, atomic_write_text(folder / "similarity.txt", text)
