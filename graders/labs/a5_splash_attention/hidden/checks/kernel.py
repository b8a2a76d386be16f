"""Task 5.4 the Splash kernel and wrapper, use_base2_exp."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

import pallas_sim
import reference.a5_splash_attention as ref
from graders.checking.compare import against_own_kernel, assert_close, fmt_array, kernel_mismatch
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import make_array, seeds
from graders.labs.a5_splash_attention.hidden.diagnose import (
    SPLASH_ATOL,
    SPLASH_RTOL,
    diagnose_kernel,
)
from graders.labs.a5_splash_attention.public.public_checks.common import KINDS, LOG2_E, MaskCase
from graders.labs.a5_splash_attention.public.public_checks.kernel import (
    PREFETCH_ORDER,
    between,
    row_maxima,
)

from .common import A, _dense_attention, mask_cases

# --- Task 5.4 the Splash kernel and wrapper --------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SplashCase:
    """q, k, v [H, L, d|dv], a mask and its reference MaskInfo."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    case: MaskCase
    sm_scale: float | None
    seeds: tuple[int, int, int] = (0, 0, 0)

    @property
    def info(self) -> ref.MaskInfo:
        return ref.build_mask_info(self.case.mask, self.case.block_q, self.case.block_kv)

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.q.shape[-1]) if self.sm_scale is None else self.sm_scale

    def __repr__(self) -> str:
        arrays = ", ".join(
            f"{name} = f32{list(a.shape)} uniform in [-2, 2) (seed {seed})"
            for name, a, seed in zip("qkv", (self.q, self.k, self.v), self.seeds, strict=True))
        return f"{arrays}, {self.case!r}, sm_scale = {self.sm_scale!r}"


@st.composite
def splash_cases(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> SplashCase:
    """Square masks of ``kinds`` (L <= 32, blocks 2/4/8), H 1-2, d 4/8/16, dv 4/8, f32 inputs."""
    case = draw(mask_cases(square=True, blocks=(2, 4, 8), max_len=32, kinds=kinds))
    heads = draw(st.integers(1, 2))
    d, dv = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8]))
    length = case.mask.shape[0]
    drawn = (draw(seeds), draw(seeds), draw(seeds))
    q, k, v = (make_array((heads, length, n), np.dtype(np.float32), seed, low=-2, high=2)
               for n, seed in zip((d, d, dv), drawn, strict=True))
    scale = draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))
    return SplashCase(q, k, v, case, scale, drawn)


def _kernel_fields(info: ref.MaskInfo) -> tuple:
    """MaskInfo arrays for the grader's pallas_call, with at least one stored pattern."""
    patterns = info.partial_mask_blocks
    if patterns.shape[0] == 0:
        patterns = np.ones((1, *patterns.shape[1:]), bool)
    return tuple(info._replace(partial_mask_blocks=patterns))


#: Tolerance of the Splash outputs (float32 kernel against float64 attention).

#: The finite stand-in for a masked score in the models of correct arithmetic (the
#: solution's -0.7 x float32 max): exp of it minus any finite maximum is 0, never NaN.


def _check_output(got: object, c: SplashCase, what: str, fields: tuple,
                  also: Callable[[], tuple[tuple[object, tuple], ...]] | None = None) -> None:
    """``got`` equals dense float64 masked attention; on failure the diagnosis is the
    modelled kernel mistake (``KERNEL_MISTAKES``) that computes ``got`` from ``fields``,
    the MaskInfo arrays the kernel was handed, and, when ``also`` is given, each of the
    other runs (output, arrays) it returns (``diagnose_kernel``)."""
    expected = _dense_attention(c.q, c.k, c.v, c.case.mask, c.scale)
    try:
        assert_close(got, expected, SPLASH_RTOL, SPLASH_ATOL, what=what)
    except CheckFailure as failure:
        failure.diagnosis = diagnose_kernel(got, c, fields, expected,
                                            also() if also is not None else ())
        raise


@check(A, "5.4", 8, "splash_attention_kernel, run in the grader's pallas_call over the "
                     "reference MaskInfo, equals dense float64 masked attention")
def kernel_values(s: Session) -> None:
    """Task 5.4: splash_attention_kernel, run in the grader's pallas_call over the reference
    MaskInfo, equals dense float64 masked attention.
    """
    def body(c: SplashCase) -> None:
        fields = _kernel_fields(c.info)
        got = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                       harness="a5").value
        _check_output(got, c, "the kernel's attention output", fields)
    run_property(splash_cases(), body, max_examples=12)


@check(A, "5.4", 4, "the kernel applies mask_ref only where block_mask == 1 (full tiles are "
                    "given an all-False pattern and must ignore it)")
def kernel_masks_only_partial(s: Session) -> None:
    """Task 5.4: the kernel applies mask_ref only where block_mask == 1 (full tiles are given an
    all-False pattern and must ignore it).
    """
    def body(c: SplashCase) -> None:
        info = c.info
        full = info.block_mask == 2
        assume(full.any())
        blocks = info.partial_mask_blocks
        poisoned = np.concatenate([blocks, np.zeros((1, *blocks.shape[1:]), bool)])
        nxt = np.where(full, len(blocks), info.mask_next).astype(np.int32)
        fields = tuple(info._replace(partial_mask_blocks=poisoned, mask_next=nxt))
        got = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                       harness="a5").value

        def real_run() -> tuple[tuple[object, tuple], ...]:
            # The same kernel over the true MaskInfo: a mistake that matches the run with
            # all-False full-tile patterns (masking full tiles, or re-initialising at every
            # tile, which agree there on many masks) must match this one too.
            real = _kernel_fields(info)
            try:
                out = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, real, c.scale),
                               harness="a5").value
            except CheckFailure:
                return ()
            return ((out, real),)

        _check_output(got, c, "the kernel's attention output", fields, also=real_run)
    run_property(splash_cases(kinds=("causal", "full", "local & documents", "causal & local")),
                 body, max_examples=8)


def _wrapper_reply(s: Session, c: SplashCase, record_only: bool = False,
                   with_kernel: bool = False):
    """(reply, the wrapper's output, its prefetch arrays, (the student's kernel's output in
    the standard call or None, what it raised or None))."""
    kernel_fields = _kernel_fields(c.info) if with_kernel else None
    reply = s.invoke("splash_attention", (c.q, c.k, c.v, tuple(c.info), c.sm_scale,
                                          record_only, kernel_fields), harness="a5")
    value = reply.value
    if not isinstance(value, (tuple, list)) or len(value) != 4:
        raise CheckFailure("internal grader error: the a5 harness replied oddly",
                           status="error", internal=True)
    return reply, value[0], value[1], (value[2], value[3])


@check(A, "5.4", 6, "splash_attention(q, k, v, mask_info) equals dense float64 masked "
                    "attention (drawn masks, heads, head sizes, sm_scale or its default)")
def wrapper_values(s: Session) -> None:
    """Task 5.4: splash_attention(q, k, v, mask_info) equals dense float64 masked attention
    (drawn masks, heads, head sizes, sm_scale or its default).
    """
    def body(c: SplashCase) -> None:
        reply, out, _, kernel = _wrapper_reply(s, c, with_kernel=True)
        _, kernel_out = against_own_kernel((out, *kernel), "splash_attention",
                                           "splash_attention_kernel")
        try:
            assert_close(out, np.asarray(kernel_out, np.float64), SPLASH_RTOL, SPLASH_ATOL,
                         what="splash_attention's output", same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "splash_attention",
                                  "splash_attention_kernel") from None
        reply.own_call(0)  # its own pallas_call over the active tiles computed it
        if np.asarray(out).dtype != np.float32:
            raise CheckFailure("splash_attention's output has the wrong dtype",
                               expected="float32", got=np.asarray(out).dtype.name)
    run_property(splash_cases(), body, max_examples=12)


_OPERANDS = ("q", "k", "v", "mask", "output")


def _compare_splash_trace(got: list, expected: list) -> None:
    if len(got) != 1:
        raise CheckFailure("splash_attention should make exactly one pallas_call",
                           expected="1 pallas_call", got=f"{len(got)} pallas_calls")
    g, e = got[0], expected[0]
    if tuple(g.grid) != tuple(e.grid):
        raise CheckFailure("the grid should be (heads, number of active tiles)",
                           expected=str(tuple(e.grid)), got=str(tuple(g.grid)))
    if tuple(g.dimension_semantics) != tuple(e.dimension_semantics):
        raise CheckFailure("the dimension semantics differ", expected=str(e.dimension_semantics),
                           got=str(g.dimension_semantics))
    g_pre = [op for op in g.operands if op.role == "prefetch"]
    e_pre = [op for op in e.operands if op.role == "prefetch"]
    if len(g_pre) != len(e_pre):
        raise CheckFailure("the call should use PrefetchScalarGridSpec(num_scalar_prefetch=6)",
                           expected=f"{len(e_pre)} scalar-prefetch arrays",
                           got=f"{len(g_pre)}")
    g_ops = [op for op in g.operands if op.role in ("in", "out")]
    e_ops = [op for op in e.operands if op.role in ("in", "out")]
    if len(g_ops) != len(e_ops):
        raise CheckFailure("the call should have inputs q, k, v, mask and one output",
                           expected=f"{len(e_ops)} operands", got=f"{len(g_ops)} operands")
    for label, go, eo in zip(_OPERANDS, g_ops, e_ops, strict=True):
        if tuple(go.block_shape) != tuple(eo.block_shape):
            raise CheckFailure(f"the {label} block shape differs", expected=str(eo.block_shape),
                               got=str(go.block_shape))
        if not np.array_equal(go.block_indices, eo.block_indices):
            step = int(np.argmax(np.any(go.block_indices != eo.block_indices, axis=1))) \
                if go.block_indices.shape == eo.block_indices.shape else 0
            raise CheckFailure(f"the {label} block chosen by the index map differs",
                               expected=f"{tuple(eo.block_indices[step].tolist())} at step {step}",
                               got=(f"{tuple(go.block_indices[step].tolist())}"
                                    if go.block_indices.shape == eo.block_indices.shape
                                    else f"{go.block_indices.shape[0]} steps"))
        if go.dma_count != eo.dma_count:
            hint = {"k": "fetch a K/V block only when the active column changes",
                    "v": "fetch a K/V block only when the active column changes",
                    "output": "write an output block back once per (head, q row of tiles)",
                    "mask": "a full tile's mask_next names the next partial pattern, so the "
                            "mask block does not change"}.get(label)
            raise CheckFailure(f"the {label} operand makes a different number of DMAs",
                               expected=str(eo.dma_count), got=str(go.dma_count), hint=hint)
    if g.vmem_bytes != e.vmem_bytes or g.smem_bytes != e.smem_bytes:
        raise CheckFailure("the VMEM / SMEM bytes differ (scratch m, l f32 (block_q, 128), "
                           "acc f32 (block_q, dv); six int32 [A] prefetch arrays)",
                           expected=f"VMEM {e.vmem_bytes} B, SMEM {e.smem_bytes} B",
                           got=f"VMEM {g.vmem_bytes} B, SMEM {g.smem_bytes} B")


@check(A, "5.4", 5, "splash_attention's pallas_call: grid (H, A), semantics, blocks chosen "
                    "through the prefetched table, K/V fetched only when the column changes, "
                    "one write-back per q row, VMEM/SMEM bytes")
def wrapper_trace(s: Session) -> None:
    """Task 5.4: splash_attention's pallas_call: grid (H, A), semantics, blocks chosen through
    the prefetched table, K/V fetched only when the column changes, one write-back per q row,
    VMEM/SMEM bytes.
    """
    def body(c: SplashCase) -> None:
        reply, _, _, _ = _wrapper_reply(s, c)
        reply.own_call(0)  # the checked call must be the one that computed the result
        with pallas_sim.trace() as t:
            ref.splash_attention(c.q, c.k, c.v, c.info, sm_scale=c.sm_scale)
        _compare_splash_trace(reply.traces, t.calls)
    run_property(splash_cases(), body, max_examples=8)


@check(A, "5.4", 3, "the six scalar-prefetch arrays handed to pallas_call are int32 and in "
                    "the order active_rows, active_cols, mask_next, bounds_start, bounds_end, "
                    "block_mask")
def wrapper_prefetch(s: Session) -> None:
    """Task 5.4: the six scalar-prefetch arrays handed to pallas_call are int32 and in the order
    active_rows, active_cols, mask_next, bounds_start, bounds_end, block_mask.
    """
    def body(c: SplashCase) -> None:
        _, _, recorded, _ = _wrapper_reply(s, c, record_only=True)
        if not isinstance(recorded, (list, tuple)) or len(recorded) != 1:
            raise CheckFailure("splash_attention should make exactly one pallas_call",
                               expected="1", got=str(len(recorded)))
        arrays = list(recorded[0])
        if len(arrays) != 6:
            raise CheckFailure("the call should prefetch six arrays "
                               "(PrefetchScalarGridSpec(num_scalar_prefetch=6))",
                               expected="6", got=str(len(arrays)))
        info = c.info
        want = [np.asarray(getattr(info, name)).astype(np.int32) for name in PREFETCH_ORDER]
        for n, (name, got, exp) in enumerate(zip(PREFETCH_ORDER, arrays, want, strict=True)):
            got = np.asarray(got)
            if got.shape == exp.shape and np.array_equal(got, exp) and got.dtype == np.int32:
                continue
            same = [other for other, e in zip(PREFETCH_ORDER, want, strict=True)
                    if got.shape == e.shape and np.array_equal(got, e)]
            diagnosis = None
            if same and name not in same:
                diagnosis = (f"prefetch argument {n} holds {' or '.join(same)}; the kernel "
                             f"expects {name} there (order: {', '.join(PREFETCH_ORDER)})")
            elif np.array_equal(got, exp):
                diagnosis = "the values are right; convert them with .astype(np.int32)"
            raise CheckFailure(f"scalar-prefetch argument {n} should be {name} as int32",
                               expected=fmt_array(exp), got=fmt_array(got), diagnosis=diagnosis)
    run_property(splash_cases(), body, max_examples=6)


# --- Task 5.4: use_base2_exp (lecture §6.6) ---------------------------------------------------

@check(A, "5.4", 2, "splash_attention_kernel with use_base2_exp=True: the output is still "
                    "masked attention, and the final m is the row maximum times log2(e) "
                    "(scores pre-scaled, exp2; lecture §6.6)")
def kernel_base2(s: Session) -> None:
    """Task 5.4: splash_attention_kernel with use_base2_exp=True: the output is still masked
    attention, and the final m is the row maximum times log2(e) (scores pre-scaled, exp2;
    lecture §6.6).
    """
    def body(c: SplashCase) -> None:
        fields = _kernel_fields(c.info)
        value = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                         {"use_base2_exp": True, "with_max": True}, harness="a5").value
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise CheckFailure("internal grader error: the a5 harness replied oddly",
                               status="error", internal=True)
        _check_output(value[0], c, "the kernel's attention output with use_base2_exp=True",
                      fields)
        m = np.asarray(value[1], np.float64)
        masked, unmasked = row_maxima(c.q, c.k, c.case.mask, c.scale)
        if between(m, masked * LOG2_E, unmasked * LOG2_E):
            return
        natural = between(m, masked, unmasked)
        raise CheckFailure(
            "with use_base2_exp=True the final m is not the row maximum in base-2 units",
            expected=f"m = log2(e) · (the row's largest visible score): "
                     f"{fmt_array(masked * LOG2_E)}",
            got=f"m = {fmt_array(m)}",
            diagnosis=("use_base2_exp is ignored: m is the row maximum in natural units, so "
                       "the kernel still calls exp. Multiply the scaled scores by log2(e) "
                       "before masking, keep m in those units and use jnp.exp2 for p and "
                       "alpha (lecture §6.6)") if natural else None)
    run_property(splash_cases(), body, max_examples=6)


@check(A, "5.4", 2, "splash_attention(..., use_base2_exp=True) accepts the option, computes "
                    "what its kernel computes with it in the grader's standard call, and "
                    "passes it on: its pallas_call's work changes with the option as the "
                    "kernel's does (lecture §6.6)")
def wrapper_base2(s: Session) -> None:
    """Task 5.4: splash_attention(..., use_base2_exp=True) accepts the option and computes what
    its kernel computes with it in the grader's standard call (lecture §6.6). The values
    alone cannot show that the option reaches the kernel (base 2 gives the same softmax),
    so the op counts of the wrapper's own call are compared with the option on and off.
    """
    def body(c: SplashCase) -> None:
        reply = s.invoke("splash_attention", (c.q, c.k, c.v, tuple(c.info), c.sm_scale, False,
                                              _kernel_fields(c.info)),
                         {"use_base2_exp": True}, harness="a5")
        value = reply.value
        if not isinstance(value, (tuple, list)) or len(value) != 4:
            raise CheckFailure("internal grader error: the a5 harness replied oddly",
                               status="error", internal=True)
        out = value[0]
        _, kernel_out = against_own_kernel((out, value[2], value[3]), "splash_attention",
                                           "splash_attention_kernel")
        try:
            assert_close(out, np.asarray(kernel_out, np.float64), SPLASH_RTOL, SPLASH_ATOL,
                         what="splash_attention's output with use_base2_exp=True",
                         same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "splash_attention",
                                  "splash_attention_kernel") from None
        reply.own_call(0)
    run_property(splash_cases(), body, max_examples=4)
    _require_base2_forwarded(s)


def _forwarding_case() -> SplashCase:
    """The case on which the forwarding of use_base2_exp is observed: causal_mask(16) in
    4-blocks, one head, d 8, dv 4 (f32, seeds 7, 8, 9)."""
    q, k, v = (make_array((1, 16, n), np.dtype(np.float32), seed, low=-2, high=2)
               for n, seed in ((8, 7), (8, 8), (4, 9)))
    return SplashCase(q, k, v, MaskCase(ref.causal_mask(16), 4, 4, "causal_mask(16)"), None,
                      (7, 8, 9))


def _work(call) -> dict[str, int]:
    """What the kernel computed over a whole call: each op count summed over the steps."""
    return {} if call.ops is None else {key: call.ops.total(key) for key in call.ops.keys()}


def _require_base2_forwarded(s: Session) -> None:
    """The wrapper's own pallas_call must run the kernel with the use_base2_exp it was
    given, observed on the call it makes: the student's kernel in the grader's standard call
    does different work with the option on and off (the scores times log2(e)), and the
    wrapper's call must differ too. A kernel whose work does not change, or that refuses the
    option, leaves nothing to observe here (its own base-2 check charges it).

    Raises:
      CheckFailure: the wrapper's call does the same work with the option on and off.
    """
    c = _forwarding_case()
    fields = _kernel_fields(c.info)
    kernel_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("splash_attention_kernel", (c.q, c.k, c.v, fields, c.scale),
                             {"use_base2_exp": flag}, harness="a5")
        except CheckFailure as failure:
            if failure.status == "failed":
                return
            raise
        kernel_work[flag] = _work(reply.trace)
    if kernel_work[True] == kernel_work[False]:
        return
    wrapper_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("splash_attention", (c.q, c.k, c.v, tuple(c.info), c.sm_scale,
                                                  False, None),
                             {"use_base2_exp": flag}, harness="a5")
            wrapper_work[flag] = _work(reply.own_call(0))
        except CheckFailure as failure:
            raise failure.copy(input=f"{c!r}, use_base2_exp = {flag}") from None
    if wrapper_work[True] != wrapper_work[False]:
        return
    key = sorted(k for k in set(kernel_work[True]) | set(kernel_work[False])
                 if kernel_work[True].get(k, 0) != kernel_work[False].get(k, 0))[0]
    raise CheckFailure(
        "use_base2_exp does not reach the kernel: splash_attention's pallas_call does the "
        "same work with use_base2_exp=True and False",
        input=repr(c),
        expected=f"the kernel's {key} change with the option, as in the grader's standard "
                 f"call: {kernel_work[False].get(key, 0)} -> {kernel_work[True].get(key, 0)}",
        got=f"{key} {wrapper_work[False].get(key, 0)} with either value",
        hint="pass use_base2_exp on to splash_attention_kernel (functools.partial(..., "
             "use_base2_exp=use_base2_exp)); accepting the keyword is not enough")
