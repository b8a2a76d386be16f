"""Task 3.5's trusted side (graders/labs/a3_matmul/checks.py): what it accepts from the
worker's plain-data reply. The worker side (the student's own matmul through
``pallas_sim.estimate``) is graded on the samples and the corpus mutants."""

from __future__ import annotations

import pytest

from graders.labs.a3_matmul import checks
from graders.registry import CheckFailure

GOOD = {"blocks": [1024, 2048, 1024],
        "calls": [{"grid": [4, 9, 7], "block_shapes": [[1024, 1024], [1024, 2048], [1024, 2048]],
                   "time_s": 1.6030e-3, "mfu": 0.64, "vmem_bytes": 28 << 20,
                   "vmem_limit_bytes": 32 << 20, "mxu_flops": 2 * 4096 * 18432 * 7168}]}


def with_call(**changes) -> dict:
    return {**GOOD, "calls": [{**GOOD["calls"][0], **changes}]}


def test_a_legal_run_at_the_chosen_blocks_is_accepted():
    assert checks._validate_choice(GOOD) is GOOD


@pytest.mark.parametrize(("reply", "what"), [
    ({"blocks": "1024"}, "tuple of three ints"),
    ({"blocks": [1024, 2048, 96]}, "outside the candidate set"),
    ({**GOOD, "calls": []}, "did not run one pallas_call"),
    (with_call(grid=[4, 9, 14]), "did not run one pallas_call"),
    (with_call(time_s=1e-6), "not a prediction of this matmul"),
    (with_call(mxu_flops=0), "does not compute this matmul"),
    (with_call(mxu_flops=2.0 * 4096 * 18432 * 7168), "does not compute this matmul"),
])
def test_replies_that_do_not_show_the_chosen_blocks_running_are_refused(reply, what):
    """Not three ints, not a candidate, another grid than (M/bm, N/bn, K/bk), or a time
    below 2·M·N·K / peak (1.052 ms: no real prediction is faster) fail Task 3.5."""
    with pytest.raises(CheckFailure, match=what):
        checks._validate_choice(reply)


def test_the_fastest_candidate_is_predicted_once_per_process():
    first = checks.best_candidate()
    assert first[0] == (1024, 2048, 1024) and 1.5e-3 < first[1] < 1.7e-3, (
        "the fastest legal candidate is predicted at about 1.60 ms (docs/performance-model.md)")
    assert checks.best_candidate() is first, "cached: computed once per grading process"
