"""Fidelity cases of a5_splash_attention (Splash attention with stored and with computed
masks (lecture §6)): ``CASES`` for ``graders.fidelity.cases.cases_for``, which says what a
case is."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from graders.fidelity.cases import FidelityCase, FromModule, array


@st.composite
def _splash(draw):
    block = draw(st.sampled_from([8, 16]))
    nblocks = draw(st.integers(1, 3))
    length = block * nblocks
    heads, d = draw(st.integers(1, 2)), 8
    seed = draw(st.integers(0, 2**16))
    kind = draw(st.sampled_from(["causal", "document", "full"]))
    q_pos = np.arange(length)[:, None]
    kv_pos = np.arange(length)[None, :]
    if kind == "causal":
        mask = q_pos >= kv_pos
    elif kind == "document":
        cuts = sorted(draw(st.lists(st.integers(1, length - 1), max_size=2, unique=True))
                      if length > 1 else [])
        segments = np.searchsorted(np.asarray(cuts, int), np.arange(length), side="right")
        mask = (segments[:, None] == segments[None, :]) & (q_pos >= kv_pos)
    else:
        mask = np.ones((length, length), bool)
    q, k, v = (array((heads, length, d), seed + i) for i in range(3))
    return ((q, k, v, FromModule("build_mask_info", (mask, block, block))),
            {"use_base2_exp": draw(st.booleans())})


@st.composite
def _splash_computed(draw):
    """Task 5.6: a causal, windowed or document rule with its MaskInfo (built by the file
    itself from the dense mask), queries at 0..L-1 or shifted after the keys."""
    block = draw(st.sampled_from([8, 16]))
    length = block * draw(st.integers(1, 3))
    heads, seed = draw(st.integers(1, 2)), draw(st.integers(0, 2**16))
    kind = draw(st.sampled_from(["causal", "causal & window", "documents"]))
    every = np.arange(length, dtype=np.int32)
    offset = draw(st.integers(0, 3)) if kind != "documents" else 0
    q_pos = every + offset
    kwargs: dict[str, Any] = {"q_positions": q_pos}
    mask = np.ones((length, length), bool)
    if "causal" in kind:
        kwargs["causal"] = True
        mask &= q_pos[:, None] >= every[None, :]
    if "window" in kind:
        kwargs["window"] = (block // 2 + offset, None)
        mask &= q_pos[:, None] - (block // 2 + offset) <= every[None, :]
    if kind == "documents":
        ids = (every >= length // 3).astype(np.int32) + (every >= 2 * length // 3)
        kwargs["q_segment_ids"] = ids
        mask &= ids[:, None] == ids[None, :]
    q, k, v = (array((heads, length, 8), seed + i) for i in range(3))
    return (q, k, v, FromModule("build_mask_info", (mask, block, block))), kwargs


#: The functions of this lab that use ``pl``/``pltpu``/``jnp``/``jax`` (as ``func`` or in
#: ``covers``) and the inputs they are compared on.
CASES: tuple[FidelityCase, ...] = (
    FidelityCase("splash_attention", _splash(), covers=("splash_attention_kernel",),
                 max_examples=4),
    FidelityCase("splash_attention_computed_mask", _splash_computed(),
                 covers=("splash_computed_mask_kernel",), max_examples=3),
)
