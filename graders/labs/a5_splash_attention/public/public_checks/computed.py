"""Task 5.6 masks computed in the kernel."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from graders.labs.a5_splash_attention.public import worked
from graders.student.public import (
    Api,
    Mismatch,
    arrays,
    assert_close,
    describe,
    public_check,
    seeds,
)

from .common import FIELDS, A, MaskCase, attention, mask_info, window_side
from .kernel import HARNESS

# -- Task 5.6 ------------------------------------------------------------------------------------

def _rule(q_pos: np.ndarray, kv_pos: np.ndarray, ids: np.ndarray, causal: bool,
          window: tuple | None) -> np.ndarray:
    """The dense mask of Task 5.6's rule, written as the handout states it."""
    q, kv = q_pos[:, None], kv_pos[None, :]
    mask = ids[:, None] == ids[None, :]
    if causal:
        mask &= q >= kv
    if window is not None:
        if window[0] is not None:
            mask &= q - window[0] <= kv
        if window[1] is not None:
            mask &= kv <= q + window[1]
    return mask


@st.composite
def computed_cases(draw) -> dict:
    """A Task 5.6 call: causal / local / documents or their &, blocks 2/4/8, L <= 32, queries
    at positions 0..L-1 or shifted after the keys (causal kinds), H 1-2, d 4/8, dv 4/8."""
    bq, bkv = draw(st.sampled_from((2, 4, 8))), draw(st.sampled_from((2, 4, 8)))
    length = math.lcm(bq, bkv) * draw(st.integers(1, max(1, 32 // math.lcm(bq, bkv))))
    parts = set(draw(st.sets(st.sampled_from(["causal", "local", "documents"]), min_size=1)))
    every = np.arange(length, dtype=np.int32)
    kwargs: dict = {}
    offset = draw(st.integers(0, length)) if "causal" in parts else 0
    if offset:
        kwargs["q_positions"] = every + offset
    causal = "causal" in parts
    if causal:
        kwargs["causal"] = True
    window = None
    if "local" in parts:
        left = window_side(draw, length, bkv)
        window = (None if left is None else max(left, offset),
                  None if causal else window_side(draw, length, bkv))
        kwargs["window"] = window
    ids = np.zeros(length, np.int32)
    if "documents" in parts:
        cuts = sorted(draw(st.sets(st.integers(1, max(1, length - 1)), max_size=3)))
        ids = np.repeat(np.arange(len(cuts) + 1), np.diff([0, *cuts, length])).astype(np.int32)
        kwargs["q_segment_ids"] = ids
    heads, d, dv = draw(st.integers(1, 2)), draw(st.sampled_from([4, 8])), draw(
        st.sampled_from([4, 8]))
    q, k = (arrays((heads, length, d), draw(seeds), low=-2, high=2) for _ in range(2))
    v = arrays((heads, length, dv), draw(seeds), low=-2, high=2)
    mask = _rule(every + offset, every, ids, causal, window)
    recipe = " & ".join(sorted(parts)) + (f", queries shifted by {offset}" if offset else "")
    return {"q": q, "k": k, "v": v, "kwargs": kwargs,
            "case": MaskCase(mask, bq, bkv, f"{recipe} ({describe(kwargs)})")}


def _no_mask_argument(calls: object, case: MaskCase) -> None:
    """No argument of the wrapper's pallas_calls is a bool array or the stored patterns (as
    integers); float arguments are q, k and v, whatever their shape."""
    patterns = mask_info(case.mask, case.block_q, case.block_kv)["partial_mask_blocks"]
    if not isinstance(calls, tuple | list) or not calls:
        raise Mismatch("splash_attention_computed_mask must make a pallas_call")
    for n, arguments in enumerate(calls):
        for a, (shape, dtype, values) in enumerate(arguments):
            same = (values is not None and patterns.size and np.size(values) == patterns.size
                    and np.squeeze(values).ndim >= 2 and np.array_equal(
                        np.asarray(values).reshape(patterns.shape).astype(bool), patterns))
            if dtype == "bool" or same:
                raise Mismatch("an argument of the call carries mask bits (lecture §6.6: "
                               "compute each partial tile's mask from positions and ids)",
                               input=repr(case), expected="q, k, v and per-token int32 arrays",
                               got=f"argument {a} of pallas_call {n}: {dtype}{list(shape)}"
                                   + (" = partial_mask_blocks" if same else ""))


@public_check(A, "5.6", "splash_attention_computed_mask equals dense masked attention (causal, "
                        "local, documents, their &, queries shifted after the keys) and hands "
                        "its call no mask: not partial_mask_blocks, no bool array; the lecture's "
                        "causal L 16384 / 1024 scaled by 1/8 (lecture §6.6)")
def computed_mask_values(api: Api) -> None:
    """Task 5.6: splash_attention_computed_mask equals dense masked attention (causal, local,
    documents, their &, queries shifted after the keys) and hands its call no mask: not
    partial_mask_blocks, no bool array; the lecture's causal L 16384 / 1024 scaled by 1/8
    (lecture §6.6).
    """
    def body(example: dict) -> None:
        q, k, v, case = example["q"], example["k"], example["v"], example["case"]
        fields = tuple(mask_info(case.mask, case.block_q, case.block_kv)[name]
                       for name in FIELDS)
        reply = api.kernel(HARNESS, "splash_attention_computed_mask", q, k, v, fields,
                           example["kwargs"])
        out, calls = (reply[0], reply[1]) if isinstance(reply, tuple | list) and len(
            reply) == 2 else (reply, None)
        scale = example["kwargs"].get("sm_scale", 1 / math.sqrt(q.shape[-1]))
        try:
            assert_close(out, attention(q, k, v, case.mask, scale), rtol=2e-4, atol=2e-5,
                         what="splash_attention_computed_mask's output")
        except Mismatch as failure:
            failure.input = repr(case)
            raise
        _no_mask_argument(calls, case)

    length, block = worked.LENGTH // worked.SCALE, worked.BLOCK // worked.SCALE
    every = np.arange(length, dtype=np.int32)
    causal = MaskCase(_rule(every, every, np.zeros(length, np.int32), True, None), block, block,
                      f"causal L {length}, blocks {block} (the lecture's L {worked.LENGTH} / "
                      f"{worked.BLOCK} scaled by 1/{worked.SCALE}: "
                      f"{worked.SAVED[0].patterns} stored pattern to leave in HBM)")
    body({"q": arrays((1, length, 8), 1, low=-2, high=2),
          "k": arrays((1, length, 8), 2, low=-2, high=2),
          "v": arrays((1, length, 8), 3, low=-2, high=2), "kwargs": {"causal": True},
          "case": causal})
    api.run_property(computed_cases(), body, max_examples=8)
