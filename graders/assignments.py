"""The assignments table: ids, file stems, titles, lecture sections, tasks and points.

Source: design.md ("Assignments") and student-api.md (task ids and function
names). Task ids ``N.M`` are the same everywhere: the stub's error message,
the pytest marker, the report and the README. Every assignment totals 100
points; only tasks marked ``graded`` count towards a score (every task of
a1-a5 is graded).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    """One task: ``id`` ("1.2"), ``title`` (the function names), ``points``, ``graded``, and
    ``depends``: the tasks whose functions this task's functions legitimately call (a
    wrapper its kernel, mask_stats the MaskInfo builder). A mistake in a task may cost
    points on the tasks that declare it (issue 12: one fault, one charge), and their
    feedback says so."""

    id: str
    title: str
    points: float
    graded: bool
    depends: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assignment:
    """One assignment: ``id`` ("a1"), file ``stem``, ``title``, ``lecture`` section ("§2"),
    its ``tasks`` in order, and the module holding its checks (None: checks are
    registered directly in ``framework.REGISTRY``, as test fixtures do)."""

    id: str
    stem: str
    title: str
    lecture: str
    tasks: tuple[Task, ...]
    checks_module: str | None = None

    @property
    def file_name(self) -> str:
        """The submission's file name, e.g. ``a1_pallas_basics.py``."""
        return f"{self.stem}.py"

    @property
    def graded_tasks(self) -> tuple[Task, ...]:
        """The tasks that count towards the score, in order."""
        return tuple(task for task in self.tasks if task.graded)

    @property
    def max_score(self) -> float:
        """Points available from the graded tasks."""
        return sum(task.points for task in self.graded_tasks)

    def dependants(self, task_id: str) -> tuple[str, ...]:
        """The tasks that declare ``task_id`` as a dependency, directly or through others."""
        found: list[str] = []
        frontier = [task_id]
        while frontier:
            current = frontier.pop()
            for task in self.tasks:
                if current in task.depends and task.id not in found:
                    found.append(task.id)
                    frontier.append(task.id)
        return tuple(found)

    def task(self, task_id: str) -> Task:
        """The task with this id; raises ``KeyError`` naming the assignment's task ids."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        known = ", ".join(task.id for task in self.tasks)
        raise KeyError(f"{self.id} has no Task {task_id} (tasks: {known})")


def _assignment(
    id: str, stem: str, title: str, lecture: str, tasks: list[tuple]
) -> Assignment:
    return Assignment(
        id, stem, title, lecture, tuple(Task(*task) for task in tasks), f"graders.checks.{id}"
    )


#: Assignments by id, in course order.
ASSIGNMENTS: dict[str, Assignment] = {
    a.id: a
    for a in (
        _assignment("a1", "a1_pallas_basics", "Pallas basics", "§2", [
            ("1.1", "add_kernel", 15, True),
            ("1.2", "blocked_add", 25, True, ("1.1",)),
            ("1.3", "bias_add", 25, True),
            ("1.4", "accumulate_inplace", 20, True),
            ("1.5", "vmem_bytes", 15, True),
        ]),
        _assignment("a2", "a2_pipelining", "Pipelining", "§3", [
            ("2.1", "pipeline_schedule", 40, True),
            ("2.2", "render_gantt", 25, True),
            ("2.3", "pipeline_utilization", 20, True, ("2.1",)),
            ("2.4", "effective_bandwidth", 15, True),
        ]),
        _assignment("a3", "a3_matmul", "Matmul", "§4", [
            ("3.1", "matmul_kernel", 30, True),
            ("3.2", "matmul", 30, True, ("3.1",)),
            ("3.3", "matmul_vmem_bytes", 20, True),
            ("3.4", "arithmetic_intensity, min_compute_bound_block, ideal_matmul_time", 20,
             True),
        ]),
        _assignment("a4", "a4_flash_attention", "Flash Attention", "§5", [
            ("4.1", "online_softmax", 15, True),
            ("4.2", "merge_attention_states, finalize_attention_state", 15, True),
            ("4.3", "flash_attention_kernel", 30, True),
            ("4.4", "flash_attention", 20, True, ("4.3",)),
            ("4.5", "mle_safe_range", 5, True),
            ("4.6", "flash_attention_hbm_bytes, xla_attention_hbm_bytes, attention_flops", 15,
             True),
        ]),
        _assignment("a5", "a5_splash_attention", "Splash Attention", "§6", [
            ("5.1", "causal_mask, local_mask, segment_mask", 15, True),
            ("5.2", "classify_blocks, render_block_mask", 15, True),
            ("5.3", "build_mask_info", 25, True, ("5.2",)),
            ("5.4", "splash_attention_kernel, splash_attention", 35, True),
            ("5.5", "mask_stats", 10, True, ("5.2", "5.3")),
        ]),
    )
}


def get_assignment(assignment_id: str) -> Assignment:
    """The assignment with this id; raises ``KeyError`` listing the known ids."""
    try:
        return ASSIGNMENTS[assignment_id]
    except KeyError:
        raise KeyError(
            f"unknown assignment {assignment_id!r} (known: {', '.join(ASSIGNMENTS)})"
        ) from None


def assignment_for_stem(stem: str) -> Assignment | None:
    """The assignment whose file stem is ``stem`` (e.g. ``a1_pallas_basics``), else None."""
    for assignment in ASSIGNMENTS.values():
        if assignment.stem == stem:
            return assignment
    return None


def known_stems() -> tuple[str, ...]:
    """Every assignment's file stem, in course order."""
    return tuple(assignment.stem for assignment in ASSIGNMENTS.values())
