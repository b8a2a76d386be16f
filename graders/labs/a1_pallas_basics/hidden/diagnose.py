"""Known-mistake models of a1_pallas_basics (lecture §2): what each plausible mistake
does on a given input, and the diagnosis it earns.

A hidden check names a mistake only when the model reproduces the student's result on
the failing input (docs/style.md: a shown diagnosis is verified, not guessed): the bias_add
with its column-block axis inner is run here in its own pallas_call and compared with the
student's trace; the vmem_bytes mistakes are recomputed with the reference's formula.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import pallas_sim
import reference.a1_pallas_basics as ref
from graders.checking.compare import reference_run
from graders.checking.framework import CheckFailure
from pallas_sim import jax, pl, pltpu


def is_column_inner(calls: list, x: np.ndarray, bias: np.ndarray,
                     block_shape: tuple[int, int]) -> bool:
    """Whether ``calls`` is one pallas_call that does what bias_add with the column-block
    axis inner does on these inputs: grid (M/bm, N/bn), the same block indices at every step
    and the same copies per operand (run here with the student's dimension semantics, so a
    shuffled parallel axis is shuffled alike)."""
    if len(calls) != 1 or len(calls[0].dimension_semantics) != 2:
        return False
    call = calls[0]
    (rows, cols), (bm, bn) = x.shape, block_shape
    if rows % bm or cols % bn:
        return False

    def kernel(x_ref, bias_ref, o_ref):
        o_ref[...] = x_ref[...] + bias_ref[...]

    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    model_call = pl.pallas_call(
        kernel, grid=(rows // bm, cols // bn),
        in_specs=[spec, pl.BlockSpec((1, bn), lambda i, j: (0, j))], out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=tuple(call.dimension_semantics)))
    try:
        _, (model,) = reference_run(model_call, x.copy(), bias.copy())
    except pallas_sim.PallasSimError:
        return False
    return tuple(call.grid) == tuple(model.grid) and operands(call) == operands(model)


#: The one diagnosis of bias_add with its column-block axis inner, whichever check finds it
#: (the counts of a given input are in that check's expected and got), so the class report
#: counts the mistake once per student.
COLUMN_INNER = ("the column-block axis is the inner grid axis, so the bias block changes at "
                "every step and is fetched again each time instead of once per column of "
                "blocks; make the column-block axis the outer one (lecture §2.2)")


def column_inner_dmas(calls: list, x: np.ndarray, bias: np.ndarray,
                      block_shape: tuple[int, int]) -> str | None:
    """The diagnosis of bias_add's worked DMA count (f32[1024, 1024], blocks (128, 128)) when
    the student's call is the column-block-inner one (``COLUMN_INNER``), else None."""
    if not is_column_inner(calls, x, bias, block_shape):
        return None
    return COLUMN_INNER


def column_inner_trace(got: list, expected: list, case) -> str | None:
    """The diagnosis of a bias_add trace that differs from the reference's (``got`` the
    student's calls, ``expected`` the reference's, ``case`` the drawn input) when it is the
    column-block-inner call (``COLUMN_INNER``), else None."""
    if is_column_inner(got, *case.args, case.kwargs["block_shape"]):
        return COLUMN_INNER
    return None


def operands(call) -> list[tuple]:
    """Per input/output operand: role, block shape, copies, block index at every step."""
    return [(op.role, tuple(op.block_shape), op.dma_count, op.block_indices.tolist())
            for op in call.operands if op.role in ("in", "out")]


#: A dtype of another width for each dtype Task 1.5 draws: the diagnosis' second questions
#: change every operand's bytes per element, so a remembered answer cannot pass for them.
OTHER_WIDTH = {"float32": "bfloat16", "bfloat16": "float32", "float16": "int32",
               "int32": "float16", "int8": "float32", "float64": "int16", "int16": "float64",
               "uint8": "uint32", "uint32": "uint8", "bool": "float32"}


def second_questions(shapes, dtypes, block, buffers: int,
                     dtypes2: list | None = None) -> list[tuple[list, list, int]]:
    """The arguments a vmem_bytes diagnosis is verified on, besides the failing ones: every
    dimension of every shape doubled and made larger than the block's entry for it (so a
    block never covers a whole array there, nor is clipped to it), every dtype one of
    another width (``OTHER_WIDTH``) unless a mistake brings its own ``dtypes2``, at one
    buffer (unless ``buffers`` is 1) and at a count that is neither ``buffers`` nor 2.
    Shapes, dtypes and the count all change, so an answer kept from an earlier call (a
    cache keyed on any of them, or the last answer returned again) does not fit a mistake
    model by accident; two counts tell "always two buffers" from "at most two"."""
    def grown(shape) -> tuple:
        if block is None or len(block) != len(shape):
            return tuple(2 * d for d in shape)
        return tuple(2 * d + (0 if b is None else 2 * int(b))
                     for d, b in zip(shape, block, strict=True))

    shapes2 = [grown(shape) for shape in shapes]
    if dtypes2 is None:
        dtypes2 = [OTHER_WIDTH.get(d, "float32") for d in dtypes]
    counts = ([] if buffers == 1 else [1]) + [next(n for n in (3, 4, 5) if n != buffers)]
    return [(shapes2, dtypes2, n) for n in counts]


def _beside_narrow(dtypes) -> list:
    """bfloat16 first, then float64 for every other operand: a question where counting
    bfloat16 at 4 bytes differs from sizing every operand by the widest dtype, by the first
    one's, or by 4 bytes each, whatever the shapes."""
    return ["bfloat16"] + ["float64"] * (len(dtypes) - 1)


def _whole(shapes, dtypes) -> int:
    return ref.vmem_bytes(shapes, dtypes, None, 1)


#: The vmem_bytes mistakes a diagnosis can name: (what the mistake returns for shapes,
#: dtypes, block and buffer count, or None where it does not apply; the diagnosis). The
#: first whose answer to both questions is the student's is named (``diagnose_vmem``).
VMEM_MISTAKES: tuple[tuple[Callable[[list, list, object, int], int | None], str,
                            Callable[[list], list] | None], ...] = (
    (lambda sh, dt, b, n: None if b is None else ref.vmem_bytes(sh, dt, b, 2),
     "buffer_count is ignored: every operand holds buffer_count buffers of one block "
     "(lecture §2.2, §3.1)", None),
    (lambda sh, dt, b, n: None if b is None else ref.vmem_bytes(sh, dt, b, 1),
     "buffer_count is ignored (one buffer of each block): with BlockSpecs every operand holds "
     "buffer_count buffers of its block, two by default for double buffering (lecture §2.2, "
     "§3.1)", None),
    (lambda sh, dt, b, n: None if b is not None else n * _whole(sh, dt),
     "whole arrays are counted buffer_count times: without BlockSpecs there is no pipeline, "
     "and every operand is resident once, whole (lecture §2.1)", None),
    (lambda sh, dt, b, n: None if b is None else n * _whole(sh, dt),
     "with a block_shape, whole arrays are counted buffer_count times: each buffer holds one "
     "block, not the whole array (lecture §2.2)", None),
    (lambda sh, dt, b, n: None if b is None else _whole(sh, dt),
     "block_shape is ignored: with BlockSpecs each operand holds buffer_count buffers of one "
     "block, not the whole array (lecture §2.2)", None),
    (lambda sh, dt, b, n: None if "bfloat16" not in dt else ref.vmem_bytes(
        sh, ["float32" if d == "bfloat16" else d for d in dt], b, n),
     "bfloat16 is counted as 4 bytes per element; it is a 2-byte type (16 bits: 8 exponent, "
     "7 mantissa; lecture §2.1)", _beside_narrow),
    (lambda sh, dt, b, n: None if len(set(dt)) < 2 else ref.vmem_bytes(
        sh, [dt[0]] * len(dt), b, n),
     "every operand is counted with the first operand's dtype: each operand has its own "
     "dtype, and its bytes per element are that dtype's", None),
)


def diagnose_vmem(got: object, shapes, dtypes, block, buffers: int,
                  rerun: Callable[[list, list, int], object] | None = None) -> str | None:
    """The known vmem_bytes mistake that gives ``got`` on these arguments, else None
    (``VMEM_MISTAKES``: buffer_count ignored, whole arrays counted buffer_count times,
    block_shape ignored, bfloat16 as 4 bytes, the first dtype for every operand).
    ``dtypes`` are names (``OTHER_WIDTH``'s keys).

    ``rerun(shapes, dtypes, n)`` is the student's vmem_bytes on other shapes and dtypes with
    buffer_count n, with the same block (``second_questions``, each asked at most once): a
    mistake is named only when its answers to them are the student's and one at least
    differs from the right one (one answer cannot tell "buffer_count ignored" from "every
    block counted twice" when buffer_count is 1, nor from "at most two buffers" when it is
    above 2, and an answer remembered from an earlier call must not pass for a mistake).
    Without ``rerun`` (or when the re-run raises) no diagnosis is made."""
    if isinstance(got, bool) or not isinstance(got, int | np.integer):
        return None
    expected = ref.vmem_bytes(shapes, dtypes, block, buffers)
    if got == expected or rerun is None:
        return None
    answers: dict[tuple, int | None] = {}  # the student's answer to each question, once

    def student(question: tuple) -> int | None:
        key = repr(question)
        if key not in answers:
            answers[key] = _answer(rerun, question)
        return answers[key]

    for mistake, diagnosis, own_dtypes in VMEM_MISTAKES:
        if mistake(shapes, dtypes, block, buffers) != got:
            continue
        questions = second_questions(shapes, dtypes, block, buffers,
                                     None if own_dtypes is None else own_dtypes(dtypes))
        models = [mistake(sh, dt, block, n) for sh, dt, n in questions]
        rights = [ref.vmem_bytes(sh, dt, block, n) for sh, dt, n in questions]
        if any(m is None for m in models) or models == rights:
            continue  # the second questions would not tell this mistake from a right answer
        if all(student(q) == m for q, m in zip(questions, models, strict=True)):
            return diagnosis
    return None


def _answer(rerun: Callable[[list, list, int], object], args: tuple) -> int | None:
    """The student's vmem_bytes on ``args`` (shapes, dtypes, buffer count) when it returns
    an integer; None when it raises, times out or returns anything else."""
    try:
        got = rerun(*args)
    except CheckFailure:
        return None
    return int(got) if isinstance(got, int | np.integer) and not isinstance(got, bool) else None
