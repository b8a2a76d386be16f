"""Task 3.2 matmul."""

from __future__ import annotations

import math
import re

import numpy as np

import pallas_sim
import reference.a3_matmul as ref
from graders.checking.compare import against_own_kernel, kernel_mismatch
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import BF16, F32, Case, make_array
from graders.labs.a3_matmul.hidden.diagnose import revisit_diagnosis, trace_diagnosis

from .common import (
    BF16_RESULT,
    F32_ACCUMULATION,
    A,
    KiB,
    _assert_matmul,
    _product_bytes,
    matmul_cases,
)

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
