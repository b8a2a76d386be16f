"""Task 5.3 build_mask_info."""

from __future__ import annotations

import re

import numpy as np

from graders.student.public import Api, Mismatch, StudentRaised, public_check

from .common import FIELDS, A, MaskCase, _fields, _same, mask_cases, mask_info
from .masks import _causal

# -- Task 5.3 ------------------------------------------------------------------------------------

@public_check(A, "5.3", "worked answer: causal 4096, blocks (1024, 2048) (lecture §6.2)")
def mask_info_worked(api: Api) -> None:
    """Task 5.3: worked answer: causal 4096, blocks (1024, 2048) (lecture §6.2)."""
    info = _fields(api.call("build_mask_info", _causal(4096), 1024, 2048).value)
    T, F = True, False
    expected = {"active_rows": [0, 1, 2, 2, 3, 3], "active_cols": [0, 0, 0, 1, 0, 1],
                "block_mask": [1, 1, 2, 1, 2, 1], "mask_next": [0, 1, 0, 0, 1, 1],
                "bounds_start": [T, T, T, F, T, F], "bounds_end": [T, T, F, T, F, T]}
    for name in FIELDS:
        value = info[name]
        if name == "partial_mask_blocks":
            if value.shape != (2, 1024, 2048):
                raise Mismatch("there must be 2 distinct partial patterns",
                               expected="(2, 1024, 2048)", got=str(value.shape))
            continue
        _same(value.astype(int), np.asarray(expected[name]).astype(int), name)


@public_check(A, "5.3", "build_mask_info equals a plain loop over the tiles field by field "
                        "(values and dtypes) on drawn masks")
def mask_info_property(api: Api) -> None:
    """Task 5.3: build_mask_info equals a plain loop over the tiles field by field (values and
    dtypes) on drawn masks.
    """
    def body(case: MaskCase) -> None:
        got = _fields(api.call("build_mask_info", case.mask, case.block_q,
                               case.block_kv).value)
        expected = mask_info(case.mask, case.block_q, case.block_kv)
        for name in FIELDS:
            _same(got[name], expected[name], f"MaskInfo.{name}", dtype=True)
    api.run_property(mask_cases(), body)


@public_check(A, "5.3", "build_mask_info raises ValueError naming the block that does not "
                        "divide its length, or the first query row with no visible key")
def mask_info_errors(api: Api) -> None:
    """Task 5.3: build_mask_info raises ValueError naming the block that does not divide its
    length, or the first query row with no visible key.
    """
    blind = _causal(8)
    blind[[3, 6]] = False
    for args, label, names in (((_causal(12), 8, 4), "causal L 12, block_q = 8", "block_q"),
                               ((_causal(12), 4, 5), "causal L 12, block_kv = 5", "block_kv"),
                               ((blind, 4, 4), "causal L 8 with rows 3 and 6 cleared", "3")):
        try:
            api.call("build_mask_info", *args)
        except StudentRaised as error:
            if error.error_type != "ValueError":
                raise
            message = f"ValueError: {error.message}"
            if not re.search(rf"(?<![\w.]){names}(?![\w.])", message):
                raise Mismatch("the ValueError's message does not name what is wrong",
                               input=label, expected=f"a message naming {names}",
                               got=message) from None
            continue
        raise Mismatch("build_mask_info must raise ValueError", input=label,
                       expected="ValueError", got="a result")
