"""Checks of ``pallas-lab grade``'s options, made before anything is graded.

Each returns one line saying what is wrong (or None), so that a bad ``--out``,
``--jobs`` or ``--to-gradebook`` stops the run at once with exit status 2
instead of after every submission was graded. What ``--out`` must be depends
on the format and on batch mode (``out_kind``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from graders.reports.lms_layouts import LMS_FORMATS

Kind = Literal["file", "folder"]


def out_kind(fmt: str, batch: bool, submissions: int, out: Path | None) -> Kind:
    """What ``--out`` names: ``csv``, an LMS's import file (``canvas``, ``moodle``,
    ``blackboard``) and ``table`` a file (``table`` in a batch: the results folder),
    ``gradescope`` a file for one submission unless ``out`` is an existing folder, else a
    folder."""
    if fmt in ("csv", *LMS_FORMATS):
        return "file"
    if batch:
        return "folder"
    if fmt == "gradescope":
        if submissions == 1 and not (out is not None and out.is_dir()):
            return "file"
        return "folder"
    return "file"


def writable_problem(path: Path, kind: Kind, option: str = "--out") -> str | None:
    """Why ``path`` cannot be written as a ``kind`` (None when it can): it exists as the
    other kind, a parent is a file, or the nearest existing folder is not writable."""
    if path.exists():
        if kind == "file" and path.is_dir():
            return (f"{option} {path} is a folder, but this writes a file there; name a "
                    "file (e.g. gradebook.csv)")
        if kind == "folder" and not path.is_dir():
            return (f"{option} {path} is a file, but this writes a folder of results there; "
                    "name a folder (e.g. results/)")
        target = path if kind == "folder" else path.parent
        if not os.access(target, os.W_OK | os.X_OK):
            return f"{option} {path}: {target} is not writable"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{option} {path}: {parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{option} {path}: {parent} is not writable"
    return None


def jobs_problem(jobs: int | None) -> str | None:
    """``--jobs`` must be at least 1."""
    if jobs is not None and jobs < 1:
        return f"--jobs must be at least 1 (students graded at once), not {jobs}"
    return None


def gradebook_problem(course: Path, stems: set[str]) -> str | None:
    """Why ``--to-gradebook`` cannot write into ``course`` (None when it can): no
    ``nbgrader_config.py``, nbgrader not installed, no ``gradebook.db`` yet, one of
    ``stems`` missing from it, or a course folder that is not writable."""
    if not (course / "nbgrader_config.py").is_file():
        return (f"--to-gradebook: {course} is not an nbgrader course (no nbgrader_config.py); "
                "name the course folder")
    try:
        from nbgrader.api import MissingEntry

        from graders.integrations.nbgrader.course import GradebookError, open_gradebook
    except ImportError:
        return "--to-gradebook needs nbgrader: pip install -e '.[course]'"
    database = course / "gradebook.db"
    if not database.is_file():
        return (f"--to-gradebook: {course} has no gradebook.db yet: run `nbgrader "
                "generate_assignment <stem>` there first")
    if not os.access(course, os.W_OK | os.X_OK) or not os.access(database, os.W_OK):
        return f"--to-gradebook: the gradebook of {course} is not writable"
    try:
        with open_gradebook(course) as gradebook:
            for stem in sorted(stems):
                try:
                    gradebook.find_assignment(stem)
                except MissingEntry:
                    return (f"--to-gradebook: the gradebook of {course} has no assignment "
                            f"{stem!r}: run `nbgrader generate_assignment {stem}` there first")
    except GradebookError as exc:
        return f"--to-gradebook: {exc}"
    return None


def student_folder_problem(output: Path, read: Iterable[Path], students: Iterable[Path],
                           option: str = "--out") -> str | None:
    """Why ``output`` (a results folder or a file the run writes) cannot be written where it
    is: inside a folder discovery read (``read``: the class and student folders given as
    PATHs), or inside a student's folder, or holding one (each student's results would then
    land in their own folder). What is there is the students': a results.json planted
    there could pass for the grader's when a batch resumes (docs/security.md, "Class
    folders"). None when ``output`` is clear of all of them."""
    target = output.resolve()
    for folder, strict in [*((f, False) for f in read), *((f, True) for f in students)]:
        place = folder.resolve()
        if target == place or place in target.parents or (strict and target in place.parents):
            where = "is" if target == place else (
                "lies inside" if place in target.parents else "holds")
            return (f"{option} {output} {where} {folder}, where students' files are: a "
                    "results.json there could be a student's; write the results outside "
                    "the class folder (e.g. --out ../results)")
    return None
