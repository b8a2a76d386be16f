"""Pipelining (a2, lecture §3): the assignment record of this lab.

Source: design.md ("Assignments") and student-api.md (task ids, function names).
"""

from graders.records import Assignment, Task

#: The assignment this lab package grades (discovered by ``graders.assignments``).
ASSIGNMENT = Assignment(
    id="a2",
    stem="a2_pipelining",
    title="Pipelining",
    lecture="§3",
    tasks=(
        Task(id="2.1", functions=("pipeline_schedule",), points=40),
        Task(id="2.2", functions=("render_gantt",), points=25),
        Task(id="2.3", functions=("pipeline_utilization",), points=20, depends=("2.1",)),
        Task(id="2.4", functions=("effective_bandwidth",), points=15),
    ),
    package=__name__,
)
