"""An nbgrader course for pallas-lab, graded by nbgrader's own commands or by pallas-lab.

``pallas-lab nbgrader DIR`` writes ``DIR/nbgrader_config.py`` and, per
assignment with a solution, ``DIR/source/<stem>/<stem>.ipynb``: the solution
notebook with nbgrader cell metadata and one locked autograder-tests cell per
graded task (``graders.release.notebook.source_notebook``). It never
replaces a file that differs from what it would write (a customised config
or notebook) unless given ``--force``; it then stops with a one-line error
and exit status 2 before writing anything.

Then nbgrader's own commands work end to end:

* ``nbgrader generate_assignment <stem>`` makes the student version in
  ``release/`` (the tests cells' calls are nbgrader hidden tests) and records
  the cells, with their points, in the gradebook;
* ``nbgrader autograde <stem>`` grades ``submitted/<student>/<stem>/``: the
  config replaces nbgrader's ``Execute`` by
  ``graders.integrations.nbgrader.execute.SandboxedExecute``, which runs only the tests
  cells; each grades its task in pallas-lab's sandboxed worker and returns
  the task's points as nbgrader's partial credit, so the scores are those of
  ``pallas-lab grade`` on the same notebook. Late submissions (the
  ``timestamp.txt`` nbgrader's collect writes, against the assignment's due
  date in the gradebook: ``--due`` here or ``nbgrader db assignment add
  <stem> --duedate=...``) are penalised by nbgrader's ``LateSubmissionPlugin``
  (``--late-penalty``: ``zero`` by default, or ``none``);
* ``nbgrader export`` and ``nbgrader generate_feedback`` then show them.

Alternatively ``pallas-lab grade DIR --to-gradebook`` reads nbgrader's
``submitted/<student>/<stem>/<stem>.ipynb`` layout, grades each notebook in
the worker, and writes each task's points as the ``auto_score`` of that
task's cell through ``nbgrader.api.Gradebook`` (no late penalty).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import shutil
import sys
import sysconfig
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from graders.course.catalog import ASSIGNMENTS, Assignment
from graders.release.notebook import grade_cell_id, notebook_text, source_notebook

ROOT = Path(__file__).resolve().parents[3]
LATE_PENALTIES = ("zero", "none")
CONFIG = '''"""nbgrader configuration of the pallas-lab course (from `pallas-lab nbgrader`)."""

from graders.integrations.nbgrader.execute import (
    autograde_preprocessors,
    quiet_known_warnings,
    sanitize_preprocessors,
)

c = get_config()  # noqa: F821 - provided by nbgrader
c.CourseDirectory.course_id = "{course_id}"
# Solution regions become this stub in the released notebooks.
STUB = 'raise NotImplementedError("Need to implement this task")'
c.ClearSolutions.code_stub = {{"python": STUB}}
# `nbgrader autograde` runs only pallas-lab's tests cells, never the student's code: each
# grades its task in pallas-lab's sandboxed worker and returns the task's points (nbgrader's
# partial credit). A deleted tests cell is put back (and earns what the grader gives).
c.Autograde.autograde_preprocessors = autograde_preprocessors()
c.Autograde.sanitize_preprocessors = sanitize_preprocessors()  # no warning for hidden tests
c.OverwriteCells.add_missing_cells = True
quiet_known_warnings()
# Late submissions: timestamp.txt against the assignment's due date in the gradebook
# (`nbgrader db assignment add <stem> --duedate="2026-12-08 17:00:00 UTC"`). nbgrader's
# LateSubmissionPlugin: "zero" scores a late notebook 0, "none" only records the lateness.
c.AssignLatePenalties.plugin_class = "nbgrader.plugins.LateSubmissionPlugin"
c.LateSubmissionPlugin.penalty_method = "{late_penalty}"
'''


class GradebookError(RuntimeError):
    """The gradebook cannot take the scores (no course, assignment not generated, ...)."""


class CourseExists(RuntimeError):
    """A course file differs from what ``pallas-lab nbgrader`` would write (pass --force)."""


def course_files(*, root: str | Path | None = None, course_id: str = "pallas-lab",
                 late_penalty: str = "zero") -> dict[Path, str]:
    """The course's files as ``{path relative to the course: text}``: the config, then one
    source notebook per assignment that has a solution in ``root/solutions``.

    Raises ``ValueError`` for an unknown ``late_penalty`` and ``ReleaseError`` for a
    solution that cannot be released.
    """
    if late_penalty not in LATE_PENALTIES:
        raise ValueError(f"--late-penalty must be one of {', '.join(LATE_PENALTIES)}, "
                         f"not {late_penalty!r}")
    root = Path(root) if root is not None else ROOT
    files = {Path("nbgrader_config.py"): CONFIG.format(course_id=course_id,
                                                       late_penalty=late_penalty)}
    for assignment in ASSIGNMENTS.values():
        solution = root / "solutions" / f"{assignment.stem}.py"
        if not solution.is_file():
            continue
        notebook = source_notebook(solution.read_text(encoding="utf-8"),
                                   assignment=assignment, grade_cells=True)
        files[Path("source") / assignment.stem / f"{assignment.stem}.ipynb"] = (
            notebook_text(notebook))
    return files


def write_course(dest: str | Path, *, root: str | Path | None = None,
                 course_id: str = "pallas-lab", late_penalty: str = "zero",
                 force: bool = False) -> list[Path]:
    """Write the course's config and source notebooks; returns the notebooks written.

    A file that exists with other content (a customised config or notebook)
    is replaced only with ``force``; otherwise ``CourseExists`` is raised
    before anything is written. Raises ``ReleaseError`` (a solution that
    cannot be released), ``ValueError`` (a bad ``late_penalty``) and ``OSError``.
    """
    dest = Path(dest)
    files = course_files(root=root, course_id=course_id, late_penalty=late_penalty)
    if not force:
        changed = [p for p, text in files.items() if _differs(dest / p, text)]
        if changed:
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            raise CourseExists(f"{dest / changed[0]} exists and differs from what pallas-lab "
                               f"nbgrader writes{more}; pass --force to replace it")
    dest.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return [dest / p for p in files if p.suffix == ".ipynb"]


def _differs(path: Path, text: str) -> bool:
    if not path.exists() and not path.is_symlink():
        return False
    try:
        return path.read_text(encoding="utf-8") != text
    except (OSError, UnicodeDecodeError):
        return True


def parse_due(spec: str) -> tuple[Assignment, datetime.datetime]:
    """``a1=2026-12-08 17:00 UTC`` (an assignment id or stem, ``=``, a date and time that
    nbgrader's ``parse_utc`` reads; without a zone, UTC) -> (assignment, naive UTC time).

    Raises ``ValueError`` naming what is wrong.
    """
    from nbgrader.utils import parse_utc

    name, sep, when = spec.partition("=")
    found = ASSIGNMENTS.get(name.strip()) or next(
        (a for a in ASSIGNMENTS.values() if a.stem == name.strip()), None)
    if not sep or found is None:
        raise ValueError(f"--due {spec!r}: expected ASSIGNMENT=DATE, e.g. "
                         "a1='2026-12-08 17:00 UTC' (ASSIGNMENT: a1..a5 or a stem)")
    try:
        return found, parse_utc(when.strip())
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"--due {spec!r}: {when.strip()!r} is not a date and time "
                         f"({exc})") from None


def _tool_folders() -> list[str]:
    """Where this Python environment's console scripts are (the venv's ``bin/``): the
    interpreter's own folder and sysconfig's "scripts" path, without repeats."""
    folders = [str(Path(sys.executable).parent), sysconfig.get_path("scripts")]
    return list(dict.fromkeys(f for f in folders if f))


def gradebook_search_path() -> str:
    """``PATH`` for nbgrader's gradebook: this environment's script folders, then the
    process's own ``PATH``. Raises ``GradebookError`` when nbgrader's ``alembic`` command is
    found on neither (the ``course`` extra is not installed here)."""
    before = os.environ.get("PATH")
    path = os.pathsep.join([*_tool_folders(), *([before] if before else [])])
    if shutil.which("alembic", path=path) is None:
        raise GradebookError(
            "nbgrader needs its `alembic` command, which is not installed beside this Python "
            f"({sys.executable}): pip install 'pallas-lab[course]' in this environment")
    return path


@contextlib.contextmanager
def open_gradebook(course: str | Path, course_id: str | None = None) -> Iterator[Any]:
    """nbgrader's ``Gradebook`` of ``course`` (``gradebook.db``), open while the block runs.

    nbgrader runs the ``alembic`` command it depends on by name, through ``PATH``; a TA who
    runs ``.venv/bin/pallas-lab`` by its path has no venv on ``PATH`` and nbgrader would fail
    with "No such file or directory: 'alembic'". While the gradebook is open, this
    environment's script folder is put first on ``PATH`` (this process only). Raises
    ``GradebookError`` when ``alembic`` is not installed here either (the ``course`` extra),
    and SQLAlchemy's errors for a broken gradebook."""
    from nbgrader.api import Gradebook

    before = os.environ.get("PATH")
    path = gradebook_search_path()
    os.environ["PATH"] = path
    try:
        url = f"sqlite:///{Path(course).resolve() / 'gradebook.db'}"
        with (Gradebook(url, course_id=course_id) if course_id else Gradebook(url)) as book:
            yield book
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def write_due_dates(course: str | Path, course_id: str,
                    due: Mapping[str, datetime.datetime]) -> None:
    """Record each assignment's due date (``{stem: UTC time}``) in ``course``'s gradebook
    with nbgrader's API, creating the assignment when missing (``nbgrader
    generate_assignment`` keeps it). Raises SQLAlchemy's errors for a broken gradebook."""
    with open_gradebook(course, course_id) as gradebook:
        for stem, when in due.items():
            gradebook.update_or_create_assignment(stem, duedate=when)


def course_of(given: Path | None, paths: Iterable[Path]) -> Path:
    """The course folder: ``given`` unless it is empty, else the nearest folder holding
    ``nbgrader_config.py`` at or above the first PATH (the current folder otherwise)."""
    if given is not None and str(given) not in ("", "."):
        return given
    for start in [*(Path(p).resolve() for p in paths), Path.cwd()]:
        for folder in [start, *start.parents]:
            if (folder / "nbgrader_config.py").is_file():
                return folder
    return Path.cwd()


def scores_of_results(results: Sequence) -> dict[tuple[str, str], dict[str, float]]:
    """(student, stem) -> points per graded task, from ``SubmissionResult``s."""
    return {(r.student, r.stem): {t.task: t.points for t in r.tasks() if t.graded}
            for r in results}


def write_scores(course: str | Path, scores: Mapping[tuple[str, str], Mapping[str, float]]
                 ) -> int:
    """Write each task's points as the auto score of its cell in ``course``'s gradebook.

    Students and submissions are created when missing. Returns the number of
    scores written. Raises ``GradebookError`` when the course has no
    ``nbgrader_config.py`` or an assignment was not generated with nbgrader.
    """
    from nbgrader.api import MissingEntry

    from graders.integrations.nbgrader.execute import quiet_known_warnings

    course = Path(course).resolve()
    if not (course / "nbgrader_config.py").is_file():
        raise GradebookError(f"{course} is not an nbgrader course (no nbgrader_config.py)")
    written = 0
    with warnings.catch_warnings(), open_gradebook(course) as gradebook:
        quiet_known_warnings()
        for (student, stem), tasks in sorted(scores.items()):
            try:
                gradebook.find_assignment(stem)
            except MissingEntry:
                raise GradebookError(
                    f"the gradebook has no assignment {stem!r}: run `nbgrader "
                    f"generate_assignment {stem}` in {course} first") from None
            gradebook.update_or_create_student(student)
            try:
                gradebook.find_submission(stem, student)
            except MissingEntry:
                gradebook.add_submission(stem, student)
            for task, points in tasks.items():
                try:
                    grade = gradebook.find_grade(grade_cell_id(task), stem, stem, student)
                except MissingEntry:
                    raise GradebookError(
                        f"{stem} in the gradebook has no cell for Task {task}: regenerate "
                        "the course with `pallas-lab nbgrader` and the assignment") from None
                grade.auto_score = float(points)
                written += 1
            gradebook.db.commit()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``pallas-lab nbgrader DIR``: write the course; returns the exit status (2 for a
    customised course without ``--force``, a bad option or an unwritable folder)."""
    parser = argparse.ArgumentParser(
        prog="pallas-lab nbgrader",
        description="Write an nbgrader course: nbgrader_config.py and source/<stem>/<stem>.ipynb "
                    "with nbgrader cell metadata, one autograder-tests cell per graded task. "
                    "Then: nbgrader generate_assignment <stem>; collect submissions into "
                    "submitted/; nbgrader autograde <stem> (or pallas-lab grade DIR "
                    "--to-gradebook); nbgrader export / generate_feedback.")
    parser.add_argument("dir", type=Path, metavar="DIR")
    parser.add_argument("--course-id", default="pallas-lab")
    parser.add_argument("--force", action="store_true",
                        help="replace course files that differ from the generated ones")
    parser.add_argument("--due", action="append", default=[], metavar="ASSIGNMENT=DATE",
                        help="record a due date in the gradebook, e.g. "
                             "a1='2026-12-08 17:00 UTC' (repeatable)")
    parser.add_argument("--late-penalty", choices=LATE_PENALTIES, default="zero",
                        help="nbgrader's LateSubmissionPlugin method for late submissions: "
                             "zero (default) scores them 0, none only records the lateness")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        due = dict((a.stem, when) for a, when in map(parse_due, args.due))
        if due:  # the gradebook's tools are there before anything is written
            gradebook_search_path()
        written = write_course(args.dir, course_id=args.course_id,
                               late_penalty=args.late_penalty, force=args.force)
        if due:
            write_due_dates(args.dir, args.course_id, due)
    except (CourseExists, GradebookError, OSError, ValueError, ImportError) as exc:
        print(f"pallas-lab nbgrader: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(f"wrote {args.dir / 'nbgrader_config.py'}")
    for stem, when in due.items():
        print(f"due {stem}: {when:%Y-%m-%d %H:%M:%S} UTC (in {args.dir / 'gradebook.db'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
