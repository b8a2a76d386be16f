"""Flash Attention (a4, lecture §5; base-2 exp and micro-tiling from §5.3, §6.6): the record.

Source: docs/grading-design.md ("Assignments and tasks") and docs/student-api.md (task ids,
function names).
"""

from graders.course.records import Assignment, Task

#: The assignment this lab package grades (discovered by ``graders.course.catalog``).
ASSIGNMENT = Assignment(
    id="a4",
    stem="a4_flash_attention",
    title="Flash Attention",
    lecture="§5",
    tasks=(
        Task(id="4.1", checks=4, functions=("online_softmax",), points=15),
        Task(id="4.2", checks=5,
             functions=("merge_attention_states", "finalize_attention_state"),
             points=10),
        Task(id="4.3", checks=8, functions=("flash_attention_kernel",), points=30),
        Task(id="4.4", checks=4, functions=("flash_attention",), points=20, depends=("4.3",)),
        Task(id="4.5", checks=2, functions=("mle_safe_range",), points=5),
        Task(id="4.6", checks=3,
             functions=("flash_attention_hbm_bytes", "xla_attention_hbm_bytes", "attention_flops"),
             points=5),
        Task(id="4.7", checks=4, functions=("flash_attention_kernel_microtiled",), points=5),
        # graded on the predicted time of the student's own flash_attention_kernel, run in
        # the grader's standard pallas_call at the chosen blocks and MLE setting (the
        # student's wrapper is not timed, so 4.8 depends on 4.3 alone). It puts 4.6's
        # traffic arithmetic (block_q sets how often K and V are read) and 4.7's score-tile
        # VMEM (which tiles fit) to work on the student's kernel, so each of those gave up
        # 5 points (10 -> 5): a4 stays at 100.
        Task(id="4.8", checks=2, functions=("choose_flash_config",), points=10, depends=("4.3",),
             performance=True),
    ),
    package=__name__,
)
