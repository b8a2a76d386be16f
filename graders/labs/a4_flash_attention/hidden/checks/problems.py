"""shared by Tasks 4.3 and 4.4: drawn attention problems, modelled mistakes (no checks)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import reference.a4_flash_attention as ref
import reference.dense_attention as dense
from graders.checking.compare import as_array, assert_close, fmt_array, kernel_mismatch
from graders.checking.framework import CheckFailure, describe_value, run_property
from graders.checking.strategies import seeds
from graders.labs.a4_flash_attention.hidden.diagnose import ATTENTION_TOL, diagnose_output

from .common import F32, _without_nan_guess

# --- shared by Tasks 4.3 and 4.4: drawn attention problems -----------------------------------

BF16 = np.dtype(ml_dtypes.bfloat16)
#: (rtol, atol) for attention outputs (|v| <= 4): f32 inputs keep ~1e-6 relative error through
#: the f32 sums; bf16 inputs leave room for p cast to bf16 before p @ v, as TPU kernels do.
#: Margin (in units of the exponent) kept inside the safe MLE range when the grader picks a
#: constant: exp(s - c) summed over L keys and multiplied by |v| <= 4 must stay finite too.
MLE_MARGIN = 4.0
#: (Hkv, H / Hkv) pairs drawn: no GQA, one kv head for all, and 1 < Hkv < H with H / Hkv
#: different from Hkv (6 = 2 x 3, 3 x 2), where h // (H // Hkv), h // Hkv and h % Hkv differ.
HEAD_GROUPS = [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 3), (3, 2)]
#: Block sizes drawn for block_q and block_kv: the handout asks only that they divide L, and
#: with even sizes kv_block·block_kv (even) never equals (q_block + 1)·block_q - 1 (odd), so
#: a skip test off by one at that boundary would go unseen without the odd ones.
BLOCKS = [8, 16, 32, 3, 5]
#: The "high" construction (Task 4.3, base 2 with MLE): every score is about
#: 2.375 · 12 · 12 = 342 (the other features as in "deep", so scores stay exact), and the
#: constant is just above the largest score. A base-2 kernel that subtracts that constant
#: in natural units computes exp2(342 · log2(e) - 343) = 2^150: float32 overflows.
HIGH_FEATURE, HIGH_SCALE = 12.0, 2.375
#: The "deep" construction (lecture §5.4's float32 limits): the even query rows score about
#: 0.875 · (-12 · 12) = -126 against every key, below ln(f32 tiny) = -87.3 and even below
#: -103.97, where float32 exp(s) is exactly 0; the odd rows score within about ±8. The
#: other features are multiples of 1/16 in [-0.5, 0.5], so every score is exact in float32
#: (a multiple of 2^-11 below 2^8) and the check measures the kernel, not rounding.
DEEP_FEATURE, DEEP_SCALE = 12.0, 0.875
#: A Max-Logit-Estimate constant far above every score (|s| < 60 in these draws): exp(s - c)
#: is exactly 0 for every key even in float64, so a kernel that subtracts it gets l = 0.
FAR_CONSTANT = 800.0


@dataclasses.dataclass(frozen=True)
class AttentionCase:
    """One drawn attention problem: q [H, L, d], k [Hkv, L, d], v [Hkv, L, dv] and the
    keyword arguments of the kernel (``kwargs``; ``sm_scale`` always set) or of the
    wrapper (``wrapper_kwargs``; ``sm_scale`` None means "use the default").
    ``deep``: q and k follow the deep construction (``DEEP_FEATURE``): "all", every score
    of the even query rows is far below -87; "first-tile", only their scores against the
    first kv tile are (the other keys score near 0); "high", every score is near 342
    (``HIGH_FEATURE``); "" for plain uniform draws."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    sm_scale: float | None
    causal: bool
    block_q: int
    block_kv: int
    soft_cap: float | None
    max_logit_const: float | None
    seed: int
    deep: str = ""

    @property
    def scale(self) -> float:
        """The scale actually applied: sm_scale, or 1/sqrt(d) by default."""
        return 1.0 / math.sqrt(self.q.shape[-1]) if self.sm_scale is None else self.sm_scale

    @property
    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (self.q, self.k, self.v)

    @property
    def kwargs(self) -> dict[str, object]:
        return {"sm_scale": self.scale, "causal": self.causal, "block_q": self.block_q,
                "block_kv": self.block_kv, "soft_cap": self.soft_cap,
                "max_logit_const": self.max_logit_const}

    @property
    def wrapper_kwargs(self) -> dict[str, object]:
        return {"causal": self.causal, "sm_scale": self.sm_scale, "block_q": self.block_q,
                "block_kv": self.block_kv, "soft_cap": self.soft_cap,
                "max_logit_const": self.max_logit_const}

    def scores(self) -> np.ndarray:
        """float64 [H, L, L] scaled, capped, masked scores (dense reference)."""
        return dense.attention_scores(self.q, self.k, sm_scale=self.scale, causal=self.causal,
                                      soft_cap=self.soft_cap)

    def expected(self) -> np.ndarray:
        """float64 [H, L, dv]: dense attention, the value every check compares with."""
        return dense.dense_attention(self.q, self.k, self.v, sm_scale=self.scale,
                                     causal=self.causal, soft_cap=self.soft_cap)

    def __repr__(self) -> str:
        keys = {"all": f"k[..., 0] = {DEEP_FEATURE:g}",
                "first-tile": f"k[:, :block_kv, 0] = {DEEP_FEATURE:g}; k[:, block_kv:, 0] = 0"}
        where = {"all": "every score of the even query rows is below -100",
                 "first-tile": "the even query rows score below -100 against the first kv "
                               "tile, near 0 against the others"}
        rounded = ("q, k, v = rng.uniform(-4, 4, shape) in that order; q = np.round(2 * q) / "
                   "16; k = np.round(2 * k) / 16")
        if not self.deep:
            made = "q, k, v = rng.uniform(-4, 4, shape) in that order, cast to the dtype"
        elif self.deep == "high":
            made = (f"{rounded}; q[..., 0] = k[..., 0] = {HIGH_FEATURE:g} (every score near "
                    f"{HIGH_SCALE:g} · {HIGH_FEATURE * HIGH_FEATURE:g}); cast to the dtype")
        else:
            made = (f"{rounded}; {keys[self.deep]}; q[:, ::2, 0] = -{DEEP_FEATURE:g} "
                    f"({where[self.deep]}); cast to the dtype")
        parts = [f"q = {fmt_array(self.q)}, k = {fmt_array(self.k)}, v = {fmt_array(self.v)}"
                 f" (rng = np.random.default_rng({self.seed}); {made})",
                 f"sm_scale = {'None (1/sqrt(d))' if self.sm_scale is None else self.sm_scale}",
                 f"causal = {self.causal}", f"block_q = {self.block_q}",
                 f"block_kv = {self.block_kv}"]
        if self.soft_cap is not None:
            parts.append(f"soft_cap = {self.soft_cap}")
        if self.max_logit_const is not None:
            parts.append(f"max_logit_const = {self.max_logit_const}")
        return ", ".join(parts)


def _safe_constant(scores: np.ndarray, length: int, frac: float) -> float | None:
    """A constant inside the safe MLE range of ``scores`` (with margins), or None."""
    low, high = ref.mle_safe_range(*dense.score_extremes(scores))
    low += math.log(4.0 * length) + MLE_MARGIN
    high -= MLE_MARGIN
    if not low < high:
        return None
    return round(low + frac * (high - low), 2)


#: Flavors of ``attention_cases``: "plain"; with ``options``: "mle" (large logits, a constant
#: from the safe range), "cap", "cap+mle", "large" (large logits, running max), "deep+mle"
#: (no mask; the even rows' first kv tile far below the rest, a constant from the safe range:
#: every exp(s - c) of that tile is 0 for those rows); and the single-purpose "deep" (rows
#: far below -87), "small-cap" (caps 1, 2, 5) and "far-constant" (max_logit_const =
#: FAR_CONSTANT); and "high+mle" (every score near 342, a constant 1 above the largest:
#: ``HIGH_FEATURE``).
OPTION_FLAVORS = ("mle", "cap", "cap+mle", "large", "deep+mle")


@st.composite
def attention_cases(draw, *, causal: bool | None = None, options: bool = False,
                    min_q_blocks: int = 1, default_scale: bool = False,
                    flavor: str | None = None) -> AttentionCase:
    """Drawn attention problems (Tasks 4.3/4.4).

    H 1-6 with a drawn GQA group (``HEAD_GROUPS``), blocks from ``BLOCKS`` (odd ones
    too: the handout asks only that they divide L), L a multiple of both
    blocks (two or more blocks per axis in many draws, at least ``min_q_blocks`` q
    blocks), d and dv 8-128, f32 or bf16, ``causal`` drawn unless given. ``options``
    also draws large logits, a soft cap and a Max-Logit-Estimate constant chosen inside
    the safe range of the drawn scores (None when there is none); ``flavor`` fixes one
    flavor instead (see ``OPTION_FLAVORS``). ``default_scale`` lets sm_scale be None
    (the wrapper's default).
    """
    if flavor is None:
        flavor = draw(st.sampled_from(OPTION_FLAVORS if options else ("plain",)))
    kv_heads, group = draw(st.sampled_from(HEAD_GROUPS))
    heads = kv_heads * group
    block_q = draw(st.sampled_from(BLOCKS))
    block_kv = draw(st.sampled_from(BLOCKS))
    unit = math.lcm(block_q, block_kv)
    least = max(1, -(-min_q_blocks * block_q // unit))
    if flavor == "deep+mle":  # a first kv tile and at least one more
        least = max(least, -(-2 * block_kv // unit))
    most = max(least, min(4, 128 // unit))
    length = unit * draw(st.integers(least, most))
    d, dv = draw(st.integers(8, 128)), draw(st.integers(8, 128))
    dtype = draw(st.sampled_from([F32, BF16]))
    is_causal = draw(st.booleans()) if causal is None else causal
    if flavor == "deep+mle":
        is_causal = False  # a causal row 0 would see only the deep tile
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-4, 4, (heads, length, d))
    k = rng.uniform(-4, 4, (kv_heads, length, d))
    v = rng.uniform(-4, 4, (kv_heads, length, dv)).astype(dtype)
    deep = {"deep": "all", "deep+mle": "first-tile", "high+mle": "high"}.get(flavor, "")
    if deep:
        q, k = np.round(2 * q) / 16, np.round(2 * k) / 16
    if deep == "high":
        q[..., 0], k[..., 0] = HIGH_FEATURE, HIGH_FEATURE
    elif deep:
        k[..., 0] = DEEP_FEATURE
        if deep == "first-tile":
            k[:, block_kv:, 0] = 0.0
        q[:, ::2, 0] = -DEEP_FEATURE
    q, k = q.astype(dtype), k.astype(dtype)
    large = flavor in ("mle", "large")
    logit_scale = 10.0 if large else draw(st.sampled_from([1.0, 0.25, 2.0]))
    sm_scale: float | None = (HIGH_SCALE if deep == "high" else DEEP_SCALE if deep
                              else round(logit_scale / math.sqrt(d), 6))
    if default_scale and logit_scale == 1.0 and not deep and draw(st.booleans()):
        sm_scale = None
    case = AttentionCase(q, k, v, sm_scale, is_causal, block_q, block_kv, None, None, seed,
                         deep)
    if flavor.startswith("cap"):
        case = dataclasses.replace(case, soft_cap=draw(st.sampled_from([20.0, 5.0, 50.0])))
    if flavor == "small-cap":
        case = dataclasses.replace(case, soft_cap=draw(st.sampled_from([1.0, 5.0, 2.0])))
    if flavor == "high+mle":  # an upper bound of the logits, inside the safe range
        case = dataclasses.replace(case, max_logit_const=round(
            float(np.max(case.scores())) + 1.0, 1))
    elif flavor.endswith("mle"):
        frac = draw(st.sampled_from([0.5, 0.1, 0.9, 0.3]))
        case = dataclasses.replace(
            case, max_logit_const=_safe_constant(case.scores(), length, frac))
    if flavor == "far-constant":
        case = dataclasses.replace(case, max_logit_const=FAR_CONSTANT)
    return case


# --- modelled mistakes: a "looks like" is shown only when the output matches one -------------



def _check_attention(got: object, case: AttentionCase, what: str, *,
                     kernel_out: object = None, wrapper: bool = False) -> None:
    """``got`` must equal dense float64 attention within the input dtype's tolerance; a
    wrapper's result must equal ``kernel_out`` (what the student's own kernel computes in
    the grader's standard call: one fault, one charge). The failure carries no
    diagnosis: ``_attention_property`` finds one for the shrunk example only."""
    tol = ATTENTION_TOL[case.q.dtype.name]
    if wrapper:
        arr = as_array(got, what)
        if arr.dtype != F32:
            raise CheckFailure("flash_attention must return float32 [H, L, dv] (its "
                               "docstring), whatever the input dtype", expected="float32",
                               got=arr.dtype.name,
                               hint="out_shape=jax.ShapeDtypeStruct((H, L, dv), jnp.float32), "
                                    "and return what pl.pallas_call returns")
        try:
            assert_close(got, np.asarray(kernel_out, np.float64), *tol, what=what,
                         same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "flash_attention", "flash_attention_kernel") \
                from None
        return
    assert_close(got, case.expected(), *tol, what=what)


def _attention_property(strategy: st.SearchStrategy,
                        body: Callable[[AttentionCase, dict[str, object]], None],
                        *, max_examples: int, wrapper: bool = False) -> None:
    """``run_property`` over attention cases. ``body(case, seen)`` stores what it compares in
    ``seen["output"]`` before comparing. The "looks like" of a failure is computed once,
    for the shrunk example hypothesis reports (each modelled mistake is an emulation of the
    kernel; ``emulate``), and only for a wrong value, not a wrong type or dtype."""
    seen: dict[str, object] = {}

    def run(case: AttentionCase) -> None:
        seen.clear()
        seen["case"] = case
        body(case, seen)

    try:
        run_property(strategy, run, max_examples=max_examples)
    except CheckFailure as failure:
        case = seen.get("case")
        if (failure.diagnosis is None and failure.status == "failed"
                and (" is wrong in " in failure.what or "differs from what your" in failure.what)
                and isinstance(case, AttentionCase) and failure.input == describe_value(case)):
            failure.diagnosis = diagnose_output(seen.get("output"), case, wrapper)
            if failure.diagnosis is not None:
                failure.what = _without_nan_guess(failure.what)
        raise

