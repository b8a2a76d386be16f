"""The discovered labs as tests name them: by id, their stem and file name from the record
(``graders.course.catalog``), never written out by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from graders.course.catalog import ASSIGNMENTS, get_assignment

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def stem_of(assignment_id: str) -> str:
    """The file stem of the lab with this id (``stem_of("a3")``), from its record."""
    return get_assignment(assignment_id).stem


def file_of(assignment_id: str) -> str:
    """The submission file name of the lab with this id (``<stem>.py``)."""
    return get_assignment(assignment_id).file_name


def stems() -> dict[str, str]:
    """Every discovered lab's stem by id, in course order."""
    return {assignment.id: assignment.stem for assignment in ASSIGNMENTS.values()}


def load_solution(stem: str) -> ModuleType:
    """``solutions/<stem>.py`` imported as the module ``solution_<stem>`` (its
    ``if __name__ == "__main__":`` blocks do not run)."""
    spec = importlib.util.spec_from_file_location(f"solution_{stem}", SOLUTIONS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
