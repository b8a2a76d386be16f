"""The discovered assignments and check registration (per-lab tests: tests/labs/test_labs.py)."""

from __future__ import annotations

import importlib
import re

import pytest

from graders.checking.framework import check, load_checks
from graders.course.catalog import (
    ASSIGNMENTS,
    LABS_DIR,
    assignment_for_stem,
    get_assignment,
    known_stems,
)
from tests.helpers.labs import stem_of


def test_the_labs_are_discovered_in_course_order() -> None:
    assert list(ASSIGNMENTS) == [f"a{n}" for n in range(1, len(ASSIGNMENTS) + 1)]
    for assignment in ASSIGNMENTS.values():
        assert assignment.package == f"graders.labs.{assignment.stem}"
        assert all(task.id.startswith(assignment.id[1:] + ".") for task in assignment.tasks)
        for task in assignment.tasks:
            assert set(task.depends) <= {t.id for t in assignment.tasks} - {task.id}


def test_stems_name_assignments() -> None:
    folders = sorted(p.name for p in LABS_DIR.iterdir() if (p / "__init__.py").is_file())
    assert sorted(known_stems()) == folders, "every lab folder is an assignment, by its stem"
    assert known_stems() == tuple(a.stem for a in ASSIGNMENTS.values())
    assert assignment_for_stem(stem_of("a4")) is get_assignment("a4")
    assert assignment_for_stem("homework") is None
    with pytest.raises(KeyError, match="known: a1, a2"):
        get_assignment("a9")


def test_check_registration_rejects_bad_tasks_points_and_duplicates() -> None:
    with pytest.raises(ValueError, match="N.M"):
        check("a1", "1", 1, "x")
    with pytest.raises(ValueError, match="positive"):
        check("a1", "1.1", 0, "x")
    existing = load_checks("a1")[0]
    with pytest.raises(ValueError, match="already has a hidden check"):
        check("a1", existing.task, 1, existing.name)(lambda s: None)


def test_hidden_and_public_checks_are_one_record_type_in_one_registry() -> None:
    from graders.checking.registry import REGISTRY, Check, Visibility, register
    from graders.student.public import load_public_checks

    hidden, public = load_checks("a1"), load_public_checks("a1")
    assert hidden and public
    assert {type(c) for c in hidden + public} == {Check}
    assert {c.visibility for c in hidden} == {Visibility.HIDDEN}
    assert {c.visibility for c in public} == {Visibility.PUBLIC}
    assert all(c.points > 0 for c in hidden) and all(c.points == 0 for c in public)
    assert all(c in REGISTRY["a1"] for c in hidden + public)
    with pytest.raises(ValueError, match="never graded"):
        register("a1", "1.1", "a public check worth points", visibility=Visibility.PUBLIC,
                 points=1)
    with pytest.raises(ValueError, match="positive"):
        register("a1", "1.1", "a hidden check worth nothing", visibility=Visibility.HIDDEN)


def test_a_copied_failure_keeps_its_class_and_fields() -> None:
    from graders.checking.registry import StudentRaised

    raised = StudentRaised("f raised ValueError: bad", error_type="ValueError",
                           message="bad", traceback="line 3")
    copy = raised.copy(input="x = 1")
    assert type(copy) is StudentRaised and str(copy) == "f raised ValueError: bad"
    assert (copy.error_type, copy.message, copy.traceback, copy.input) == (
        "ValueError", "bad", "line 3", "x = 1")
    assert raised.input is None
    with pytest.raises(ValueError, match="status"):
        raised.copy(status="fine")


ROOT = LABS_DIR.parent.parent


@pytest.mark.parametrize("assignment", ASSIGNMENTS.values(), ids=lambda a: a.id)
def test_a_split_check_package_imports_every_module_that_registers_checks(assignment) -> None:
    """A check package (``hidden/checks/``, ``public/public_checks/``) registers in the
    order of its ``MODULES``: a module with checks left out of it would never register."""
    for module in (assignment.checks_module, assignment.public_checks_module):
        folder = ROOT.joinpath(*module.split("."))
        if not folder.is_dir():
            continue
        package = importlib.import_module(module)
        registering = {path.stem for path in folder.glob("*.py")
                       if re.search(r"^@(public_)?check\(", path.read_text(encoding="utf-8"),
                                    re.M)}
        assert registering == set(package.MODULES), module


def test_no_module_outside_the_labs_names_a_lab_by_its_stem() -> None:
    """Code outside ``graders/labs/`` asks the records (``get_assignment(id).stem``) instead
    of writing a lab's stem; tests and their data are free to."""
    stems = re.compile("|".join(re.escape(stem) for stem in known_stems()))
    naming = [str(path.relative_to(ROOT))
              for folder in ("graders", "bench", "reference", "tools")
              for path in sorted((ROOT / folder).rglob("*.py"))
              if not path.is_relative_to(LABS_DIR) and "__pycache__" not in path.parts
              and stems.search(path.read_text(encoding="utf-8"))]
    assert naming == []
