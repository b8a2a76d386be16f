"""Task 4.4 flash_attention."""

from __future__ import annotations

import re

import numpy as np

import pallas_sim
import reference.a4_flash_attention as ref
from graders.checking.compare import against_own_kernel
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import make_array
from graders.labs.a4_flash_attention.hidden.diagnose import diagnose_kv_heads

from .common import F32, A
from .problems import AttentionCase, _attention_property, _check_attention, attention_cases

# --- Task 4.4 flash_attention ----------------------------------------------------------------

@check(A, "4.4", 8, "flash_attention(q, k, v, ...) computes what its kernel computes in the "
                     "grader's standard call (GQA, causal, default and drawn sm_scale, "
                     "soft_cap, max_logit_const), as float32 [H, L, dv]")
def wrapper_values(s: Session) -> None:
    """Task 4.4: flash_attention(q, k, v, ...) computes what its kernel computes in the
    grader's standard call (GQA, causal, default and drawn sm_scale, soft_cap,
    max_logit_const), as float32 [H, L, dv].
    """
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        reply = s.invoke("flash_attention", case.args, case.wrapper_kwargs, harness="a4")
        got, kernel_out = against_own_kernel(reply.value, "flash_attention",
                                             "flash_attention_kernel")
        if isinstance(got, np.ndarray):
            reply.own_call(0)  # the wrapper's own pallas_call computed it
        seen["output"] = got
        _check_attention(got, case, "flash_attention's result", kernel_out=kernel_out,
                         wrapper=True)
    _attention_property(attention_cases(options=True, default_scale=True), body,
                        max_examples=14, wrapper=True)


@check(A, "4.4", 2, "flash_attention(..., use_base2_exp=True) accepts the option, computes "
                    "what its kernel computes with it in the grader's standard call, and "
                    "passes it on: its pallas_call's work changes with the option as the "
                    "kernel's does (lecture §6.6)")
def wrapper_base2(s: Session) -> None:
    """Task 4.4: flash_attention(..., use_base2_exp=True) accepts the option and computes what
    its kernel computes with it in the grader's standard call (lecture §6.6). The values
    alone cannot show that the option reaches the kernel (base 2 gives the same softmax),
    so the op counts of the wrapper's own call are compared with the option on and off.
    """
    def body(case: AttentionCase, seen: dict[str, object]) -> None:
        reply = s.invoke("flash_attention", case.args,
                         {**case.wrapper_kwargs, "use_base2_exp": True}, harness="a4")
        got, kernel_out = against_own_kernel(reply.value, "flash_attention",
                                             "flash_attention_kernel")
        if isinstance(got, np.ndarray):
            reply.own_call(0)
        seen["output"] = got
        _check_attention(got, case, "flash_attention's result with use_base2_exp=True",
                         kernel_out=kernel_out, wrapper=True)
    _attention_property(attention_cases(default_scale=True), body, max_examples=8,
                        wrapper=True)
    _require_base2_forwarded(s)


#: The case on which the forwarding of use_base2_exp is observed: H 2, Hkv 1, L 32, d = dv
#: = 8, causal, blocks 16 (f32, seed 7).
def _forwarding_case() -> AttentionCase:
    rng = np.random.default_rng(7)
    q, k, v = (rng.uniform(-4, 4, shape).astype(F32)
               for shape in ((2, 32, 8), (1, 32, 8), (1, 32, 8)))
    return AttentionCase(q, k, v, None, True, 16, 16, None, None, 7)


def _work(call) -> dict[str, int]:
    """What the kernel computed over a whole call: each op count summed over the steps
    (``CallTrace.ops``; the order the steps ran in does not matter)."""
    return {} if call.ops is None else {key: call.ops.total(key) for key in call.ops.keys()}


def _require_base2_forwarded(s: Session) -> None:
    """The wrapper's own pallas_call must run the kernel with the use_base2_exp it was
    given: observed on the call it makes. The student's kernel in the grader's standard call
    does different work with the option on and off (the scores are multiplied by log2(e));
    the wrapper's call must differ the same way. A kernel whose work does not change (or
    that refuses the option) leaves nothing to observe: that is Task 4.3's to charge.

    Raises:
      CheckFailure: the wrapper's call does the same work with the option on and off.
    """
    case = _forwarding_case()
    kernel_work = {}
    for flag in (False, True):
        try:
            reply = s.invoke("flash_attention_kernel", case.args,
                             {**case.kwargs, "use_base2_exp": flag}, harness="a4")
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
            reply = s.invoke("flash_attention", case.args,
                             {**case.wrapper_kwargs, "use_base2_exp": flag})
        except CheckFailure as failure:
            raise failure.copy(input=f"{case!r}, use_base2_exp = {flag}") from None
        wrapper_work[flag] = _work(reply.own_call())
    if wrapper_work[True] != wrapper_work[False]:
        return
    changed = sorted(key for key in set(kernel_work[True]) | set(kernel_work[False])
                     if kernel_work[True].get(key, 0) != kernel_work[False].get(key, 0))
    key = changed[0]
    raise CheckFailure(
        "use_base2_exp does not reach the kernel: flash_attention's pallas_call does the same "
        "work with use_base2_exp=True and False",
        input=repr(case),
        expected=f"the kernel's {key} change with the option, as in the grader's standard "
                 f"call: {kernel_work[False].get(key, 0)} -> {kernel_work[True].get(key, 0)}",
        got=f"{key} {wrapper_work[False].get(key, 0)} with either value",
        hint="pass use_base2_exp on to flash_attention_kernel (functools.partial(..., "
             "use_base2_exp=use_base2_exp)); accepting the keyword is not enough")


def _require_a_pallas_call(s: Session, q: np.ndarray) -> None:
    """The length check counts for a wrapper that computes through pallas_call (as a3's
    argument checks do): on k and v of q's length, what it returns must be its own
    pallas_call's output. A wrapper that raises there is charged by the other checks."""
    k, v = make_array((1, 32, 8), F32, 2), make_array((1, 32, 8), F32, 3)
    try:
        reply = s.invoke("flash_attention", (q, k, v),
                         {"causal": True, "block_q": 16, "block_kv": 16})
    except CheckFailure as failure:
        if failure.status == "failed":
            return
        raise
    try:
        reply.own_call()
    except CheckFailure as failure:
        raise failure.copy(input="q = f32[2, 32, 8], k = v = f32[1, 32, 8], causal = True, "
                                 "block_q = 16, block_kv = 16") from None


#: (kv_len, what a grid that follows q's length would do) for q of length 32 (Task 4.4's
#: decision).
_LENGTH_CASES = ((48, "silently ignore the last 16 keys"),
                 (16, "ask for kv blocks past the last of the 16 keys"))


@check(A, "4.4", 2, "flash_attention raises ValueError naming both lengths when k and v do "
                    "not have q's length L (kv_len != q_len is refused, the handout's "
                    "decision)")
def wrapper_length_error(s: Session) -> None:
    """Task 4.4: flash_attention raises ValueError naming both lengths when k and v do not have
    q's length L (kv_len != q_len is refused, the handout's decision).
    """
    q = make_array((2, 32, 8), F32, 1)
    _require_a_pallas_call(s, q)
    for kv_len, without in _LENGTH_CASES:
        k, v = make_array((1, kv_len, 8), F32, 2), make_array((1, kv_len, 8), F32, 3)
        label = (f"q = f32[2, 32, 8], k = v = f32[1, {kv_len}, 8], causal = True, "
                 "block_q = 16, block_kv = 16")
        expected = f"ValueError naming both lengths, 32 (q) and {kv_len} (k, v)"
        try:
            s.invoke("flash_attention", (q, k, v),
                     {"causal": True, "block_q": 16, "block_kv": 16})
        except CheckFailure as failure:
            if failure.status != "failed":
                raise
            if not failure.what.startswith("flash_attention raised ValueError"):
                raise failure.copy(what="flash_attention must raise ValueError when k and v "
                                        "do not have q's length", input=label,
                                   expected=expected, got=failure.what) from None
            message = failure.what.partition(": ")[2]
            if not (re.search(rf"\b{kv_len}\b", message) and re.search(r"\b32\b", message)):
                raise CheckFailure("the ValueError's message does not name both lengths",
                                   input=label, expected=expected, got=repr(message)) from None
        else:
            raise CheckFailure("flash_attention returned a result although k and v do not "
                               "have q's length", input=label, expected=expected,
                               got="a result", hint=f"a grid that follows q's length would "
                               f"{without}; the handout asks for a ValueError before any "
                               "pallas_call")


def _fmt_blocks(call) -> str:
    return ", ".join(str(tuple(op.block_shape)) for op in call.operands
                     if op.role in ("in", "out"))


def _compare_flash_trace(got: list, expected: list, case: AttentionCase) -> None:
    """The student's pallas_call must be the intended one (Task 4.4's trace discipline)."""
    if len(got) != 1:
        raise CheckFailure("flash_attention should make exactly one pallas_call",
                           expected="1 pallas_call", got=f"{len(got)} pallas_calls")
    g, e = got[0], expected[0]
    heads, length, _ = case.q.shape
    n_q = length // case.block_q
    if tuple(g.grid) != tuple(e.grid):
        raise CheckFailure("the grid is not (H, L / block_q, L / block_kv)",
                           expected=str(e.grid), got=str(g.grid),
                           hint="heads first, then query blocks, and the kv blocks LAST: they "
                                "are the reduction into the scratch accumulators")
    if tuple(g.dimension_semantics) != tuple(e.dimension_semantics):
        raise CheckFailure("the dimension semantics differ from the intended ones",
                           expected=str(e.dimension_semantics), got=str(g.dimension_semantics),
                           hint="pltpu.CompilerParams(dimension_semantics=('parallel', "
                                "'parallel', 'arbitrary')): the kv axis is a sequential "
                                "reduction")
    g_ops = [op for op in g.operands if op.role in ("in", "out")]
    e_ops = [op for op in e.operands if op.role in ("in", "out")]
    if [op.block_shape for op in g_ops] != [op.block_shape for op in e_ops]:
        # Verified: the shapes are the intended ones once a leading 1 is read as None.
        squeeze = [tuple(None if i == 0 and b == 1 else b for i, b in enumerate(op.block_shape))
                   for op in g_ops] == [tuple(op.block_shape) for op in e_ops]
        raise CheckFailure(
            "the BlockSpecs' block shapes (q, k, v, o) differ from the intended ones",
            expected=_fmt_blocks(e), got=_fmt_blocks(g),
            diagnosis=("the head dimension must be squeezed with None, not kept as 1: the "
                       "kernel's refs are 2-D (block, features)") if squeeze else None)
    for name, g_op, e_op in zip(("q", "k", "v", "o"), g_ops, e_ops, strict=True):
        if not np.array_equal(g_op.block_indices, e_op.block_indices):
            bad = int(np.argmax(np.any(np.asarray(g_op.block_indices)
                                       != np.asarray(e_op.block_indices), axis=1)))
            diagnosis = None
            if name in ("k", "v") and np.array_equal(g_op.block_indices[:, 1:],
                                                     e_op.block_indices[:, 1:]):
                diagnosis = diagnose_kv_heads(np.asarray(g_ops[0].block_indices)[:, 0],
                                               np.asarray(g_op.block_indices)[:, 0],
                                               case.k.shape[0])
            raise CheckFailure(
                f"the {name} block of grid step #{bad} (in visiting order) is not the "
                "intended one",
                expected=f"block index {tuple(int(x) for x in e_op.block_indices[bad])}",
                got=f"block index {tuple(int(x) for x in g_op.block_indices[bad])}",
                diagnosis=diagnosis)
    out = g.role("out")
    if len(out) != 1 or out[0].dma_count != heads * n_q:
        raise CheckFailure("the output is not written back once per (head, q block)",
                           expected=f"{heads * n_q} write-backs (H {heads} x {n_q} q blocks)",
                           got=f"{sum(op.dma_count for op in out)} write-backs")
    g_scr = [(tuple(op.shape), op.dtype) for op in g.role("scratch")]
    e_scr = [(tuple(op.shape), op.dtype) for op in e.role("scratch")]
    if g_scr != e_scr:
        raise CheckFailure("the scratch buffers differ from m, l f32 (block_q, 128) and acc "
                           "f32 (block_q, dv)", expected=str(e_scr), got=str(g_scr))
    if g.dma_count != e.dma_count or g.vmem_bytes != e.vmem_bytes:
        raise CheckFailure("DMA count or VMEM bytes differ from the intended call",
                           expected=f"{e.dma_count} DMAs, {e.vmem_bytes} B of VMEM",
                           got=f"{g.dma_count} DMAs, {g.vmem_bytes} B of VMEM")
    if not g.vmem_bytes <= g.vmem_limit_bytes:
        raise CheckFailure("the call uses more VMEM than its limit",
                           expected=f"at most {g.vmem_limit_bytes} B", got=f"{g.vmem_bytes} B")


@check(A, "4.4", 8, "flash_attention's pallas_call is the intended one: grid (H, L/block_q, "
                    "L/block_kv), semantics (parallel, parallel, arbitrary), squeezed head "
                    "dims, kv head h // group, one write-back per (head, q block), scratch "
                    "shapes, DMAs and VMEM")
def wrapper_trace(s: Session) -> None:
    """Task 4.4: flash_attention's pallas_call is the intended one: grid (H, L/block_q,
    L/block_kv), semantics (parallel, parallel, arbitrary), squeezed head dims, kv head h //
    group, one write-back per (head, q block), scratch shapes, DMAs and VMEM.
    """
    def body(case: AttentionCase) -> None:
        reply = s.invoke("flash_attention", case.args, case.wrapper_kwargs)
        reply.own_call()  # the checked call must be the one that computed the result
        with pallas_sim.trace() as recorded:
            ref.flash_attention(*case.args, **case.wrapper_kwargs)
        _compare_flash_trace(reply.traces, recorded.calls, case)
    run_property(attention_cases(causal=False), body, max_examples=8)
