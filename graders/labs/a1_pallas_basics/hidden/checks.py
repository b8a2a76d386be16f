"""Checks of a1_pallas_basics (lecture §2): Tasks 1.1–1.5, 100 points.

Each task is checked three ways where it applies: against the hidden reference
on drawn inputs (shapes, blocks that divide and that do not, f32/bf16/int32),
against the lecture's worked answers, and, for wrappers, on the pallas_call's
trace (grid, block shapes, DMA count, VMEM bytes) against the reference's.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import reference.a1_pallas_basics as ref
from graders.checking.compare import (
    against_own_kernel,
    assert_close,
    assert_equal_int,
    assert_same_trace,
    kernel_mismatch,
    reference_run,
    require_ndarray,
    tolerance,
)
from graders.checking.framework import (
    CheckFailure,
    Session,
    check,
    run_property,
)
from graders.checking.strategies import BF16, F32, I32, Case, blocked_2d, make_array, seeds
from graders.labs.a1_pallas_basics.hidden.diagnose import (
    column_inner_dmas,
    column_inner_trace,
    diagnose_vmem,
)
from graders.labs.a1_pallas_basics.public import worked
from graders.labs.a1_pallas_basics.public.public_harness import vmem_call_text
from graders.labs.a1_pallas_basics.public.vmem_space import WIDE_QUESTIONS, vmem_questions

A = "a1"
MiB = worked.MiB


def check_trace_against_reference(s: Session, func: str, reference_fn, cases,
                                  *, max_examples: int = 10, diagnose=None,
                                  any_grid_order: bool = False) -> None:
    """Property: the student's ``func`` makes the same pallas_call(s) as the reference.

    Compares grid, block shapes, DMA count and VMEM bytes on drawn ``cases``
    (the reference gets copies of the arrays, so in-place updates do not
    leak). ``any_grid_order``: the grid's axes may come in another order (an
    elementwise call moves the same bytes with the same DMAs in any order; the
    block shapes, DMAs and VMEM must still match). ``diagnose(got_calls,
    expected_calls, case)`` names a known mistake, verified on the failing case.
    """
    def body(case: Case) -> None:
        reply = s.invoke(func, case.args, case.kwargs)
        reply.own_call()  # the checked call must be the one that computed the result
        copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in case.args)
        _, expected = reference_run(reference_fn, *copies, **case.kwargs)
        try:
            if any_grid_order:
                assert_same_trace(reply.traces, expected, ("block shapes", "DMAs", "VMEM bytes"))
                _same_grid_in_any_order(reply.traces, expected)
            else:
                assert_same_trace(reply.traces, expected)
        except CheckFailure as failure:
            if diagnose is not None:
                failure.diagnosis = diagnose(reply.traces, expected, case)
            raise
    run_property(cases, body, max_examples=max_examples)


def _same_grid_in_any_order(got: list, expected: list) -> None:
    """Each call's grid has the intended axes, in this order or another (lecture §2.2: for an
    elementwise call the order changes no copy)."""
    for g, e in zip(got, expected, strict=True):
        if sorted(g.grid) != sorted(e.grid):
            raise CheckFailure("the pallas_call's grid differs from the intended configuration",
                               expected=f"{tuple(e.grid)} (its axes in any order)",
                               got=str(tuple(g.grid)))


# --- shared inputs -------------------------------------------------------------------------

@st.composite
def two_arrays(draw, dividing: bool | None = None) -> Case:
    """x, y of one drawn shape and dtype, with a drawn block_shape."""
    shape, block, dtype = draw(blocked_2d(dividing=dividing))
    sx, sy = draw(seeds), draw(seeds)
    return Case((make_array(shape, dtype, sx), make_array(shape, dtype, sy)),
                {"block_shape": block}, ("x", "y"))


@st.composite
def bias_cases(draw) -> Case:
    """Strategy: x [M, N] and bias [1, N] with M, N multiples of a drawn block."""
    shape, block, dtype = draw(blocked_2d(dividing=True, max_blocks=4))
    x = make_array(shape, dtype, draw(seeds))
    bias = make_array((1, shape[1]), dtype, draw(seeds))
    return Case((x, bias), {"block_shape": block}, ("x", "bias"))


def _expected_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) + b.astype(np.float64)


# --- Task 1.1 add_kernel -------------------------------------------------------------------

def _check_add_kernel(s: Session, dividing: bool) -> None:
    def body(case: Case) -> None:
        x, y = case.args
        got = s.invoke("add_kernel", case.args, case.kwargs, harness="a1").value
        assert_close(got, _expected_sum(x, y), *_tol(x.dtype), what="the output block")
    run_property(two_arrays(dividing=dividing), body, max_examples=15)


def _tol(dtype: np.dtype) -> tuple[float, float]:
    return tolerance(dtype)


@check(A, "1.1", 10, "add_kernel, run in the grader's pallas_call, writes x + y for every "
                     "block (shapes that are multiples of the block)")
def add_kernel_dividing(s: Session) -> None:
    """Task 1.1: add_kernel, run in the grader's pallas_call, writes x + y for every block
    (shapes that are multiples of the block).
    """
    _check_add_kernel(s, dividing=True)


@check(A, "1.1", 5, "add_kernel is correct on edge blocks padded past the array's end")
def add_kernel_ragged(s: Session) -> None:
    """Task 1.1: add_kernel is correct on edge blocks padded past the array's end."""
    _check_add_kernel(s, dividing=False)


# --- Task 1.2 blocked_add ------------------------------------------------------------------

@check(A, "1.2", 10, "blocked_add(x, y, block_shape=...) equals x + y, including shapes that "
                     "are not multiples of the block, in x's dtype")
def blocked_add_values(s: Session) -> None:
    """Task 1.2: blocked_add(x, y, block_shape=...) equals x + y, including shapes that are not
    multiples of the block, in x's dtype.
    """
    def body(case: Case) -> None:
        x, y = case.args
        reply = s.invoke("blocked_add", case.args, case.kwargs, harness="a1")
        out, kernel_out = against_own_kernel(reply.value, "blocked_add", "add_kernel")
        got = require_ndarray(out, "blocked_add's result")
        reply.own_call(0)  # computed by its own pallas_call, not next to one
        try:
            assert_close(got, np.asarray(kernel_out, np.float64), *_tol(x.dtype),
                         what="blocked_add's result", same_nonfinite=True)
        except CheckFailure as failure:
            raise kernel_mismatch(failure, "blocked_add", "add_kernel") from None
        _require_dtype(got, x.dtype, "blocked_add's result")
    run_property(two_arrays(), body, max_examples=20)


def _require_dtype(got: np.ndarray, dtype: np.dtype, what: str) -> None:
    """The result has the input's dtype, as the docstring requires (a required
    dtype is checked).

    Raises:
      CheckFailure: another dtype, naming both.
    """
    if got.dtype != dtype:
        raise CheckFailure(f"{what} has the wrong dtype", expected=f"{dtype.name} (x's dtype)",
                           got=got.dtype.name,
                           hint="give pallas_call out_shape=jax.ShapeDtypeStruct(x.shape, "
                                "x.dtype)")


@check(A, "1.2", 10, "blocked_add makes one pallas_call with a cdiv grid of block_shape blocks "
                     "(grid, block shapes, DMAs, VMEM equal the intended call's)")
def blocked_add_trace(s: Session) -> None:
    """Task 1.2: blocked_add makes one pallas_call with a cdiv grid of block_shape blocks (grid,
    block shapes, DMAs, VMEM equal the intended call's).
    """
    check_trace_against_reference(s, "blocked_add", ref.blocked_add, two_arrays(),
                                  any_grid_order=True)


@check(A, "1.2", 5, "worked answer: a blocked f32[2048, 2048] add with (512, 512) blocks reads "
                    "32 MiB, writes 16 MiB and needs 6 MiB of VMEM (lecture §2.2)")
def blocked_add_worked(s: Session) -> None:
    """Task 1.2: worked answer: a blocked f32[2048, 2048] add with (512, 512) blocks reads 32
    MiB, writes 16 MiB and needs 6 MiB of VMEM (lecture §2.2).
    """
    answer = worked.BLOCKED_ADD
    x = make_array(answer.shape, F32, 1)
    y = make_array(answer.shape, F32, 2)
    reply = s.invoke("blocked_add", (x, y), {"block_shape": answer.block_shape})
    reply.own_call()
    calls = reply.traces
    if len(calls) != 1:
        raise CheckFailure("blocked_add should make exactly one pallas_call",
                           expected="1 pallas_call", got=f"{len(calls)}")
    c = calls[0]
    got = (c.hbm_bytes_read / MiB, c.hbm_bytes_written / MiB, c.vmem_bytes / MiB)
    want = (answer.hbm_bytes_read / MiB, answer.hbm_bytes_written / MiB,
            answer.vmem_bytes / MiB)
    if got != want:
        raise CheckFailure(
            "HBM traffic or VMEM of the blocked add is off",
            expected=f"read {want[0]:g} MiB, written {want[1]:g} MiB, VMEM {want[2]:g} MiB "
                     "(3 operands x 2 buffers x 1 MiB)",
            got=f"read {got[0]:g} MiB, written {got[1]:g} MiB, VMEM {got[2]:g} MiB",
            hint="each element should be read once and written once, whatever the block")


# --- Task 1.3 bias_add ---------------------------------------------------------------------

@check(A, "1.3", 8, "bias_add(x, bias) equals x + bias broadcast over rows, in x's dtype")
def bias_add_values(s: Session) -> None:
    """Task 1.3: bias_add(x, bias) equals x + bias broadcast over rows, in x's dtype."""
    def body(case: Case) -> None:
        x, bias = case.args
        reply = s.invoke("bias_add", case.args, case.kwargs)
        got = require_ndarray(reply.value, "bias_add's result")
        reply.own_call()
        assert_close(got, ref.bias_add(x, bias, **case.kwargs).astype(np.float64),
                     *_tol(x.dtype), what="bias_add's result")
        _require_dtype(got, x.dtype, "bias_add's result")
    run_property(bias_cases(), body, max_examples=20)


@check(A, "1.3", 10, "worked answer: f32[1024, 1024] + bias with (128, 128) blocks makes 136 "
                     "DMAs, not 192 (each bias block fetched once per column of blocks)")
def bias_add_worked_dmas(s: Session) -> None:
    """Task 1.3: worked answer: f32[1024, 1024] + bias with (128, 128) blocks makes 136 DMAs, not
    192 (each bias block fetched once per column of blocks).
    """
    answer = worked.BIAS_ADD
    x = make_array(answer.shape, F32, 3)
    bias = make_array((1, answer.shape[1]), F32, 4)
    reply = s.invoke("bias_add", (x, bias), {"block_shape": answer.block_shape})
    assert_close(reply.value, x.astype(np.float64) + bias, *_tol(F32), what="bias_add's result")
    reply.own_call()
    got = sum(c.dma_count for c in reply.traces)
    if got != answer.dma_count:
        diagnosis = column_inner_dmas(reply.traces, x, bias, answer.block_shape)
        raise CheckFailure("bias_add's DMA count", expected=f"{answer.dma_count} = 64 x copies "
                           "+ 8 bias copies + 64 output write-backs", got=f"{got} DMAs",
                           diagnosis=diagnosis)


@check(A, "1.3", 5, "bias_add's pallas_call matches the DMA-minimal configuration on drawn "
                    "shapes (grid, block shapes, DMAs, VMEM)")
def bias_add_trace(s: Session) -> None:
    """Task 1.3: bias_add's pallas_call matches the DMA-minimal configuration on drawn shapes
    (grid, block shapes, DMAs, VMEM).
    """
    check_trace_against_reference(s, "bias_add", ref.bias_add, bias_cases(),
                                  diagnose=column_inner_trace)


@st.composite
def ragged_bias_cases(draw) -> Case:
    """Strategy: x [M, N] and bias [1, N] where M, N or both are not multiples of a drawn
    block (the handout's ``Raises``: "M or N is not a multiple of its block size")."""
    ragged = draw(st.sampled_from(["N", "M", "both"]))
    bm = draw(st.sampled_from([8, 16, 32]))
    bn = draw(st.sampled_from([128, 8, 256]))

    def dim(block: int, is_ragged: bool) -> int:
        blocks = draw(st.integers(1, 3))
        return blocks * block + (draw(st.integers(1, block - 1)) if is_ragged else 0)

    m, n = dim(bm, ragged in ("M", "both")), dim(bn, ragged in ("N", "both"))
    dtype = draw(st.sampled_from([F32, BF16, I32]))
    x = make_array((m, n), dtype, draw(seeds))
    bias = make_array((1, n), dtype, draw(seeds))
    return Case((x, bias), {"block_shape": (bm, bn)}, ("x", "bias"))


def _require_bias_pallas_call(s: Session) -> None:
    """The ValueError check counts for a bias_add that computes through pallas_call (as a3's
    argument checks do): on a shape of whole blocks its result must be its own
    pallas_call's output. One that fails there is charged by the other checks."""
    x, bias = make_array((16, 256), F32, 5), make_array((1, 256), F32, 6)
    try:
        reply = s.invoke("bias_add", (x, bias), {"block_shape": (8, 128)})
    except CheckFailure as failure:
        if failure.status == "failed":
            return
        raise
    try:
        reply.own_call()
    except CheckFailure as failure:
        raise failure.copy(input="x = f32[16, 256], bias = f32[1, 256], "
                                 "block_shape = (8, 128)") from None


@check(A, "1.3", 2, "bias_add raises ValueError when M or N is not a multiple of its block "
                    "size (the handout's Raises), on drawn ragged shapes")
def bias_add_errors(s: Session) -> None:
    """Task 1.3: bias_add raises ValueError when M or N is not a multiple of its block size
    (the handout's ``Raises``), on drawn shapes ragged in M, in N or in both. Returning
    anything (NaN from padded edge blocks, or a partial sum from a grid that rounds down)
    fails.
    """
    _require_bias_pallas_call(s)

    def body(case: Case) -> None:
        x, _ = case.args
        bm, bn = case.kwargs["block_shape"]
        bad = " and ".join(f"{name}={dim} is not a multiple of {block}" for name, dim, block
                           in (("M", x.shape[0], bm), ("N", x.shape[1], bn)) if dim % block)
        try:
            s.invoke("bias_add", case.args, case.kwargs)
        except CheckFailure as failure:
            if failure.status != "failed":
                raise
            if not failure.what.startswith("bias_add raised ValueError"):
                raise failure.copy(what=f"bias_add must raise ValueError when {bad}",
                                   expected="ValueError (the handout's Raises)",
                                   got=failure.what) from None
            return
        raise CheckFailure(f"bias_add returned a result although {bad}",
                           expected="ValueError: M or N is not a multiple of its block size "
                                    "(the handout's Raises)",
                           got="a result",
                           hint="check both dimensions against block_shape before the "
                                "pallas_call and raise ValueError; a grid of rows // bm "
                                "leaves the ragged edge uncomputed, one of pl.cdiv(rows, bm) "
                                "adds past the array's end")
    run_property(ragged_bias_cases(), body, max_examples=8)


# --- Task 1.4 accumulate_inplace -----------------------------------------------------------

@st.composite
def accumulate_cases(draw) -> Case:
    """Strategy: acc and x of one shape (multiples of a drawn block) and dtype."""
    shape, block, dtype = draw(blocked_2d(dividing=True, max_blocks=4))
    acc = make_array(shape, dtype, draw(seeds))
    x = make_array(shape, dtype, draw(seeds))
    return Case((acc, x), {"block_shape": block}, ("acc", "x"))


@check(A, "1.4", 8, "accumulate_inplace(acc, x) returns acc + x")
def accumulate_values(s: Session) -> None:
    """Task 1.4: accumulate_inplace(acc, x) returns acc + x."""
    def body(case: Case) -> None:
        acc, x = case.args
        reply = s.invoke("accumulate_inplace", case.args, case.kwargs)
        got = require_ndarray(reply.value, "the result")
        reply.own_call()
        assert_close(got, _expected_sum(acc, x), *_tol(acc.dtype), what="the result")
    run_property(accumulate_cases(), body, max_examples=15)


@check(A, "1.4", 7, "accumulate_inplace's pallas_call aliases acc to its output "
                    "(input_output_aliases={0: 0}), and its result is that output")
def accumulate_aliasing(s: Session) -> None:
    """Task 1.4: accumulate_inplace's pallas_call aliases acc (input 0) to its output 0, so
    on a TPU the sum is written into acc's HBM buffer and nothing new is allocated; the
    function returns that output. (JAX arrays are immutable: the caller's acc keeps its
    values, on JAX and on pallas_sim alike.)
    """
    def body(case: Case) -> None:
        reply = s.invoke("accumulate_inplace", case.args, case.kwargs)
        call = reply.own_call()
        aliases = dict(call.input_output_aliases)
        if aliases != {0: 0}:
            shown = ", ".join(f"{i}: {o}" for i, o in sorted(aliases.items()))
            raise CheckFailure(
                "the pallas_call does not alias acc (input 0) to its output",
                expected="input_output_aliases={0: 0}",
                got=f"input_output_aliases={{{shown}}}",
                hint="pass input_output_aliases={0: 0} to pl.pallas_call with acc as its first "
                     "input, and return the call's result (lecture §2.2, output aliasing)")
    run_property(accumulate_cases(), body, max_examples=8)


@check(A, "1.4", 5, "accumulate_inplace's pallas_call matches the intended one (grid, block "
                    "shapes, DMAs, VMEM)")
def accumulate_trace(s: Session) -> None:
    """Task 1.4: accumulate_inplace's pallas_call matches the intended one (grid, block shapes,
    DMAs, VMEM).
    """
    check_trace_against_reference(s, "accumulate_inplace", ref.accumulate_inplace,
                                  accumulate_cases(), max_examples=8, any_grid_order=True)


# --- Task 1.5 vmem_bytes -------------------------------------------------------------------
# The questions cross to the worker as dtype names with the form each is passed in
# (``public_harness.vmem_bytes``): the handout allows names, NumPy dtypes and jnp dtypes.

_VMEM_ARGS = ("shapes", "dtypes", "block_shape", "buffer_count")


def _ask_vmem(s: Session, shapes, dtypes, block, buffers: int, forms) -> object:
    """The student's vmem_bytes on these arguments, each dtype name passed in its form."""
    return s.invoke("vmem_bytes", ([*shapes], [*dtypes], block, buffers, [*forms]),
                    harness="a1_public").value


def _vmem_question(s: Session, shapes, dtypes, block, buffers: int, forms) -> None:
    """Ask one vmem_bytes question and compare with the reference; a wrong answer fails with
    the call shown and a verified diagnosis (``diagnose_vmem``: its second question keeps
    the block and the dtype forms)."""
    got = _ask_vmem(s, shapes, dtypes, block, buffers, forms)
    try:
        assert_equal_int(got, int(ref.vmem_bytes(shapes, dtypes, block, buffers)),
                         "vmem_bytes")
    except CheckFailure as failure:
        failure.input = vmem_call_text(shapes, dtypes, block, buffers, forms)

        def rerun(shapes2, dtypes2, buffers2):
            return _ask_vmem(s, shapes2, dtypes2, block, buffers2, forms)

        failure.diagnosis = diagnose_vmem(got, shapes, dtypes, block, buffers, rerun)
        raise


@check(A, "1.5", 6, "worked answers: 48 MiB, 192 MiB and 6 MiB (lecture §2.1, Ex1)")
def vmem_worked(s: Session) -> None:
    """Task 1.5: worked answers: 48 MiB, 192 MiB and 6 MiB (lecture §2.1, Ex1); the dtypes
    passed as the handout's own example passes them (names, then ``np.float32``)."""
    for answer, form in zip(worked.VMEM, ("name", "type", "type"), strict=True):
        _vmem_question(s, answer.shapes, answer.dtypes, answer.block_shape,
                       answer.buffer_count, [form] * len(answer.dtypes))


def vmem_cases() -> st.SearchStrategy[Case]:
    """Strategy: Task 1.5's questions (``vmem_space.vmem_questions``) as cases."""
    return vmem_questions().map(lambda q: Case(
        (q["shapes"], q["dtypes"], q["block_shape"], q["buffer_count"]),
        {"forms": q["forms"]}, _VMEM_ARGS))


@check(A, "1.5", 9, "vmem_bytes agrees with the reference on drawn shapes, dtypes, blocks "
                    "and buffer counts")
def vmem_property(s: Session) -> None:
    """Task 1.5: vmem_bytes agrees with the reference on drawn shapes, dtypes, blocks and buffer
    counts.
    """
    def body(case: Case) -> None:
        _vmem_question(s, *case.args, case.kwargs["forms"])
    for case in VMEM_EDGES:  # drawn examples need not include these, so they always run
        body(case)
    run_property(vmem_cases(), body, max_examples=50)  # a failure here is shrunk
    for case in WIDE_EDGES:  # large questions last: a smaller failing one shows first
        body(case)


def _edge(shapes, dtypes, block, buffers, forms) -> Case:
    return Case((shapes, dtypes, block, buffers), {"forms": forms}, _VMEM_ARGS)


#: A general formula beyond the TPU's dtypes and the handout's sizes (a red team had full
#: marks with a five-dtype table, power-of-two block entries, blocks of rank 3 at most, at
#: most 8 buffers or 4 operands, or dimensions capped at 4096): the same questions are in
#: the public check (``vmem_space.WIDE_QUESTIONS``).
WIDE_EDGES = tuple(_edge(q["shapes"], q["dtypes"], q["block_shape"], q["buffer_count"],
                         q["forms"]) for q in WIDE_QUESTIONS)


#: Cases every run of vmem_property checks first (drawn examples need not include them;
#: ``WIDE_EDGES`` come after the drawn ones):
#: whole arrays with several buffers; one buffer of a block; a block with a None (squeezed)
#: entry, which counts as 1 (an honest student's walk: None read as the whole dimension, or
#: as 0, got full marks); one question asked at two buffer counts (an answer kept from the
#: first must not serve the second); more than four buffers of a 3-D block and a 1-D block,
#: with NumPy and jnp dtype objects (a red team's names-only, 2-D-only vmem_bytes capping
#: buffer_count at 4 had full marks); a small bool and float64 question.
VMEM_EDGES = (
    _edge([(64, 256), (256, 128)], ["float32", "bfloat16"], None, 3, ["name", "name"]),
    _edge([(1024, 1024)], ["int8"], (8, 128), 1, ["name"]),
    _edge([(4096, 512), (16, 512)], ["float32", "bfloat16"], (None, 512), 2, ["name", "jnp"]),
    _edge([(512, 1024)] * 2, ["float32", "int8"], (256, 512), 2, ["name", "name"]),
    _edge([(512, 1024)] * 2, ["float32", "int8"], (256, 512), 3, ["name", "name"]),
    _edge([(8, 1024, 512), (8, 1024, 512)], ["float32", "bfloat16"], (None, 256, 512), 6,
          ["type", "jnp"]),
    _edge([(65536,), (65536,), (65536,)], ["bfloat16", "int8", "float16"], (1024,), 3,
          ["dtype", "jnp", "type"]),
    _edge([(64, 128), (8, 128)], ["bool", "float64"], None, 2, ["name", "type"]),
)
