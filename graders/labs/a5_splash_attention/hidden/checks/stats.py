"""Task 5.5 mask_stats."""

from __future__ import annotations

import math

import reference.a5_splash_attention as ref
from graders.checking.compare import as_finite_number, assert_equal_int
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.labs.a5_splash_attention.public.public_checks.common import MaskCase

from .common import A, mask_cases

# --- Task 5.5 mask_stats ---------------------------------------------------------------------

_INT_STATS = ("num_blocks", "num_active", "num_partial", "num_full", "num_patterns",
              "pattern_bytes")


def _compare_stats(got: object, expected: dict, label: str | None = None) -> None:
    if not isinstance(got, dict):
        raise CheckFailure("mask_stats must return a dict", expected="a dict",
                           got=type(got).__name__, input=label)
    for key in _INT_STATS:
        if key not in got:
            raise CheckFailure(f"mask_stats has no entry {key!r}", expected=str(expected),
                               got=str(got), input=label)
        try:
            assert_equal_int(got[key], int(expected[key]), f"mask_stats[{key!r}]")
        except CheckFailure as failure:
            failure.input = label
            raise
    saving = as_finite_number(got.get("compute_saving"), "mask_stats['compute_saving']",
                              expected=f"{expected['compute_saving']:.6g} "
                                       "(num_blocks / num_active)", input=label)
    if not math.isclose(saving, expected["compute_saving"], rel_tol=1e-9):
        raise CheckFailure("mask_stats['compute_saving'] should be num_blocks / num_active",
                           expected=f"{expected['compute_saving']:.6g}",
                           got=repr(got.get("compute_saving")), input=label)


@check(A, "5.5", 3, "mask_stats equals the reference's counts, pattern bytes and saving on "
                    "drawn masks")
def stats_values(s: Session) -> None:
    """Task 5.5: mask_stats equals the reference's counts, pattern bytes and saving on drawn
    masks.
    """
    def body(case: MaskCase) -> None:
        got = s.invoke("mask_stats", (case.mask, case.block_q, case.block_kv)).value
        _compare_stats(got, ref.mask_stats(case.mask, case.block_q, case.block_kv))
    run_property(mask_cases(), body, max_examples=15)


@check(A, "5.5", 2, "worked answers: Ex11 (scaled to L 1024 / block 256); causal L 512 in "
                    "64-blocks; the lecture's L 16384 / block 1024 pattern counts (causal 1, "
                    "causal & window 2048 2), scaled to L 2048 / block 128 / window 256")
def stats_worked(s: Session) -> None:
    """Task 5.5: worked answers: Ex11 (scaled to L 1024 / block 256); causal L 512 in 64-blocks;
    the lecture's L 16384 / block 1024 pattern counts (causal 1, causal & window 2048 2),
    scaled to L 2048 / block 128 / window 256.
    """
    causal2k = ref.causal_mask(2048)
    worked = [
        ("Ex11 scaled by 1/4: causal_mask(1024), blocks 256", ref.causal_mask(1024), 256,
         {"num_blocks": 16, "num_active": 10, "num_partial": 4, "num_full": 6,
          "num_patterns": 1, "pattern_bytes": 256 * 256}),
        ("causal_mask(512), blocks 64", ref.causal_mask(512), 64,
         {"num_blocks": 64, "num_active": 36, "num_partial": 8, "num_full": 28,
          "num_patterns": 1, "pattern_bytes": 4096}),
        ("causal_mask(2048), blocks 128 (L 16384 / 1024 scaled by 1/8: one pattern)",
         causal2k, 128, {"num_blocks": 256, "num_active": 136, "num_partial": 16,
                         "num_full": 120, "num_patterns": 1, "pattern_bytes": 128 * 128}),
        ("causal_mask(2048) & local_mask(2048, (256, None)), blocks 128 (window 2048 at "
         "L 16384 scaled by 1/8: two patterns)", causal2k & ref.local_mask(2048, (256, None)),
         128, {"num_blocks": 256, "num_active": 45, "num_partial": 30, "num_full": 15,
               "num_patterns": 2, "pattern_bytes": 2 * 128 * 128}),
    ]
    for label, mask, b, numbers in worked:
        expected = {**numbers, "compute_saving": numbers["num_blocks"] / numbers["num_active"]}
        _compare_stats(s.invoke("mask_stats", (mask, b, b)).value, expected, label)
