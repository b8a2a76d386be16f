"""The assignments, discovered: one lab package per assignment under ``graders/labs/``.

Every folder ``graders/labs/<stem>/`` whose ``__init__.py`` defines
``ASSIGNMENT`` (a ``graders.course.records.Assignment``) is an assignment; there is no
central table. Adding an assignment is adding its lab package (and its
reference, solution and handout; docs/architecture.md, "Add an assignment").
Assignments are kept in course order: by the number in their id ("a2" before
"a10").
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from graders.course.records import Assignment, Task

__all__ = ["ASSIGNMENTS", "Assignment", "LABS_DIR", "Task", "assignment_for_stem",
           "dependency_list", "discover", "get_assignment", "harness_files", "known_stems",
           "load_harness"]

#: The folder holding one package per assignment.
LABS_DIR = Path(__file__).resolve().parents[1] / "labs"


def _course_order(assignment: Assignment) -> tuple[int, str]:
    number = re.search(r"\d+", assignment.id)
    return (int(number.group()) if number else 0, assignment.id)


def discover() -> dict[str, Assignment]:
    """Import every lab package under ``graders/labs/`` and return its ``ASSIGNMENT`` by id,
    in course order.

    Folders whose name starts with ``_`` or ``.``, or that hold no ``__init__.py``, are
    not labs. Raises ``ValueError`` when a lab's record does not name its own folder
    as its stem or package, or two labs share an id.
    """
    found: list[Assignment] = []
    for folder in sorted(LABS_DIR.iterdir()):
        if folder.name.startswith(("_", ".")) or not (folder / "__init__.py").is_file():
            continue
        package = f"graders.labs.{folder.name}"
        record = importlib.import_module(package).ASSIGNMENT
        if record.stem != folder.name or record.package != package:
            raise ValueError(f"{package}.ASSIGNMENT names stem {record.stem!r} and package "
                             f"{record.package!r}; expected {folder.name!r} and {package!r}")
        found.append(record)
    by_id: dict[str, Assignment] = {}
    for record in sorted(found, key=_course_order):
        if record.id in by_id:
            raise ValueError(f"two labs have the id {record.id!r}")
        by_id[record.id] = record
    return by_id


#: Assignments by id, in course order (discovered once, at import).
ASSIGNMENTS: dict[str, Assignment] = discover()


def get_assignment(assignment_id: str) -> Assignment:
    """The assignment with this id; raises ``KeyError`` listing the known ids."""
    try:
        return ASSIGNMENTS[assignment_id]
    except KeyError:
        raise KeyError(
            f"unknown assignment {assignment_id!r} (known: {', '.join(ASSIGNMENTS)})"
        ) from None


def assignment_for_stem(stem: str) -> Assignment | None:
    """The assignment whose file stem is ``stem`` (a record's ``stem``), else None."""
    for assignment in ASSIGNMENTS.values():
        if assignment.stem == stem:
            return assignment
    return None


def dependency_list(assignments: dict[str, Assignment] | None = None) -> str:
    """The tasks that declare dependencies (``Task.depends``) as docs/ta-guide.md lists
    them, in course order: ``"1.2 on 1.1, ..., 5.5 on 5.2 and 5.3, ..."`` (default: the
    discovered labs). ``tests/docs/test_readme_dependencies.py`` fails when the guide's
    list is not this text."""
    found = assignments if assignments is not None else ASSIGNMENTS
    return ", ".join(f"{task.id} on {' and '.join(task.depends)}"
                     for assignment in found.values() for task in assignment.tasks
                     if task.depends)


def known_stems() -> tuple[str, ...]:
    """Every assignment's file stem, in course order."""
    return tuple(assignment.stem for assignment in ASSIGNMENTS.values())


#: A lab's harness files (in its folder) and the suffix of their module names:
#: ``hidden/harness.py`` (the grader's standard calls, as ``<id>``; never shipped to
#: students) and ``public/public_harness.py`` (what the public checks run, as
#: ``<id>_public``; shipped in the student bundle).
HARNESS_FILES = (("hidden/harness.py", ""), ("public/public_harness.py", "_public"))


def harness_files() -> dict[str, Path]:
    """Each lab's harness files by module name: ``hidden/harness.py`` as ``<id>`` and
    ``public/public_harness.py`` as ``<id>_public`` (files a lab does not have are left out;
    the student bundle has no ``hidden/``).

    The worker receives them as ``pallas_lab_harnesses.<name>`` beside
    ``graders/harnesses/common.py``; in the grader's (or the student's) own process
    :func:`load_harness` loads the same file under the same package layout.
    """
    return {f"{a.id}{suffix}": LABS_DIR / a.stem / file
            for a in ASSIGNMENTS.values() for file, suffix in HARNESS_FILES
            if (LABS_DIR / a.stem / file).is_file()}


def load_harness(assignment_id: str) -> ModuleType:
    """A lab's harness file (:func:`harness_files`: ``<id>`` or ``<id>_public``) as the
    module ``graders.harnesses.<name>`` (loaded once).

    That is the layout the worker gives it (``pallas_lab_harnesses.<id>`` beside
    ``common.py`` and ``<id>_public``), so its relative imports of ``.common`` and
    ``.<id>_public`` (loaded first) work the same in both places.
    Raises ``KeyError`` for an unknown name or a harness file the lab (or the student
    bundle) does not have.
    """
    name = f"graders.harnesses.{assignment_id}"
    if name in sys.modules:
        return sys.modules[name]
    path = harness_files()[assignment_id]
    public = f"{assignment_id}_public"
    if public in harness_files():  # a lab's harness may import its public one, as ``.<id>_public``
        load_harness(public)
    importlib.import_module("graders.harnesses")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
