"""Task 5.7's trusted side refuses a run whose kernel does not compute the problem
(Tasks 3.5 and 4.8, timed from the grader's own call: tests/test_performance_a3.py and
tests/test_performance_a4.py). An empty kernel next to an answer computed
another way still copies every block, and once strided copies were modelled such a
matmul's predicted time passed the FLOPs-at-peak floor (the red team's ``decoy_call``):
the MXU FLOPs the kernel ran are checked against the problem's."""

from __future__ import annotations

import pytest

import reference.a5_splash_attention as ref5
from graders.labs.a5_splash_attention import checks as checks5
from graders.registry import CheckFailure


@pytest.fixture(scope="module")
def causal_info():
    return ref5.performance_mask_info("causal", 2048, 2048)


def _splash_reply(info, **changes) -> dict:
    h, d, dv = ref5.PERFORMANCE_HEADS, ref5.PERFORMANCE_HEAD_DIM, ref5.PERFORMANCE_VALUE_DIM
    active = len(info.active_rows)
    call = {"grid": [h, active],
            "block_shapes": [[2048, d], [2048, d], [2048, dv], [2048, 2048], [2048, dv]],
            "time_s": 9.615e-3, "mfu": 0.4, "vmem_bytes": 17 << 20,
            "vmem_limit_bytes": 32 << 20,
            "mxu_flops": h * active * 2 * 2048 * 2048 * (d + dv)}
    return {"blocks": [2048, 2048], "calls": [{**call, **changes}]}


def test_a_splash_run_over_the_active_tiles_is_accepted(causal_info):
    reply = _splash_reply(causal_info)
    assert checks5._validate_splash("causal", (2048, 2048), causal_info, reply) is reply


def test_a_splash_run_that_skips_the_products_is_refused(causal_info):
    reply = _splash_reply(causal_info, mxu_flops=0)
    with pytest.raises(CheckFailure, match="does not compute the active tiles"):
        checks5._validate_splash("causal", (2048, 2048), causal_info, reply)
