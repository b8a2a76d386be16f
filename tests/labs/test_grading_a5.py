"""End-to-end grading of a5_splash_attention (Tasks 5.1–5.6).

Every file runs through the real pipeline (static check, a worker subprocess,
the hypothesis checks against the hidden reference). The scores of the solution,
handout and samples are tested once, in tests/labs/test_labs.py (from
examples/submissions/scores.toml); here, why the samples lose them. Single
mistakes (each MaskInfo rule, each part of the Splash call) are graded by the
corpus (tests/corpus), with feedback that names the field or invariant
that is wrong.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from graders.grading.grade import grade_file
from graders.grading.result import SubmissionResult
from graders.labs.a5_splash_attention.hidden.checks.common import mask_cases
from tests.helpers.samples import graded_sample

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
A5 = "a5_splash_attention.py"


def feedback(result: SubmissionResult, task: str) -> str:
    return "\n".join(c.feedback for c in result.checks if c.task == task and c.feedback)


@pytest.fixture(scope="module")
def graded_samples() -> dict[str, SubmissionResult]:
    """Each sample student's a5 file, graded once (tests/helpers/samples.py)."""
    return {student: graded_sample(student, "a5_splash_attention")
            for student in ("ben_typical_mistakes", "dev_broken")}


def test_ben_s_mistakes_are_named_in_the_feedback(graded_samples):
    ben = graded_samples["ben_typical_mistakes"]
    assert "the window's edges are excluded" in feedback(ben, "5.1")
    assert "compare the tiles' contents, not their positions" in feedback(ben, "5.3")
    assert "MaskInfo invariant broken: partial patterns are distinct" in feedback(ben, "5.3")
    assert "the mask is applied on full tiles too" in feedback(ben, "5.4")
    assert "the kernel still reads partial_mask_blocks" in feedback(ben, "5.6"), (
        "ben's computed-mask call still hands the stored patterns to its kernel")
    lost = [c.check for c in ben.checks if c.task == "5.6" and c.status != "passed"]
    assert lost == [c.check for c in ben.checks if c.check.startswith("no mask moves from HBM")], (
        f"his values are right: only the no-mask-from-HBM check fails, not {lost}")


def test_dev_s_faults_fail_only_the_checks_that_hit_them(graded_samples):
    dev = graded_samples["dev_broken"]
    statuses = [c.status for c in dev.checks if c.task == "5.3"]
    assert sorted(statuses) == ["passed", "passed", "timeout", "timeout"], (
        f"the two drawn 5.3 checks time out on a mask without partial tiles: {statuses}")
    assert "a Pallas kernel must return None" in feedback(dev, "5.4")


def test_the_public_self_check_passes_the_solution_and_flags_ben_s_window():
    from graders.course.catalog import get_assignment
    from graders.student.selfcheck import check_file

    a5 = get_assignment("a5")
    solution = check_file(ROOT / "solutions" / A5, a5, timeout=60)
    assert {t.status for t in solution.tasks} <= {"passed", "no self-check"}, (
        [(t.task, t.check, t.detail) for t in solution.tasks if t.status != "passed"])
    ben = check_file(SAMPLES / "ben_typical_mistakes" / A5, a5, tasks=["5.1"], timeout=60)
    (outcome,) = ben.tasks
    assert outcome.status == "failing", (
        "ben's local window without its edges breaks the public mask formulas too")


# --- the invariant checker on its own (trusted side, no worker) ----------------------------

def _causal_case():
    import reference.a5_splash_attention as ref
    from graders.labs.a5_splash_attention.hidden.checks.common import MaskCase

    mask = ref.causal_mask(16) & ref.local_mask(16, (8, None))  # tiles P, F, P per row
    return ref, MaskCase(mask, 4, 4, "causal_mask(16) & local_mask(16, (8, None))")


def _corrupt(fields: dict, how: str) -> dict:
    f = {k: np.array(v) for k, v in fields.items()}
    if how == "order":
        for k in ("active_rows", "active_cols", "block_mask", "mask_next"):
            f[k][[1, 2]] = f[k][[2, 1]]
    elif how == "bounds":
        f["bounds_start"] = np.r_[True, f["active_cols"][1:] != f["active_cols"][:-1]]
    elif how == "empty":
        f["active_rows"] = np.insert(f["active_rows"], 1, 0)
        f["active_cols"] = np.insert(f["active_cols"], 1, 3)
        for k, v in (("block_mask", 1), ("mask_next", 0), ("bounds_start", False),
                     ("bounds_end", True)):
            f[k] = np.insert(f[k], 1, v)
        f["bounds_end"][0] = False
    elif how == "duplicate":
        f["partial_mask_blocks"] = np.concatenate([f["partial_mask_blocks"],
                                                   f["partial_mask_blocks"][:1]])
        f["mask_next"][np.flatnonzero(f["block_mask"] == 1)[-1]] = len(
            f["partial_mask_blocks"]) - 1
    elif how == "own pattern":
        partial = np.flatnonzero(f["block_mask"] == 1)
        f["mask_next"][partial[0]] = (f["mask_next"][partial[0]] + 1) % len(
            f["partial_mask_blocks"])
    elif how == "full next":
        full = np.flatnonzero(f["block_mask"] == 2)
        f["mask_next"][full[0]] = (f["mask_next"][full[0]] + 1) % len(f["partial_mask_blocks"])
    return f


@pytest.mark.parametrize("how, invariant", [
    ("order", "row-major"),
    ("bounds", "bounds_start marks the first active tile of each q row"),
    ("empty", "each active tile is non-empty"),
    ("duplicate", "partial patterns are distinct"),
    ("own pattern", "mask_next of a partial tile points at its own pattern"),
    ("full next", "mask_next of a full tile is the pattern of the next partial tile"),
])
def test_each_broken_invariant_is_named(how, invariant):
    from graders.labs.a5_splash_attention.hidden.checks.common import FIELDS
    from graders.labs.a5_splash_attention.hidden.checks.mask_info import _broken_invariant

    ref, case = _causal_case()
    fields = ref.build_mask_info(case.mask, case.block_q, case.block_kv)._asdict()
    assert _broken_invariant([np.asarray(v) for v in fields.values()], case) is None
    broken = _corrupt(fields, how)
    found = _broken_invariant([broken[name] for name in FIELDS], case)
    assert found is not None and invariant in found[0], (how, found)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(mask_cases())
def test_the_reference_mask_info_satisfies_every_invariant(case):
    import reference.a5_splash_attention as ref
    from graders.labs.a5_splash_attention.hidden.checks.mask_info import _broken_invariant

    info = ref.build_mask_info(case.mask, case.block_q, case.block_kv)
    assert _broken_invariant([np.asarray(v) for v in info], case) is None


def test_every_a5_check_can_fail(tmp_path):
    # One file with a mistake in every function the samples and mutations above do not
    # already catch; each named check must fail (graded once to keep the suite fast).
    source = (ROOT / "solutions" / A5).read_text()
    mistakes = [
        ("return query_pos >= np.arange(n_keys)[None, :]",
         "return query_pos > np.arange(n_keys)[None, :]"),
        ("kv_ids = q_ids if kv_segment_ids is None else np.asarray(kv_segment_ids)",
         "kv_ids = q_ids"),
        ("kinds = np.where(allowed == block_q * block_kv, 2, np.where(allowed > 0, 1, 0))",
         "kinds = np.where(allowed == block_q * block_kv, 1, np.where(allowed > 0, 2, 0))"),
        ('return "\\n".join(lines)', 'return " / ".join(lines)'),
        ("return kernel(*table, q, k, v, patterns)",
         "s = np.einsum('hqd,hkd->hqk', q, k) * scale\n"
         "    dense = np.zeros((seq_len, seq_len), bool)\n"
         "    for r, c, kind, n in zip(*table[:2], table[5], table[2]):\n"
         "        dense[r * block_q:(r + 1) * block_q, c * block_kv:(c + 1) * block_kv] = (\n"
         "            True if kind == 2 else patterns[n])\n"
         "    s = np.where(dense, s, -np.inf)\n"
         "    p = np.exp(s - s.max(-1, keepdims=True))\n"
         "    return ((p / p.sum(-1, keepdims=True)) @ v).astype(np.float32)"),
        ('"compute_saving": total / active}', '"compute_saving": active / total}'),
    ]
    for old, new in mistakes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / "student" / A5
    path.parent.mkdir()
    path.write_text(source)
    failed = {c.check: c.feedback for c in grade_file(path).checks if c.status != "passed"}
    for start in ("causal_mask(q_len, kv_len, offset=...)", "segment_mask(q_ids, kv_ids)",
                  "classify_blocks(mask, block_q, block_kv)", "render_block_mask draws",
                  "worked answers: the causal L 8 picture", "splash_attention(q, k, v, mask_info)",
                  "mask_stats equals the reference", "worked answers: Ex11"):
        hits = [name for name in failed if name.startswith(start)]
        assert hits, f"the check starting {start!r} should fail; failed: {sorted(failed)}"
    assert any("made no pallas_call" in text for text in failed.values())
