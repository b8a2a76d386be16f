"""Find the submissions under the paths given to ``pallas-lab grade``.

A PATH is one of (design.md, "Who uses it and how"; issue #2, item 6):

* a submission file (``.py`` or ``.ipynb``): its stem names the assignment
  (``--assignment aN`` overrides it) and its folder names the student;
* a student folder: holds ``<stem>.py``/``<stem>.ipynb`` files directly, or
  in folders named after the assignment (nbgrader's
  ``submitted/<student>/<assignment>/`` layout; the assignment folder is named
  by the stem or the id);
* a class folder: holds student folders; an nbgrader course folder (one with
  ``nbgrader_config.py``) means its ``submitted/`` folder.

When a folder holds both ``<stem>.py`` and ``<stem>.ipynb``, the ``.py`` is
graded and the notebook is listed as skipped.

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


SUFFIXES = (".py", ".ipynb")


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and p.suffix in SUFFIXES and _visible(p))


def _assignment_folders(folder: Path) -> list[Path]:
    """Subfolders named after an assignment's stem or id (nbgrader's layout)."""
    names = set(known_stems()) | set(ASSIGNMENTS)
    return [p for p in _subfolders(folder) if p.name in names]


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


def student_of(path: str | Path) -> str:
    """The student a submission file belongs to: its folder's name, or the folder above
    when the file sits in an assignment folder (nbgrader's layout)."""
    parent = Path(path).resolve().parent
    if parent.name in set(known_stems()) | set(ASSIGNMENTS):
        return parent.parent.name
    return parent.name


def _from_student_folder(folder: Path, assignment: str | None, out: Discovery) -> None:
    files = _python_files(folder)
    for sub in _assignment_folders(folder):
        files += [p for p in _python_files(sub) if assignment_for_stem(p.stem) is not None]
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
    if any(p.stem in stems for p in files):
        return True
    if any(p.stem in stems for sub in _assignment_folders(folder) for p in _python_files(sub)):
        return True
    return bool(files) and not _subfolders(folder)


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
        if root.is_dir() and (root / "nbgrader_config.py").is_file() and (
                root / "submitted").is_dir():
            root = root / "submitted"
        if root.is_file():
            _from_file(root, student_of(root), assignment, out, explicit=True)
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
    graded: dict[tuple[str, Path, str], Submission] = {}
    unique = []
    for sub in sorted(out.submissions, key=lambda s: (s.student, order.get(s.assignment, 99),
                                                       s.file.suffix != ".py", str(s.file))):
        key = sub.file.resolve()
        if key in seen:
            continue
        seen.add(key)
        twin = graded.get((sub.student, sub.file.parent.resolve(), sub.stem))
        if twin is not None and twin.file.stem == sub.file.stem:
            out.problems.append(f"{sub.student}/{sub.file.name}: {twin.file.name} is graded "
                                "instead (one file per assignment)")
            continue
        graded[(sub.student, sub.file.parent.resolve(), sub.stem)] = sub
        unique.append(sub)
    out.submissions = unique
    return out
