"""Handouts as Jupyter notebooks with nbgrader cell metadata.

From the same percent-format source as the ``.py`` handout (``solutions/<stem>.py``):

* :func:`source_notebook` reads it with jupytext and marks every cell the
  way nbgrader's "Create Assignment" toolbar would: a code cell holding a
  ``### BEGIN SOLUTION`` region is a *solution* cell (``grade_id``
  ``task_N_M``); every other cell is *read-only* given code or text
  (``given_NN``). With ``grade_cells=True`` (the nbgrader course source) each
  graded task also gets a locked *autograder tests* cell after its last
  solution cell, worth the task's points (``pallas_lab_task_N_M``): its hidden
  part calls pallas-lab's sandboxed grader for that task
  (``graders.integrations.nbgrader.tests``), and ``pallas-lab grade --to-gradebook`` writes the
  task's score there too.
* :func:`handout_notebook` turns the source into the student's notebook with
  nbgrader's own preprocessors: ``ClearSolutions`` (each region becomes the
  task's ``raise NotImplementedError("Need to implement for Task N.M")``),
  ``ClearOutput``, ``LockCells`` and ``CheckCellMetadata``. No outputs are
  stored, and cell ids are fixed so that releasing twice gives the same file.

nbgrader is an optional dependency (``pip install 'pallas-lab[course]'``);
:class:`NbgraderMissing` says so when it is not installed.
"""

from __future__ import annotations

from typing import Any

import jupytext
import nbformat

from graders.course.catalog import Assignment
from graders.release.handout import (
    JUPYTEXT_FORMAT,
    STUB_TEMPLATE,
    ReleaseError,
    SolutionRegion,
    find_solution_regions,
)

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
NBGRADER_SCHEMA = 3


class NbgraderMissing(ImportError):
    """nbgrader is not installed; the message names the extra that installs it."""


def _nbgrader() -> Any:
    try:
        import nbgrader.preprocessors as preprocessors
    except ImportError as exc:
        raise NbgraderMissing(
            f"notebook handouts need nbgrader ({exc}); install it with "
            "pip install 'pallas-lab[course]'") from None
    return preprocessors


def _metadata(grade_id: str, *, solution: bool, grade: bool, locked: bool,
              points: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "grade": grade, "grade_id": grade_id, "locked": locked,
        "schema_version": NBGRADER_SCHEMA, "solution": solution, "task": False,
    }
    if points is not None:
        meta["points"] = points
    return meta


def _unique(base: str, used: set[str]) -> str:
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


def grade_cell_id(task: str) -> str:
    """The ``grade_id`` of the autograder-tests cell of Task ``task`` ("1.2" -> ...)."""
    return f"pallas_lab_task_{task.replace('.', '_')}"


def source_notebook(
    solution_source: str, *, assignment: Assignment | None = None, grade_cells: bool = False
) -> nbformat.NotebookNode:
    """The instructor notebook (solutions kept) with nbgrader metadata on every cell.

    ``grade_cells`` adds one autograder-tests cell per graded task of
    ``assignment`` (required then). Raises ``ReleaseError`` for bad markers,
    a region without a task, or (with ``grade_cells``) a graded task without a
    solution cell.
    """
    notebook = jupytext.reads(solution_source, fmt=JUPYTEXT_FORMAT)
    notebook.metadata = {"kernelspec": dict(KERNELSPEC),
                         "language_info": {"name": "python"}}
    used: set[str] = set()
    last_cell_of: dict[str, int] = {}
    for number, cell in enumerate(notebook.cells, start=1):
        regions: list[SolutionRegion] = []
        if cell.cell_type == "code":
            regions = find_solution_regions(cell.source, where=f"cell {number}")
        if regions:
            tasks = sorted({r.task for r in regions})
            grade_id = _unique("task_" + "_".join(t.replace(".", "_") for t in tasks), used)
            cell.metadata = {"nbgrader": _metadata(grade_id, solution=True, grade=False,
                                                   locked=False)}
            for task in tasks:
                last_cell_of[task] = number - 1
        else:
            grade_id = _unique(f"given_{number:02d}", used)
            cell.metadata = {"nbgrader": _metadata(grade_id, solution=False, grade=False,
                                                   locked=True)}
        cell.id = grade_id.replace("_", "-")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    if grade_cells:
        if assignment is None:
            raise ValueError("grade_cells=True needs the assignment (its tasks and points)")
        _add_grade_cells(notebook, assignment, last_cell_of, used)
    return notebook


def _add_grade_cells(notebook: nbformat.NotebookNode, assignment: Assignment,
                     last_cell_of: dict[str, int], used: set[str]) -> None:
    inserts: list[tuple[int, nbformat.NotebookNode]] = []
    for task in assignment.graded_tasks:
        if task.id not in last_cell_of:
            raise ReleaseError(f"{assignment.stem}: graded Task {task.id} has no solution cell")
        grade_id = _unique(grade_cell_id(task.id), used)
        text = tests_cell_source(assignment, task.id)
        cell = nbformat.v4.new_code_cell(text, id=grade_id.replace("_", "-"))
        cell.metadata = {"nbgrader": _metadata(grade_id, solution=False, grade=True, locked=True,
                                               points=float(task.points))}
        inserts.append((last_cell_of[task.id], cell))
    for index, cell in sorted(inserts, key=lambda item: item[0], reverse=True):
        notebook.cells.insert(index + 1, cell)


def clear_regions(cell: nbformat.NotebookNode, regions: list[SolutionRegion]) -> None:
    """Replace each solution region of a solution cell by its task's stub, in place, with
    nbgrader's ``ClearSolutions`` (run on one region at a time, since its stub is fixed)."""
    preprocessors = _nbgrader()
    lines = cell.source.split("\n")
    out: list[str] = []
    start = 0
    for region in regions:
        out.extend(lines[start:region.begin])
        clear = preprocessors.ClearSolutions(
            code_stub={"python": STUB_TEMPLATE.format(task=region.task)}, enforce_metadata=True)
        piece = nbformat.v4.new_code_cell("\n".join(lines[region.begin:region.end + 1]))
        piece.metadata = {"nbgrader": dict(cell.metadata["nbgrader"])}
        piece, _ = clear.preprocess_cell(piece, {"language": "python"}, 0)
        out.extend(piece.source.split("\n"))
        start = region.end + 1
    out.extend(lines[start:])
    cell.source = "\n".join(out)


def handout_notebook(solution_source: str) -> nbformat.NotebookNode:
    """The student's notebook: solutions replaced by stubs, no outputs, cells locked.

    Raises ``ReleaseError`` like :func:`source_notebook`, ``NbgraderMissing``
    without nbgrader, and nbgrader's ``ValidationError`` for bad metadata.
    """
    preprocessors = _nbgrader()
    notebook = source_notebook(solution_source)
    for cell in notebook.cells:
        if cell.metadata["nbgrader"]["solution"]:
            clear_regions(cell, find_solution_regions(cell.source))
    resources: dict[str, Any] = {}
    for step in (preprocessors.ClearOutput(), preprocessors.LockCells(),
                 preprocessors.CheckCellMetadata()):
        notebook, resources = step.preprocess(notebook, resources)
    return notebook


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    """A notebook as the JSON text written to disk (nbformat's layout, final newline)."""
    nbformat.validate(notebook)
    return nbformat.writes(notebook) + "\n"


def tests_cell_source(assignment: Assignment, task: str) -> str:
    """The source of Task ``task``'s autograder-tests cell in ``assignment``'s notebook.

    The part between nbgrader's hidden-tests markers is removed from the
    student's notebook by ``nbgrader generate_assignment`` and restored by
    ``nbgrader autograde`` from its gradebook. Raises ``KeyError`` for a task
    that ``assignment`` does not grade.
    """
    info = assignment.task(task)
    if not info.graded:
        raise KeyError(f"{assignment.id} does not grade Task {task}")
    return (f"# Task {task} ({info.title}): {info.points:g} points. pallas-lab grades it from\n"
            "# this notebook's code in its sandboxed worker when the course autogrades; this\n"
            "# cell runs nothing of yours. Check your work with: "
            f"pallas-lab check --task {task}\n"
            "### BEGIN HIDDEN TESTS\n"
            "from graders.integrations.nbgrader.tests import grade_task\n"
            f'grade_task("{task}")\n'
            "### END HIDDEN TESTS")
