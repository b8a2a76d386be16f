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
(notebooks as the module their code cells make, ``graders.student.notebook``), as
the grader reads them (``graders.safety.submission_files``: size from ``lstat`` first, regular
files only, never past the submission limit); a file that cannot be read that way (1 TiB
of sparse file, a FIFO) is listed under "not compared" with the reason and costs the
other pairs nothing.
This flags pairs for a person to read; it proves nothing by itself.

Why copydetect: MOSS is a web service (student code would leave the machine,
and the course machine has no network to it), JPlag needs a Java runtime, and
home-made hashing would be our own code where a maintained library exists.
copydetect is a pure-Python package on PyPI (MIT), implements the same
winnowing as MOSS, takes boilerplate fingerprints directly and compares two
in-memory fingerprints without writing its HTML report. Its copied slices (where in each
file the shared fingerprints lie) make the side-by-side page
(``graders.reports.similarity_files``, which writes both files).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.grading.submission import Submission
from graders.safety import submission_files
from graders.safety.safe_text import terminal_text

#: copydetect's defaults: k-grams of 25 tokens (the noise threshold); a match of 30
#: tokens is always found (the guarantee threshold), hence windows of 30 - 25 + 1.
NOISE_TOKENS, GUARANTEE_TOKENS = 25, 30
#: A fingerprint in more files than this (or half the class, if more) is class-common code,
#: left out of every comparison (``_class_common``).
COMMON_MIN_FILES = 4
HANDOUTS = Path(__file__).resolve().parents[2] / "assignments"


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
    #: Per file, the (start, end) character spans of its text found in the other (the
    #: text ``Comparison.sources`` holds), in order.
    spans: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] = ((), ())


class Unread(Exception):  # noqa: N818 - a file left out, not a failure of the check
    """A submission the similarity check did not read: ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _source(path: Path) -> str:
    """The text compared for a submission: a .py's text, a notebook's code cells as a
    module. Read as the grader reads it (``graders.safety.submission_files``: a regular file
    within its limit, its size from ``lstat`` first, never a FIFO or a device). Raises
    ``Unread`` naming why it was not read (too large, not a regular file, unreadable,
    not a notebook)."""
    try:
        if path.suffix.casefold() == ".ipynb":
            from graders.student.notebook import NotebookError, notebook_to_module

            submission_files.check_file(path)
            try:
                return notebook_to_module(path).source
            except NotebookError as exc:
                why = str(exc).removeprefix(f"cannot read {path.name}: ")
                raise Unread(why.removeprefix(f"{path.name} ")) from None
        return submission_files.read_bytes(path).decode("utf-8", "replace")
    except submission_files.RefusedFile as exc:
        raise Unread(exc.reason) from None
    except OSError as exc:
        raise Unread(f"could not be read ({exc.strerror or type(exc).__name__})") from None


def _fingerprint(name: str, text: str, boilerplate: Sequence[int] | None = None):  # noqa: ANN202
    from copydetect import CodeFingerprint

    return CodeFingerprint(f"{name}.py", NOISE_TOKENS, GUARANTEE_TOKENS - NOISE_TOKENS + 1,
                           boilerplate=list(boilerplate or []), fp=io.StringIO(text))


@dataclass(frozen=True)
class Skipped:
    """A submission left out of the comparison: its ``student``, file ``name`` and
    ``reason`` ("file too large: N bytes, limit M ...", "not a regular file: ...")."""

    assignment: str
    student: str
    name: str
    reason: str


@dataclass(frozen=True)
class Comparison:
    """What ``compare`` found: the ``pairs`` at or above the threshold, most similar
    first, the submissions ``skipped`` (not read), in the order given, and the text
    compared of every submission in a pair, by (assignment id, student), and each
    assignment's handout text."""

    pairs: list[Pair]
    skipped: list[Skipped]
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    #: The handout's text by assignment id ("" when there is none).
    handouts: dict[str, str] = field(default_factory=dict)


def compare(submissions: Sequence[Submission], *, threshold: float = 0.5,
            handouts: Path = HANDOUTS) -> Comparison:
    """Pairs of different students' submissions of one assignment whose similarity is at
    least ``threshold`` (0-1), and the submissions that could not be read (too large,
    not a regular file, unreadable, not a notebook: ``_source``), which are left out and
    cost the others nothing. Raises ``ImportError`` without copydetect."""
    from copydetect import compare_files

    pairs: list[Pair] = []
    skipped: list[Skipped] = []
    sources: dict[tuple[str, str], str] = {}
    handout_texts: dict[str, str] = {}
    by_assignment: dict[str, list[Submission]] = {}
    for sub in submissions:
        by_assignment.setdefault(sub.assignment.id, []).append(sub)
    with _stable_hashes():
        for aid, subs in sorted(by_assignment.items()):
            stem = subs[0].stem
            handout = handouts / f"{stem}.py"
            handout_texts[aid] = (normalised(handout.read_text(encoding="utf-8"))
                                  if handout.is_file() else "")
            texts = []
            for sub in subs:
                try:
                    text = normalised(_source(Path(sub.file)))
                except Unread as exc:
                    skipped.append(Skipped(aid, sub.student, Path(sub.file).name, exc.reason))
                    continue
                if text.strip():
                    texts.append((sub.student, text))
            boiler = set(_fingerprint(stem, handout_texts[aid]).hashes
                         if handout_texts[aid] else [])
            boiler |= _class_common([_fingerprint(stem, text) for _, text in texts])
            prints = [(student, _fingerprint(stem, text, sorted(boiler)))
                      for student, text in texts]
            for (a, fa), (b, fb) in itertools.combinations(prints, 2):
                if a == b or not fa.hashes or not fb.hashes:
                    continue
                tokens, (share_a, share_b), slices = compare_files(fa, fb)
                best = max(share_a, share_b)
                if best >= threshold:
                    pairs.append(Pair(aid, a, b, float(best),
                                      (float(share_a), float(share_b)), int(tokens),
                                      (_spans(slices[0]), _spans(slices[1]))))
                    sources[aid, a], sources[aid, b] = fa.raw_code, fb.raw_code
    pairs.sort(key=lambda p: (-p.similarity, p.assignment, p.first, p.second))
    return Comparison(pairs, skipped, sources, handout_texts)


def normalised(text: str) -> str:
    """``text`` as copydetect's tokenizer (pygments) reads it: no byte-order mark, CR LF
    and CR as LF, no leading or trailing blank lines. The offsets of the copied
    slices are offsets into this text; in the file as written they would drift (a file of
    20,000 newlines then a copy showed the copy unmarked)."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def _class_common(prints: Sequence[Any]) -> set[int]:
    """The fingerprints in more than ``max(COMMON_MIN_FILES, half)`` of the class's files
    (``prints``): code everybody got from elsewhere (an older handout, the lecture's
    example), not from each other, as MOSS ignores a passage found in more than ``m``
    programs."""
    counts: dict[int, int] = {}
    for fingerprint in prints:
        for value in fingerprint.hashes:
            counts[value] = counts.get(value, 0) + 1
    limit = max(COMMON_MIN_FILES, len(prints) // 2)
    return {value for value, n in counts.items() if n > limit}


@contextlib.contextmanager
def _stable_hashes() -> Iterator[None]:
    """copydetect hashes its k-grams with Python's ``hash``, salted anew in every process
    (``PYTHONHASHSEED``): the same files gave 77 % in one run and 83 % in the next. While
    comparing, its k-grams are hashed with BLAKE2b instead (``_hashed_kgrams``)."""
    from copydetect import utils

    original = utils.hashed_kgrams
    utils.hashed_kgrams = _hashed_kgrams
    try:
        yield
    finally:
        utils.hashed_kgrams = original


def _hashed_kgrams(string: str, k: int) -> Any:
    """copydetect's ``hashed_kgrams``, the same on every run: a signed 64-bit BLAKE2b of
    each k-gram of ``string``."""
    import numpy as np

    return np.array([int.from_bytes(hashlib.blake2b(
        string[i:i + k].encode("utf-8", "surrogatepass"), digest_size=8).digest(),
        "little", signed=True) for i in range(len(string) - k + 1)], dtype=np.int64)


def _spans(slices: Any) -> tuple[tuple[int, int], ...]:
    """copydetect's 2xN array of copied slices (starts, ends) as (start, end) pairs."""
    if len(slices) == 0 or len(slices[0]) == 0:
        return ()
    return tuple((int(a), int(b)) for a, b in zip(slices[0], slices[1], strict=True))


def similar_pairs(submissions: Sequence[Submission], *, threshold: float = 0.5,
                  handouts: Path = HANDOUTS) -> list[Pair]:
    """``compare(...).pairs``: the pairs at or above ``threshold``, most similar first.
    Raises ``ImportError`` without copydetect."""
    return compare(submissions, threshold=threshold, handouts=handouts).pairs


def pairs_text(pairs: Sequence[Pair], threshold: float,
               skipped: Sequence[Skipped] = ()) -> str:
    """The report: one line per pair (assignment, similarity, the two students, each
    file's share, overlapping tokens), or a line saying none was found; then one line per
    submission that was not compared and why."""
    head = (f"similarity (copydetect winnowing, handout excluded): pairs at or above "
            f"{threshold:.0%}")
    lines = [f"{head}: {len(pairs)}" if pairs else f"{head}: none"]
    for p in pairs:
        lines.append(
            f"  {p.assignment}  {p.similarity:4.0%}  {terminal_text(p.first)} <-> "
            f"{terminal_text(p.second)}  ({p.shares[0]:.0%} / {p.shares[1]:.0%} of their "
            f"tokens, {p.tokens} tokens in common)")
    if skipped:
        lines.append(f"not compared ({len(skipped)}: not read, so not in any pair):")
        lines.extend(f"  {s.assignment}  {terminal_text(s.student)} ({terminal_text(s.name)}: "
                     f"{terminal_text(s.reason)})" for s in skipped)
    return "\n".join(lines) + "\n"
