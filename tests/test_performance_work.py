"""Task 4.8's trusted side refuses a run whose kernel does not compute the problem (Task
3.5's: tests/test_performance_a3.py; Task 5.7 times the kernel on checked small runs
instead: tests/test_splash_timing.py, tests/redteam/test_performance_a5.py). An empty
kernel next to an answer computed another way still copies every block, and once strided
copies were modelled such a matmul's predicted time passed the FLOPs-at-peak floor (the red
team's ``decoy_call``): the MXU FLOPs the kernel ran are checked against the problem's."""

from __future__ import annotations

import pytest

import reference.a4_flash_attention as ref4
from graders.labs.a4_flash_attention import checks as checks4
from graders.registry import CheckFailure

H, L, D = ref4.PERFORMANCE_Q_SHAPE
DV = ref4.PERFORMANCE_V_SHAPE[2]


def _flash_reply(**changes) -> dict:
    call = {"grid": [H, L // 2048, L // 2048],
            "block_shapes": [[None, 2048, D], [None, 2048, D], [None, 2048, DV],
                             [None, 2048, DV]],
            "time_s": 2.7281e-3, "mfu": 0.49, "vmem_bytes": 11 << 20,
            "vmem_limit_bytes": 32 << 20, "vmem_capacity_bytes": 64 << 20,
            "largest_intermediate": 2048 * 2048,
            "mxu_flops": ref4.attention_flops(H, L, D, DV)}
    return {"config": [2048, 2048, 70.0], "calls": [{**call, **changes}]}


def test_a_flash_run_that_computes_the_attention_is_accepted():
    reply = _flash_reply()
    assert checks4._validate_flash_choice(reply) is reply


@pytest.mark.parametrize("flops", [0, ref4.attention_flops(H, L, D, DV) // 2, None, 1.0])
def test_a_flash_run_without_the_attention_s_products_is_refused(flops):
    with pytest.raises(CheckFailure, match="does not compute this attention"):
        checks4._validate_flash_choice(_flash_reply(mxu_flops=flops))
