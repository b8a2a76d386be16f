"""An nbgrader course for pallas-lab, and scores written into nbgrader's gradebook.

``pallas-lab nbgrader DIR`` writes ``DIR/nbgrader_config.py`` and, per
assignment with a solution, ``DIR/source/<stem>/<stem>.ipynb``: the solution
notebook with nbgrader cell metadata and one locked autograder-tests cell per
graded task (``graders.release_notebook.source_notebook``). nbgrader's own
``nbgrader generate_assignment <stem>`` then makes the student version in
``release/`` and records the task cells, with their points, in the gradebook.

Grading stays pallas-lab's: ``pallas-lab grade DIR --to-gradebook`` reads
nbgrader's ``submitted/<student>/<stem>/<stem>.ipynb`` layout, grades each
notebook in the worker, and writes each task's points as the ``auto_score``
of that task's cell through ``nbgrader.api.Gradebook``, so the formgrader and
``nbgrader export`` show them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from graders.assignments import ASSIGNMENTS
from graders.release_notebook import grade_cell_id, notebook_text, source_notebook

ROOT = Path(__file__).resolve().parent.parent
CONFIG = '''"""nbgrader configuration of the pallas-lab course (from `pallas-lab nbgrader`)."""

c = get_config()  # noqa: F821 - provided by nbgrader
c.CourseDirectory.course_id = "{course_id}"
# Solution regions become this stub in the released notebooks.
STUB = 'raise NotImplementedError("Need to implement this task")'
c.ClearSolutions.code_stub = {{"python": STUB}}
# The autograder-tests cells only name the task: pallas-lab grades it in its own
# worker (`pallas-lab grade . --to-gradebook`), never by executing the notebook.
'''


class GradebookError(RuntimeError):
    """The gradebook cannot take the scores (no course, assignment not generated, ...)."""


def write_course(dest: str | Path, *, root: str | Path | None = None,
                 course_id: str = "pallas-lab") -> list[Path]:
    """Write the course's config and source notebooks; returns the notebooks written.

    Raises ``ReleaseError`` (a solution that cannot be released) and ``OSError``.
    """
    root = Path(root) if root is not None else ROOT
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "nbgrader_config.py").write_text(CONFIG.format(course_id=course_id),
                                             encoding="utf-8")
    written = []
    for assignment in ASSIGNMENTS.values():
        solution = root / "solutions" / f"{assignment.stem}.py"
        if not solution.is_file():
            continue
        notebook = source_notebook(solution.read_text(encoding="utf-8"),
                                   assignment=assignment, grade_cells=True)
        target = dest / "source" / assignment.stem / f"{assignment.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(notebook_text(notebook), encoding="utf-8")
        written.append(target)
    return written


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
    from nbgrader.api import Gradebook, MissingEntry

    course = Path(course).resolve()
    if not (course / "nbgrader_config.py").is_file():
        raise GradebookError(f"{course} is not an nbgrader course (no nbgrader_config.py)")
    written = 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
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
    """``pallas-lab nbgrader DIR``: write the course; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="pallas-lab nbgrader",
        description="Write an nbgrader course: nbgrader_config.py and source/<stem>/<stem>.ipynb "
                    "with nbgrader cell metadata, one autograder-tests cell per graded task. "
                    "Then: nbgrader generate_assignment <stem>; collect submissions into "
                    "submitted/; pallas-lab grade DIR --to-gradebook.")
    parser.add_argument("dir", type=Path, metavar="DIR")
    parser.add_argument("--course-id", default="pallas-lab")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        for path in write_course(args.dir, course_id=args.course_id):
            print(f"wrote {path}")
    except (OSError, ValueError, ImportError) as exc:
        print(f"pallas-lab nbgrader: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.dir / 'nbgrader_config.py'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
