"""Which file of an assignment is graded when ``<stem>.py`` and ``<stem>.ipynb`` both exist.

The one rule (docs/ta-guide.md, "Which file is graded"; docs/architecture.md), used by
``pallas-lab check``, ``check --task``, ``status``, ``pallas-lab grade`` on a
student or class folder, the Gradescope autograder and its dry run:

1. the one whose code differs from the handout is graded;
2. when both differ, the most recently modified one (``decide="mtime"``); on
   Gradescope, which writes the files itself and documents nothing about
   their times (a browser upload sends none, a Git checkout keeps none), the
   one that differs more from the handout, in changed lines
   (``decide="changes"``);
3. when neither differs, the ``.py`` (either would do: the assignment is not
   started).

Ties in 2 fall to the other measure, then to the ``.py``. "The code" is
what would be graded, not the file's bytes: a ``.py``'s text, a notebook's
code cells as converted for grading (``graders.student.notebook``: outputs,
markdown and set-aside display lines are not code), in both cases without
blank lines, comment lines and trailing spaces. So a notebook run and saved
with its outputs but unchanged code counts as unchanged. "The handout" is
``assignments/<stem>.py`` and ``.ipynb`` as released, recorded line by line in
``graders.student.handout_fingerprints`` (written by ``pallas-lab release``,
shipped with the bundle and the autograder), so the rule needs no copy of
the handouts where it runs; a file equal to either form of the handout is
unchanged.

A file that cannot be read as code (unreadable, not UTF-8, not a notebook,
larger than the grader reads) is not the handout, so it counts as changed and
its grading then says what is wrong with it; a folder named ``<stem>.py`` is
no candidate at all. :class:`Choice` says what was graded and why, in the
words the student sees.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from graders.safety.submission_files import MAX_SOURCE_BYTES, RefusedFile, read_bytes

#: How a tie between two changed files is broken: "mtime" (the newer; the student's own
#: machine, a TA's folders) or "changes" (the one further from the handout; Gradescope).
Decide = Literal["mtime", "changes"]
SUFFIXES = (".py", ".ipynb")
HASH_DIGITS = 8


class CannotRead(ValueError):
    """A submission file cannot be read as code (the message says why, naming the file)."""


def code_lines(path: Path) -> list[str]:
    """The code of a ``.py`` or ``.ipynb`` file as graded, one normalised line each.

    A ``.py``: its UTF-8 text; a notebook: its code cells converted for grading
    (``graders.student.notebook.notebook_to_module``). Lines are right-stripped; blank
    lines and comment lines (cell headers, set-aside lines, markdown in a percent
    file) are left out. The size comes from ``stat`` before any read and only regular
    files are opened (never a FIFO or a device).

    Raises:
      CannotRead: not a regular file, larger than ``MAX_SOURCE_BYTES`` (.py) or
        ``MAX_NOTEBOOK_BYTES`` (.ipynb), unreadable, not UTF-8, or not a notebook.
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise CannotRead(f"{path.name} cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise CannotRead(f"{path.name} is a folder, not a file")
    notebook = path.suffix == ".ipynb"
    if notebook:
        from graders.student.notebook import NotebookError, notebook_to_module

        try:
            source = notebook_to_module(path).source
        except NotebookError as exc:
            raise CannotRead(str(exc)) from None
        except OSError as exc:  # the notebook reader's bounded read refused it
            raise CannotRead(f"{path.name}: {getattr(exc, 'reason', exc)}") from None
    else:
        try:  # one bounded reader for student files: lstat first, no FIFO, no link
            source = read_bytes(path, MAX_SOURCE_BYTES).decode("utf-8-sig")
        except RefusedFile as exc:
            raise CannotRead(f"{path.name}: {exc.reason}") from None
        except OSError as exc:
            raise CannotRead(f"{path.name} cannot be read ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise CannotRead(f"{path.name} is not valid UTF-8 (byte "
                             f"0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    return normalised_lines(source)


def normalised_lines(source: str) -> list[str]:
    """``source``'s lines without trailing spaces, blank lines and comment lines."""
    kept = (line.rstrip() for line in source.splitlines())
    return [line for line in kept if line and not line.lstrip().startswith("#")]


def line_hashes(lines: Sequence[str]) -> tuple[str, ...]:
    """One short hash per line (the first ``HASH_DIGITS`` hex digits of its SHA-256): how
    the handouts are recorded and compared, without shipping their text twice."""
    return tuple(hashlib.sha256(line.encode("utf-8")).hexdigest()[:HASH_DIGITS]
                 for line in lines)


def handout_forms(stem: str) -> list[tuple[str, ...]]:
    """The recorded line hashes of ``stem``'s handout forms (.py, .ipynb); [] when the
    assignment has no released handout."""
    from graders.student.handout_fingerprints import FINGERPRINTS

    forms = FINGERPRINTS.get(_handout_key(stem), {})
    return [tuple(text[i:i + HASH_DIGITS] for i in range(0, len(text), HASH_DIGITS))
            for _, text in sorted(forms.items())]


def changed_lines(hashes: Sequence[str], handout: Sequence[str]) -> int:
    """How many lines differ between two hashed codes (replaced lines count once, as the
    longer side of each change)."""
    matcher = difflib.SequenceMatcher(None, list(handout), list(hashes), autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
               if tag != "equal")


@dataclass(frozen=True)
class Candidate:
    """One existing file of the pair: ``changed`` lines against the nearest handout form
    (None when there is no handout to compare with or the file cannot be read, then
    ``problem`` says why), and ``mtime_ns``."""

    path: Path
    changed: int | None
    mtime_ns: int
    problem: str = ""

    @property
    def differs(self) -> bool:
        """Whether this is not the handout (an unreadable file or an unknown handout
        counts as differing)."""
        return self.changed != 0


def candidate(path: Path, stem: str) -> Candidate:
    """``path`` measured against ``stem``'s handout. Raises ``CannotRead`` only for a
    folder (no candidate); any other problem is recorded in ``Candidate.problem``."""
    path = Path(path)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = 0
    if path.is_dir():
        raise CannotRead(f"{path.name} is a folder, not a file")
    try:
        hashes = line_hashes(code_lines(path))
    except CannotRead as exc:
        return Candidate(path, None, mtime, str(exc))
    forms = handout_forms(stem)
    changed = min((changed_lines(hashes, form) for form in forms), default=None)
    return Candidate(path, changed, mtime)


@dataclass(frozen=True)
class Choice:
    """The file graded (``graded``), the file of the pair left out (``left_out``; None
    when only one exists), the ``note`` the student and the TA see ("" when there was no
    choice to make), ``problems``: bad input that is no candidate (a folder named
    ``<stem>.py``), and ``why``: the note's reason alone."""

    graded: Path | None
    left_out: Path | None = None
    note: str = ""
    problems: tuple[str, ...] = field(default=())
    #: The reason alone, the note's parenthesis ("<stem>.py is unchanged ...").
    why: str = ""


def pair_of(folder: Path, stem: str) -> list[Path]:
    """``folder/<stem>.py`` and ``folder/<stem>.ipynb``, those that exist (files or not)."""
    return [folder / f"{stem}{suffix}" for suffix in SUFFIXES
            if (folder / f"{stem}{suffix}").exists()]


def choose_in(folder: Path, stem: str, *, decide: Decide = "mtime") -> Choice | None:
    """:func:`choose_file` over ``folder``'s ``<stem>.py`` and ``<stem>.ipynb``; None when
    neither exists."""
    paths = pair_of(Path(folder), stem)
    return choose_file(paths, stem, decide=decide) if paths else None


def choose_file(paths: Sequence[Path], stem: str, *, decide: Decide = "mtime") -> Choice:
    """The file to grade among ``paths`` (one assignment's ``.py`` and/or ``.ipynb``).

    The rule is the module docstring's; ``decide`` breaks the tie between two changed
    files. ``Choice.note`` says, for the student, which file is graded and why the other
    is not, e.g. "graded <stem>.ipynb (<stem>.py is unchanged from the
    handout)". A path that is a folder is no candidate (``Choice.problems``); when
    no path is a file, ``Choice.graded`` is None.

    Raises ``ValueError`` for more than two paths or two of the same suffix.
    """
    paths = [Path(p) for p in paths]
    if len(paths) > 2 or len({p.suffix for p in paths}) != len(paths):
        raise ValueError(f"expected one .py and one .ipynb, got {[p.name for p in paths]}")
    found: list[Candidate] = []
    problems: list[str] = []
    for path in paths:
        try:
            found.append(candidate(path, stem))
        except CannotRead as exc:
            problems.append(f"{exc}: not graded")
    folders = "; ".join(problems)
    if not found:
        return Choice(None, None, folders, tuple(problems), folders)
    if len(found) == 1:
        only = found[0]
        note = f"graded {only.path.name} ({folders})" if problems else ""
        return Choice(only.path, None, note, tuple(problems), folders)
    py, nb = sorted(found, key=lambda c: c.path.suffix != ".py")
    graded, other, why = _decide(py, nb, stem, decide)
    return Choice(graded.path, other.path, f"graded {graded.path.name} ({why})",
                  tuple(problems), why)


def _decide(py: Candidate, nb: Candidate, stem: str,
            decide: Decide) -> tuple[Candidate, Candidate, str]:
    """(graded, left out, why) for two existing files (``py`` is the ``.py``)."""
    if py.differs != nb.differs:
        graded, other = (py, nb) if py.differs else (nb, py)
        return graded, other, f"{other.path.name} is unchanged from the handout"
    if not py.differs:
        return py, nb, (f"{py.path.name} and {nb.path.name} are both unchanged from the "
                        "handout: not started")

    def size(c: Candidate) -> int:
        return -1 if c.changed is None else c.changed  # an unreadable file ranks below

    by_time = (py.mtime_ns > nb.mtime_ns) - (py.mtime_ns < nb.mtime_ns)
    by_size = (size(py) > size(nb)) - (size(py) < size(nb))
    if decide == "mtime":
        verdict, reason = (by_time, "time") if by_time else (by_size, "size")
    else:
        verdict, reason = by_size, "size"
    graded, other = (nb, py) if verdict < 0 else (py, nb)
    if not handout_forms(stem):
        too = f"there is no handout of {stem} to compare {other.path.name} with"
    else:
        too = f"{other.path.name} differs from the handout too"
        too += f" ({other.problem})" if other.problem else ""
    if verdict == 0:
        tie = "neither is newer nor further from it" if decide == "mtime" else (
            "neither is further from it")
        return graded, other, f"{too}; {tie}: the .py is graded"
    if reason == "time":
        return graded, other, f"{too}, but {graded.path.name} was saved later"
    same = "; both were saved at the same time" if decide == "mtime" else ""
    return graded, other, (f"{too}{same}; {graded.path.name} differs more from it: "
                           f"{_lines(graded)} against {_lines(other)}")


def _lines(c: Candidate) -> str:
    if c.changed is None:
        return "cannot be read"
    return f"{c.changed} changed line{'s' if c.changed != 1 else ''}"


def _handout_key(stem: str) -> str:
    """The key of a handout in ``FINGERPRINTS``: its assignment's id (its stem when no
    discovered lab has that stem)."""
    from graders.course.catalog import assignment_for_stem

    assignment = assignment_for_stem(stem)
    return assignment.id if assignment is not None else stem


def fingerprints_text(assignments: Path) -> str:
    """The text of ``graders/student/handout_fingerprints.py`` for the handouts in
    ``assignments`` (every ``<stem>.py``/``<stem>.ipynb``): per assignment id and suffix,
    the concatenated line hashes of its code. ``pallas-lab release`` writes it."""
    stems: dict[str, dict[str, str]] = {}
    for path in sorted(Path(assignments).iterdir()):
        if path.suffix in SUFFIXES and not path.name.startswith((".", "_")):
            stems.setdefault(_handout_key(path.stem), {})[path.suffix] = "".join(
                line_hashes(code_lines(path)))
    out = ['"""The released handouts\' code, line by line: generated by `pallas-lab release`',
           "from assignments/, do not edit (graders.student.which_file compares submissions",
           'with it; a test fails when it is out of date)."""', "",
           "#: assignment id -> suffix -> one 8-hex-digit hash per code line "
           "(which_file.code_lines)",
           "FINGERPRINTS: dict[str, dict[str, str]] = {"]
    width = 88
    for stem, forms in stems.items():
        out.append(f"    \"{stem}\": {{")
        for suffix, text in sorted(forms.items()):
            out.append(f"        \"{suffix}\": (")
            out += [f'            "{text[i:i + width]}"' for i in range(0, len(text), width)]
            out.append("        ),")
        out.append("    },")
    out.append("}")
    return "\n".join(out) + "\n"
