"""Checks of a3_matmul (lecture §4): Tasks 3.1–3.5, 100 points.

The kernel (3.1) runs in the grader's standard 3D-grid pallas_call
(``harness.py``), so a fault in the student's wrapper is not
charged to it; the wrapper (3.2) is checked end to end and on its trace
against the reference's (grid, semantics, block shapes, DMAs, HBM bytes,
VMEM, one write-back per output block). Inputs are f32 or bf16 with (M, N, K)
multiples of drawn blocks, at least two k steps and at least two output
blocks, so that a missing zero-initialization (fresh output buffers are
poisoned with NaN), a ReLU inside the k loop and a grid with K first all
change the result. Values are compared with float64 ``x @ y`` with an error
bound relative to ``|x| @ |y|``.

Task 3.5 (performance) measures the student's kernel, in the standard call, on a small
problem at the blocks their ``choose_matmul_blocks()`` returns (in the worker, on data
and on shapes: ``harness.choose_matmul_blocks``), predicts the full size here
(``timing.py``) and compares it with the fastest legal candidate for their kernel, whose
work at the other candidates is projected from the reference kernel's
(``step_model.project``; docs/performance-model.md, "Performance tasks").
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
from hypothesis import strategies as st

import pallas_sim
import reference.a3_matmul as ref
from graders.checks import measures, performance, step_model
from graders.checks.compare import (
    against_own_kernel,
    as_array,
    as_finite_number,
    assert_equal_int,
    kernel_mismatch,
)
from graders.checks.framework import CheckFailure, Session, check, run_property
from graders.checks.strategies import BF16, F32, Case, make_array, seeds
from graders.labs.a3_matmul.hidden import timing
from graders.labs.a3_matmul.hidden.diagnose import (
    diagnose_block,
    diagnose_values,
    error_bound,
    exact_product,
    revisit_diagnosis,
    trace_diagnosis,
)
from graders.labs.a3_matmul.public import worked

A = "a3"
MiB, KiB = 1 << 20, 1 << 10
PEAK_FLOPS, HBM_BANDWIDTH = worked.PEAK_FLOPS, worked.HBM_BANDWIDTH  # one Ironwood TensorCore
WORKED_RTOL = 5e-3
#: Error bound as a fraction of (|x| @ |y|): float32 accumulation of exact bf16/f32
#: products stays far below 1e-5; one bf16 rounding per k step stays below 2^-8.
F32_ACCUMULATION, BF16_RESULT = 1e-5, 4e-3


# --- drawn inputs --------------------------------------------------------------------------

@st.composite
def matmul_cases(draw, *, dtypes=(F32, BF16), activations=(None, "relu"),
                 min_k_steps: int = 2) -> Case:
    """x [M, K], y [K, N] with (M, N, K) multiples of a drawn (bm, bn, bk); at least
    ``min_k_steps`` k steps and at least two output blocks."""
    bm, bn, bk = (draw(st.sampled_from([8, 16, 32, 64])) for _ in range(3))
    blocks_m, blocks_n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if blocks_m * blocks_n < 2:
        blocks_n = 2
    blocks_k = draw(st.integers(min_k_steps, 4))
    dtype = draw(st.sampled_from(list(dtypes)))
    x = make_array((bm * blocks_m, bk * blocks_k), dtype, draw(seeds))
    y = make_array((bk * blocks_k, bn * blocks_n), dtype, draw(seeds))
    kwargs: dict = {"block_shape": (bm, bn, bk)}
    activation = draw(st.sampled_from(list(activations)))
    if activation is not None or draw(st.booleans()):
        kwargs["activation"] = activation
    return Case((x, y), kwargs, ("x", "y"))


def _assert_matmul(got: object, case: Case, rel: float, what: str,
                   expected: np.ndarray | None = None, memory: str | None = None) -> None:
    """``got`` equals the activated float64 product (or ``expected``, e.g. what the
    student's own kernel computes) within ``rel`` of |x| @ |y|. ``memory``: what fresh
    output buffers held when the kernel ran ("poison" or "zero"); with it, a failure is
    diagnosed by the known mistakes that compute ``got`` (``value_models``)."""
    x, y = case.args
    own_kernel = expected is not None
    if expected is None:
        expected = exact_product(x, y, case.kwargs.get("activation"))
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise CheckFailure(f"{what} has the wrong shape", expected=f"shape {expected.shape}",
                           got=f"shape {arr.shape}")
    g = arr.astype(np.float64)
    bound = error_bound(x, y, rel)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(g - expected) <= bound)
        if own_kernel:  # NaN where the kernel itself gives NaN is the kernel's, not charged here
            bad &= ~(np.isnan(g) & np.isnan(expected))
    if not bad.any():
        return
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    raise CheckFailure(
        f"{what} is wrong in {int(bad.sum())} of {bad.size} elements",
        expected=f"x @ y{' then ReLU' if case.kwargs.get('activation') else ''} in float64; "
                 f"at index {first}: {expected[first]:.6g}",
        got=f"{arr.dtype.name}{list(arr.shape)}; at index {first}: {g[first]:.6g} (allowed "
            f"error {bound[first]:.3g} = {rel:g}·(|x| @ |y|))",
        diagnosis=None if memory is None else diagnose_values(g, case, rel, memory))


def _product_bytes(case: Case) -> int:
    """Bytes of x @ y in float64: what a correct reply may need beyond its inputs (the
    product [M, N] outgrows x [M, K] and y [K, N] when K is small)."""
    x, y = case.args
    return 8 * x.shape[0] * y.shape[1]


def _kernel_run(s: Session, case: Case, memory: str) -> object:
    kwargs = {"block_shape": case.kwargs["block_shape"],
              "activation": case.kwargs.get("activation"), "memory": memory}
    return s.invoke("matmul_kernel", case.args, kwargs, harness="a3",
                    reply_bytes=_product_bytes(case)).value


# --- Task 3.1 matmul_kernel ----------------------------------------------------------------

@check(A, "3.1", 12, "matmul_kernel, run in the grader's 3D-grid pallas_call, accumulates "
                     "x @ y over the k steps (f32 inputs; fresh output buffers are poisoned, so "
                     "z_ref must be zeroed at k == 0)")
def kernel_accumulates(s: Session) -> None:
    """Task 3.1: matmul_kernel, run in the grader's 3D-grid pallas_call, accumulates x @ y over
    the k steps (f32 inputs; fresh output buffers are poisoned, so z_ref must be zeroed at k
    == 0).
    """
    def body(case: Case) -> None:
        _assert_matmul(_kernel_run(s, case, "poison"), case, F32_ACCUMULATION, "the output",
                       memory="poison")
    run_property(matmul_cases(dtypes=(F32,), activations=(None,)), body, max_examples=12)


@check(A, "3.1", 6, "matmul_kernel multiplies bf16 blocks and accumulates in float32 "
                    "(preferred_element_type=jnp.float32): error within float32 rounding")
def kernel_bf16_in_f32(s: Session) -> None:
    """Task 3.1: matmul_kernel multiplies bf16 blocks and accumulates in float32
    (preferred_element_type=jnp.float32): error within float32 rounding.
    """
    def body(case: Case) -> None:
        _assert_matmul(_kernel_run(s, case, "poison"), case, F32_ACCUMULATION, "the output",
                       memory="poison")
    run_property(matmul_cases(dtypes=(BF16,), activations=(None,)), body, max_examples=8)


@check(A, "3.1", 12, "with activation='relu' the kernel applies ReLU once, to the complete "
                     "sum after the last k step (run with zero-filled buffers, so this checks "
                     "the activation alone)")
def kernel_relu(s: Session) -> None:
    """Task 3.1: with activation='relu' the kernel applies ReLU once, to the complete sum after
    the last k step (run with zero-filled buffers, so this checks the activation alone).
    """
    def body(case: Case) -> None:
        _assert_matmul(_kernel_run(s, case, "zero"), case, BF16_RESULT, "the output",
                       memory="zero")
    run_property(matmul_cases(activations=("relu",)), body, max_examples=12)


# --- Task 3.2 matmul -----------------------------------------------------------------------


def _invoke_matmul(s: Session, case: Case):
    try:
        return s.invoke("matmul", case.args, case.kwargs, reply_bytes=_product_bytes(case))
    except CheckFailure as failure:
        raise revisit_diagnosis(failure, case) from None


@check(A, "3.2", 10, "matmul(x, y, block_shape=..., activation=...) equals x @ y (then ReLU) "
                     "for f32 and bf16 inputs")
def matmul_values(s: Session) -> None:
    """Task 3.2: matmul(x, y, block_shape=..., activation=...) equals x @ y (then ReLU) for f32
    and bf16 inputs.
    """
    def body(case: Case) -> None:
        try:
            reply = s.invoke("matmul", case.args, case.kwargs, harness="a3")
        except CheckFailure as failure:
            raise revisit_diagnosis(failure, case) from None
        out, kernel_out = against_own_kernel(reply.value, "matmul", "matmul_kernel")
        rel = BF16_RESULT if case.args[0].dtype == BF16 else F32_ACCUMULATION
        try:
            _assert_matmul(out, case, rel, "matmul's result",
                           expected=np.asarray(kernel_out, np.float64))
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "matmul", "matmul_kernel") from None
        reply.own_call(0)  # the product must come from matmul's own pallas_call
        arr = np.asarray(out)
        if arr.dtype != np.float32:
            raise CheckFailure("matmul must return a float32 array", expected="float32",
                               got=arr.dtype.name)
    run_property(matmul_cases(), body, max_examples=12)


def _scratch_bytes(call) -> int:
    """VMEM bytes of a call's scratch buffers."""
    return sum(math.prod(op.shape) * _itemsize(op.dtype) for op in call.operands
               if op.role == "scratch" and op.memory_space == "vmem")


def _itemsize(dtype: str) -> int:
    return np.dtype(BF16 if dtype == "bfloat16" else dtype).itemsize


def _summary(call) -> dict[str, object]:
    """What matmul_trace compares. VMEM is that of the operands' buffers: an f32 scratch
    accumulator beside them is allowed and checked on its own (``_check_scratch``)."""
    operands = [op for op in call.operands if op.role in ("in", "out")]
    return {
        "grid": tuple(call.grid),
        "dimension semantics": tuple(call.dimension_semantics),
        "block shapes": tuple(tuple(op.block_shape) for op in operands),
        "DMAs": call.dma_count,
        "HBM bytes read": call.hbm_bytes_read,
        "HBM bytes written": call.hbm_bytes_written,
        "VMEM bytes of the operands' buffers": call.vmem_bytes - _scratch_bytes(call),
    }


def _check_scratch(call, block_shape: tuple[int, int, int]) -> None:
    """A matmul may accumulate in VMEM scratch instead of in z_ref (lecture §4.1 keeps the
    running sum in the resident output block; a scratch buffer does the same job): at most
    one float32 (bm, bn) buffer, nothing else.

    Raises:
      CheckFailure: other scratch buffers, naming their shapes and dtypes.
    """
    bm, bn, _ = block_shape
    scratch = [op for op in call.operands if op.role == "scratch"]
    allowed = len(scratch) <= 1 and all(
        tuple(op.shape) == (bm, bn) and op.dtype == "float32" and op.memory_space == "vmem"
        for op in scratch)
    if not allowed:
        raise CheckFailure(
            "the pallas_call allocates scratch buffers a blocked matmul does not need",
            expected=f"no scratch, or one float32 ({bm}, {bn}) VMEM accumulator",
            got=", ".join(f"{op.memory_space} {op.dtype}{list(op.shape)}" for op in scratch))


@check(A, "3.2", 12, "matmul's pallas_call: grid (M/bm, N/bn, K/bk) with K last, semantics "
                     "('parallel', 'parallel', 'arbitrary'), each output block written back "
                     "once, DMAs, HBM bytes and VMEM equal the reference's")
def matmul_trace(s: Session) -> None:
    """Task 3.2: matmul's pallas_call: grid (M/bm, N/bn, K/bk) with K last, semantics
    ('parallel', 'parallel', 'arbitrary'), each output block written back once, DMAs, HBM
    bytes and VMEM equal the reference's.
    """
    def body(case: Case) -> None:
        reply = _invoke_matmul(s, case)
        with pallas_sim.trace() as recorded:
            ref.matmul(*case.args, **case.kwargs)
        expected = recorded.calls[-1]
        call = reply.own_call()
        if len(reply.traces) != 1:
            raise CheckFailure("matmul should make exactly one pallas_call",
                               expected="1 pallas_call", got=f"{len(reply.traces)}")
        got_summary, want_summary = _summary(call), _summary(expected)
        for field, want in want_summary.items():
            got = got_summary[field]
            if got != want:
                raise CheckFailure(f"the pallas_call's {field} differs from the intended "
                                   "configuration", expected=str(want), got=str(got),
                                   diagnosis=trace_diagnosis(field, got, want))
        _check_scratch(call, case.kwargs["block_shape"])
        out = [op for op in call.operands if op.role == "out"]
        blocks = (case.args[0].shape[0] // case.kwargs["block_shape"][0]) * (
            case.args[1].shape[1] // case.kwargs["block_shape"][1])
        if len(out) != 1 or out[0].dma_count != blocks:
            raise CheckFailure("each output block must be written back to HBM exactly once",
                               expected=f"{blocks} write-backs (one per output block)",
                               got=f"{[op.dma_count for op in out]}")
        if not call.vmem_bytes <= call.vmem_limit_bytes:  # pragma: no cover - the sim raises
            raise CheckFailure("the call needs more VMEM than its limit",
                               expected=f"at most {call.vmem_limit_bytes} B",
                               got=f"{call.vmem_bytes} B")
    run_property(matmul_cases(), body, max_examples=10)


def _mismatch_cases() -> list[tuple[str, tuple[int, int], tuple[int, int], tuple[int, ...]]]:
    """(dimension the message must name, x shape, y shape, block_shape)."""
    return [
        ("K", (64, 48), (32, 64), (32, 32, 16)),
        ("M", (48, 64), (64, 64), (32, 32, 32)),
        ("N", (64, 64), (64, 40), (32, 32, 32)),
        ("K", (64, 96), (96, 64), (32, 32, 64)),
    ]


def _require_a_pallas_call(s: Session) -> None:
    """The argument checks count for a wrapper that computes through pallas_call: on shapes
    that fit, what it returns must be its own pallas_call's output. A wrapper that fails
    there (a wrong grid, say) is charged by the other checks, not here."""
    good = Case((make_array((64, 64), F32, 1), make_array((64, 64), F32, 2)),
                {"block_shape": (32, 32, 32)}, ("x", "y"))
    try:
        reply = s.invoke("matmul", good.args, good.kwargs)
    except CheckFailure as failure:
        if failure.status == "failed":
            return
        raise
    try:
        reply.own_call()
    except CheckFailure as failure:
        raise failure.copy(input=repr(good)) from None


@check(A, "3.2", 4, "matmul raises ValueError naming the dimension for mismatched K and for "
                    "M, N or K that its block size does not divide")
def matmul_errors(s: Session) -> None:
    """Task 3.2: matmul raises ValueError naming the dimension for mismatched K and for M, N or K
    that its block size does not divide.
    """
    _require_a_pallas_call(s)
    for dim, x_shape, y_shape, block in _mismatch_cases():
        x, y = make_array(x_shape, F32, 1), make_array(y_shape, F32, 2)
        label = f"x = f32{list(x_shape)}, y = f32{list(y_shape)}, block_shape = {block}"
        problem = "the K of x and y differ" if x_shape[1] != y_shape[0] else (
            f"{dim} is not a multiple of its block size")
        try:
            s.invoke("matmul", (x, y), {"block_shape": block})
        except CheckFailure as failure:
            if failure.status != "failed":
                raise
            if not failure.what.startswith("matmul raised ValueError"):
                raise failure.copy(what=f"matmul must raise ValueError when {problem}",
                                   input=label, expected=f"ValueError naming {dim}",
                                   got=failure.what) from None
            message = failure.what.partition(": ")[2]
            if not re.search(rf"\b{dim}\b", message):
                raise CheckFailure(f"the ValueError's message does not name the dimension {dim}",
                                   input=label, expected=f"a message naming {dim}, e.g. "
                                   f"'{dim}=... is not a multiple of ...'",
                                   got=repr(message)) from None
        else:
            raise CheckFailure(f"matmul returned a result although {problem}", input=label,
                               expected=f"ValueError naming {dim}", got="a result")


@check(A, "3.2", 4, "worked answer: the fused ReLU costs no extra traffic — f32[256, 512] @ "
                    "f32[512, 256] with 128-blocks reads 2048 KiB and writes 256 KiB, with or "
                    "without activation (a separate pass would add 256 + 256 KiB; at full size "
                    "301.99 MB, 81.94 µs) (lecture §4.3)")
def matmul_fused_relu(s: Session) -> None:
    """Task 3.2: worked answer: the fused ReLU costs no extra traffic — f32[256, 512] @ f32[512,
    256] with 128-blocks reads 2048 KiB and writes 256 KiB, with or without activation (a
    separate pass would add 256 + 256 KiB; at full size 301.99 MB, 81.94 µs) (lecture §4.3).
    """
    x, y = make_array((256, 512), F32, 5), make_array((512, 256), F32, 6)
    traffic = {}
    for activation in (None, "relu"):
        case = Case((x, y), {"block_shape": (128, 128, 128), "activation": activation},
                    ("x", "y"))
        reply = _invoke_matmul(s, case)
        call = reply.own_call()
        if len(reply.traces) != 1:
            raise CheckFailure("matmul should make exactly one pallas_call; the activation "
                               "belongs in the kernel, not in a second pass",
                               input=repr(case), expected="1 pallas_call",
                               got=f"{len(reply.traces)}")
        traffic[activation] = (call.hbm_bytes_read // KiB, call.hbm_bytes_written // KiB)
    if traffic != {None: (2048, 256), "relu": (2048, 256)}:
        raise CheckFailure(
            "the HBM traffic of the fused matmul is off",
            input="x = f32[256, 512], y = f32[512, 256], block_shape = (128, 128, 128)",
            expected="read 2048 KiB, written 256 KiB, with and without activation='relu'",
            got=", ".join(f"activation={a!r}: read {r} KiB, written {w} KiB"
                          for a, (r, w) in traffic.items()))


# --- Task 3.3 matmul_vmem_bytes ------------------------------------------------------------

@check(A, "3.3", 4, "worked answers: (4096, 7168) @ (7168, 18432), 1024-blocks, bf16 in, f32 "
                    "out: 664 MiB (1d), 64 MiB (2d), 16 MiB (3d) (lecture §4.1)")
def vmem_worked(s: Session) -> None:
    """Task 3.3: worked answers: (4096, 7168) @ (7168, 18432), 1024-blocks, bf16 in, f32 out: 664
    MiB (1d), 64 MiB (2d), 16 MiB (3d) (lecture §4.1).
    """
    m, n, k = worked.SHAPE
    for grid, mib in worked.VMEM_MIB.items():
        kwargs = {"block": worked.VMEM_BLOCK, "grid": grid, "in_dtype": "bfloat16",
                  "out_dtype": "float32"}
        got = s.invoke("matmul_vmem_bytes", worked.SHAPE, kwargs).value
        try:
            assert_equal_int(got, mib * MiB, f"matmul_vmem_bytes with grid={grid!r}")
        except CheckFailure as failure:
            failure.input = (f"M = {m}, N = {n}, K = {k}, block = {worked.VMEM_BLOCK}, "
                             f"grid = {grid!r}")
            failure.expected = f"{mib * MiB} ({mib} MiB)"
            if grid == "1d" and got == 376 * MiB:
                failure.diagnosis = ("the resident output is counted once; every operand, the "
                                     "whole (M, N) output included, has two buffers")
            raise


@st.composite
def vmem_cases(draw) -> Case:
    """Arguments of matmul_vmem_bytes: (M, N, K) multiples of the block, any grid kind and
    dtype names."""
    block = draw(st.sampled_from([8, 128, 256, 512, 1024, 2048]))
    m, n, k = (block * draw(st.integers(1, 24)) for _ in range(3))
    kwargs = {"block": block, "grid": draw(st.sampled_from(["1d", "2d", "3d"])),
              "in_dtype": draw(st.sampled_from(["bfloat16", "float32", "float16", "int8"])),
              "out_dtype": draw(st.sampled_from(["float32", "bfloat16", "int32"]))}
    return Case((m, n, k), kwargs, ("M", "N", "K"))


@check(A, "3.3", 6, "matmul_vmem_bytes equals the reference's on drawn shapes, blocks, grid "
                     "kinds and dtypes")
def vmem_property(s: Session) -> None:
    """Task 3.3: matmul_vmem_bytes equals the reference's on drawn shapes, blocks, grid kinds and
    dtypes.
    """
    def body(case: Case) -> None:
        got = s.invoke("matmul_vmem_bytes", case.args, case.kwargs).value
        assert_equal_int(got, ref.matmul_vmem_bytes(*case.args, **case.kwargs),
                         "matmul_vmem_bytes")
    run_property(vmem_cases(), body, max_examples=30)


# --- Task 3.4 roofline ---------------------------------------------------------------------

def _number(s: Session, func: str, args: tuple, kwargs: dict, label: str) -> float:
    got = s.invoke(func, args, kwargs).value
    return as_finite_number(got, f"{func}'s result", expected="a finite number", input=label)


@check(A, "3.4", 4, "arithmetic_intensity(b, dtype_bytes) = b / dtype_bytes: 256 for b = 512 "
                    "and 512 for b = 1024 in bf16 (lecture §4.2)")
def intensity(s: Session) -> None:
    """Task 3.4: arithmetic_intensity(b, dtype_bytes) = b / dtype_bytes: 256 for b = 512 and 512
    for b = 1024 in bf16 (lecture §4.2).
    """
    cases = [(512, 2), (1024, 2)] + [(b, d) for b in (8, 100, 2048) for d in (1, 4)]
    for block, dtype_bytes in cases:
        label = f"block = {block}, dtype_bytes = {dtype_bytes}"
        got = _number(s, "arithmetic_intensity", (block, dtype_bytes), {}, label)
        expected = ref.arithmetic_intensity(block, dtype_bytes)
        if not math.isclose(got, expected, rel_tol=1e-12):
            diagnosis = None
            if math.isclose(got, block / 2, rel_tol=1e-12):
                diagnosis = "dtype_bytes is ignored"
            raise CheckFailure("the arithmetic intensity is wrong", input=label,
                               expected=f"{expected:g} FLOP/B (2b³ FLOPs / 2·b²·dtype_bytes B)",
                               got=f"{got:g}", diagnosis=diagnosis)


def _block(s: Session, args: tuple, kwargs: dict, label: str) -> int:
    got = s.invoke("min_compute_bound_block", args, kwargs).value
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        raise CheckFailure("min_compute_bound_block must return an int", input=label,
                           expected="an int", got=f"{got!r} ({type(got).__name__})")
    return int(got)


@check(A, "3.4", 4, "worked answers: Ironwood's balance point is about 279 FLOP/B, so the "
                    "smallest compute-bound bf16 block is 560 (559 without the multiple of 8) "
                    "(lecture §4.2, Ex5)")
def min_block_worked(s: Session) -> None:
    """Task 3.4: worked answers: Ironwood's balance point is about 279 FLOP/B, so the smallest
    compute-bound bf16 block is 560 (559 without the multiple of 8) (lecture §4.2, Ex5).
    """
    for multiple, expected in worked.MIN_BLOCK.items():
        kwargs = {"dtype_bytes": 2, "multiple_of": multiple}
        label = f"peak_flops = 1028.75e12, hbm_bandwidth = 3685.5e9, multiple_of = {multiple}"
        got = _block(s, (PEAK_FLOPS, HBM_BANDWIDTH), kwargs, label)
        if got != expected:
            raise CheckFailure("the smallest compute-bound block is wrong", input=label,
                               expected=str(expected), got=str(got),
                               diagnosis=diagnose_block(got, PEAK_FLOPS, HBM_BANDWIDTH, 2,
                                                         multiple))


@st.composite
def roofline_cases(draw) -> Case:
    """Arguments of min_compute_bound_block: peaks 0.25e12-1000e12 FLOP/s, bandwidths
    5e9-4000e9 B/s, dtype sizes 1/2/4 B, multiples 1/8/16/128."""
    peak = draw(st.integers(1, 4000)) * 1e12 / 4
    bandwidth = draw(st.integers(1, 800)) * 1e10 / 2
    dtype_bytes = draw(st.sampled_from([1, 2, 4]))
    multiple = draw(st.sampled_from([1, 8, 16, 128]))
    return Case((peak, bandwidth), {"dtype_bytes": dtype_bytes, "multiple_of": multiple},
                ("peak_flops", "hbm_bandwidth"))


@check(A, "3.4", 4, "min_compute_bound_block equals the reference's on drawn peaks, bandwidths, "
                    "dtype sizes and multiples, including bounds that fall exactly on a "
                    "multiple (strictly greater: the next multiple)")
def min_block_property(s: Session) -> None:
    """Task 3.4: min_compute_bound_block equals the reference's on drawn peaks, bandwidths, dtype
    sizes and multiples, including ties: where peak / bandwidth · dtype_bytes is exactly a
    multiple, that block's intensity equals the balance point and is not strictly greater,
    so the answer is the next multiple (the handout).
    """
    def body(case: Case) -> None:
        got = _block(s, case.args, case.kwargs, repr(case))
        # Drawn peaks and bandwidths are whole numbers of FLOP/s and B/s, so the bound
        # b > peak / bandwidth · dtype_bytes is exact: a bound on a multiple (a tie) is one,
        # not a float rounding, and the handout's "strictly greater" decides it.
        expected = ref.min_compute_bound_block(*case.args, **case.kwargs)
        if got != expected:
            raise CheckFailure("the smallest compute-bound block is wrong",
                               expected=str(expected), got=str(got),
                               diagnosis=diagnose_block(got, *case.args, **case.kwargs))
    for case in TIE_CASES:  # drawn examples need not include a tie, so these always run
        try:
            body(case)
        except CheckFailure as failure:
            if failure.input is None:
                failure.input = repr(case)
            raise
    run_property(roofline_cases(), body, max_examples=20)


#: Arguments of min_compute_bound_block whose bound falls exactly on a multiple (peak /
#: bandwidth · dtype_bytes = 1000, 512, 250): the block there has an intensity equal to the
#: balance point, which is not strictly greater (the handout), so the answer is the next
#: multiple: 1008, 640, 251.
TIE_CASES = tuple(Case((peak, bandwidth), {"dtype_bytes": size, "multiple_of": multiple},
                       ("peak_flops", "hbm_bandwidth"))
                  for peak, bandwidth, size, multiple in ((1000e12, 4000e9, 4, 8),
                                                          (512e12, 2000e9, 2, 128),
                                                          (250e12, 1000e9, 1, 1)))


def _time(s: Session, args: tuple, kwargs: dict, label: str) -> float:
    return _number(s, "ideal_matmul_time", args, kwargs, label)


@check(A, "3.4", 4, "worked answers: the full matmul ideally takes 1.147 ms with 512-blocks "
                    "(4032 steps) and 1.052 ms with 1024-blocks (504 steps) (lecture §4.2)")
def ideal_time_worked(s: Session) -> None:
    """Task 3.4: worked answers: the full matmul ideally takes 1.147 ms with 512-blocks (4032
    steps) and 1.052 ms with 1024-blocks (504 steps) (lecture §4.2).
    """
    m, n, k = worked.SHAPE
    for block, ms in worked.IDEAL_MS.items():
        kwargs = {"peak_flops": PEAK_FLOPS, "hbm_bandwidth": HBM_BANDWIDTH}
        label = f"M = {m}, N = {n}, K = {k}, block = {block}, Ironwood"
        got = _time(s, (*worked.SHAPE, block), kwargs, label)
        if not math.isclose(got, ms * 1e-3, rel_tol=WORKED_RTOL):
            diagnosis = None
            steps = (m // block) * (n // block) * (k // block)
            if math.isclose(got, steps * 2 * block**3 / PEAK_FLOPS, rel_tol=1e-6):
                diagnosis = ("only the compute time is counted; a step takes the longer of its "
                             "compute and its copies (512-blocks are copy-bound)")
            raise CheckFailure("the ideal time is wrong", input=label,
                               expected=f"{ms} ms ({ms * 1e-3:.4g} s)", got=f"{got:.4g} s",
                               diagnosis=diagnosis)


@st.composite
def time_cases(draw) -> Case:
    """Arguments of ideal_matmul_time: (M, N, K, block) with dimensions multiples of the
    block (the other case is undefined by the API), hardware as in roofline_cases."""
    block = draw(st.sampled_from([128, 256, 512, 1024, 2048]))
    m, n, k = (block * draw(st.integers(1, 16)) for _ in range(3))
    kwargs = {"peak_flops": draw(st.integers(1, 4000)) * 1e12 / 4,
              "hbm_bandwidth": draw(st.integers(1, 800)) * 1e10 / 2,
              "dtype_bytes": draw(st.sampled_from([1, 2, 4]))}
    return Case((m, n, k, block), kwargs, ("M", "N", "K", "block"))


@check(A, "3.4", 4, "ideal_matmul_time equals the reference's on drawn shapes (multiples of "
                    "the block), peaks, bandwidths and dtype sizes")
def ideal_time_property(s: Session) -> None:
    """Task 3.4: ideal_matmul_time equals the reference's on drawn shapes (multiples of the
    block), peaks, bandwidths and dtype sizes.
    """
    def body(case: Case) -> None:
        got = _time(s, case.args, case.kwargs, repr(case))
        expected = ref.ideal_matmul_time(*case.args, **case.kwargs)
        if not math.isclose(got, expected, rel_tol=1e-9):
            raise CheckFailure("the ideal time is wrong", expected=f"{expected:.6g} s",
                               got=f"{got:.6g} s")
    run_property(time_cases(), body, max_examples=20)


# --- Task 3.5 choose_matmul_blocks (performance) -------------------------------------------

#: Full points within this fraction above the best candidate's predicted time for the
#: student's own kernel.
PERFORMANCE_RTOL = worked.PERFORMANCE_RTOL
#: Seconds the worker may take for the measurement: about 100 abstract small runs (one per
#: legal candidate, at most three grid steps each) and two concrete ones (the chosen and
#: the reference's best candidate: up to 12.9 GFLOP of bf16 products in NumPy), about
#: 1-2 s here.
PERFORMANCE_TIMEOUT = 30.0
_PERF_M, _PERF_K = ref.PERFORMANCE_X_SHAPE
_PERF_N = ref.PERFORMANCE_Y_SHAPE[1]
_PERF_LABEL = (f"bf16 x [{_PERF_M}, {_PERF_K}] @ y [{_PERF_K}, {_PERF_N}] on one Ironwood "
               "TensorCore (lecture §4.2); your matmul_kernel in the grader's standard "
               "pallas_call")


@functools.lru_cache(maxsize=1)
def best_candidate() -> tuple[tuple[int, int, int], float]:
    """(the reference's fastest legal candidate, its predicted seconds with the reference
    kernel).

    The search over all candidates takes seconds, so its winner is kept in the reference
    (``ref.BEST_MATMUL_BLOCKS``, recomputed by tests/test_reference_a2_a3.py); only its
    time is predicted here, once per grading process.
    """
    blocks = tuple(ref.BEST_MATMUL_BLOCKS)
    return blocks, ref.predicted_matmul_time(blocks)


def _intensity_note(blocks: tuple[int, int, int]) -> str:
    """What the blocks cost per the lecture's arithmetic (§4.2): steps and FLOP/B per step."""
    bm, bn, bk = blocks
    steps = (_PERF_M // bm) * (_PERF_N // bn) * (_PERF_K // bk)
    intensity = (2 * bm * bn * bk) / (2 * (bm * bk + bk * bn))  # bf16: 2 B per element
    return (f"{steps} grid steps of about a microsecond's fixed cost each; "
            f"{intensity:.0f} FLOP per copied byte per step (Ironwood's balance point: "
            f"{PEAK_FLOPS / HBM_BANDWIDTH:.0f})")


def _oom_diagnosis() -> str:
    return ("the blocks need "
            "2·(bm·bk·2 + bk·bn·2 + bm·bn·4) B of double buffers, more than the 32 MiB scoped "
            "VMEM (Task 3.3's arithmetic, lecture §4.1)")


def _validate_blocks(reply: object) -> tuple[int, int, int]:
    """The chosen blocks from the harness's reply (plain data). Raises ``CheckFailure``:
    not three ints, or not candidates."""
    if not isinstance(reply, dict) or not isinstance(reply.get("blocks"), list):
        got = reply.get("blocks") if isinstance(reply, dict) else repr(reply)
        raise CheckFailure("choose_matmul_blocks() must return a tuple of three ints "
                           "(bm, bn, bk)", expected="e.g. (512, 512, 512)", got=str(got)[:200])
    blocks = reply["blocks"]
    candidates = ref.MATMUL_BLOCK_CANDIDATES
    if len(blocks) != 3 or not all(type(b) is int and b in candidates for b in blocks):
        raise CheckFailure("choose_matmul_blocks() returned a block size outside the candidate "
                           "set", expected=f"each of bm, bn, bk one of {list(candidates)}",
                           got=str(tuple(blocks))[:200])
    return tuple(blocks)  # type: ignore[return-value]


def _require_fits(blocks: tuple[int, int, int]) -> None:
    """The chosen blocks divide the problem and their double buffers fit the scoped VMEM
    (decided here, on the grader's own call). Raises ``CheckFailure``."""
    bm, bn, bk = blocks
    if not timing.divides(blocks):
        dims = [f"{name} = {b} does not divide {dim} = {size}" for name, b, dim, size in
                (("bm", bm, "M", _PERF_M), ("bn", bn, "N", _PERF_N), ("bk", bk, "K", _PERF_K))
                if size % b]
        raise CheckFailure("your blocks do not divide the lecture's matmul", input=_PERF_LABEL,
                           expected="(bm, bn, bk) dividing (M, N, K) = "
                                    f"({_PERF_M}, {_PERF_N}, {_PERF_K})",
                           got=f"{blocks}: " + "; ".join(dims))
    call = timing.small_call(blocks)
    if isinstance(call, str):
        raise CheckFailure(f"your blocks {blocks} do not fit the 32 MiB scoped VMEM",
                           input=_PERF_LABEL, expected="at most 32 MiB of blocks and buffers",
                           got=call.splitlines()[0], diagnosis=_oom_diagnosis())


def _verified(reply: dict, blocks: tuple[int, int, int], *, whose: str) -> step_model.StepRecord:
    """The student's kernel's per-step work at ``blocks``, measured concretely (values
    checked against float64 x @ y on the grader's sample) and equal to the abstract run's.
    ``whose`` names the blocks in messages ("your blocks", "the reference's best blocks").

    Raises:
      CheckFailure: the kernel raised there, computed wrong values, did different work on
        shapes only, ran fewer MXU FLOPs per step than its block product, or allocated
        more VMEM than the scoped limit.
    """
    key = timing.key(blocks)
    rows, cols = timing.sample_of(blocks)
    where = f"{whose} {blocks}"
    concrete = step_model.parse_record(
        (reply.get("concrete") or {}).get(key), num_steps=timing.k_steps(blocks),
        sample_shape=(len(rows), len(cols)))
    if isinstance(concrete, step_model.KernelRaised):
        raise CheckFailure(f"your matmul_kernel raised in the grader's standard pallas_call at "
                           f"{where}", input=_PERF_LABEL, got=concrete.error,
                           diagnosis=_oom_diagnosis() if concrete.error_type == "VmemOOMError"
                           else None)
    exact, magnitude = timing.expected_sample(blocks)
    got = concrete.sample.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - exact) <= F32_ACCUMULATION * magnitude)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise CheckFailure(
            f"your matmul_kernel's output at {where} is wrong, so its time is not given "
            "(Task 3.1 grades the kernel's values)", input=_PERF_LABEL + f"; {len(rows)} × "
            f"{len(cols)} output elements checked of x {timing.small_shapes(blocks)[0]} @ y "
            f"{timing.small_shapes(blocks)[1]}, seeded",
            expected=f"x @ y within {F32_ACCUMULATION:g}·(|x| @ |y|); at [{rows[r]}, "
                     f"{cols[c]}]: {exact[r, c]:.6g}",
            got=f"{int(bad.sum())} of {bad.size} wrong; at [{rows[r]}, {cols[c]}]: "
                f"{got[r, c]:.6g}")
    abstract = step_model.parse_record((reply.get("abstract") or {}).get(key),
                                       num_steps=timing.k_steps(blocks))
    if isinstance(abstract, step_model.KernelRaised):
        raise CheckFailure(f"your kernel raised on shapes only at {where} (it ran on data)",
                           input=_PERF_LABEL, got=abstract.error,
                           hint="a kernel's work must not depend on whether its blocks hold "
                                "values (pallas_sim.estimate runs the same kernel on shapes "
                                "only)")
    step_model.require_same_work(concrete, abstract, where=where, input=_PERF_LABEL)
    bm, bn, bk = blocks
    step_model.require_step_flops(
        concrete, 2 * bm * bn * bk, input=_PERF_LABEL,
        message=f"your matmul_kernel at {where} does not compute its block product: a step "
                "ran fewer MXU FLOPs than 2·bm·bn·bk")
    _require_scoped(blocks, concrete)
    return concrete


def _require_scoped(blocks: tuple[int, int, int], record: step_model.StepRecord) -> None:
    blocks_bytes, limit = timing.vmem(blocks)
    if blocks_bytes + record.scoped_vmem_bytes > limit:
        raise CheckFailure(f"your kernel's VMEM at {blocks} exceeds the 32 MiB scoped VMEM",
                           input=_PERF_LABEL, expected=f"at most {limit:,} B",
                           got=f"{blocks_bytes:,} B of blocks + "
                               f"{record.scoped_vmem_bytes:,} B of run_scoped")


def _legal_candidates() -> list[tuple[int, int, int]]:
    """The candidates that divide the problem and whose blocks fit the grader's call."""
    return [b for b in timing.all_candidates() if timing.fits(b)]


def projected_best(blocks: tuple[int, int, int], record: step_model.StepRecord
                   ) -> tuple[tuple[tuple[int, int, int], float], dict]:
    """The fastest legal candidate for the student's kernel, its work measured (verified)
    only at the chosen ``blocks`` and projected elsewhere from the reference kernel's
    (``timing.projected``): ((candidate, seconds), the times computed, by candidate).
    At ``blocks`` the time is the measured record's own."""
    records = {b: timing.projected(b, blocks, record) for b in _legal_candidates()}
    found, seen = step_model.sweep_times(
        records, lambda b: timing.lower_bound(b, records[b]),
        lambda b: float(timing.full_timeline(b, records[b]).time_s))
    assert found is not None
    return found, seen


def _measure(s: Session) -> dict:
    """The student's choice and their kernel's measured runs at it, concrete and abstract
    (one worker round trip per session; no other candidate is run). Raises
    ``CheckFailure``: the chooser raised, or returned no candidate."""
    kwargs = {"problems": timing.problems(), "candidates": ref.MATMUL_BLOCK_CANDIDATES,
              "sweep": (), "concrete": ()}
    outcome = performance.invoke_once(s, "choose_matmul_blocks", kwargs, harness="a3",
                                      timeout=PERFORMANCE_TIMEOUT)
    if isinstance(outcome, CheckFailure):
        raise outcome.copy(input=_PERF_LABEL)
    return outcome  # type: ignore[return-value]


def _chosen_time(s: Session) -> tuple[dict, tuple[int, int, int], step_model.StepRecord, object]:
    """(reply, chosen blocks, their verified record, their full-size timeline)."""
    reply = _measure(s)
    blocks = _validate_blocks(reply)
    _require_fits(blocks)
    record = _verified(reply, blocks, whose="your blocks")
    return reply, blocks, record, timing.full_timeline(blocks, record)


@check(A, "3.5", 3, "performance: choose_matmul_blocks() returns candidate blocks (bm, bn, bk) "
                    "at which your matmul_kernel, in the grader's standard pallas_call, runs "
                    "the lecture's matmul within the 32 MiB scoped VMEM with checked values")
def blocks_fit(s: Session) -> None:
    """Task 3.5: performance: choose_matmul_blocks() returns candidate blocks (bm, bn, bk) at
    which your matmul_kernel, in the grader's standard pallas_call, runs the lecture's matmul
    within the 32 MiB scoped VMEM with checked values.
    """
    _, _, _, line = _chosen_time(s)
    measures.record(s, measures.PREDICTED_MS, line.time_s * 1e3)


@check(A, "3.5", 7, "performance: your blocks are predicted within 10 % of the best candidate "
                    "for your own kernel (every legal candidate, your kernel's work measured "
                    "per grid step at your blocks and projected onto the others from the "
                    "reference's, the full size predicted by the model; lecture §4.2)")
def blocks_fast(s: Session) -> None:
    """Task 3.5: performance: your blocks are predicted within 10 % of the best candidate for
    your own kernel (every legal candidate, your kernel's work measured per grid step at your
    blocks and projected onto the others from the reference's, the full size predicted by
    the model; lecture §4.2).
    """
    _, blocks, record, line = _chosen_time(s)
    got_s = float(line.time_s)
    (fastest, best_s), _ = projected_best(blocks, record)
    if got_s <= best_s * (1 + PERFORMANCE_RTOL):
        return
    raise CheckFailure(
        f"your blocks {blocks} are predicted {step_model.ratio_text(got_s, best_s)} than "
        f"{fastest}, the best candidate for your own kernel", input=_PERF_LABEL,
        expected=f"at most {best_s * (1 + PERFORMANCE_RTOL) * 1e3:.3f} ms "
                 f"({PERFORMANCE_RTOL * 100:g} % above your kernel's "
                 f"{best_s * 1e3:.3f} ms at {fastest}, its work there projected from what "
                 "it measured at your blocks)",
        got=f"{got_s * 1e3:.3f} ms, MFU {line.mfu:.0%}, VMEM "
            f"{line.vmem_bytes / MiB:.1f} MiB of {line.vmem_limit_bytes / MiB:.0f}",
        diagnosis=f"{blocks} is {step_model.ratio_text(got_s, best_s)} than {fastest} on "
                  f"your kernel's measured work, projected: {_intensity_note(blocks)}")
