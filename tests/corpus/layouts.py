"""Submission-layout cases of the corpus: which file of a student's pair is graded.

Each :class:`Layout` is a student folder holding ``<stem>.py`` and ``<stem>.ipynb``
made from named sources (``"handout"``: the released handout in that form;
``"solution"``: the solution in that form; a path under ``examples/submissions/``),
the older of the two files (``older``: its modification time is set an hour back),
the file that must be graded and the score it earns there. The rule is
graders/student/which_file.py's; ``tests/corpus/test_layouts.py`` grades them all
through the CLI in one batch, as a TA would.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.corpus.mutants import A1


@dataclass(frozen=True)
class Layout:
    """``py`` and ``nb``: the sources of the two files; ``older``: ".py" or ".ipynb";
    ``graded``: the suffix of the file that must be graded; ``score``: its score; ``says``:
    what the gradebook's notes must say (``{py}``/``{nb}``: the two file names)."""

    name: str
    stem: str
    py: str
    nb: str
    older: str
    graded: str
    score: float
    says: str


BEN = "ben_typical_mistakes"

LAYOUTS: list[Layout] = [
    Layout("filled-notebook-untouched-py", A1, py="handout", nb="solution", older=".ipynb",
           graded=".ipynb", score=100, says="graded {nb} ({py} is unchanged from the handout)"),
    Layout("filled-py-untouched-notebook", A1, py="solution", nb="handout", older=".py",
           graded=".py", score=100, says="graded {py} ({nb} is unchanged from the handout)"),
    Layout("both-edited-notebook-newer", A1, py=BEN, nb="solution", older=".py",
           graded=".ipynb", score=100,
           says="graded {nb} ({py} differs from the handout too, but {nb} was saved later)"),
    Layout("both-edited-py-newer", A1, py=BEN, nb="solution", older=".ipynb",
           graded=".py", score=-1,  # ben's own score (examples/submissions/scores.toml)
           says="graded {py} ({nb} differs from the handout too, but {py} was saved later)"),
    Layout("neither-edited", A1, py="handout", nb="handout", older=".py", graded=".py",
           score=0, says="graded {py} ({py} and {nb} are both unchanged from the handout: "
                         "not started)"),
]
