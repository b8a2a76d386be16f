"""Tasks 4.8 and 5.7's trusted side refuses a run whose kernel does not compute the problem
(Task 3.5's: tests/test_performance_a3.py). An empty kernel next to an answer computed
another way still copies every block, and once strided copies were modelled such a
matmul's predicted time passed the FLOPs-at-peak floor (the red team's ``decoy_call``):
the MXU FLOPs the kernel ran are checked against the problem's."""

from __future__ import annotations

import pytest

import reference.a4_flash_attention as ref4
import reference.a5_splash_attention as ref5
from graders.labs.a4_flash_attention import checks as checks4
from graders.labs.a5_splash_attention import checks as checks5
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
