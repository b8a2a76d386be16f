"""Pallas basics (a1, lecture §2): the assignment record of this lab.

Source: docs/grading-design.md ("Assignments and tasks") and docs/student-api.md (task ids,
function names).
"""

from graders.course.records import Assignment, Task

#: The assignment this lab package grades (discovered by ``graders.course.catalog``).
ASSIGNMENT = Assignment(
    id="a1",
    stem="a1_pallas_basics",
    title="Pallas basics",
    lecture="§2",
    tasks=(
        Task(id="1.1", checks=2, functions=("add_kernel",), points=15),
        Task(id="1.2", checks=3, functions=("blocked_add",), points=25, depends=("1.1",)),
        Task(id="1.3", checks=4, functions=("bias_add",), points=25),
        Task(id="1.4", checks=3, functions=("accumulate_inplace",), points=20),
        Task(id="1.5", checks=2, functions=("vmem_bytes",), points=15),
    ),
    package=__name__,
)
