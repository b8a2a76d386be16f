"""Red team, Task 5.7: no code path of a submission can change the
predicted time by detecting that it is measured, and the choice is graded against the
student's own kernel.

Each file in ``submissions/performance/<attack>__a5_splash_attention.py`` is appended to
the solution and graded through the grader's own path (``grade_file``: static check, a
fresh sandboxed worker, Task 5.7's checks). Before the fix (5.7 ran the student's wrapper
inside ``pallas_sim.estimate`` in the worker and took its numbers, against the reference
kernel's best time) these scored 10, 10 and 7 of 10 with poor or illegal blocks, and the
slower-but-correct ``row_chunked_kernel`` variant 1 of 10 at its own best blocks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.grading.grade import grade_file

REPO = Path(__file__).resolve().parents[2]
ATTACKS = Path(__file__).resolve().parent / "submissions" / "performance"
STEM = "a5_splash_attention"

#: attack -> (5.7 points after the fix, a phrase its feedback must hold)
CASES = {
    # The kernel does only the two products when its block prints as an abstract array.
    # A kernel value now prints as a JAX tracer does (shape and dtype only), so it cannot
    # tell: it is the solution's kernel everywhere, and (1024, 2048) earns what it does
    # honestly, 1 of 10 (before the repr fix: 0, the two runs counting different work).
    "kernel_detects_estimate": (1.0, "slower than the fastest legal candidate"),
    # The wrapper swaps in a two-product kernel and one-block index maps under estimate:
    # the wrapper is not part of the timed call any more, so the (1024, 2048) choice is
    # timed as what the honest kernel costs there (25-55 % slower than its best).
    "wrapper_detects_estimate": (1.0, "slower than the fastest legal candidate"),
    # vmem_limit_bytes raised to 64 MiB under estimate for (4096, 4096) tiles (50 MiB):
    # the grader's compiler parameters hold the 32 MiB scoped limit.
    "vmem_limit_under_estimate": (0.0, "VmemOOMError"),
}


def _graded(tmp_path: Path, source: str):
    folder = tmp_path / "student"
    folder.mkdir()
    path = folder / f"{STEM}.py"
    path.write_text(source, encoding="utf-8")
    return grade_file(path, tasks={"5.7"})


def _feedback(result) -> str:
    return "\n".join(c.feedback for c in result.checks)


@pytest.mark.parametrize("attack", sorted(CASES))
def test_a_submission_that_detects_being_measured_gains_nothing(tmp_path, attack):
    points, says = CASES[attack]
    solution = (REPO / "solutions" / f"{STEM}.py").read_text(encoding="utf-8")
    text = (ATTACKS / f"{attack}__{STEM}.py").read_text(encoding="utf-8")
    result = _graded(tmp_path, solution + "\n\n" + text)
    assert result.score == points, (attack, result.score, _feedback(result)[:3000])
    assert says in _feedback(result), _feedback(result)[:3000]


def test_the_solution_keeps_its_choice_points(tmp_path):
    solution = (REPO / "solutions" / f"{STEM}.py").read_text(encoding="utf-8")
    result = _graded(tmp_path, solution)
    assert result.score == 10.0, _feedback(result)[:3000]


def test_a_slower_correct_kernel_earns_the_choice_that_is_best_for_it(tmp_path):
    """The row-chunked kernel is 30-55 % slower than the reference kernel and its fastest
    blocks differ from the reference's for two masks: at its own best it gets 10 of 10."""
    variant = REPO / "tests" / "corpus" / "variants" / STEM / "row_chunked_kernel.py"
    result = _graded(tmp_path, variant.read_text(encoding="utf-8"))
    assert result.score == 10.0, _feedback(result)[:3000]


@pytest.mark.xfail(strict=True, reason=(
    "a known limit of the projected threshold (docs/performance-model.md): the row-chunked "
    "kernel's extra vector ops grow with block_q (one set per 512-row chunk) while the "
    "reference's do not, so its work measured at (4096, 2048), 10.31 ms, projects onto "
    "(2048, 4096) as 10.44 ms (its kernel run there: 8.35 ms) and the choice passes"))
def test_the_slower_kernel_at_the_reference_s_blocks_is_told_its_own_best(tmp_path):
    """The same kernel choosing the reference's (4096, 2048) for the documents should lose
    that mask's points, the diagnosis naming its own best, (2048, 4096)."""
    variant = REPO / "tests" / "corpus" / "variants" / STEM / "row_chunked_kernel.py"
    source = variant.read_text(encoding="utf-8").replace(
        '"document": (2048, 4096)}', '"document": (4096, 2048)}')
    result = _graded(tmp_path, source)
    assert result.score == 7.0, _feedback(result)[:3000]
    assert "the fastest candidate on your kernel's measured work, projected, is (2048, 4096)" \
        in _feedback(result)


def test_numpy_int_blocks_are_ints(tmp_path):
    """An honest chooser that computes its blocks with numpy returns np.int64: ints to the
    student's splash_attention, to JAX's block shapes and to Tasks 3.5 and 4.8, so 5.7
    takes them too (found by an honest-student pass: 0 of 10, 'must return a tuple of two
    ints'; corpus variant numpy-int-blocks)."""
    solution = (REPO / "solutions" / f"{STEM}.py").read_text(encoding="utf-8")
    source = solution + (
        "\n\n_CHOSEN = choose_splash_blocks\n\n\n"
        "def choose_splash_blocks(mask_kind):\n"
        "    bq, bkv = _CHOSEN(mask_kind)\n"
        "    return np.int64(bq), np.int64(bkv)\n")
    result = _graded(tmp_path, source)
    assert result.score == 10.0, _feedback(result)[:3000]
