"""Known-mistake models of a4_flash_attention (lecture §5): what each plausible mistake
computes on a given input, and the diagnosis it earns.

A hidden check names a mistake only when the model reproduces the student's result on the
failing input (docs/style.md: a shown diagnosis is verified, not guessed): online-softmax
traces with one rule left out, kernels with one mistake emulated on the drawn case, the
safe-range and traffic formulas with a term wrong.

The drawn cases (``AttentionCase``, ``MaskedSoftmaxCase``) are the records of ``checks.py``; they
are typed ``Any`` here so that this module does not import the checks that import it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import reference.a4_flash_attention as ref
import reference.dense_attention as dense
from graders.checking.strategies import BF16, F32

#: The default of ``emulate``'s ``constant``: the case's own max_logit_const.
_UNSET = object()
#: (rtol, atol) of the attention output per input dtype.
ATTENTION_TOL = {F32.name: (1e-4, 1e-4), BF16.name: (2e-2, 3e-2)}

def trace_without_rescale(x: np.ndarray, block: int) -> list:
    """The trace of the classic mistake: l += Σ exp(block − m_new) with no exp(m_old − m_new)
    (-inf entries handled as the handout asks: 0 is subtracted while m is -inf)."""
    x = x.astype(np.float64)
    m = np.full(x.shape[:-1], -np.inf)
    l = np.zeros(x.shape[:-1])
    out = []
    for start in range(0, x.shape[-1], block):
        blk = x[..., start:start + block]
        m = np.maximum(m, blk.max(axis=-1))
        pivot = np.where(np.isneginf(m), 0.0, m)
        l = l + np.exp(blk - pivot[..., None]).sum(axis=-1)
        out.append((m.copy(), l.copy()))
    return out


def close_to(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether ``a`` and ``b`` are equal within (rtol, atol) as float64 (False when they
    cannot be compared)."""
    try:
        return np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                           atol=atol)
    except (TypeError, ValueError):
        return False


def diagnose_trace(got: list, x: np.ndarray, block: int) -> str | None:
    """Name the known mistake the trace matches, if any."""
    mistake = trace_without_rescale(x, block)
    if all(close_to(g[1], m[1], 1e-4, 1e-6) for g, m in zip(got, mistake, strict=True)):
        return "l is not rescaled by exp(m_old - m_new) when the maximum grows (lecture §5.1)"
    return None


def naive_softmax(x: np.ndarray, block: int) -> tuple[np.ndarray, list]:
    """float64 online softmax that subtracts m_new even when it is -inf (the unguarded
    update): exp(-inf - (-inf)) = NaN poisons a row whose first block is all -inf."""
    x = np.asarray(x, np.float64)
    m = np.full(x.shape[:-1], -np.inf)
    l_sum = np.zeros(x.shape[:-1])
    trace = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for start in range(0, x.shape[-1], block):
            blk = x[..., start:start + block]
            m_new = np.maximum(m, blk.max(axis=-1))
            l_sum = l_sum * np.exp(m - m_new) + np.exp(blk - m_new[..., None]).sum(axis=-1)
            m = m_new
            trace.append((m.copy(), l_sum.copy()))
        probs = np.exp(x - m[..., None]) / l_sum[..., None]
    return probs, trace


def same_values(got: object, model: np.ndarray, rtol: float, atol: float) -> bool:
    """True when ``got`` equals ``model`` within the tolerance where the model is finite and
    holds the same non-finite value (NaN, or an infinity of the same sign) where it is not."""
    try:
        g = np.asarray(got, np.float64)
    except (TypeError, ValueError):
        return False
    model = np.asarray(model, np.float64)
    if g.shape != model.shape:
        return False
    finite = np.isfinite(model)
    if not (np.array_equal(np.isnan(g), np.isnan(model))
            and np.array_equal(np.isfinite(g), finite)
            and np.array_equal(g[np.isinf(model)], model[np.isinf(model)])):
        return False
    return bool((np.abs(g[finite] - model[finite]) <= atol + rtol * np.abs(model[finite])).all())


def diagnose_masked(probs: np.ndarray, trace: list, case: Any) -> str | None:
    """The masked-row mistake the reply matches on this input, if any (verified)."""
    x, block = case.args
    naive_probs, naive_trace = naive_softmax(x, block)
    if all(same_values(g, e, 1e-4, 1e-6) for got, want in zip(trace, naive_trace, strict=True)
           for g, e in zip(got, want, strict=True)):
        return ("exp(-inf - (-inf)) is NaN: while every entry a row has shown is -inf, m_new is "
                "-inf and the update subtracts it from -inf (in exp(m - m_new) and "
                "exp(block - m_new)). Subtract 0 in its place: the row keeps the empty state "
                "m = -inf, l = 0 (handout, Task 4.1 'Masked entries'; lecture §5.1)")
    want_probs, want_trace = ref.online_softmax(x, block)
    all_masked = np.all(np.isneginf(np.asarray(x, np.float64)), axis=-1)
    if all_masked.any():
        model = np.where(all_masked[..., None], np.nan, want_probs)
        if same_values(probs, model, 1e-4, 1e-7):
            return ("the rows whose entries are all -inf come out NaN: there m = -inf and "
                    "l = 0, so exp(x - m) / l is 0 / 0. Such a row has no softmax, and the "
                    "contract gives it probabilities 0 (handout, Task 4.1 'Masked entries')")
    return None


#: The finite stand-in for -inf that students use for masked scores (jnp.finfo(f32).min
#: behaves the same in these models: exp of it minus anything finite is 0).
FINITE_MASK = -1e30


def emulate(case: Any, *, mask: str | None = None, skip: bool | None = None,
             m0: float | None = None, constant: object = _UNSET, rescale_l: bool = True,
             rescale_acc: bool = True, cap: str = "before-mask", sm_scale: float | None = None,
             renormalize: bool = False, write_in_update: bool = False,
             kv_head: np.ndarray | None = None, mask_value: float = -np.inf,
             skip_strict: bool = False) -> np.ndarray:
    """float64 [H, L, dv]: what a float32 Flash kernel with one modelled mistake outputs.

    The kernel is the handout's, step by step over the kv tiles in float32, with NaN
    arising where it would (exp(-inf - (-inf)), 0 / 0) and rows never written left NaN
    (the simulator's poison). The knobs, each a mistake when changed:
    ``mask`` "causal" | "none" | "flipped" (key < query hidden) | "diagonal" (key >= query)
    | "plus-one" (key > query + 1), default from ``case.causal``; ``skip``: fully masked
    causal tiles do no work (default ``case.causal``); ``m0``: the initial m without a
    constant (default -inf); ``constant``: the constant used as m (default the case's
    max_logit_const; None: the running max); ``rescale_l``/``rescale_acc``: alpha applied;
    ``cap``: "before-mask" (right), "after-mask", "before-scale", "none";
    ``sm_scale``: the scale applied; ``renormalize``: acc kept divided by l at every step;
    ``write_in_update``: the final division inside the causal pl.when; ``kv_head``: the
    kv head each query head reads (default h // (H // Hkv)); ``mask_value``: what a
    masked score becomes (-inf, or a finite stand-in such as -1e30, which changes what a
    row with no visible key in a tile computes, not what a right mask computes);
    ``skip_strict``: the skip test is off by one (``<`` for ``<=``), so a tile whose first
    key is the q block's last query is skipped too (only with ``skip``).
    """
    f32 = np.float32
    heads, length, _ = case.q.shape
    kv = dense.kv_head_of(heads, case.k.shape[0]) if kv_head is None else kv_head
    q = case.q.astype(f32)
    k = case.k.astype(f32)[kv]
    v = case.v.astype(f32)[kv]
    mask = ("causal" if case.causal else "none") if mask is None else mask
    skip = case.causal if skip is None else skip
    const = case.max_logit_const if constant is _UNSET else constant
    scale = f32(case.scale if sm_scale is None else sm_scale)
    soft_cap = None if case.soft_cap is None or cap == "none" else f32(case.soft_cap)
    rows = np.arange(length)[:, None]
    cols = np.arange(length)[None, :]
    hidden = {"none": np.zeros((length, length), bool), "causal": cols > rows,
              "flipped": cols < rows, "diagonal": cols >= rows, "plus-one": cols > rows + 1}[mask]
    q_end = (np.arange(length) // case.block_q + 1) * case.block_q - 1       # [L]
    with np.errstate(all="ignore"):
        s = np.matmul(q, k.transpose(0, 2, 1))
        if soft_cap is not None and cap == "before-scale":
            s = soft_cap * np.tanh(s / soft_cap)
        s = s * scale
        if soft_cap is not None and cap == "before-mask":
            s = soft_cap * np.tanh(s / soft_cap)
        s = np.where(hidden, f32(mask_value), s).astype(f32)
        if soft_cap is not None and cap == "after-mask":
            s = soft_cap * np.tanh(s / soft_cap)
        start = -np.inf if const is None and m0 is None else (m0 if const is None else const)
        m = np.full((heads, length, 1), start, f32)
        l_sum = np.zeros((heads, length, 1), f32)
        acc = np.zeros((heads, length, v.shape[-1]), f32)
        n_kv = length // case.block_kv
        for j in range(n_kv):
            cut = slice(j * case.block_kv, (j + 1) * case.block_kv)
            if not skip:
                work = np.ones(length, bool)
            elif skip_strict:
                work = j * case.block_kv < q_end
            else:
                work = j * case.block_kv <= q_end
            tile = s[:, :, cut]
            if const is None:
                m_new = np.maximum(m, tile.max(axis=-1, keepdims=True))
                alpha = np.exp(m - m_new)
            else:
                m_new, alpha = m, np.ones_like(m)
            p = np.exp(tile - m_new)
            l_new = (alpha if rescale_l else f32(1)) * l_sum + p.sum(axis=-1, keepdims=True)
            pv = np.matmul(p, v[:, cut])
            if renormalize:
                acc_new = (alpha * l_sum * acc + pv) / l_new
            else:
                acc_new = (alpha if rescale_acc else f32(1)) * acc + pv
            keep = work[None, :, None]
            m, l_sum, acc = (np.where(keep, m_new, m), np.where(keep, l_new, l_sum),
                             np.where(keep, acc_new, acc))
        out = acc if renormalize else acc / l_sum
        if write_in_update:
            never = (n_kv - 1) * case.block_kv > q_end if skip else np.zeros(length, bool)
            out = np.where(never[None, :, None], np.nan, out)
    return out.astype(np.float64)


def mle_range_note(case: Any) -> str:
    """Why the case's max_logit_const is safe: the score extremes and the safe range."""
    max_logit, min_row_max = dense.score_extremes(case.scores())
    low, high = ref.mle_safe_range(max_logit, min_row_max)
    return (f"for these scores (largest {max_logit:.4g}, smallest row maximum "
            f"{min_row_max:.4g}) mle_safe_range gives ({low:.4g}, {high:.4g}), and the grader "
            f"passed max_logit_const = {case.max_logit_const}, inside it")


def matches_model(got: np.ndarray, model: np.ndarray, tol: tuple[float, float]) -> bool:
    """True when ``got`` is the modelled output: NaN and infinities in the same places,
    finite values within twice ``tol`` (the check's tolerance against exact attention:
    the kernel and the float32 model each carry their own rounding, so they may differ by
    up to twice that; a modelled mistake is off by far more)."""
    return same_values(got, model, 2 * tol[0], 2 * tol[1])


def kernel_models(case: Any) -> list[tuple[dict, str]]:
    """(emulator knobs, diagnosis) of the kernel mistakes that apply to this case, most
    specific first (lecture §5.2 kernel body, §5.4 soft cap and MLE)."""
    models: list[tuple[dict, str]] = []
    const = case.max_logit_const
    if const is None:
        which = " (here the even query rows)" if case.deep else ""
        models.append(({"m0": 0.0}, (
            f"m starts at 0 instead of -inf: in the rows whose scores all lie below about "
            f"-87{which}, exp(s - 0) underflows float32 to 0 for every key, so l = 0 and the "
            "row is 0 / 0 = NaN. Initialize m to -inf at kv block 0 (lecture §5.2; float32 "
            "exp limits §5.4)")))
    if case.causal:
        models += [
            ({"mask": "flipped"}, (
                "the causal mask is flipped: it hides the keys before the query (key < query) "
                "and shows those after it; mask key position > query position (lecture "
                "§5.2)")),
            ({"mask": "diagonal"}, (
                "causal mask off by one: the diagonal is masked too (a query must see its own "
                "key: mask key > query, not key >= query); query 0 then sees no key at all "
                "(lecture §5.2)")),
            ({"mask": "plus-one"}, (
                "causal mask off by one: one key past the diagonal is visible (mask key > "
                "query, not key > query + 1) (lecture §5.2)")),
            ({"mask": "none"}, (
                "only whole tiles are skipped: inside a tile on the diagonal the keys after "
                "the query are not masked; skipping fully masked tiles saves work, the "
                "mask inside the others is still needed (lecture §5.2)")),
            ({"mask": "none", "skip": False}, "the causal mask is not applied (causal=True "
                                              "was ignored)"),
            ({"skip_strict": True}, (
                "the skip test is off by one: the kernel skips a kv tile whose first key is "
                "the q block's last query (kv_block·block_kv == (q_block + 1)·block_q - 1), "
                "where that query still sees its own key; skip only when kv_block·block_kv > "
                "(q_block + 1)·block_q - 1 (with even block sizes the two never differ; the "
                "handout allows any block size that divides L) (lecture §5.2)")),
            ({"write_in_update": True}, (
                "NaN exactly in the q blocks whose LAST kv tile is fully masked: the output is "
                "written inside the causal pl.when, so for these blocks it is never written. "
                "Do the final acc / l in its own pl.when(kv block == last) (lecture §5.2)")),
        ]
    else:
        models.append(({"mask": "causal", "skip": False},
                       "a causal mask was applied although causal=False"))
    if const is None:
        models += [
            ({"rescale_l": False, "rescale_acc": False}, (
                "the rescale exp(m_prev - m_new) is missing: when a later kv block raises the "
                "row maximum, l and acc must be multiplied by alpha = exp(m_prev - m_new) "
                "before the new block is added (lecture §5.2)")),
            ({"rescale_acc": False}, (
                "the rescale exp(m_prev - m_new) is applied to l but not to acc: acc was "
                "accumulated relative to the old maximum and must be multiplied by alpha too "
                "(lecture §5.2)")),
            ({"rescale_l": False}, "the rescale exp(m_prev - m_new) is applied to acc but not "
                                   "to l (lecture §5.2)"),
        ]
    if case.soft_cap is not None:
        if case.causal:
            models.append(({"cap": "after-mask"}, (
                f"soft_cap is applied after the causal mask: cap·tanh(-inf / cap) = -cap, so "
                f"every masked key gets the finite score -{case.soft_cap:g} and a weight. Cap "
                "the scaled scores first, then set the masked ones to -inf (lecture §5.2, "
                "§5.4)")))
        models += [
            ({"cap": "none"}, "soft_cap is ignored: scaled scores must become cap·tanh(s / cap) "
                              "(lecture §5.4)"),
            ({"cap": "before-scale"}, (
                "soft_cap is applied to q·kᵀ before sm_scale: the cap bounds the scaled "
                "score, s = cap·tanh((q·kᵀ · sm_scale) / cap) (lecture §5.4)")),
        ]
    models += [
        ({"sm_scale": 1.0}, "the scores are not multiplied by sm_scale"),
        ({"sm_scale": case.scale ** 2}, "sm_scale is applied twice"),
    ]
    if const is not None:
        models += [
            ({"constant": 0.0}, (
                "exp(s - c) overflowed: your kernel subtracts 0 instead of max_logit_const = "
                f"{const}; {mle_range_note(case)}, while 0 is outside it. Subtract exactly "
                "that constant from the scaled (and capped) scores, use it as m from kv block 0 "
                "on, and do not rescale (Task 4.5, lecture §5.4)")),
            ({"renormalize": True}, (
                "0 / 0 under max_logit_const: acc is divided by l at every kv step (kept "
                "normalized). With a constant c a whole kv tile can lie so far below c for "
                "some row that every exp(s - c) there is 0: l is still 0 after it, and "
                f"dividing by it gives NaN for good ({mle_range_note(case)}, so the deferred "
                "division of the handout is exact). Keep acc unnormalized and divide once, "
                "at the last kv block (lecture §5.2, §5.4)")),
        ]
    return models


def diagnose_kernel(got: np.ndarray, case: Any, tol: tuple[float, float]
                     ) -> str | None:
    """The modelled kernel mistake the output matches on this case, if any."""
    for knobs, text in kernel_models(case):
        # A causal mistake is modelled with -inf and with -1e30 as the masked score: the two
        # differ exactly where the mistake leaves a row no visible key.
        values = (-np.inf, FINITE_MASK) if "mask" in knobs or "write_in_update" in knobs else (
            -np.inf,)
        if any(matches_model(got, emulate(case, **knobs, mask_value=value), tol)
               for value in values):
            return text
    if np.isnan(got).all():
        return ("every output is NaN: m, l and acc are never initialized (the scratch buffers "
                "start as NaN in the simulator), or they are read before kv block 0 sets them; "
                "initialize them in pl.when(pl.program_id(2) == 0) (lecture §5.2)")
    return None


def diagnose_wrapper(got: np.ndarray, case: Any, tol: tuple[float, float]
                      ) -> str | None:
    """The modelled wrapper mistake (around a correct kernel) the result matches, if any."""
    if case.sm_scale is None and matches_model(got, emulate(case, sm_scale=1.0), tol):
        return "sm_scale=None must default to 1/sqrt(d), not 1"
    heads, kv_heads = case.q.shape[0], case.k.shape[0]
    wanted = dense.kv_head_of(heads, kv_heads)
    for name, mapping in (("h % Hkv", np.arange(heads) % kv_heads),
                          ("h // Hkv", np.arange(heads) // kv_heads)):
        if (np.all(mapping < kv_heads) and not np.array_equal(mapping, wanted)
                and matches_model(got, emulate(case, kv_head=mapping), tol)):
            return (f"query head h reads kv head {name}; with grouped-query attention it must "
                    "read kv head h // (H // Hkv): consecutive query heads share one kv head "
                    "(lecture §5.2)")
    return None


#: The diagnosis of a base-2 kernel that subtracts the natural-unit max_logit_const.
BASE2_CONSTANT_NATURAL = (
    "under use_base2_exp the constant is not converted to base-2 units: the scores are "
    "multiplied by log2(e) but max_logit_const c is subtracted as it is, so p = "
    "exp2(s·log2(e) - c) = exp(s - c·ln 2), which overflows float32 once s·log2(e) - c "
    "passes 128 (here the scores are near {top:.4g}). Keep m in base-2 units from kv block "
    "0 on: m = c·log2(e) (lecture §5.4, §6.6)")


def diagnose_base2_constant(got: object, case: Any) -> str | None:
    """``BASE2_CONSTANT_NATURAL`` when ``got`` is what a base-2 kernel computes with the
    constant left in natural units on this case: exp2(s·log2 e - c) = exp(s - c·ln 2), i.e.
    the natural-unit kernel with the constant c·ln 2 (``emulate``), NaN where it overflows;
    None otherwise (and for a case without a constant)."""
    const = case.max_logit_const
    if const is None or not isinstance(got, np.ndarray) or got.dtype.kind != "f":
        return None
    model = emulate(case, constant=const * math.log(2.0))
    if got.shape != model.shape or not np.isnan(model).any():
        return None
    if matches_model(got.astype(np.float64), model, ATTENTION_TOL[case.q.dtype.name]):
        top = float(np.nanmax(case.scores()))
        return BASE2_CONSTANT_NATURAL.format(top=top)
    return None


def diagnose_output(got: object, case: Any, wrapper: bool) -> str | None:
    """The modelled mistake ``got`` matches (``diagnose_wrapper`` or ``diagnose_kernel``)."""
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "fV":
        return None
    arr = got.astype(np.float64)
    if arr.shape != case.expected().shape:
        return None
    tol = ATTENTION_TOL[case.q.dtype.name]
    return diagnose_wrapper(arr, case, tol) if wrapper else diagnose_kernel(arr, case, tol)


def diagnose_kv_heads(query_head: np.ndarray, kv_head: np.ndarray, kv_heads: int) -> str:
    """Only the kv head index is wrong (verified by the caller): name the mapping used when
    it is a known one (h % Hkv, h // Hkv, h), else state the rule."""
    rule = ("with grouped-query attention query head h must read kv head h // (H // Hkv): "
            "consecutive query heads share one kv head (lecture §5.2)")
    for label, mapping in (("h % Hkv", query_head % kv_heads),
                           ("h // Hkv", query_head // kv_heads), ("h", query_head)):
        if np.array_equal(kv_head, mapping):
            return f"query head h reads kv head {label}; {rule}"
    return f"the kv head index is wrong; {rule}"


def diagnose_range(got: tuple[float, float], max_logit: float, min_row_max: float) -> str | None:
    """The known mle_safe_range mistake that gives ``got`` (low, high) for these score
    extremes (ln of f32 max and smallest normal swapped or misused), else None."""
    ln_max = float(np.log(np.finfo(np.float32).max))
    ln_tiny = float(np.log(np.finfo(np.float32).tiny))
    if math.isclose(got[1], min_row_max + ln_max, rel_tol=1e-6, abs_tol=1e-6):
        return ("the upper end uses ln(f32 max) = 88.72; the underflow margin is "
                "-ln(f32 smallest normal) = 87.34 (lecture §5.4)")
    if math.isclose(got[0], max_logit + ln_tiny, rel_tol=1e-6, abs_tol=1e-6) or math.isclose(
            got[1], max_logit - ln_max, rel_tol=1e-6, abs_tol=1e-6):
        return "low and high are swapped or built from the wrong score"
    return None


def diagnose_traffic(func: str, args: tuple, kwargs: dict, got: object) -> str | None:
    """The known Task 4.6 mistake that gives ``got`` bytes for ``func(*args, **kwargs)``
    (K and V read once in total, a cdiv forgotten, the scores read once), else None."""
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        return None
    got = int(got)
    if func == "flash_attention_hbm_bytes":
        heads, length, d, dv, block_q = args
        in_b, out_b = kwargs.get("in_bytes", 2), kwargs.get("out_bytes", 4)
        once = heads * length * ((2 * d + dv) * in_b + dv * out_b)
        if got == once:
            return ("K and V are read once per query block (every q block sweeps all keys), "
                    "not once in total")
        floor_blocks = length // block_q
        if length % block_q and got == once + (floor_blocks - 1) * heads * length * (d + dv) * in_b:
            return "the last, shorter q block also reads all of K and V: use cdiv(L, block_q)"
    if func == "xla_attention_hbm_bytes":
        heads, length, d, dv = args
        s_b = kwargs.get("score_bytes", 4)
        rest = got - ref.xla_attention_hbm_bytes(heads, length, d, dv, **kwargs)
        if rest in (-heads * length * length * s_b, -2 * heads * length * length * s_b):
            return "the scores are written once and read twice: three passes over [H, L, L]"
    return None


# --- Task 4.8 (performance): why a legal configuration is slow -------------------------------

#: Task 4.8: the student's predicted time counts as the reference kernel's at the same
#: configuration within this fraction (the solution's kernel predicts exactly the same).
SAME_KERNEL_RTOL = 0.01


def _legal_time(config: tuple[int, int, float | None]) -> float | None:
    """The reference's predicted seconds at ``config``, or None when it is not a legal
    candidate (outside the sets, or its blocks and score tiles do not fit VMEM)."""
    block_q, block_kv, constant = config
    if (block_q not in ref.FLASH_BLOCK_CANDIDATES or block_kv not in ref.FLASH_BLOCK_CANDIDATES
            or constant not in ref.FLASH_MLE_CANDIDATES):
        return None
    seconds, vmem = ref.predicted_flash_run(config)
    return seconds if vmem <= ref.flash_vmem_capacity() else None


def diagnose_flash_config(config: tuple[int, int, float | None], got_s: float) -> str:
    """Task 4.8: why ``config`` (block_q, block_kv, max_logit_const), predicted ``got_s``
    seconds for the student's kernel, is slow, from the reference's predictions of the same
    and neighbouring legal configurations (lecture §5.3, §5.4). When the student's kernel is
    predicted slower than the reference kernel at the same configuration, that is the
    diagnosis instead: the choice is then not what is wrong."""
    block_q, block_kv, constant = config
    same_s = ref.predicted_flash_time(config)
    if got_s > same_s * (1 + SAME_KERNEL_RTOL):
        return (f"your kernel is predicted {got_s / same_s - 1:.0%} slower than the "
                f"reference kernel at the same settings ({same_s * 1e3:.3f} ms): it does "
                "more work per grid step than Task 4.3's kernel needs")
    notes = []
    if constant is None:
        mle_s = _legal_time((block_q, block_kv, ref.FLASH_MLE_CANDIDATES[-1]))
        if mle_s is not None:
            notes.append(
                f"MLE off costs {got_s / mle_s - 1:.0%}: with max_logit_const "
                f"{ref.FLASH_MLE_CANDIDATES[-1]:g} the same blocks are predicted "
                f"{mle_s * 1e3:.3f} ms (no row maximum, no rescale of l and acc; §5.4)")
    length = ref.PERFORMANCE_Q_SHAPE[1]
    for name, bigger in (("block_q", (2 * block_q, block_kv, constant)),
                         ("block_kv", (block_q, 2 * block_kv, constant))):
        bigger_s = _legal_time(bigger)
        if bigger_s is not None and bigger_s < got_s:
            size = bigger[0] if name == "block_q" else bigger[1]
            reread = (f"; K and V are read {length // block_q} times per head instead of "
                      f"{length // size} (Task 4.6)" if name == "block_q" else "")
            notes.append(f"{name} {size} instead of {size // 2} is predicted "
                         f"{got_s / bigger_s - 1:.0%} faster ({bigger_s * 1e3:.3f} ms): half "
                         f"the grid steps{reread}")
    steps = ref.PERFORMANCE_Q_SHAPE[0] * (length // block_q) * (length // block_kv)
    notes.append(f"{steps} grid steps of {block_q} x {block_kv} score tiles")
    return "; ".join(notes)
