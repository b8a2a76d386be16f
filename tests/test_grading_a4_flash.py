"""Grading of a4's Flash Attention tasks (4.3-4.6) on mutations of the solution.

Each test grades a real file through the real pipeline (static check, worker
subprocess, hypothesis checks against dense float64 attention and the
reference's pallas_call trace).  A mutation changes one line of
``solutions/a4_flash_attention.py`` into a typical mistake; the test states
which points it must cost, which it must keep, and what the feedback must say.
"""

from __future__ import annotations

from pathlib import Path

from graders.grading import SubmissionResult, grade_file

ROOT = Path(__file__).resolve().parent.parent
STEM = "a4_flash_attention.py"
FULL = {"4.1": 15, "4.2": 15, "4.3": 30, "4.4": 20, "4.5": 5, "4.6": 15}

RESCALE = ("alpha = jnp.exp(m_prev - m_new)                # rescale of the old state",
           "alpha = 1.0")
NO_SKIP = ("has_visible_keys = kv_block * block_kv <= (q_block + 1) * block_q - 1",
           "has_visible_keys = True")
# The kernel ignores the constant it is given and subtracts 0 instead: with logits up to
# ~150 that is below the safe range, and exp(s - 0) overflows float32.
MLE_ZERO = ("first_m = -np.inf if max_logit_const is None else max_logit_const",
            "first_m = -np.inf if max_logit_const is None else 0.0")
NO_INIT = ("    @pl.when(kv_block == 0)\n    def _init():",
           "    @pl.when(kv_block == -1)\n    def _init():")
OFF_BY_ONE = ("s = jnp.where(k_pos > q_pos, -jnp.inf, s)",
              "s = jnp.where(k_pos >= q_pos, -jnp.inf, s)")
NORMALIZE_EVERY_STEP = (
    "        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)\n",
    "        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)\n"
    "        o_ref[...] = acc_scratch_ref[...] / l_new\n")
GQA_MODULO = ("lambda h, i, j: (h // group, j, 0)),\n"
              "            pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h // group, j, 0))",
              "lambda h, i, j: (h % num_kv_heads, j, 0)),\n"
              "            pl.BlockSpec((None, block_kv, dv), "
              "lambda h, i, j: (h % num_kv_heads, j, 0))")


def grade_mutation(tmp_path: Path, old: str, new: str) -> SubmissionResult:
    """Grade the solution with ``old`` replaced by ``new`` (which must occur exactly once)."""
    source = (ROOT / "solutions" / STEM).read_text()
    assert source.count(old) == 1, f"the mutation target {old!r} must occur once"
    path = tmp_path / "student" / STEM
    path.parent.mkdir(parents=True)
    path.write_text(source.replace(old, new))
    return grade_file(path)


def points(result: SubmissionResult) -> dict[str, float]:
    return {t.task: t.points for t in result.tasks() if t.graded}


def check_points(result: SubmissionResult, task: str) -> dict[str, tuple[float, str]]:
    """{check name: (points earned, status)} of one task."""
    return {c.check: (c.points, c.status) for c in result.checks if c.task == task}


def feedback(result: SubmissionResult, task: str) -> str:
    return "\n".join(c.feedback for c in result.checks if c.task == task and c.feedback)


def test_removing_the_rescale_loses_the_kernel_and_the_end_to_end_check(tmp_path):
    result = grade_mutation(tmp_path, *RESCALE)
    got = points(result)
    assert got["4.3"] == 0, "every kernel check sees the missing rescale (the options check "\
        "also draws soft-capped cases that use the running max)"
    wrapper = check_points(result, "4.4")
    assert [status for _, status in wrapper.values()] == ["failed", "passed"], (
        "the wrapper's end-to-end values fail; its trace (grid, specs, scratch) is still right")
    assert got["4.4"] == 8
    assert {t: got[t] for t in ("4.1", "4.2", "4.5", "4.6")} == {
        "4.1": 15, "4.2": 15, "4.5": 5, "4.6": 15}, "other tasks keep all their points"
    text = feedback(result, "4.3") + feedback(result, "4.4")
    assert "the rescale exp(m_prev - m_new) is missing" in text, (
        "the feedback names the missing rescale (style.md: the known mistake it looks like)")


def test_not_skipping_fully_masked_blocks_fails_only_the_skipping_check(tmp_path):
    result = grade_mutation(tmp_path, *NO_SKIP)
    kernel = check_points(result, "4.3")
    failed = [name for name, (_, status) in kernel.items() if status != "passed"]
    assert len(failed) == 1 and "fully masked do no work" in failed[0], (
        f"masking without skipping gives correct values; only the skipping check fails: {failed}")
    assert points(result) == {**FULL, "4.3": 24}
    text = feedback(result, "4.3")
    assert "fully masked blocks are not skipped" in text and "k_ref" in text


def test_a_constant_outside_the_safe_range_is_reported_as_such(tmp_path):
    result = grade_mutation(tmp_path, *MLE_ZERO)
    kernel = check_points(result, "4.3")
    assert [name for name, (_, s) in kernel.items() if s != "passed"] == [
        next(name for name in kernel if name.startswith("soft_cap and max_logit_const"))]
    text = feedback(result, "4.3")
    assert "outside the safe range" in text and "mle_safe_range gives" in text, (
        "an overflow under a safe max_logit_const is explained as a constant outside the "
        "safe range, with the range of the failing scores")
    assert "outside the safe range" in feedback(result, "4.4")
    got = points(result)
    assert got["4.3"] == 22 and got["4.4"] == 8


def test_forgetting_the_initialization_reads_poisoned_scratch(tmp_path):
    result = grade_mutation(tmp_path, *NO_INIT)
    got = points(result)
    assert got["4.3"] == 0 and got["4.4"] == 8
    assert "scratch buffers start poisoned" in feedback(result, "4.3")


def test_a_causal_mask_off_by_one_is_named(tmp_path):
    result = grade_mutation(tmp_path, *OFF_BY_ONE)
    kernel = check_points(result, "4.3")
    assert kernel[next(n for n in kernel if n.startswith("flash_attention_kernel, run"))] == (
        10, "passed"), "without a mask the kernel is right"
    assert points(result)["4.3"] < 30
    assert "causal mask off by one" in feedback(result, "4.3")


def test_normalizing_at_every_step_is_not_penalized(tmp_path):
    result = grade_mutation(tmp_path, *NORMALIZE_EVERY_STEP)
    assert points(result) == FULL, "dividing at every step is slower but still correct"


def test_reading_kv_head_h_mod_hkv_fails_the_wrapper_only(tmp_path):
    result = grade_mutation(tmp_path, *GQA_MODULO)
    got = points(result)
    assert got["4.4"] == 0 and {t: p for t, p in got.items() if t != "4.4"} == {
        t: p for t, p in FULL.items() if t != "4.4"}, "the kernel runs in the grader's call"
    assert "h // (H // Hkv)" in feedback(result, "4.4")


def test_model_mistakes_cost_their_tasks_with_a_diagnosis(tmp_path):
    # Both in one file (one grading run): K and V read once in total instead of once per
    # q block (4.6), and ln(f32 max) as the underflow margin (4.5).
    source = (ROOT / "solutions" / STEM).read_text()
    for old, new in (("kv_read = q_blocks * H * L * (d + dv) * in_bytes",
                      "kv_read = H * L * (d + dv) * in_bytes"),
                     ("underflow_margin = float(-np.log(f32.tiny))",
                      "underflow_margin = float(np.log(f32.max))")):
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / "student" / STEM
    path.parent.mkdir(parents=True)
    path.write_text(source)
    result = grade_file(path)
    got = points(result)
    assert got["4.5"] < FULL["4.5"] and got["4.6"] < FULL["4.6"]
    assert {t: got[t] for t in ("4.1", "4.2", "4.3", "4.4")} == {
        "4.1": 15, "4.2": 15, "4.3": 30, "4.4": 20}
    assert "once per query block" in feedback(result, "4.6")
    assert "87.34" in feedback(result, "4.5")
