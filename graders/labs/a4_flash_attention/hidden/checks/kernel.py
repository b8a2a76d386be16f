"""Task 4.3 flash_attention_kernel."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from graders.checking.compare import as_array, fmt_array
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.labs.a4_flash_attention.hidden.diagnose import (
    ATTENTION_TOL,
    diagnose_base2_constant,
    emulate,
    matches_model,
)

from .common import A, _without_nan_guess
from .problems import (
    FAR_CONSTANT,
    AttentionCase,
    _attention_property,
    _check_attention,
    attention_cases,
)

# --- Task 4.3 flash_attention_kernel --------------------------------------------------------

def _kernel_body(s: Session) -> Callable[[AttentionCase, dict[str, object]], None]:
    """Run the kernel in the grader's pallas_call and compare with dense attention."""
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        got = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4").value
        seen["output"] = got
        _check_attention(got, case, "the kernel's output")
    return body


@check(A, "4.3", 5, "flash_attention_kernel, run in the grader's pallas_call, equals dense "
                    "float64 attention (drawn heads, GQA groups, L, d, dv, blocks, f32/bf16, "
                    "sm_scale; no mask)")
def kernel_values(s: Session) -> None:
    """Task 4.3: flash_attention_kernel, run in the grader's pallas_call, equals dense float64
    attention (drawn heads, GQA groups, L, d, dv, blocks, f32/bf16, sm_scale; no mask).
    """
    _attention_property(attention_cases(causal=False), _kernel_body(s), max_examples=12)


@check(A, "4.3", 2, "rows whose scores all lie below -100 (exp underflows float32 to 0 there): "
                    "the kernel still returns their softmax, because m starts at -inf and "
                    "follows the row's own maximum (lecture §5.2, §5.4)")
def kernel_deep_rows(s: Session) -> None:
    """Task 4.3: rows whose scores all lie below -100 (exp underflows float32 to 0 there): the
    kernel still returns their softmax, because m starts at -inf and follows the row's own
    maximum (lecture §5.2, §5.4).
    """
    _attention_property(attention_cases(causal=False, flavor="deep"), _kernel_body(s),
                        max_examples=5)


@check(A, "4.3", 5, "with causal=True the kernel masks key position > query position "
                    "(positions from pl.program_id and the block sizes)")
def kernel_causal_values(s: Session) -> None:
    """Task 4.3: with causal=True the kernel masks key position > query position (positions from
    pl.program_id and the block sizes).
    """
    _attention_property(attention_cases(causal=True), _kernel_body(s), max_examples=10)


def _step_blocks(call) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(head, q block, kv block) of every step of the harness's call, int64 [steps] each.

    Read from the block indices of q (h, i, 0) and k (h // group, j, 0) rather than from
    the grid, because the worker may visit the parallel axes in a shuffled order.
    """
    q_idx = np.asarray(call.role("in")[0].block_indices, np.int64)
    k_idx = np.asarray(call.role("in")[1].block_indices, np.int64)
    return q_idx[:, 0], q_idx[:, 1], k_idx[:, 1]


def _fully_masked(q_blocks: np.ndarray, kv_blocks: np.ndarray, block_q: int,
                  block_kv: int) -> np.ndarray:
    """bool [steps]: the whole causal (block_q, block_kv) tile of the step is masked."""
    return kv_blocks * block_kv > (q_blocks + 1) * block_q - 1


@check(A, "4.3", 6, "with causal=True, grid steps whose tile is fully masked do no work: the "
                    "kernel does not read k_ref or v_ref there (trace: kernel_reads per step), "
                    "and the output is still correct")
def kernel_causal_skipping(s: Session) -> None:
    """Task 4.3: with causal=True, grid steps whose tile is fully masked do no work: the kernel
    does not read k_ref or v_ref there (trace: kernel_reads per step), and the output is still
    correct.
    """
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        reply = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4")
        seen["output"] = reply.value
        _check_attention(reply.value, case, "the kernel's output")
        call = reply.trace
        heads, q_blocks, kv_blocks = _step_blocks(call)
        masked = _fully_masked(q_blocks, kv_blocks, case.block_q, case.block_kv)
        for op, label in zip(call.role("in")[1:3], ("k_ref", "v_ref"), strict=True):
            reads = np.asarray(op.kernel_reads)
            if reads.shape != masked.shape:
                raise CheckFailure("the trace has no per-step reads of the kernel's inputs",
                                   status="error", internal=True)
            wasted = masked & (reads > 0)
            if wasted.any():
                at = int(np.argmax(wasted))
                first = (int(heads[at]), int(q_blocks[at]), int(kv_blocks[at]))
                raise CheckFailure(
                    f"the kernel reads {label} at {int(wasted.sum())} of {int(masked.sum())} "
                    "grid steps whose tile is fully masked",
                    expected=f"no reads of k_ref or v_ref at the {int(masked.sum())} fully "
                             "masked steps",
                    got=f"{label} read at step (head, q block, kv block) = {first}, where "
                        f"kv block {first[2]} starts at key {first[2] * case.block_kv} after "
                        f"the last query {(first[1] + 1) * case.block_q - 1} of q block "
                        f"{first[1]}",
                    diagnosis="fully masked blocks are not skipped: put the whole update "
                              "(scores, exp, p @ v) under pl.when(kv_block * block_kv <= "
                              "(q_block + 1) * block_q - 1), and keep the initialization and "
                              "the final division in their own pl.when (lecture §5.2, §6)")
    _attention_property(attention_cases(causal=True, min_q_blocks=2), body, max_examples=8)


@check(A, "4.3", 4, "soft_cap and max_logit_const: scores capped at cap·tanh(s/cap), and a "
                    "constant from the safe range used instead of the running max (large "
                    "logits drawn)")
def kernel_options(s: Session) -> None:
    """Task 4.3: soft_cap and max_logit_const: scores capped at cap·tanh(s/cap), and a constant
    from the safe range used instead of the running max (large logits drawn).
    """
    _attention_property(attention_cases(options=True), _kernel_body(s), max_examples=14)


@check(A, "4.3", 3, "small soft caps (1, 2, 5) with causal=True: the cap comes before the mask, "
                    "so masked keys keep -inf (capping -inf would give them -cap and a weight)")
def kernel_small_caps_causal(s: Session) -> None:
    """Task 4.3: small soft caps (1, 2, 5) with causal=True: the cap comes before the mask, so
    masked keys keep -inf (capping -inf would give them -cap and a weight).
    """
    _attention_property(attention_cases(causal=True, flavor="small-cap"), _kernel_body(s),
                        max_examples=6)


@check(A, "4.3", 2, f"max_logit_const is really used: with c = {FAR_CONSTANT:g}, far above "
                    "every score, exp(s - c) is 0 for every key, so the output cannot be the "
                    "softmax that a kernel keeping the running maximum returns (lecture §5.4)")
def kernel_constant_is_used(s: Session) -> None:
    """Task 4.3: max_logit_const is really used: with c = 800, far above every score, exp(s - c)
    is 0 for every key, so the output cannot be the softmax that a kernel keeping the running
    maximum returns (lecture §5.4).
    """
    def body(case: AttentionCase) -> None:
        got = s.invoke("flash_attention_kernel", case.args, case.kwargs, harness="a4").value
        arr = as_array(got, "the kernel's output")
        expected = case.expected()
        if arr.shape != expected.shape:
            raise CheckFailure("the kernel's output has the wrong shape",
                               expected=f"shape {expected.shape}", got=f"shape {arr.shape}")
        tol = ATTENTION_TOL[case.q.dtype.name]
        running_max = emulate(case, constant=None)
        if matches_model(arr.astype(np.float64), running_max, tol):
            raise CheckFailure(
                "with max_logit_const the kernel still returns the exact softmax: the "
                "constant is not what it subtracts",
                expected=f"no row equal to the softmax: every exp(s - {FAR_CONSTANT:g}) is 0, "
                         "so l = 0 and each row is 0 / 0 (NaN), or whatever your code "
                         "returns for l = 0",
                got=f"the exact attention ({fmt_array(arr)}), as with the running maximum",
                diagnosis="max_logit_const is ignored: the kernel computes the running "
                          "maximum and rescales as without it. With a constant c, use m = c "
                          "from kv block 0 on, p = exp(s - c), and no rescale (alpha = 1): "
                          "that saves the row maximum and the rescale (lecture §5.4)")
    run_property(attention_cases(flavor="far-constant"), body, max_examples=4)


#: log2(e): under use_base2_exp the scores and m are kept times this (lecture §6.6).
LOG2_E = 1.0 / math.log(2.0)
#: (rtol, atol) of the final m against log2(e) · (row maximum of the scores): the scores
#: are exact products summed in float32 (bf16 inputs are exact in float32).
MAX_TOL = (1e-4, 1e-3)


def _between(m: np.ndarray, low: np.ndarray, high: np.ndarray) -> bool:
    """Every m lies in [low, high] up to ``MAX_TOL``: a running maximum taken after the mask
    is ``low``, one taken before it at most ``high``; both give the softmax."""
    rtol, atol = MAX_TOL
    with np.errstate(invalid="ignore"):
        return bool(np.all((m >= low - atol - rtol * np.abs(low))
                           & (m <= high + atol + rtol * np.abs(high))))


def _final_max(reply_value: object, case: AttentionCase) -> tuple[np.ndarray, np.ndarray]:
    """(output [H, L, dv], final m [H, L]) from the harness's ``with_max`` reply."""
    if not isinstance(reply_value, tuple | list) or len(reply_value) != 2:
        raise CheckFailure("the grader's call returned no m scratch", status="error",
                           internal=True)
    out, m = reply_value
    return as_array(out, "the kernel's output"), as_array(m, "the final m scratch")


@check(A, "4.3", 3, "use_base2_exp=True: the output is still softmax attention (causal or "
                    "not, and with max_logit_const near large logits, where the constant "
                    "must be in base-2 units too), and m holds the row maximum in base-2 "
                    "units, log2(e) · max s: scores pre-scaled by log2(e), exp2 in the "
                    "kernel (lecture §6.6)")
def kernel_base2(s: Session) -> None:
    """Task 4.3: use_base2_exp=True: the output is still softmax attention (causal or not), and
    m holds the row maximum in base-2 units, log2(e) · max s: scores pre-scaled by log2(e),
    exp2 in the kernel (lecture §6.6). Then with max_logit_const c just above scores near
    342 ("high+mle"): c must be converted too (m = c·log2(e)); exp2(s·log2(e) - c) would
    overflow float32 there.
    """
    def body(case: AttentionCase) -> None:
        reply = s.invoke("flash_attention_kernel", case.args,
                         {**case.kwargs, "use_base2_exp": True, "with_max": True},
                         harness="a4")
        got, m = _final_max(reply.value, case)
        try:
            _check_attention(got, case, "the kernel's output with use_base2_exp=True")
        except CheckFailure as failure:
            diagnosis = diagnose_base2_constant(got, case)
            if diagnosis is not None:
                failure.diagnosis, failure.what = diagnosis, _without_nan_guess(failure.what)
            raise
        if case.max_logit_const is not None:
            return  # m is the constant there (in base-2 units), or unused: values decide
        masked = case.scores().max(axis=-1)                           # [H, L], natural units
        unmasked = dataclasses.replace(case, causal=False).scores().max(axis=-1)
        if m.shape != masked.shape or _between(m, masked * LOG2_E, unmasked * LOG2_E):
            return
        natural = _between(m, masked, unmasked) and not np.allclose(masked, 0.0)
        raise CheckFailure(
            "with use_base2_exp=True the final m is not the row maximum in base-2 units",
            expected=f"m = log2(e) · max s per row: {fmt_array(masked * LOG2_E)}"
                     + ("" if not case.causal else " (or up to log2(e) · the row's maximum "
                        "before the causal mask)"),
            got=f"m = {fmt_array(m)}",
            diagnosis=("use_base2_exp is ignored: m is the row maximum of the natural-unit "
                       "scores, so the kernel still calls exp. Multiply the scaled (and "
                       "capped) scores by log2(e), keep m in those units and use jnp.exp2 "
                       "for p and alpha (lecture §6.6)") if natural else None)
    run_property(attention_cases(), body, max_examples=5)
    # With max_logit_const the constant must be in base-2 units too (m = c·log2(e)); the
    # values show it only where exp2(s·log2(e) - c) overflows: scores near 342.
    run_property(attention_cases(flavor="high+mle"), body, max_examples=3)
