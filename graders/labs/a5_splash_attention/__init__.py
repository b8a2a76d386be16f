"""Splash Attention (a5, lecture §6): the assignment record of this lab.

Source: docs/grading-design.md ("Assignments and tasks") and docs/student-api.md (task ids,
function names).
"""

from graders.course.records import Assignment, Task

#: The assignment this lab package grades (discovered by ``graders.course.catalog``).
ASSIGNMENT = Assignment(
    id="a5",
    stem="a5_splash_attention",
    title="Splash Attention",
    lecture="§6",
    tasks=(
        Task(id="5.1", checks=3, functions=("causal_mask", "local_mask", "segment_mask"),
             points=10),
        Task(id="5.2", checks=3, functions=("classify_blocks", "render_block_mask"), points=10),
        Task(id="5.3", checks=4, functions=("build_mask_info",), points=25, depends=("5.2",)),
        Task(id="5.4", checks=7, functions=("splash_attention_kernel", "splash_attention"),
             points=30),
        Task(id="5.5", checks=2, functions=("mask_stats",), points=5, depends=("5.2", "5.3")),
        Task(id="5.6", checks=3,
             functions=("splash_computed_mask_kernel", "splash_attention_computed_mask"),
             points=10),
        # Graded on the predicted time of the
        # student's Splash kernel (5.4) in the grader's standard call at the chosen blocks
        # for three masks at L 8192, against the best candidate for that kernel. 5.4 gave up
        # 5 points (35 -> 30) and 5.6 gave up 5 (15 -> 10) so that a5 stays at 100. The
        # MaskInfo is the reference's, so 5.7 does not depend on 5.3.
        Task(id="5.7", checks=4, functions=("choose_splash_blocks",), points=10, depends=("5.4",),
             performance=True),
    ),
    package=__name__,
)
