"""Task 2.5 double_buffered_scale."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import reference.a2_pipelining as ref
from graders.checking.compare import assert_close, tolerance
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import BF16, F32, Case, make_array
from graders.labs.a2_pipelining.hidden.diagnose import (
    ANTI_PATTERN,
    SINGLE_BUFFER,
    diagnose_blocks,
    diagnose_raised,
)

from .common import A

# --- Task 2.5 double_buffered_scale --------------------------------------------------------
#
# Values are compared with the reference. The schedule is read from the trace of the
# student's own pallas_call: ``manual_dma_count`` / ``manual_dma_bytes`` (the copies the
# kernel made), ``ops["manual_dma_exposed_count"]`` per step (copies with no computation
# counted between their start() and their wait(): the slides' anti-pattern), the operands'
# memory spaces, and ``vmem_bytes`` (the VMEM slots of the scratch). A copy never waited
# raises UnwaitedDMAError in the simulator and a wait with nothing in flight raises
# PallasSimError; the diagnoses below read those messages, so each is shown only on the
# input where it happened (lecture §3.2).

SCALES = (2.0, -0.5, 1.5, 3.0)


@st.composite
def scale_cases(draw) -> Case:
    """x (M, N) f32 or bf16 with 1-6 blocks of 8 or 16 rows and N of 128 or 256 columns,
    a scale from SCALES, block_rows."""
    block_rows = draw(st.sampled_from([8, 16]))
    steps = draw(st.integers(1, 6))
    cols = draw(st.sampled_from([128, 256]))
    dtype = draw(st.sampled_from([F32, BF16]))
    x = make_array((steps * block_rows, cols), dtype, draw(st.integers(0, 2**16)))
    return Case((x, draw(st.sampled_from(SCALES))), {"block_rows": block_rows},
                ("x", "scale"))


#: Fixed inputs for the schedule checks: several steps, both dtypes, one single-step call.
SCHEDULE_CASES = (
    Case((make_array((64, 128), F32, 1), 2.0), {"block_rows": 8}, ("x", "scale")),
    Case((make_array((48, 256), BF16, 2), -0.5), {"block_rows": 16}, ("x", "scale")),
    Case((make_array((8, 128), F32, 3), 1.5), {"block_rows": 8}, ("x", "scale")),
)


def _invoke_scale(s: Session, case: Case):
    """The student's call on ``case``; a raise gets its diagnosis."""
    try:
        return s.invoke("double_buffered_scale", case.args, case.kwargs)
    except CheckFailure as failure:
        raise diagnose_raised(failure) from None


@check(A, "2.5", 10, "double_buffered_scale returns x * scale from its own pallas_call on drawn "
                     "arrays (f32 and bf16, 1-6 blocks of 8 or 16 rows, 128 or 256 columns)")
def scale_values(s: Session) -> None:
    """Task 2.5: double_buffered_scale returns x * scale from its own pallas_call on drawn arrays
    (f32 and bf16, 1-6 blocks of 8 or 16 rows, 128 or 256 columns).
    """
    def body(case: Case) -> None:
        reply = _invoke_scale(s, case)
        reply.own_call()
        x, scale = case.args
        expected = ref.double_buffered_scale(x, scale, **case.kwargs)
        rtol, atol = tolerance(x.dtype)
        try:
            assert_close(reply.value, expected, rtol, atol)
        except CheckFailure as failure:
            if isinstance(reply.value, np.ndarray):
                failure.diagnosis = diagnose_blocks(reply.value, case)
            raise
    run_property(scale_cases(), body, max_examples=12)


def _plan(case: Case) -> dict[str, int]:
    x, _ = case.args
    return ref.double_buffer_plan(x.shape, x.dtype, case.kwargs["block_rows"])


@check(A, "2.5", 10, "the trace shows the overlap: one fetch and one write-back per block, and "
                     "every copy but the first fetch and the last write-back has computation "
                     "between its start() and its wait(); two VMEM slots per direction")
def scale_overlap(s: Session) -> None:
    """Task 2.5: the trace shows the overlap: one fetch and one write-back per block, and every
    copy but the first fetch and the last write-back has computation between its start() and
    its wait(); two VMEM slots per direction.
    """
    for case in SCHEDULE_CASES:
        plan = _plan(case)
        try:
            call = _invoke_scale(s, case).own_call()
        except CheckFailure as failure:
            failure.input = repr(case)
            raise
        steps = plan["steps"]
        if call.manual_dma_count != plan["copies"]:
            raise CheckFailure(
                "the kernel does not move each block with one DMA in and one DMA out",
                input=repr(case),
                expected=f"{plan['copies']} manual DMAs ({steps} fetches, {steps} write-backs)",
                got=f"{call.manual_dma_count} manual DMAs",
                hint="leave x and the output in HBM (pl.ANY) and copy each (block_rows, N) "
                     "block with pltpu.make_async_copy")
        exposed = call.ops["manual_dma_exposed_count"] if call.ops is not None else None
        total = int(exposed.sum()) if exposed is not None else plan["copies"]
        if total > plan["exposed"]:
            per_step = exposed.tolist() if exposed is not None else "not recorded"
            diagnosis = ANTI_PATTERN if steps > 1 and total >= steps else None
            raise CheckFailure(
                f"{total} of the {plan['copies']} copies had nothing computed between their "
                "start() and their wait()",
                input=repr(case),
                expected=f"at most {plan['exposed']}: the first fetch (nothing to compute yet) "
                         "and the last write-back (nothing left to compute)",
                got=f"copies with no overlap, per grid step: {per_step}",
                diagnosis=diagnosis)
        slots = call.vmem_bytes // plan["block_bytes"]
        if slots < 4:
            raise CheckFailure(
                "the kernel has fewer than two VMEM slots per direction",
                input=repr(case),
                expected=f"4 blocks of VMEM scratch ({plan['vmem_bytes']} B): two input and "
                         "two result slots",
                got=f"{call.vmem_bytes} B of VMEM ({slots} block(s))",
                diagnosis=SINGLE_BUFFER.format(slots=slots))


@check(A, "2.5", 5, "x and the output stay in HBM (pl.ANY) and move only by the kernel's own "
                    "DMAs; grid (M // block_rows,), not 'parallel'; VMEM within four blocks")
def scale_memory(s: Session) -> None:
    """Task 2.5: x and the output stay in HBM (pl.ANY) and move only by the kernel's own DMAs;
    grid (M // block_rows,), not 'parallel'; VMEM within four blocks.
    """
    for case in SCHEDULE_CASES:
        plan = _plan(case)
        try:
            call = _invoke_scale(s, case).own_call()
        except CheckFailure as failure:
            failure.input = repr(case)
            raise
        moved = [op for op in call.operands if op.role in ("in", "out") and op.memory_space
                 != "any"]
        if moved or call.dma_count:
            names = ", ".join(f"{op.name} ({op.memory_space})" for op in moved) or "none"
            raise CheckFailure(
                "pallas_call copies blocks itself: an operand is not left in HBM",
                input=repr(case), expected="x and the output with memory_space=pl.ANY, "
                "0 automatic DMAs", got=f"operands outside HBM: {names}; {call.dma_count} "
                "automatic DMAs",
                hint="in_specs=[pl.BlockSpec(memory_space=pl.ANY)], "
                     "out_specs=pl.BlockSpec(memory_space=pl.ANY)")
        if tuple(call.grid) != (plan["steps"],):
            raise CheckFailure("the grid is not one step per block", input=repr(case),
                               expected=f"grid ({plan['steps']},)", got=f"grid {call.grid}")
        if "parallel" in tuple(call.dimension_semantics or ()):
            raise CheckFailure(
                "the grid axis is 'parallel'", input=repr(case), expected="('arbitrary',)",
                got=str(tuple(call.dimension_semantics)),
                hint="the slot in SMEM carries from one step to the next, so the steps must "
                     "run in order on one core: dimension_semantics=('arbitrary',)")
        if call.vmem_bytes > plan["vmem_bytes"]:
            raise CheckFailure(
                "VMEM over the budget of four blocks", input=repr(case),
                expected=f"at most {plan['vmem_bytes']} B (two input and two result slots of "
                         f"{plan['block_bytes']} B)",
                got=f"{call.vmem_bytes} B")
        if call.manual_dma_bytes != plan["dma_bytes"]:
            raise CheckFailure(
                "the kernel's DMAs do not move x once in and once out", input=repr(case),
                expected=f"{plan['dma_bytes']} B", got=f"{call.manual_dma_bytes} B")
