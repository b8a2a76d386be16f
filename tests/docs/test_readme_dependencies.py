"""The TA guide's list of task dependencies is the labs' records.

The grade charges a mistake to its task and to the tasks that declare it
(``Task.depends`` in ``graders/labs/<stem>/__init__.py``), and ``pallas-lab check`` notes
the same dependencies; the TA guide (``docs/ta-guide.md``, "Points and partial credit",
once the README's) lists them. The list is ``graders.course.catalog.dependency_list()``:
this test fails when the guide says anything else (the list once left out the
performance tasks' dependencies, and later still named the wrappers 3.2 and 4.4 after
3.5 and 4.8 stopped timing them).
"""

from __future__ import annotations

import re
from pathlib import Path

from graders.course.catalog import dependency_list
from graders.course.records import Assignment, Task

ROOT = Path(__file__).resolve().parents[2]
#: The page that states the list.
GUIDE = ROOT / "docs/ta-guide.md"
#: What precedes the list in the guide (the record's field), and what ends it.
LEAD, END = "(`Task.depends`): ", " (the records' list"


def readme_dependency_list(text: str) -> str:
    """The dependency list the guide states, whitespace collapsed."""
    flat = re.sub(r"\s+", " ", text)
    start = flat.index(LEAD) + len(LEAD)
    return flat[start:flat.index(END, start)]


def test_the_ta_guide_lists_the_records_dependencies() -> None:
    stated = readme_dependency_list(GUIDE.read_text(encoding="utf-8"))
    assert stated == dependency_list(), (
        "docs/ta-guide.md's dependency list differs from the labs' records; write:\n"
        f"{LEAD}{dependency_list()}.")


def test_the_list_is_read_from_the_records() -> None:
    toy = Assignment(id="a9", stem="a9_toy", title="Toy", lecture="§9", tasks=(
        Task(id="9.1", functions=("k",), points=50),
        Task(id="9.2", functions=("w",), points=30, depends=("9.1",)),
        Task(id="9.3", functions=("c",), points=20, depends=("9.1", "9.2"))))
    assert dependency_list({"a9": toy}) == "9.2 on 9.1, 9.3 on 9.1 and 9.2"
    # The performance tasks time the student's kernel in the grader's call: no wrapper.
    assert "3.5 on 3.1," in dependency_list() and "4.8 on 4.3," in dependency_list()
