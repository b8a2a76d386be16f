"""Find the submissions under the paths given to ``pallas-lab grade``.

A PATH is one of (docs/grading-design.md, "Who does what"):

* a submission file (``.py`` or ``.ipynb``): its stem names the assignment
  (``--assignment aN`` overrides it) and its folder names the student;
* a student folder: holds ``<stem>.py``/``<stem>.ipynb`` files directly, or
  only assignment folders (nbgrader's ``submitted/<student>/<assignment>/``
  layout): folders named after an assignment's stem or id that hold no file
  of another assignment and no folder of submissions;
* a student folder too: one holding an assignment folder beside other folders of
  submissions (``mallory/a1/`` and ``mallory/bob/``) when it sits among student
  folders (a folder beside it holds submissions): it was given alone out of a class
  (a one-student regrade, ``class/*/``), so it is nbgrader's layout and its other
  folders are not graded, never as classmates;
* a class folder: any other folder; every folder in it is a student, whatever
  it is called (``a1/``, ``<stem>/``, ``gradebook.csv/``), hidden
  ones (``.bob/``, ``_carol/``) when they hold submission files. An nbgrader
  course folder (one with ``nbgrader_config.py``) means its ``submitted/``
  folder, always a class folder.

So a student folder named like an assignment among other students' folders
is one more student, never the reason the class is read as one student.
These cases stop the run instead of grading a part silently (``ambiguities``):
a folder that holds submission files as a student folder does and student
folders as a class folder does; two student folders (in different
places) whose names would share one row of the gradebook; a folder of
LMS-named files with several name prefixes beside student folders; and, in a
flat LMS download, two LMS users whose files carry one name prefix.

When a folder holds both ``<stem>.py`` and ``<stem>.ipynb`` (or both ``a1.py``
and ``a1.ipynb``), one is graded by the one rule of
``graders.student.which_file`` (the one that differs from the handout; both
changed: the newer); the other is listed as skipped and the choice goes into
the student's gradebook notes ("graded <stem>.ipynb
(<stem>.py is unchanged from the handout)"). In an nbgrader course
only notebooks are graded, as ``nbgrader autograde`` grades only
``<stem>.ipynb``: a ``.py`` there is skipped with a note.

No PATH means the repository's ``examples/submissions/``. Files whose stem
names no assignment are reported, never crashed on. Results are sorted by
student, then assignment, so reports come out in a stable order.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from graders.course.catalog import (
    ASSIGNMENTS,
    Assignment,
    assignment_for_stem,
    get_assignment,
    known_stems,
)
from graders.grading.submission import Submission
from graders.safety.safe_text import terminal_text
from graders.safety.submission_files import kind_of
from graders.student.which_file import choose_file

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO_ROOT / "examples" / "submissions"


@dataclass
class Discovery:
    """What was found: ``submissions`` in grading order, ``problems`` (one line each,
    reported as skipped) and ``ambiguities`` (one line each: the run must stop, since
    grading would silently drop or merge students)."""

    submissions: list[Submission] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    ambiguities: list[str] = field(default_factory=list)
    #: Per student, what the gradebook's ``notes`` column says: files graded under
    #: another name ("renamed: a1.py") and files that were not ("misnamed: hw.py").
    #: A student with only misnamed files is here and nowhere else: never dropped.
    notes: dict[str, list[str]] = field(default_factory=dict)
    #: The folders read as class or student folders (an nbgrader course's ``submitted/``;
    #: a single file's student folder): what students write, where nothing of the
    #: grader's may go (``graders.cli.grade_options.student_folder_problem``).
    folders: list[Path] = field(default_factory=list)

    def note(self, student: str, text: str) -> None:
        """Add ``text`` to ``student``'s notes (once)."""
        lines = self.notes.setdefault(student, [])
        if text not in lines:
            lines.append(text)


#: An LMS prefix on a downloaded file name. Canvas: ``<name>_[LATE_]<user id>_<submission
#: id>_<original name>``; the name is the student's, lower case, without spaces.
LMS_PREFIX = re.compile(r"^(?P<student>[^_]+)_(?:late_)?(?P<user>\d+)_\d+_(?P<rest>.+)$",
                        re.IGNORECASE)
#: What browsers and LMSs append to a copy's name: ``name (1)``, ``name-1`` (Canvas
#: resubmissions), ``name copy``.
COPY_SUFFIX = re.compile(r"(?:\s*\(\d+\)|-\d+|\s+copy)$", re.IGNORECASE)


def match_file_name(name: str) -> tuple[Assignment | None, str | None]:
    """(the assignment a misnamed file's name maps to, the LMS student prefix or None).

    The rule, applied to a ``.py``/``.ipynb`` name (suffix in any case) whose stem is
    not an assignment's: drop an LMS prefix (``LMS_PREFIX``), then copy suffixes
    (``COPY_SUFFIX``, repeatedly), fold the case and read spaces and hyphens as
    underscores; what is left must be an assignment's stem (its record's ``stem``) or id
    (``a1``). So the stem in capitals, ``a1.py``, ``<stem> (1).py`` and
    ``smithjane_123_456_<stem>.py`` map; ``a1_final.py`` and ``hw.py`` do not.
    """
    path = Path(name)
    if path.suffix.casefold() not in SUFFIXES:
        return None, None
    stem, student = path.stem, None
    prefixed = LMS_PREFIX.match(stem)
    if prefixed is not None:
        stem, student = prefixed.group("rest"), prefixed.group("student")
    previous = None
    while previous != stem:
        previous, stem = stem, COPY_SUFFIX.sub("", stem)
    key = re.sub(r"[\s-]+", "_", stem.strip()).casefold()
    return (ASSIGNMENTS.get(key) or assignment_for_stem(key)), student


def _visible(path: Path) -> bool:
    return not path.name.startswith((".", "_"))


SUFFIXES = (".py", ".ipynb")


def _entries(folder: Path) -> list[Path]:
    """The folder's entries, sorted; none when it cannot be listed."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _python_files(folder: Path) -> list[Path]:
    return [p for p in _entries(folder)
            if p.is_file() and p.suffix.casefold() in SUFFIXES and _visible(p)]


def _assignment_named(name: str) -> Assignment | None:
    """The assignment a folder name names (its stem or its id), or None."""
    return ASSIGNMENTS.get(name) or assignment_for_stem(name)


def _assignment_files(folder: Path) -> list[Path]:
    """The submission files directly in ``folder`` (stems that name an assignment)."""
    return [p for p in _python_files(folder) if assignment_for_stem(p.stem) is not None]


def _assignment_folders(folder: Path) -> list[Path]:
    """Subfolders named after an assignment's stem or id (nbgrader's layout)."""
    return [p for p in _subfolders(folder) if _assignment_named(p.name) is not None]


def _holds_submissions(folder: Path) -> bool:
    """Whether ``folder`` holds submission files, directly or in assignment folders."""
    return bool(_assignment_files(folder)) or any(
        _assignment_files(sub) for sub in _assignment_folders(folder))


def _is_assignment_folder(folder: Path) -> bool:
    """nbgrader's ``<student>/<assignment>/``: named after an assignment, holding no
    submission file of another assignment and no folder of submissions."""
    info = _assignment_named(folder.name)
    if info is None:
        return False
    if any(assignment_for_stem(p.stem) != info for p in _assignment_files(folder)):
        return False
    return not any(_holds_submissions(sub) for sub in _all_subfolders(folder))


def _expected_names() -> str:
    return ", ".join(f"{stem}.py" for stem in known_stems())


def _from_file(path: Path, student: str, folder: Path, assignment: str | None,
               out: Discovery, *, explicit: bool) -> None:
    note = ""
    if assignment is not None:
        info = get_assignment(assignment)
        if not explicit and path.stem != info.stem:
            return  # a folder's other assignments are not asked for
    else:
        found = assignment_for_stem(path.stem) if path.suffix in SUFFIXES else None
        if found is None and not explicit:
            found, _ = match_file_name(path.name)
            note = f"renamed: {path.name}" if found is not None else ""
        if found is None:
            out.problems.append(
                f"{student}/{path.name}: not an assignment file (expected one of "
                f"{_expected_names()}; or pass --assignment aN)"
            )
            if not explicit:
                out.note(student, f"misnamed: {path.name}")
            return
        info = found
    out.submissions.append(Submission.of(path, info, student=student, folder=folder, note=note))


def student_folder_of(path: str | Path) -> Path:
    """The student folder a submission file belongs to: its folder, or the folder above
    when the file sits in an assignment folder (nbgrader's layout)."""
    parent = Path(path).resolve().parent
    if parent.name in set(known_stems()) | set(ASSIGNMENTS):
        return parent.parent
    return parent


def student_of(path: str | Path) -> str:
    """The student a submission file belongs to: the name of ``student_folder_of``."""
    return student_folder_of(path).name


def _from_student_folder(folder: Path, assignment: str | None, out: Discovery) -> None:
    files = _python_files(folder)
    for sub in _assignment_folders(folder):
        files += [p for p in _python_files(sub) if assignment_for_stem(p.stem) is not None]
    before = len(out.submissions)
    for path in files:
        _from_file(path, folder.name, folder, assignment, out, explicit=False)
    for odd in _entries(folder):  # a folder named like a submission file: say so
        if odd.is_dir() and odd.suffix.casefold() in SUFFIXES and (
                assignment_for_stem(odd.stem) is not None):
            out.problems.append(f"{folder.name}/{odd.name}: a folder, not a file: not graded")
            out.note(folder.name, f"not graded: {odd.name} (a folder, not a file)")
    if len(out.submissions) == before and not files:
        out.problems.append(f"{folder.name}/: no submission files found")
        if not any(out.notes.get(folder.name, [])):
            odd = [_entry_text(p) for p in _entries(folder) if _visible(p)]
            out.note(folder.name, f"no submission ({', '.join(odd[:3])} not graded)" if odd
                     else "no submission (empty folder)")
    elif len(out.submissions) == before and assignment is not None:
        stem = get_assignment(assignment).stem
        out.problems.append(f"{folder.name}/: no {stem}.py found")


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it is named like a submission (``<stem>.py``/``.ipynb``) but
    is not a regular file ("a FIFO (named pipe)", "a folder"), else None. Only ``lstat``
    is used: such a file is never opened (``graders.safety.submission_files``)."""
    if path.suffix.casefold() not in SUFFIXES or assignment_for_stem(path.stem) is None:
        return None
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or (stat.S_ISLNK(mode) and path.is_file()):
        return None  # a regular file, or a link to one (grading refuses the link itself)
    return kind_of(mode)


def _entry_text(path: Path) -> str:
    """A folder entry as a student's note names it: its name, and what it is when it is
    named like a submission but is not a regular file."""
    kind = _not_regular(path)
    return path.name if kind is None else f"{path.name} is {kind}"


def _from_lms_folder(folder: Path, assignment: str | None, out: Discovery) -> None:
    """A flat LMS download: each file's student is its LMS prefix (``match_file_name``);
    a file without one is listed as skipped. Two LMS users whose files carry one name
    prefix (namesakes, or a name changed to a classmate's before the download) stop the
    run: graded as one student, one's file would be graded and the other's dropped."""
    users: dict[str, set[str]] = {}
    for path in _python_files(folder):
        prefixed = LMS_PREFIX.match(Path(path.name).stem)
        if prefixed is not None:
            users.setdefault(prefixed.group("student").casefold(), set()).add(
                str(int(prefixed.group("user"))))
    shared = sorted(name for name, ids in users.items() if len(ids) > 1)
    if shared:
        for name in shared:
            out.ambiguities.append(
                f"{folder}: the LMS users {', '.join(sorted(users[name], key=int))} all "
                f"carry the name prefix {name!r}; graded as one student, one file would be "
                "dropped; nothing was graded. Put each user's files in a folder of their own "
                "(named after the user) and grade the class folder")
        return
    for path in _python_files(folder):
        info, student = match_file_name(path.name)
        if student is None:
            out.problems.append(f"{folder.name}/{path.name}: no LMS student prefix "
                                "(<name>_<id>_<id>_<file>) in a folder of LMS downloads")
            continue
        if info is None:
            out.problems.append(f"{student}/{path.name}: not an assignment file (expected "
                                f"one of {_expected_names()})")
            out.note(student, f"misnamed: {path.name}")
            continue
        if assignment is not None and info.id != assignment:
            continue
        out.submissions.append(Submission.of(path, info, student=student, folder=folder,
                                             note=f"renamed: {path.name}", origin="canvas"))


def _all_subfolders(folder: Path) -> list[Path]:
    return [p for p in _entries(folder) if p.is_dir()]


def _subfolders(folder: Path) -> list[Path]:
    return [p for p in _all_subfolders(folder) if _visible(p)]


def _student_folders(folder: Path) -> list[Path]:
    """The students of a class folder: every visible subfolder, and the hidden ones
    (``.bob``, ``_carol``) that hold submissions (``.git``, ``__pycache__`` do not)."""
    return [p for p in _all_subfolders(folder) if _visible(p) or _holds_submissions(p)]


def _shown(names: list[str], limit: int = 4) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _classify(folder: Path) -> tuple[str, str]:
    """("student" | "class" | "ambiguous", why) for a folder given as PATH (see the
    module docstring)."""
    loose = _assignment_files(folder)
    subs = _student_folders(folder)
    nbgrader = [p for p in subs if _visible(p) and _is_assignment_folder(p)]
    others = [p for p in subs if p not in nbgrader]
    students = [p for p in others if _holds_submissions(p)]
    if loose and students:
        return "ambiguous", (
            f"{folder}: ambiguous: it holds submission files "
            f"({_shown([p.name for p in loose])}) as a student folder does, and student "
            f"folders ({_shown([p.name + '/' for p in students])}) as a class folder does; "
            f"nothing was graded. Move the files into a student folder, or grade the parts "
            f"one at a time (pallas-lab grade {folder}/*/ for the students)")
    if loose or (nbgrader and not others):
        return "student", ""
    if nbgrader and _among_students(folder):
        # Assignment folders beside folders of submissions, in a folder that is itself
        # one of a class's students (a one-folder regrade): nbgrader's layout, one
        # student. Its other folders are never graded, least of all as classmates.
        return "student", ""
    if not students and any(match_file_name(p.name)[1] for p in _python_files(folder)):
        if _a_student_folder(folder):
            return "student", ""  # LMS-looking names a student chose: no LMS prefix read
        if _among_students(folder):
            prefixes = _lms_prefixes(folder)
            if len(prefixes) > 1:
                # A flat download and a student's folder look alike here: grading it as
                # one student would pool several students' files, reading the prefixes
                # would let a student's file names pick whose row it lands in.
                return "ambiguous", (
                    f"{folder}: ambiguous: its files are named as a flat LMS download "
                    f"names them ({_shown(sorted(prefixes))}: several students), but it "
                    f"sits beside student folders, as one student's folder does; "
                    f"nothing was graded. Grade a download from a folder of its own")
            return "student", ""  # one student given alone out of a class
        return "lms", ""  # a flat LMS download: <student>_<ids>_<file name>
    if not subs and _python_files(folder):
        return "student", ""  # loose .py files of other names: --assignment grades them
    return "class", ""


def _a_student_folder(folder: Path) -> bool:
    """Whether ``folder``, which holds LMS-looking file names only, is a student's own
    folder rather than a flat LMS download: the names inside it are the student's to
    choose, so no LMS prefix in them may name a student or carry the LMS's verdict. It is
    a student's folder when it is named as Moodle names one
    (``<name>_<id>_assignsubmission_...``) or when a file's prefix is the folder's own
    name (``mallory/mallory_1_2_<stem>.py``). Beside student folders (``_classify``), one
    prefix makes it a student's folder too and several make it ambiguous."""
    from graders.reports.names import MOODLE_FOLDER, fold

    if MOODLE_FOLDER.match(folder.name):
        return True
    own = fold(folder.name)
    return bool(own) and own in _lms_prefixes(folder)


def _lms_prefixes(folder: Path) -> set[str]:
    """The distinct student prefixes (folded) of the LMS-named files in ``folder``."""
    from graders.reports.names import fold

    return {fold(prefix) for p in _python_files(folder)
            if (prefix := match_file_name(p.name)[1])}


def _among_students(folder: Path) -> bool:
    """Whether ``folder`` sits among student folders: a folder beside it holds submission
    files named as the course names them (directly or in assignment folders), as a class
    folder's students do. Then ``folder`` is one of them (given alone, as
    ``pallas-lab grade class/*/`` or a one-student regrade give it), never a class."""
    here = folder.resolve()
    return any(_holds_submissions(other) for other in _student_folders(here.parent)
               if other.resolve() != here)


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
        course = root.is_dir() and (root / "nbgrader_config.py").is_file() and (
            root / "submitted").is_dir()
        if course:
            root = root / "submitted"
        before = len(out.submissions)
        if root.is_dir():
            out.folders.append(root)
        elif root.is_file():
            out.folders.append(student_folder_of(root))
        if root.is_file():
            _from_file(root, student_of(root), student_folder_of(root), assignment, out,
                       explicit=True)
        elif root.is_dir():
            kind, why = ("class", "") if course else _classify(root)
            if kind == "ambiguous":
                out.ambiguities.append(why)
            elif kind == "student":
                _from_student_folder(root, assignment, out)
            elif kind == "lms":
                _from_lms_folder(root, assignment, out)
            else:
                folders = _student_folders(root)
                if not folders:
                    out.problems.append(f"{root}: no submissions found")
                for loose in _python_files(root):
                    out.problems.append(f"{root.name}/{loose.name}: a file in a class folder "
                                        "(expected one folder per student)")
                for folder in folders:
                    _from_student_folder(folder, assignment, out)
        elif os.path.lexists(root):  # a FIFO, a device, a socket, a dangling link
            kind = kind_of(os.lstat(root).st_mode)
            out.problems.append(f"{root}: not a regular file: it is {kind}; not graded")
        else:
            out.problems.append(f"{root}: no such file or folder")
        if course:
            out.submissions[before:] = _notebooks_only(out.submissions[before:], out)
        out.submissions[before:] = [_with_origin(sub, root, course)
                                    for sub in out.submissions[before:]]
    out.submissions = _one_of_each_pair(out.submissions, out)
    order = {a: i for i, a in enumerate(ASSIGNMENTS)}
    seen: set[Path] = set()
    graded: dict[tuple[str, Path, str], Submission] = {}
    #: one file per (student, student folder, assignment), wherever in the folder it is
    per_student: dict[tuple[str, Path, str], Submission] = {}
    unique = []
    for sub in sorted(out.submissions, key=lambda s: (s.student, order.get(s.assignment.id, 99),
                                                       bool(s.note), s.file.suffix != ".py",
                                                       str(s.file))):
        key = sub.file.resolve()
        if key in seen:
            continue
        seen.add(key)
        twin = graded.get((sub.student, sub.file.parent.resolve(), sub.stem))
        if twin is None and sub.note:  # a renamed file in an assignment folder's twin
            twin = next((g for (st, _, stem), g in graded.items()
                         if st == sub.student and stem == sub.stem), None)
        if twin is not None and (twin.file.stem == sub.file.stem or sub.note):
            out.problems.append(f"{sub.student}/{sub.file.name}: {twin.file.name} is graded "
                                "instead (one file per assignment)")
            if sub.note:
                out.note(sub.student, f"not graded: {sub.file.name} ({twin.file.name} was)")
            continue
        mine = (sub.student, (sub.folder or student_folder_of(sub.file)).resolve(), sub.stem)
        first = per_student.get(mine)
        if first is not None:  # <stem>.py beside <stem>/<stem>.py: one results.json each
            out.problems.append(f"{sub.student}/{sub.file.name}: not graded, "
                                f"{first.file.name} is (one file per assignment)")
            out.note(sub.student, f"not graded: {_in_folder(sub.file, mine[1])} "
                                  f"({_in_folder(first.file, mine[1])} was)")
            continue
        per_student[mine] = sub
        graded[(sub.student, sub.file.parent.resolve(), sub.stem)] = sub
        if sub.note:
            out.note(sub.student, sub.note)
        unique.append(sub)
    out.submissions = unique
    out.ambiguities.extend(_name_clashes(unique))
    return out


def _with_origin(sub: Submission, root: Path, course: bool) -> Submission:
    """``sub`` with the layout it was found in (``Submission.origin``): the place its
    submission time may be read from (``graders.reports.late``). Only the grader's own
    choice of PATH and the LMS's naming decide it, never a file a student can add."""
    from graders.reports.names import MOODLE_FOLDER

    folder = sub.folder or student_folder_of(sub.file)
    if course:
        origin = "nbgrader"
    elif folder.name == "submission" and (root.resolve() == folder.resolve()
                                          or root.resolve().parent == folder.resolve()):
        origin = "gradescope"  # /autograder/submission/ itself was the PATH
    elif sub.origin == "canvas" and folder == root:
        origin = "canvas"  # read as a flat LMS download (_classify): never a student's folder
    elif MOODLE_FOLDER.match(folder.name):
        origin = "moodle"
    else:
        return sub
    return dataclasses.replace(sub, origin=origin)


def _in_folder(file: Path, folder: Path) -> str:
    """``file`` as the student knows it: relative to their folder when it is inside."""
    try:
        return file.resolve().relative_to(folder).as_posix()
    except ValueError:
        return file.name


def _notebooks_only(found: list[Submission], out: Discovery) -> list[Submission]:
    """An nbgrader course's submissions: its notebooks (``nbgrader autograde`` grades only
    ``<notebook>.ipynb`` and copies every other file unchanged); each ``.py`` is skipped,
    with a problem line and a note saying so."""
    kept = []
    for sub in found:
        if sub.file.suffix == ".ipynb":
            kept.append(sub)
            continue
        why = f"nbgrader grades notebooks only: {sub.stem}.ipynb"
        out.problems.append(f"{sub.student}/{sub.file.name}: not graded ({why})")
        out.note(sub.student, f"not graded: {sub.file.name} ({why})")
    return kept


def _one_of_each_pair(found: list[Submission], out: Discovery) -> list[Submission]:
    """``found`` with one file of each pair of a ``.py`` and an ``.ipynb`` of one assignment in
    a student's folder (of each suffix the correctly named file, else the first renamed
    one), chosen by ``graders.student.which_file.choose_file`` (the newer wins when both
    differ from the handout); the other is a problem line, the choice a note. Further
    renamed copies are left to ``discover``'s one-file-per-assignment rule."""
    groups: dict[tuple[str, Path, str], list[Submission]] = {}
    for sub in found:
        groups.setdefault((sub.student, sub.file.parent.resolve(), sub.stem), []).append(sub)
    dropped: set[int] = set()
    for (student, _, stem), subs in groups.items():
        best = [min((s for s in subs if s.file.suffix == suffix),
                    key=lambda s: (bool(s.note), s.file.name), default=None)
                for suffix in (".py", ".ipynb")]
        if None in best:
            continue
        pair = [s for s in best if s is not None]
        choice = choose_file([s.file for s in pair], stem)
        loser = next(s for s in pair if s.file != choice.graded)
        dropped.add(id(loser))
        out.problems.append(f"{student}/{loser.file.name}: not graded, "
                            f"{choice.graded.name} is ({choice.why})")  # type: ignore[union-attr]
        out.note(student, choice.note)
    return [sub for sub in found if id(sub) not in dropped]


def _name_clashes(submissions: Iterable[Submission]) -> list[str]:
    """One line per name that two different student folders would share in the reports
    (the same name, or names shown the same once escaped)."""
    folders: dict[str, set[Path]] = {}
    for sub in submissions:
        folder = (sub.folder or student_folder_of(sub.file)).resolve()
        folders.setdefault(terminal_text(sub.student), set()).add(folder)
    return [f"two students would share the name {name!r} in the reports: "
            f"{' and '.join(str(f) for f in sorted(found))}; nothing was graded. Grade them "
            "in separate runs (with separate --out)"
            for name, found in sorted(folders.items()) if len(found) > 1]
