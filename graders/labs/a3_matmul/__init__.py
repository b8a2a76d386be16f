"""Matmul (a3, lecture §4): the assignment record of this lab.

Source: docs/grading-design.md ("Assignments and tasks") and docs/student-api.md (task ids,
function names).
"""

from graders.course.records import Assignment, Task

#: The assignment this lab package grades (discovered by ``graders.course.catalog``).
ASSIGNMENT = Assignment(
    id="a3",
    stem="a3_matmul",
    title="Matmul",
    lecture="§4",
    tasks=(
        Task(id="3.1", checks=3, functions=("matmul_kernel",), points=30),
        Task(id="3.2", checks=4, functions=("matmul",), points=30, depends=("3.1",)),
        Task(id="3.3", checks=2, functions=("matmul_vmem_bytes",), points=10),
        Task(id="3.4", checks=5,
             functions=("arithmetic_intensity", "min_compute_bound_block", "ideal_matmul_time"),
             points=20),
        # graded on the predicted time of the student's own matmul_kernel, run in the
        # grader's standard pallas_call at the chosen blocks (the student's wrapper is not
        # timed, so 3.5 depends on 3.1 alone); 3.3 gave up 10 points for it (20 -> 10) so
        # a3 stays at 100.
        Task(id="3.5", checks=2, functions=("choose_matmul_blocks",), points=10, depends=("3.1",),
             performance=True),
    ),
    package=__name__,
)
