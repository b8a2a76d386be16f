"""Public checks of a1_pallas_basics (lecture §2): worked answers and ``x + y`` oracles.

Inputs come from the families grading draws from: f32, bf16 and int32 arrays, row blocks of
1-32 and column blocks of 8-256, shapes that are multiples of the block and shapes with a
ragged edge. Trace properties use the student API's formulas (a cdiv grid, one copy per
block and operand, two buffers of one block per operand).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from graders.labs.a1_pallas_basics.public import worked
from graders.labs.a1_pallas_basics.public.public_harness import vmem_call_text
from graders.labs.a1_pallas_basics.public.vmem_space import WIDE_QUESTIONS, vmem_questions
from graders.student.public import (
    Api,
    Mismatch,
    StudentRaised,
    arrays,
    assert_close,
    describe,
    public_check,
    seeds,
)

A = "a1"
MiB = worked.MiB
DTYPES = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.int32))
#: (rtol, atol) per dtype: a sum rounded to bfloat16 keeps 8 bits; int32 is exact.
TOLERANCE = {"float32": (1e-6, 1e-6), "bfloat16": (1.6e-2, 1e-2), "int32": (0.0, 0.0)}


def _array(shape: tuple[int, int], seed: int, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "i":
        return np.random.default_rng(seed).integers(-50, 50, size=shape).astype(dtype)
    return arrays(shape, seed, dtype=dtype)


class Blocked(dict):
    """x, y (same shape and dtype) and a block_shape, printed as the call's arguments."""

    def __repr__(self) -> str:
        return (f"x = {describe(self['x'])}, y = {describe(self['y'])}, block_shape = "
                f"{self['block_shape']}")


@st.composite
def blocked_pairs(draw, dividing: bool = False) -> Blocked:
    """x, y of a drawn 2-D shape and dtype and a block_shape; edges ragged unless
    ``dividing``."""
    bm, bn = draw(st.sampled_from([1, 8, 16, 32])), draw(st.sampled_from([8, 128, 256]))
    nm, nn = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    m = nm * bm if dividing else draw(st.integers(1, nm * bm))
    n = nn * bn if dividing else draw(st.integers(1, nn * bn))
    dtype = draw(st.sampled_from(DTYPES))
    return Blocked(x=_array((m, n), draw(seeds), dtype), y=_array((m, n), draw(seeds), dtype),
                   block_shape=(bm, bn))


def _sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) + b.astype(np.float64)


def _close(got: object, expected: np.ndarray, dtype: np.dtype, what: str) -> None:
    rtol, atol = TOLERANCE[dtype.name]
    assert_close(got, expected, rtol=rtol, atol=atol, what=what)


def _same_dtype(got: object, dtype: np.dtype, what: str) -> None:
    """The result has x's dtype, as the task's docstring requires."""
    if np.asarray(got).dtype != dtype:
        raise Mismatch(f"{what} has the wrong dtype", expected=f"{dtype.name} (x's dtype)",
                       got=np.asarray(got).dtype.name)


def _elementwise_call(api: Api, func: str, case: Blocked, x: np.ndarray) -> None:
    """One pallas_call with a cdiv grid of block_shape blocks (axes in either order), each
    block copied in once per input and written back once, two buffers per operand."""
    result = api.call(func, x, case["y"], block_shape=case["block_shape"])
    if len(result.traces) != 1:
        raise Mismatch(f"{func} must make exactly one pallas_call",
                       expected="1", got=str(len(result.traces)))
    call = result.traces[0]
    (m, n), (bm, bn) = case["x"].shape, case["block_shape"]
    grid = (math.ceil(m / bm), math.ceil(n / bn))
    blocks = grid[0] * grid[1]
    buffers = 1 if blocks == 1 else 2  # a single-step grid has nothing to overlap
    vmem = 3 * buffers * bm * bn * case["x"].dtype.itemsize
    got = (tuple(sorted(call.grid)), call.dma_count, call.vmem_bytes)
    if got != (tuple(sorted(grid)), 3 * blocks, vmem):
        raise Mismatch(f"{func}'s pallas_call differs from a cdiv grid of block_shape blocks",
                       expected=f"grid {grid} (either order), {3 * blocks} DMAs (one per block "
                                f"and operand), VMEM {vmem} B (3 operands x {buffers} "
                                "buffer(s) x one block)",
                       got=f"grid {tuple(call.grid)}, {call.dma_count} DMAs, VMEM "
                           f"{call.vmem_bytes} B")


@public_check(A, "1.1", "add_kernel in the handout's unblocked pallas_call (whole arrays, "
                        "the example under Task 1.1) writes x + y")
def add_kernel_values(api: Api) -> None:
    """Task 1.1: add_kernel in the handout's unblocked pallas_call (whole arrays, the example
    under Task 1.1) writes x + y (``public_harness.add_kernel``; the grader's blocked call
    is Task 1.2's answer and does not ship)."""
    def body(case: Blocked) -> None:
        got = api.kernel("a1_public", "add_kernel", case["x"], case["y"])
        _close(got, _sum(case["x"], case["y"]), case["x"].dtype, "the output")
    api.run_property(blocked_pairs(), body)


@public_check(A, "1.2", "blocked_add(x, y, block_shape=...) equals x + y (ragged shapes too) "
                        "through one pallas_call with a cdiv grid of block_shape blocks")
def blocked_add_values(api: Api) -> None:
    """Task 1.2: blocked_add(x, y, block_shape=...) equals x + y (ragged shapes too) through one
    pallas_call with a cdiv grid of block_shape blocks.
    """
    def body(case: Blocked) -> None:
        got = api.call("blocked_add", case["x"], case["y"], block_shape=case["block_shape"])
        _close(got.value, _sum(case["x"], case["y"]), case["x"].dtype, "blocked_add's result")
        _same_dtype(got.value, case["x"].dtype, "blocked_add's result")
        _elementwise_call(api, "blocked_add", case, case["x"])
    api.run_property(blocked_pairs(), body)


@public_check(A, "1.2", "worked answer: f32[2048, 2048] with (512, 512) blocks: grid (4, 4), "
                        "reads 32 MiB, writes 16 MiB, 6 MiB of VMEM (lecture §2.2)")
def blocked_add_worked(api: Api) -> None:
    """Task 1.2: worked answer: f32[2048, 2048] with (512, 512) blocks: grid (4, 4), reads 32
    MiB, writes 16 MiB, 6 MiB of VMEM (lecture §2.2).
    """
    answer = worked.BLOCKED_ADD
    x = np.ones(answer.shape, np.float32)
    result = api.call("blocked_add", x, x, block_shape=answer.block_shape)
    if not result.traces:
        raise Mismatch("blocked_add made no pallas_call", expected="one pl.pallas_call")
    call = result.traces[-1]
    got = (tuple(call.grid), call.hbm_bytes_read / MiB, call.hbm_bytes_written / MiB,
           call.vmem_bytes / MiB)
    expected = (answer.grid, answer.hbm_bytes_read / MiB, answer.hbm_bytes_written / MiB,
                answer.vmem_bytes / MiB)
    if got != expected:
        raise Mismatch("the pallas_call differs from the lecture's",
                       input=f"x = y = f32[{answer.shape[0]},{answer.shape[1]}], "
                             f"block_shape = {answer.block_shape}",
                       expected=f"grid {expected[0]}, read {expected[1]:g} MiB, written "
                                f"{expected[2]:g} MiB, VMEM {expected[3]:g} MiB",
                       got=f"grid {got[0]}, read {got[1]:g} MiB, written {got[2]:g} MiB, "
                           f"VMEM {got[3]:g} MiB")


@public_check(A, "1.3", "worked answer: f32[1024, 1024] with (128, 128) blocks makes "
                        "2·64 + 8 = 136 DMAs (lecture §2.2)")
def bias_add_worked(api: Api) -> None:
    """Task 1.3: worked answer: f32[1024, 1024] with (128, 128) blocks makes 2·64 + 8 = 136 DMAs
    (lecture §2.2).
    """
    answer = worked.BIAS_ADD
    x, bias = np.zeros(answer.shape, np.float32), np.ones((1, answer.shape[1]), np.float32)
    result = api.call("bias_add", x, bias, block_shape=answer.block_shape)
    dmas = sum(call.dma_count for call in result.traces)
    if dmas != answer.dma_count:
        raise Mismatch("bias_add does not fetch each bias block once per column of blocks",
                       input=f"x = f32[{answer.shape[0]},{answer.shape[1]}], bias = "
                             f"f32[1,{answer.shape[1]}], block_shape = {answer.block_shape}",
                       expected=f"{answer.dma_count} DMAs (64 x blocks + 8 bias blocks + 64 "
                                "write-backs)",
                       got=f"{dmas} DMAs" + (" (the column-block axis is the inner one: the "
                                             "bias block changes at every step)"
                                             if _column_inner(result.traces) else ""))


def _column_inner(calls: list) -> bool:
    """Whether the one call's bias operand (the input of shape (1, N) of the worked answer)
    visits column blocks 0..7 at every run of 8 steps, i.e. the column-block axis is the
    inner one."""
    answer = worked.BIAS_ADD
    rows, cols = answer.grid
    bias = [op for call in calls for op in call.operands
            if op.role == "in" and tuple(op.shape) == (1, answer.shape[1])]
    if len(calls) != 1 or len(bias) != 1 or bias[0].block_indices.shape != (rows * cols, 2):
        return False
    return bias[0].block_indices[:, 1].tolist() == list(range(cols)) * rows


@public_check(A, "1.3", "bias_add(x, bias) equals x + bias and makes 2·(M/bm)·(N/bn) + N/bn "
                        "DMAs")
def bias_add_values(api: Api) -> None:
    """Task 1.3: bias_add(x, bias) equals x + bias and makes 2·(M/bm)·(N/bn) + N/bn DMAs."""
    def body(case: Blocked) -> None:
        bias = case["y"][:1]
        got = api.call("bias_add", case["x"], bias, block_shape=case["block_shape"])
        _close(got.value, _sum(case["x"], bias), case["x"].dtype, "bias_add's result")
        _same_dtype(got.value, case["x"].dtype, "bias_add's result")
        (m, n), (bm, bn) = case["x"].shape, case["block_shape"]
        dmas = sum(call.dma_count for call in got.traces)
        want = 2 * (m // bm) * (n // bn) + n // bn
        if dmas != want:
            raise Mismatch("bias_add does not fetch each bias block once per column of blocks",
                           expected=f"{want} DMAs = 2·(M/bm)·(N/bn) + N/bn",
                           got=f"{dmas} DMAs")
    api.run_property(blocked_pairs(dividing=True), body)


#: (x's shape, block_shape) that are not whole blocks: M only, N only, both (bias f32[1, N]).
RAGGED_BIAS = (((20, 256), (8, 128)), ((16, 200), (8, 128)), ((12, 72), (8, 64)))


@public_check(A, "1.3", "bias_add raises ValueError when M or N is not a multiple of its "
                        "block size (the handout's Raises): ragged M, ragged N, both")
def bias_add_errors(api: Api) -> None:
    """Task 1.3: bias_add raises ValueError when M or N is not a multiple of its block size
    (the handout's ``Raises``), on x ragged in M, in N and in both (lecture §2.2). Returning
    anything fails: a grid of M // bm leaves the ragged edge uncomputed, one of
    pl.cdiv(M, bm) computes past the array's end.
    """
    for shape, block in RAGGED_BIAS:
        x, bias = arrays(shape, 1), arrays((1, shape[1]), 2)
        bad = " and ".join(f"{name} = {dim} is not a multiple of {label} = {size}"
                           for name, label, dim, size in (("M", "bm", shape[0], block[0]),
                                                          ("N", "bn", shape[1], block[1]))
                           if dim % size)
        label = f"x = f32[{shape[0]}, {shape[1]}], bias = f32[1, {shape[1]}], " \
                f"block_shape = {block}"
        try:
            api.call("bias_add", x, bias, block_shape=block)
        except StudentRaised as error:
            if error.error_type != "ValueError":
                raise error.copy(what=f"bias_add must raise ValueError when {bad}",
                                 input=label, expected="ValueError (the handout's Raises)",
                                 got=f"{error.error_type}: {error.message}"[:300]) from None
            continue
        raise Mismatch(f"bias_add returned a result although {bad}", input=label,
                       expected="ValueError: M or N is not a multiple of its block size (the "
                                "handout's Raises), raised before the pallas_call",
                       got="a result")


@public_check(A, "1.4", "accumulate_inplace(acc, x) returns acc + x from a pallas_call that "
                        "aliases acc to its output")
def accumulate_values(api: Api) -> None:
    """Task 1.4: accumulate_inplace(acc, x) returns acc + x from a pallas_call with
    input_output_aliases={0: 0}."""
    def body(case: Blocked) -> None:
        acc, x = case["x"].copy(), case["y"]
        expected = _sum(acc, x)
        got = api.call("accumulate_inplace", acc, x, block_shape=case["block_shape"])
        _close(got.value, expected, acc.dtype, "the result")
        aliases = [dict(c.input_output_aliases) for c in got.traces]
        if aliases != [{0: 0}]:
            raise Mismatch("the pallas_call does not alias acc (input 0) to its output",
                           expected="one pallas_call with input_output_aliases={0: 0}",
                           got=f"aliases {aliases}")
        _elementwise_call(api, "accumulate_inplace", case, case["x"].copy())
    api.run_property(blocked_pairs(dividing=True), body)


@public_check(A, "1.5", "worked answers: 48 MiB, 192 MiB unblocked; 6 MiB with (512, 512) "
                        "blocks (lecture §2.1, Ex1)")
def vmem_worked(api: Api) -> None:
    """Task 1.5: worked answers: 48 MiB, 192 MiB unblocked; 6 MiB with (512, 512) blocks (lecture
    §2.1, Ex1).
    """
    for answer in worked.VMEM:
        shapes, block, mib = [*answer.shapes], answer.block_shape, answer.mib
        got = api.call("vmem_bytes", shapes, [*answer.dtypes], block).value
        if got != mib * MiB:
            raise Mismatch("vmem_bytes differs from the lecture",
                           input=f"shapes = {shapes}, block_shape = {block}",
                           expected=f"{mib * MiB} ({mib} MiB)", got=repr(got))


@public_check(A, "1.5", "vmem_bytes follows the formula: whole arrays once, or buffer_count "
                        "buffers of one block per operand")
def vmem_formula(api: Api) -> None:
    """Task 1.5: vmem_bytes follows the formula: whole arrays once, or buffer_count buffers of
    one block per operand.
    """
    def size(name: str) -> int:
        return 2 if name == "bfloat16" else np.dtype(name).itemsize

    def body(case: dict) -> None:
        if case["block_shape"] is None:
            expected = sum(math.prod(s) * size(d)
                           for s, d in zip(case["shapes"], case["dtypes"], strict=True))
        else:
            block = math.prod(1 if b is None else b for b in case["block_shape"])
            expected = sum(case["buffer_count"] * block * size(d) for d in case["dtypes"])
        # each dtype name is passed as the form drawn for it: a name, a NumPy or a jnp dtype
        got = api.kernel("a1_public", "vmem_bytes", case["shapes"], case["dtypes"],
                         case["block_shape"], case["buffer_count"], case["forms"])
        asked = vmem_call_text(case["shapes"], case["dtypes"], case["block_shape"],
                               case["buffer_count"], case["forms"])
        if isinstance(got, bool) or not isinstance(got, int | np.integer):
            raise Mismatch("vmem_bytes must return an int number of bytes (the grader "
                           "gives no points to a float or another type)", input=asked,
                           expected=f"{expected} (int)", got=f"{got!r} ({type(got).__name__})")
        # the value itself: an int subclass's own == (or a NumPy one's) decides nothing
        got = int.__int__(got) if isinstance(got, int) else int(np.int64(got))
        if got != expected:
            raise Mismatch("vmem_bytes differs from the formula", expected=str(expected),
                           got=repr(got), input=asked)
    # always: a block with a None (squeezed) entry, one element of that dimension; more than
    # four buffers of a 3-D block and a 1-D block, with NumPy and jnp dtype objects; the
    # same question at two buffer counts
    body({"shapes": [(4096, 512)], "dtypes": ["float32"], "block_shape": (None, 512),
          "buffer_count": 2, "forms": ["name"]})
    body({"shapes": [(8, 1024, 512)] * 2, "dtypes": ["float32", "bfloat16"],
          "block_shape": (None, 256, 512), "buffer_count": 6, "forms": ["type", "jnp"]})
    body({"shapes": [(65536,)] * 2, "dtypes": ["bfloat16", "int8"], "block_shape": (1024,),
          "buffer_count": 3, "forms": ["dtype", "jnp"]})
    for question in WIDE_QUESTIONS:
        body(dict(question))
    # one question at three buffer counts: an answer kept from the first must not serve
    # the others, and one buffer is one buffer
    for buffers in (2, 3, 1):
        body({"shapes": [(512, 1024)] * 2, "dtypes": ["float32", "int8"],
              "block_shape": (256, 512), "buffer_count": buffers, "forms": ["name", "name"]})
    api.run_property(vmem_questions(), body)
