"""Pipelining (a2, lecture §3): the assignment record of this lab.

Source: docs/grading-design.md ("Assignments and tasks") and docs/student-api.md (task ids,
function names).
Task 2.5 (manual double buffering, lecture §3.2) came last; adding it took
10 / 5 / 5 / 5 points from Tasks 2.1-2.4 (was 40 / 25 / 20 / 15).
"""

from graders.course.records import Assignment, Task

#: The assignment this lab package grades (discovered by ``graders.course.catalog``).
ASSIGNMENT = Assignment(
    id="a2",
    stem="a2_pipelining",
    title="Pipelining",
    lecture="§3",
    tasks=(
        Task(id="2.1", checks=3, functions=("pipeline_schedule",), points=30),
        Task(id="2.2", checks=3, functions=("render_gantt",), points=20),
        Task(id="2.3", checks=4, functions=("pipeline_utilization",), points=15, depends=("2.1",)),
        Task(id="2.4", checks=2, functions=("effective_bandwidth",), points=10),
        Task(id="2.5", checks=3, functions=("double_buffer_kernel", "double_buffered_scale"),
             points=25),
    ),
    package=__name__,
)
