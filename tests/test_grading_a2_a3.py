"""End-to-end grading of a2_pipelining and a3_matmul.

Every submission goes through the real pipeline: the static check, a worker
subprocess, the hypothesis checks against the hidden reference. The expected
scores of the sample submissions are those in
``examples/submissions/README.md``; the mutation tests take the solution,
make one typical mistake, and show that it costs points on the task that has
it (and, for faults outside a kernel or a function another task calls, only
there).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graders.grading import SubmissionResult, grade_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "examples" / "submissions"
A2, A3 = "a2_pipelining.py", "a3_matmul.py"
FULL = {A2: {"2.1": 40, "2.2": 25, "2.3": 20, "2.4": 15},
        A3: {"3.1": 30, "3.2": 30, "3.3": 20, "3.4": 20}}


def task_points(result: SubmissionResult) -> dict[str, float]:
    """Points per graded task, e.g. {"2.1": 40, ...}."""
    return {t.task: t.points for t in result.tasks() if t.graded}


@functools.cache
def graded(student: str, stem: str) -> SubmissionResult:
    """One grading of a sample, shared by the tests that read it (grading is deterministic)."""
    # A short timeout keeps dev_broken's endless loop cheap; correct calls take milliseconds.
    return grade_file(SAMPLES / student / stem, timeout=2.0)


def failures(result: SubmissionResult) -> list[tuple[str, str]]:
    return [(c.task, c.reason) for c in result.checks if c.status != "passed"]


@pytest.mark.parametrize("stem", [A2, A3])
def test_the_solutions_get_100_of_100(stem: str) -> None:
    result = grade_file(ROOT / "solutions" / stem)
    assert (result.score, result.max_score) == (100, 100), (
        f"solutions/{stem} must get full marks; failures: {failures(result)}")
    assert task_points(result) == FULL[stem]


@pytest.mark.parametrize("stem", [A2, A3])
def test_the_untouched_handouts_get_zero_and_say_not_started(stem: str) -> None:
    result = grade_file(ROOT / "assignments" / stem)
    assert result.score == 0, "a handout whose stubs all raise NotImplementedError earns nothing"
    assert {c.status for c in result.checks} == {"not started"}, (
        "every check of an untouched handout reports 'not started'")


EXPECTED = {
    ("ada_correct", A2): FULL[A2],
    ("ada_correct", A3): FULL[A3],
    # single buffering whatever n_buffers (invariants 10 kept), int() cells (the single-buffer
    # chart with whole boundaries kept), the double-buffer shortcut (its worked case kept).
    ("ben_typical_mistakes", A2): {"2.1": 10, "2.2": 5, "2.3": 4, "2.4": 15},
    # no zero-init + ReLU every k (3.1 lost), K first (only the ValueErrors of 3.2 kept).
    ("ben_typical_mistakes", A3): {"3.1": 0, "3.2": 4, "3.3": 20, "3.4": 20},
    ("cleo_untouched", A2): {"2.1": 0, "2.2": 0, "2.3": 0, "2.4": 0},
    ("cleo_untouched", A3): {"3.1": 0, "3.2": 0, "3.3": 0, "3.4": 0},
    ("dev_broken", A2): {"2.1": 0, "2.2": 0, "2.3": 0, "2.4": 0},
    ("dev_broken", A3): {"3.1": 0, "3.2": 4, "3.3": 20, "3.4": 12},
}


@pytest.mark.parametrize("student, stem", sorted(EXPECTED))
def test_sample_submissions_get_their_documented_scores(student: str, stem: str) -> None:
    result = graded(student, stem)
    assert task_points(result) == EXPECTED[student, stem], (
        f"{student}/{stem}: per-task points differ from examples/submissions/README.md; "
        f"failures: {failures(result)}")


def feedback_of(result: SubmissionResult, task: str) -> str:
    return "\n".join(c.feedback for c in result.checks if c.task == task)


def test_ben_a2_feedback_names_each_mistake() -> None:
    result = graded("ben_typical_mistakes", A2)
    assert "n_buffers is ignored" in feedback_of(result, "2.1")
    assert "truncated with int()" in feedback_of(result, "2.2")
    assert "double-buffer shortcut" in feedback_of(result, "2.3")


def test_ben_a3_feedback_shows_the_revisit_error_the_poison_and_the_relu() -> None:
    result = graded("ben_typical_mistakes", A3)
    wrapper = feedback_of(result, "3.2")
    assert "RevisitedOutputBlockError" in wrapper and "Put the reduction axis last" in wrapper, (
        "a grid with K first fails with the simulator's revisit error in the feedback")
    assert "the K axis is not the last grid axis" in wrapper
    kernel = feedback_of(result, "3.1")
    assert "nan" in kernel and "not zeroed at k == 0" in kernel, (
        "poisoned output buffers make the missing initialization visible")
    assert "ReLU is applied at every k step" in kernel


def test_dev_broken_fails_for_the_documented_reasons() -> None:
    a2 = graded("dev_broken", A2)
    assert a2.load_error and "line 26" in a2.load_error and "collections" in a2.load_error
    a3 = graded("dev_broken", A3)
    timeouts = [c.reason for c in a3.checks if c.task == "3.4" and c.status == "timeout"]
    assert len(timeouts) == 2 and all("min_compute_bound_block" in r for r in timeouts), (
        "the endless loop in min_compute_bound_block fails its two checks by timeout")
    assert "TypeError" in feedback_of(a3, "3.1")


def _mutated(tmp_path: Path, stem: str, old: str, new: str) -> Path:
    source = (ROOT / "solutions" / stem).read_text()
    assert source.count(old) == 1, f"the mutation target {old!r} must occur once in {stem}"
    path = tmp_path / "student" / stem
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source.replace(old, new))
    return path


K_LAST = """        grid=(m // bm, n // bn, k_x // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                  pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),"""
K_FIRST = """        grid=(k_x // bk, m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda k, i, j: (i, k)),
                  pl.BlockSpec((bk, bn), lambda k, i, j: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda k, i, j: (i, j)),"""
RELU_LAST = """        @pl.when(k == pl.num_programs(2) - 1)
        def _finish():
            z_ref[...] = jnp.maximum(z_ref[...], 0.0)"""
RELU_EVERY_K = """        z_ref[...] = jnp.maximum(z_ref[...], 0.0)"""

# (stem, old, new, task, points kept on that task or None, tasks allowed to change as well)
MUTATIONS = [
    # 2.1: DMA k does not wait for a free slot. 2.3 calls the schedule, so it may lose too.
    (A2, "slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
     "slot_ready = 0.0", "2.1", None, {"2.3"}),
    # 2.2: cells truncated instead of rounded; the single-buffered chart survives.
    (A2, "range(round(start * width / total), round(end * width / total))",
     "range(int(start * width / total), int(end * width / total))", "2.2", 5, set()),
    # 2.2: a row label one space short: every chart is off, the worked ones included.
    (A2, '(("DMA     ", dma_intervals), ("compute ", compute_intervals))',
     '(("DMA    ", dma_intervals), ("compute ", compute_intervals))', "2.2", 0, set()),
    # 2.3: a pipeline that takes no time reported as unused.
    (A2, "    if finish == 0:\n        return 1.0", "    if finish == 0:\n        return 0.0",
     "2.3", 12, set()),
    # 2.4: the DMA time taken as c / u (the whole step).
    (A2, "compute_time * (1.0 / utilization - 1.0)", "compute_time / utilization", "2.4", 0,
     set()),
    # 3.1: no zero-init; the ReLU check (zero-filled buffers) keeps its 12 points.
    (A3, "        z_ref[...] = jnp.zeros_like(z_ref)", "        pass", "3.1", 12, {"3.2"}),
    # 3.1: ReLU inside the k loop.
    (A3, RELU_LAST, RELU_EVERY_K, "3.1", 18, {"3.2"}),
    # 3.1: bf16 partial products (no preferred_element_type); 3.2's bf16 tolerance absorbs it.
    (A3, "jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)",
     "jnp.dot(x_ref[...], y_ref[...])", "3.1", 24, set()),
    # 3.2: K first in the grid: the simulator's revisit error; the ValueErrors keep 4.
    (A3, K_LAST, K_FIRST, "3.2", 4, set()),
    # 3.2: a ValueError that does not name the dimension.
    (A3, 'raise ValueError(f"{dim_name}={size} is not a multiple of its block size {block}")',
     'raise ValueError(f"{size} is not a multiple of {block}")', "3.2", 26, set()),
    # 3.3: operands counted once (no double buffering).
    (A3, "return sum(2 * rows * cols * size", "return sum(rows * cols * size", "3.3", 0, set()),
    # 3.4: dtype_bytes ignored in the intensity (bf16 hard-coded); the solution's
    # min_compute_bound_block uses it, so its drawn check (other dtype sizes) fails too.
    (A3, "    return block / dtype_bytes\n", "    return block / 2\n", "3.4", 12, set()),
    # 3.4: the copy time forgotten (512-blocks are copy-bound).
    (A3, "return steps * max(compute_s, copy_s)", "return steps * compute_s", "3.4", 12, set()),
]


@pytest.mark.parametrize("stem, old, new, task, kept, also", MUTATIONS,
                         ids=[f"{m[3]}-{i}" for i, m in enumerate(MUTATIONS)])
def test_a_solution_with_one_mistake_loses_points_on_that_task(
        tmp_path: Path, stem: str, old: str, new: str, task: str,
        kept: int | None, also: set[str]) -> None:
    got = task_points(grade_file(_mutated(tmp_path, stem, old, new)))
    full = FULL[stem]  # what the unmutated solution gets (asserted above)
    assert got[task] < full[task], f"the mutation {old!r} -> {new!r} must cost points on {task}"
    if kept is not None:
        assert got[task] == kept, f"task {task} keeps exactly {kept} points under this mistake"
    others = {t: p for t, p in got.items() if t != task and t not in also}
    assert others == {t: p for t, p in full.items() if t != task and t not in also}, (
        "a fault is charged to the task that has it, not to the others")


def test_pallas_lab_grade_gives_both_solutions_100(tmp_path: Path) -> None:
    student = tmp_path / "solutions"
    student.mkdir()
    for stem in (A2, A3):
        shutil.copy(ROOT / "solutions" / stem, student / stem)
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "graders.cli", "grade", str(student), "--format", "gradescope",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for stem in (A2, A3):
        data = json.loads((out / "solutions" / Path(stem).stem / "results.json").read_text())
        assert data["score"] == 100, f"pallas-lab grade gives solutions/{stem} {data['score']}"
        numbers = {t["number"] for t in data["tests"]}
        assert numbers == set(FULL[stem]), "results.json numbers the tests by task id"
