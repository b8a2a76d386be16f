"""End-to-end grading of a5_splash_attention (Tasks 5.1–5.5).

Every file runs through the real pipeline (static check, a worker subprocess,
the hypothesis checks against the hidden reference). The sample submissions'
expected scores are those documented in ``examples/submissions/README.md``;
the mutation tests prove that each graded MaskInfo rule and each part of the
Splash call can cost points, on that task only, with feedback that names the
field or invariant that is wrong.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from graders.checks.a5 import mask_cases
from graders.grading import SubmissionResult, grade_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "examples" / "submissions"
A5 = "a5_splash_attention.py"
FULL = {"5.1": 15, "5.2": 15, "5.3": 25, "5.4": 35, "5.5": 10}


def task_points(result: SubmissionResult) -> dict[str, float]:
    """Points per graded task, e.g. {"5.1": 15, ...}."""
    return {t.task: t.points for t in result.tasks() if t.graded}


def feedback(result: SubmissionResult, task: str) -> str:
    return "\n".join(c.feedback for c in result.checks if c.task == task and c.feedback)


def test_the_solution_gets_100_and_the_tasks_total_100():
    result = grade_file(ROOT / "solutions" / A5)
    assert (result.score, result.max_score) == (100, 100), (
        f"solutions/{A5} must get 100/100; failures: "
        f"{[c.feedback for c in result.checks if c.status != 'passed']}")
    assert task_points(result) == FULL


def test_the_untouched_handout_gets_zero_and_says_not_started():
    result = grade_file(ROOT / "assignments" / A5)
    assert result.score == 0
    assert {t.status for t in result.tasks() if t.graded} == {"not started"}


EXPECTED = {
    "ada_correct": FULL,
    # local window edges excluded; patterns keyed by q-start minus kv-start; mask on
    # every tile (see the README for the checks each mistake loses).
    "ben_typical_mistakes": {"5.1": 10, "5.2": 15, "5.3": 10, "5.4": 12, "5.5": 10},
    "cleo_untouched": {"5.1": 0, "5.2": 0, "5.3": 0, "5.4": 0, "5.5": 0},
    # endless search for the next partial tile; a kernel that returns a value (the
    # wrapper's prefetch table, checked without running the call, is right).
    "dev_broken": {"5.1": 15, "5.2": 15, "5.3": 10, "5.4": 5, "5.5": 4},
}


@pytest.fixture(scope="module")
def graded_samples() -> dict[str, SubmissionResult]:
    # A short timeout keeps dev_broken's endless loop cheap; correct calls take milliseconds.
    return {student: grade_file(SAMPLES / student / A5, timeout=1.0) for student in EXPECTED}


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_sample_submissions_get_their_documented_scores(graded_samples, student):
    result = graded_samples[student]
    assert task_points(result) == EXPECTED[student], (
        f"{student}/{A5}: per-task points differ from examples/submissions/README.md; "
        f"reasons: {[(t.task, t.reason) for t in result.tasks() if t.points < t.max_points]}")


def test_ben_s_mistakes_are_named_in_the_feedback(graded_samples):
    ben = graded_samples["ben_typical_mistakes"]
    assert "the window's edges are excluded" in feedback(ben, "5.1")
    assert "compare the tiles' contents, not their positions" in feedback(ben, "5.3")
    assert "MaskInfo invariant broken: partial patterns are distinct" in feedback(ben, "5.3")
    assert "the mask is applied on full tiles too" in feedback(ben, "5.4")


def test_dev_s_faults_fail_only_the_checks_that_hit_them(graded_samples):
    dev = graded_samples["dev_broken"]
    statuses = [c.status for c in dev.checks if c.task == "5.3"]
    assert sorted(statuses) == ["passed", "passed", "timeout", "timeout"], (
        f"the two drawn 5.3 checks time out on a mask without partial tiles: {statuses}")
    assert "a Pallas kernel must return None" in feedback(dev, "5.4")


def _mutated(tmp_path: Path, old: str, new: str) -> Path:
    source = (ROOT / "solutions" / A5).read_text()
    assert source.count(old) == 1, f"the mutation target {old!r} must occur once"
    path = tmp_path / "student" / A5
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source.replace(old, new))
    return path


@pytest.mark.parametrize("old, new, task, kept, named", [
    # Tiles listed column by column instead of row by row.
    ("tile_rows, tile_cols = np.nonzero(kinds)  # row-major order",
     "tile_cols, tile_rows = np.nonzero(kinds.T)", "5.3", 5,
     "active tiles are listed in row-major (q block, kv block) order"),
    # bounds_start / bounds_end computed per column of tiles.
    ("new_row = tile_rows[1:] != tile_rows[:-1]",
     "new_row = tile_cols[1:] != tile_cols[:-1]", "5.3", 5,
     "bounds_start marks the first active tile of each q row of tiles"),
    # A ValueError that does not say which row has no visible key.
    ('raise ValueError(f"query row {int(blind_rows[0])} can attend to no key: every row "',
     'raise ValueError("some query row can attend to no key: every row "', "5.3", 20,
     "the ValueError's message does not name what is wrong"),
    # The wrapper passes block_mask third instead of last: the kernel misreads the table.
    ("mask_info.active_rows, mask_info.active_cols, mask_info.mask_next,\n"
     "        mask_info.bounds_start, mask_info.bounds_end, mask_info.block_mask)]",
     "mask_info.active_rows, mask_info.active_cols, mask_info.block_mask,\n"
     "        mask_info.mask_next, mask_info.bounds_start, mask_info.bounds_end)]", "5.4", 15,
     "prefetch argument 2 holds bounds_start or bounds_end or block_mask; the kernel expects "
     "mask_next there"),
    # K and V chosen by the q row instead of the active column.
    ("        return h, cols[g], 0\n", "        return h, rows[g], 0\n", "5.4", 20,
     "the k block chosen by the index map differs"),
])
def test_a_solution_with_one_mistake_loses_points_on_that_task_only(
        tmp_path, old, new, task, kept, named):
    result = grade_file(_mutated(tmp_path, old, new))
    got = task_points(result)
    assert got[task] == kept, (
        f"the mutation {old!r} -> {new!r} leaves Task {task} exactly {kept} points; got "
        f"{got[task]}: {[(c.check, c.status) for c in result.checks if c.task == task]}")
    assert {t: p for t, p in got.items() if t != task} == {
        t: p for t, p in FULL.items() if t != task}, "the fault is charged to its task only"
    assert named in feedback(result, task), (
        f"the feedback names what is wrong ({named!r}); it reads:\n{feedback(result, task)}")


def test_the_public_self_check_passes_the_solution_and_flags_ben_s_window():
    from graders.assignments import get_assignment
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
    from graders.checks.a5 import MaskCase

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
    from graders.checks.a5 import FIELDS, _broken_invariant

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
    from graders.checks.a5 import _broken_invariant

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
