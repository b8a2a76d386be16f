"""``nbgrader autograde`` without running the student's notebook: only pallas-lab's tests cells.

nbgrader's own ``Execute`` preprocessor runs every cell of a submitted
notebook in a Jupyter kernel: the student's code would run there, outside
pallas-lab's sandbox, and could rewrite whatever the tests cells check.
The course's ``nbgrader_config.py`` (``graders.integrations.nbgrader.course``) puts
:class:`SandboxedExecute` in its place in ``Autograde.autograde_preprocessors``.
It starts the kernel in a fresh temporary folder that holds only a copy of
the notebook being graded (nothing a student submitted beside it can be
imported there) and executes exactly the cells that are pallas-lab's
autograder-tests cells, character for character
(``graders.release.notebook.tests_cell_source``; ``nbgrader autograde`` has
already restored locked cells from its gradebook). Each such cell grades
its task in pallas-lab's sandboxed worker and returns the points, which
nbgrader's ``SaveAutoGrades`` records as partial credit. No other cell is
executed; any other autograder-tests cell gets an error output, so nbgrader
gives it 0 points rather than the full points of a cell without output.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, Execute, OverwriteCells
from traitlets import Integer, List

from graders.integrations.nbgrader.tests import assignment_of_task
from graders.release.notebook import tests_cell_source

_GRADE_ID = re.compile(r"pallas_lab_task_(\d+)_(\d+)")
REFUSED = ("NotPallasLabTests", "not run: pallas-lab autogrades only its own tests cells, "
           "and never runs notebook code outside its sandbox; this cell earns 0 points")


def pallas_lab_task(cell: Any) -> str | None:
    """The task id ("1.3") when ``cell`` is one of pallas-lab's autograder-tests cells, its
    source exactly the generated one (after comment lines only: nbgrader's note on a
    cell it put back); else None."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
        return None
    found = _GRADE_ID.fullmatch(str(meta.get("grade_id", "")))
    if found is None:
        return None
    task = f"{found.group(1)}.{found.group(2)}"
    try:
        expected = tests_cell_source(assignment_of_task(task), task)
    except KeyError:
        return None
    source = str(cell.get("source", ""))
    if not source.endswith(expected):
        return None
    # nbgrader's add_missing_cells puts a deleted cell back behind a comment saying so
    prefix = source[:len(source) - len(expected)].splitlines()
    return task if all(not line.strip() or line.lstrip().startswith("#") for line in prefix) \
        else None


class SandboxedExecute(Execute):
    """nbgrader's ``Execute``, restricted to pallas-lab's tests cells (module docstring).

    The cell timeout defaults to 1800 s: the first tests cell grades the
    whole notebook, which takes a few seconds for an honest one and at most
    the file's wall-clock budget (``graders.grading.grade``; 720 s for a4 at the
    default 10 s call timeout).
    """

    timeout = Integer(1800, allow_none=True,
                      help="seconds one tests cell may take (the first grades the whole "
                           "notebook)").tag(config=True)
    extra_arguments = List(["--IPKernelApp.log_level=ERROR"],
                           help="arguments of the kernel: its start-up warnings (a kernel "
                                "on local TCP) stay out of the TA's output").tag(config=True)

    def preprocess(self, nb: nbformat.NotebookNode, resources: Any = None,
                   km: Any = None) -> tuple[nbformat.NotebookNode, Any]:
        """Execute the tests cells of ``nb`` in a kernel whose working folder holds only a
        copy of ``nb`` named after the notebook (``create_kernel_manager``: this
        interpreter's kernel); every other cell is left unexecuted."""
        resources = resources if resources is not None else {}
        if not any(pallas_lab_task(cell) for cell in nb.cells):
            for index, cell in enumerate(nb.cells):
                self._refuse(cell, index)
            return nb, resources
        name = resources.get("nbgrader", {}).get("notebook") or "notebook"
        folder = Path(tempfile.mkdtemp(prefix="pallas-lab-autograde-"))
        metadata = resources.setdefault("metadata", {})
        saved = metadata.get("path")
        try:
            nbformat.write(nb, folder / f"{Path(name).name}.ipynb")
            metadata["path"] = str(folder)
            return super().preprocess(nb, resources, km)
        finally:
            if saved is None:
                metadata.pop("path", None)
            else:
                metadata["path"] = saved
            shutil.rmtree(folder, ignore_errors=True)

    def create_kernel_manager(self) -> Any:
        """A manager of this interpreter's own ipykernel (the one that has pallas-lab),
        whatever ``python3`` kernelspec the notebook or the machine names."""
        from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager

        self.km = self.kernel_manager_class(
            kernel_name=NATIVE_KERNEL_NAME, config=self.config,
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
        return self.km

    def preprocess_cell(self, cell: nbformat.NotebookNode, resources: Any,
                        index: int) -> tuple[nbformat.NotebookNode, Any]:
        """Run ``cell`` when it is a pallas-lab tests cell; otherwise leave it unexecuted."""
        if pallas_lab_task(cell) is not None:
            return super().preprocess_cell(cell, resources, index)
        self._refuse(cell, index)
        return cell, resources

    def _refuse(self, cell: nbformat.NotebookNode, index: int) -> None:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
            if meta.get("grade") and not meta.get("solution"):
                cell.outputs = [nbformat.v4.new_output(
                    "error", ename=REFUSED[0], evalue=REFUSED[1],
                    traceback=[f"{REFUSED[0]}: {REFUSED[1]}"])]
                self.log.warning("cell %d (%s) is not a pallas-lab tests cell: not run, 0 points",
                                 index + 1, meta.get("grade_id", "no grade_id"))


def released_tests_source(source: str) -> str:
    """A tests cell's source as the student's notebook holds it: nbgrader's
    ``ClearHiddenTests`` applied (the hidden call removed, the comment kept)."""
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata = {"nbgrader": {"grade": True, "solution": False, "locked": True}}
    cell, _ = ClearHiddenTests().preprocess_cell(cell, {}, 0)
    return cell.source


class TestsCellOverwrite(OverwriteCells):
    """nbgrader's ``OverwriteCells``, without its warning for the one expected change: a
    pallas-lab tests cell as released (hidden tests removed) gets its hidden part back.
    Every other change (a locked cell the student edited, a tests cell that is neither
    the released nor the full version) is still reported and restored as nbgrader does."""

    _expected_change = False

    def create_kernel_manager(self) -> Any:
        """A manager of this interpreter's own ipykernel (the one that has pallas-lab),
        whatever ``python3`` kernelspec the notebook or the machine names."""
        from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager

        self.km = self.kernel_manager_class(
            kernel_name=NATIVE_KERNEL_NAME, config=self.config,
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
        return self.km

    def preprocess_cell(self, cell: nbformat.NotebookNode, resources: Any,
                        cell_index: int) -> tuple[nbformat.NotebookNode, Any]:
        """``OverwriteCells.preprocess_cell``, quiet for a released pallas-lab tests cell."""
        found = _GRADE_ID.fullmatch(str(cell.get("metadata", {}).get("nbgrader", {})
                                        .get("grade_id", "")))
        expected = False
        if found is not None:
            task = f"{found.group(1)}.{found.group(2)}"
            try:
                full = tests_cell_source(assignment_of_task(task), task)
            except KeyError:
                full = None
            expected = full is not None and cell.get("source") == released_tests_source(full)
        self._expected_change = expected
        try:
            return super().preprocess_cell(cell, resources, cell_index)
        finally:
            self._expected_change = False

    def add_missing_grade_cells(self, nb: nbformat.NotebookNode, resources: Any
                                ) -> tuple[nbformat.NotebookNode, Any]:
        """Put each autograder-tests cell missing from ``nb`` back at its end, behind
        nbgrader's note. nbgrader's own version places it after the cell before it in the
        source notebook and fails (``KeyError``) when that cell is missing too, as in a
        notebook made from the ``.py`` handout; a tests cell grades the notebook file, so
        where it stands does not matter."""
        from nbgrader import utils

        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        present = {cell.metadata.nbgrader.get("grade_id") for cell in nb.cells
                   if utils.is_grade(cell) or utils.is_solution(cell)}
        sources = {cell.name: cell for cell in source_nb.source_cells}
        solutions = {cell.name for cell in source_nb.solution_cells}
        for grade_cell in source_nb.grade_cells:
            if grade_cell.name in present:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook",
                             grade_cell.name)
            cell = self.missing_cell_transform(sources[grade_cell.name], grade_cell.max_score,
                                               is_solution=grade_cell.name in solutions)
            ids = {c.get("id") for c in nb.cells}
            cell["id"] = next(f"{grade_cell.name}-{n}" for n in range(len(ids) + 1)
                              if f"{grade_cell.name}-{n}" not in ids)  # nbformat 4.5 needs one
            nb.cells.append(cell)
        return nb, resources

    def report_change(self, name: str, attr: str, old: Any, new: Any) -> None:
        """nbgrader's warning, except for the checksum of a released tests cell."""
        if self._expected_change and attr == "checksum":
            self.log.debug("restoring the hidden tests of %s", name)
            return
        super().report_change(name, attr, old, new)


def sanitize_preprocessors() -> list[type]:
    """nbgrader's default ``Autograde.sanitize_preprocessors`` with ``OverwriteCells``
    replaced by :class:`TestsCellOverwrite`. Raises ``RuntimeError`` when there is none."""
    from nbgrader.converters import Autograde

    steps = list(Autograde.class_traits()["sanitize_preprocessors"].default())
    if OverwriteCells not in steps:
        raise RuntimeError("this nbgrader's autograde has no OverwriteCells step to replace")
    return [TestsCellOverwrite if step is OverwriteCells else step for step in steps]


def quiet_known_warnings() -> None:
    """Hide one known, harmless warning of nbgrader 0.9 under SQLAlchemy 2 from the TA's
    output: SQLAlchemy's "Object of type <SubmittedAssignment> not in session" while
    ``Gradebook.add_submission`` builds a submission (the objects are added right after)."""
    import warnings

    warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session")


def autograde_preprocessors() -> list[type]:
    """nbgrader's default ``Autograde.autograde_preprocessors`` with its ``Execute`` replaced
    by :class:`SandboxedExecute` (the course's ``nbgrader_config.py`` sets this list).
    Raises ``RuntimeError`` when this nbgrader has no ``Execute`` step to replace."""
    from nbgrader.converters import Autograde

    steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
    if Execute not in steps:
        raise RuntimeError("this nbgrader's autograde has no Execute step to replace")
    return [SandboxedExecute if step is Execute else step for step in steps]
