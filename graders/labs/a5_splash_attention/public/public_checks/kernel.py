"""Task 5.4 the Splash kernel and wrapper."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from graders.course.catalog import load_harness
from graders.student.public import (
    Api,
    Mismatch,
    arrays,
    as_float_array,
    assert_close,
    describe,
    public_check,
    seeds,
)

from .common import FIELDS, LOG2_E, A, MaskCase, attention, mask_cases, mask_info

# -- Task 5.4 ------------------------------------------------------------------------------------

@st.composite
def splash_cases(draw) -> dict:
    """q, k, v f32 [H, L, d|dv] (H 1-2, d 4/8/16, dv 4/8), a square drawn mask with blocks
    2/4/8 and its MaskInfo fields, sm_scale or None (1/sqrt(d))."""
    case = draw(mask_cases(square=True, blocks=(2, 4, 8), max_len=32))
    heads, length = draw(st.integers(1, 2)), case.mask.shape[0]
    d, dv = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8]))
    q, k = (arrays((heads, length, d), draw(seeds), low=-2, high=2) for _ in range(2))
    v = arrays((heads, length, dv), draw(seeds), low=-2, high=2)
    return {"q": q, "k": k, "v": v, "case": case,
            "sm_scale": draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))}


def _splash_fields(case: MaskCase) -> tuple:
    """MaskInfo fields as the standard call takes them: at least one stored pattern."""
    info = mask_info(case.mask, case.block_q, case.block_kv)
    if info["partial_mask_blocks"].shape[0] == 0:
        info["partial_mask_blocks"] = np.ones((1, case.block_q, case.block_kv), bool)
    return tuple(info[name] for name in FIELDS)


#: The harness the public checks run (``public_harness.py``: the student's own wrappers,
#: recorded; never the grader's standard call).
HARNESS = "a5_public"
#: The order of the six scalar-prefetch arrays (the handout's, Task 5.4).
PREFETCH_ORDER: tuple[str, ...] = load_harness(HARNESS).PREFETCH_ORDER


def _check_prefetch(recorded: object, case: MaskCase) -> None:
    """The wrapper's one pallas_call got the six MaskInfo arrays as int32 scalar-prefetch
    arguments, in the order of the task."""
    info = mask_info(case.mask, case.block_q, case.block_kv)
    if not isinstance(recorded, tuple | list) or len(recorded) != 1:
        raise Mismatch("splash_attention must make exactly one pallas_call",
                       got=f"{len(recorded) if isinstance(recorded, tuple | list) else '?'}")
    arrays_ = list(recorded[0])
    if len(arrays_) != 6:
        raise Mismatch("the call must prefetch six arrays (num_scalar_prefetch=6)",
                       expected="6", got=str(len(arrays_)))
    for n, (name, got) in enumerate(zip(PREFETCH_ORDER, arrays_, strict=True)):
        want = info[name].astype(np.int32)
        got = np.asarray(got)
        if got.dtype != np.int32 or not np.array_equal(got, want):
            raise Mismatch(f"scalar-prefetch argument {n} must be {name} as int32 (order: "
                           f"{', '.join(PREFETCH_ORDER)})", input=repr(case),
                           expected=f"int32 {want.tolist()}",
                           got=f"{got.dtype.name} {got.tolist()}")


def _splash_label(example: dict) -> str:
    shapes = ", ".join(f"{n} = f32{list(example[n].shape)}" for n in "qkv")
    return f"{shapes}, {example['case']!r}, sm_scale = {example['sm_scale']!r}"


@public_check(A, "5.4", "splash_attention (with your splash_attention_kernel) equals dense "
                        "masked attention (documents 3/5, then drawn masks); it prefetches the "
                        "six MaskInfo arrays as int32 in the task's order (lecture §6.3)")
def splash_values(api: Api) -> None:
    """Task 5.4: splash_attention (with your splash_attention_kernel) equals dense masked
    attention (documents 3/5, then drawn masks); it prefetches the six MaskInfo arrays as
    int32 in the task's order (lecture §6.3). The kernel runs in the student's own call
    (``public_harness.splash_attention``), not in the grader's standard one.
    """
    def body(example: dict) -> None:
        q, k, v, case = example["q"], example["k"], example["v"], example["case"]
        scale = 1 / math.sqrt(q.shape[-1]) if example["sm_scale"] is None \
            else example["sm_scale"]
        expected = attention(q, k, v, case.mask, scale)
        fields = _splash_fields(case)
        label = _splash_label(example)
        reply = api.kernel(HARNESS, "splash_attention", q, k, v, fields, example["sm_scale"])
        out, recorded = (reply[0], reply[1]) if isinstance(reply, tuple | list) and len(
            reply) == 3 else (reply, None)
        try:
            assert_close(out, expected, rtol=2e-4, atol=2e-5, what="splash_attention's output")
        except Mismatch as failure:
            failure.input = label
            raise
        _check_prefetch(recorded, case)

    # Document 2 starts inside q block 1: row 3 sees no key of its first active tile, which
    # is where -inf scores without care give exp(-inf - (-inf)) = NaN.
    ids = np.repeat([0, 1], [3, 5])
    documents = MaskCase(ids[:, None] == ids[None, :], 2, 2, "documents 3/5")
    body({"q": arrays((1, 8, 4), 1, low=-2, high=2), "k": arrays((1, 8, 4), 2, low=-2, high=2),
          "v": arrays((1, 8, 4), 3, low=-2, high=2), "case": documents, "sm_scale": None})
    api.run_property(splash_cases(), body, max_examples=8)



#: (rtol, atol) within which a kernel's final m must lie between its two row maxima.
MAX_TOL = (1e-4, 1e-3)


def row_maxima(q: np.ndarray, k: np.ndarray, mask: np.ndarray, scale: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """float64 [H, L] row maxima of the scaled scores q·kᵀ·scale over the visible keys
    (``mask`` bool [L, L]) and over all keys: a running maximum taken after the mask is the
    first, one taken before it at most the second; both give the softmax (lecture §5.1)."""
    s = np.einsum("hid,hjd->hij", q.astype(np.float64), k.astype(np.float64)) * scale
    return np.where(mask, s, -np.inf).max(axis=-1), s.max(axis=-1)


def between(m: np.ndarray, low: np.ndarray, high: np.ndarray) -> bool:
    """Whether ``m`` has ``low``'s shape and lies in [low, high] within ``MAX_TOL``."""
    rtol, atol = MAX_TOL
    if np.shape(m) != np.shape(low):
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all((m >= low - atol - rtol * np.abs(low))
                           & (m <= high + atol + rtol * np.abs(high))))


def _base2_max(m: object, q: np.ndarray, k: np.ndarray, mask: np.ndarray, scale: float,
               label: str) -> None:
    """The kernel's final m ([H, L]) is in base-2 units: log2(e) times a row maximum of
    ``row_maxima`` (lecture §6.6)."""
    masked, unmasked = row_maxima(q, k, mask, scale)
    got = as_float_array(m, "the final m")
    if not between(got, masked * LOG2_E, unmasked * LOG2_E):
        raise Mismatch("with use_base2_exp=True the final m is not the row maximum in base-2 "
                       "units (log2(e) times the largest visible scaled score)", input=label,
                       expected=describe(masked * LOG2_E), got=describe(got))


@public_check(A, "5.4", "use_base2_exp=True: splash_attention still equals dense masked "
                        "attention and its kernel's final m is in base-2 units (scores "
                        "pre-scaled by log2(e), exp2; lecture §6.6)")
def splash_base2(api: Api) -> None:
    """Task 5.4: use_base2_exp=True: splash_attention still equals dense masked attention and
    its kernel's final m (read by ``public_harness.splash_attention`` at each q row's last
    tile) is in base-2 units (scores pre-scaled by log2(e), exp2; lecture §6.6).
    """
    def body(example: dict) -> None:
        q, k, v, case = example["q"], example["k"], example["v"], example["case"]
        scale = 1 / math.sqrt(q.shape[-1]) if example["sm_scale"] is None \
            else example["sm_scale"]
        expected = attention(q, k, v, case.mask, scale)
        fields = _splash_fields(case)
        reply = api.kernel(HARNESS, "splash_attention", q, k, v, fields, example["sm_scale"],
                           use_base2_exp=True)
        out, m = (reply[0], reply[2]) if isinstance(reply, tuple | list) and len(
            reply) == 3 else (reply, None)
        try:
            assert_close(out, expected, rtol=2e-4, atol=2e-5,
                         what="splash_attention's output with use_base2_exp=True")
        except Mismatch as failure:
            failure.input = _splash_label(example)
            raise
        _base2_max(m, q, k, case.mask, scale, _splash_label(example))
    api.run_property(splash_cases(), body, max_examples=3)
