"""Task 5.5 mask_stats."""

from __future__ import annotations

import numpy as np

from graders.student.public import Api, Mismatch, describe, number, public_check

from .common import A, MaskCase, _kinds, mask_cases, mask_info
from .masks import _causal

# -- Task 5.5 ------------------------------------------------------------------------------------

@public_check(A, "5.5", "worked answer: causal 4096, block 1024: 10 active blocks, 6 full, "
                        "4 partial, 1 pattern (lecture Ex11)")
def stats_worked(api: Api) -> None:
    """Task 5.5: worked answer: causal 4096, block 1024: 10 active blocks, 6 full, 4 partial, 1
    pattern (lecture Ex11).
    """
    got = api.call("mask_stats", _causal(4096), 1024, 1024).value
    expected = {"num_blocks": 16, "num_active": 10, "num_partial": 4, "num_full": 6,
                "num_patterns": 1, "pattern_bytes": 1 << 20}
    if not isinstance(got, dict):
        raise Mismatch("mask_stats must return a dict", got=type(got).__name__)
    wrong = {k: got.get(k) for k, v in expected.items() if got.get(k) != v}
    if wrong or not np.isclose(number(got.get("compute_saving", 0),
                                      "mask_stats['compute_saving']"), 1.6):
        raise Mismatch("mask_stats differs from the lecture's", expected=str(expected),
                       got=str(got))


@public_check(A, "5.5", "mask_stats counts tiles and patterns as a plain loop does, with "
                        "pattern_bytes = patterns · block_q · block_kv and compute_saving = "
                        "num_blocks / num_active")
def stats_property(api: Api) -> None:
    """Task 5.5: mask_stats counts tiles and patterns as a plain loop does, with pattern_bytes =
    patterns · block_q · block_kv and compute_saving = num_blocks / num_active.
    """
    def body(case: MaskCase) -> None:
        mask, bq, bkv = case.mask, case.block_q, case.block_kv
        kinds = _kinds(mask, bq, bkv)
        patterns = mask_info(mask, bq, bkv)["partial_mask_blocks"].shape[0]
        active = int((kinds > 0).sum())
        expected = {"num_blocks": kinds.size, "num_active": active,
                    "num_partial": int((kinds == 1).sum()), "num_full": int((kinds == 2).sum()),
                    "num_patterns": patterns, "pattern_bytes": patterns * bq * bkv}
        got = api.call("mask_stats", mask, bq, bkv).value
        if not isinstance(got, dict):
            raise Mismatch("mask_stats must return a dict", got=type(got).__name__)
        wrong = {key: got.get(key) for key, value in expected.items() if got.get(key) != value}
        saving = number(got.get("compute_saving"), "mask_stats['compute_saving']")
        if wrong or not np.isclose(saving, kinds.size / active, rtol=1e-9):
            raise Mismatch("mask_stats differs", expected=describe(
                {**expected, "compute_saving": kinds.size / active}), got=describe(got))
    api.run_property(mask_cases(), body)
