"""Find the submissions under the paths given to ``pallas-lab grade``.

A PATH is one of (design.md, "Who uses it and how"; issue #2, item 6):

* a submission file: its stem names the assignment (``--assignment aN``
  overrides it) and its folder names the student;
* a student folder: holds ``<stem>.py`` files directly;
* a class folder: holds student folders.

No PATH means the repository's ``examples/submissions/``. Files whose stem
names no assignment are reported, never crashed on. Results are sorted by
student, then assignment, so reports come out in a stable order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from graders.assignments import ASSIGNMENTS, assignment_for_stem, get_assignment, known_stems

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO_ROOT / "examples" / "submissions"


@dataclass(frozen=True)
class Submission:
    """One file to grade: ``student`` (folder name), ``stem`` (the assignment's file
    stem), ``file`` (its path) and ``assignment`` (id, e.g. "a1")."""

    student: str
    stem: str
    file: Path
    assignment: str


@dataclass
class Discovery:
    """What was found: ``submissions`` in grading order and ``problems`` (one line each)."""

    submissions: list[Submission] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _visible(path: Path) -> bool:
    return not path.name.startswith((".", "_"))


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".py" and _visible(p))


def _expected_names() -> str:
    return ", ".join(f"{stem}.py" for stem in known_stems())


def _from_file(path: Path, student: str, assignment: str | None, out: Discovery,
               *, explicit: bool) -> None:
    if assignment is not None:
        info = get_assignment(assignment)
        if not explicit and path.stem != info.stem:
            return  # a folder's other assignments are not asked for
    else:
        found = assignment_for_stem(path.stem)
        if found is None:
            out.problems.append(
                f"{student}/{path.name}: not an assignment file (expected one of "
                f"{_expected_names()}; or pass --assignment aN)"
            )
            return
        info = found
    out.submissions.append(Submission(student, info.stem, path, info.id))


def _from_student_folder(folder: Path, assignment: str | None, out: Discovery) -> None:
    files = _python_files(folder)
    before = len(out.submissions)
    for path in files:
        _from_file(path, folder.name, assignment, out, explicit=False)
    if len(out.submissions) == before and not files:
        out.problems.append(f"{folder.name}/: no submission files found")
    elif len(out.submissions) == before and assignment is not None:
        stem = get_assignment(assignment).stem
        out.problems.append(f"{folder.name}/: no {stem}.py found")


def _subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and _visible(p))


def _is_student_folder(folder: Path) -> bool:
    """A folder holding an assignment file, or loose .py files and no folders."""
    files = _python_files(folder)
    stems = set(known_stems())
    return any(p.stem in stems for p in files) or (bool(files) and not _subfolders(folder))


def discover(
    paths: Iterable[str | Path] = (), *, assignment: str | None = None
) -> Discovery:
    """Submissions under ``paths`` (default: ``examples/submissions/`` of the repository).

    ``assignment`` ("a1") makes a single file count as that assignment and
    restricts folders to that assignment's file. Raises ``KeyError`` for an
    unknown assignment id; a PATH that does not exist becomes a problem.
    """
    if assignment is not None:
        get_assignment(assignment)
    roots = [Path(p) for p in paths] or [DEFAULT_ROOT]
    out = Discovery()
    for root in roots:
        if root.is_file():
            _from_file(root, root.resolve().parent.name, assignment, out, explicit=True)
        elif root.is_dir():
            if _is_student_folder(root):
                _from_student_folder(root, assignment, out)
            else:
                folders = _subfolders(root)
                if not folders:
                    out.problems.append(f"{root}: no submissions found")
                for loose in _python_files(root):
                    out.problems.append(f"{root.name}/{loose.name}: a file in a class folder "
                                        "(expected one folder per student)")
                for folder in folders:
                    _from_student_folder(folder, assignment, out)
        else:
            out.problems.append(f"{root}: no such file or folder")
    order = {a: i for i, a in enumerate(ASSIGNMENTS)}
    seen: set[Path] = set()
    unique = []
    for sub in sorted(out.submissions, key=lambda s: (s.student, order.get(s.assignment, 99),
                                                       str(s.file))):
        key = sub.file.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(sub)
    out.submissions = unique
    return out
