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


#: A dtype of another width for each dtype Task 1.5 draws: the diagnosis' second question
#: changes every operand's bytes per element, so a remembered answer cannot pass for it.
OTHER_WIDTH = {"float32": "bfloat16", "bfloat16": "float32", "float16": "int32",
               "int32": "float16", "int8": "float32"}


def second_question(shapes, dtypes, buffers: int) -> tuple[list, list, int]:
    """The arguments a vmem_bytes diagnosis is verified on, besides the failing ones: every
    shape's first dimension doubled, every dtype one of another width (``OTHER_WIDTH``), and
    a buffer count that is neither ``buffers`` nor 2. Shapes, dtypes and the count all
    change, so an answer kept from an earlier call (a cache keyed on any of them, or the last
    answer returned again) does not fit a mistake model by accident."""
    other = next(n for n in (3, 4, 5) if n != buffers)
    return ([(2 * shape[0], *shape[1:]) if len(shape) else shape for shape in shapes],
            [OTHER_WIDTH.get(d, "float32") for d in dtypes], other)


def diagnose_vmem(got: object, shapes, dtypes, block, buffers: int,
                  rerun: Callable[[list, list, int], object] | None = None) -> str | None:
    """The known vmem_bytes mistake that gives ``got`` on these arguments, else None:
    buffer_count ignored (always two block buffers), or whole arrays (no block_shape)
    counted buffer_count times. ``dtypes`` are names (``OTHER_WIDTH``'s keys).

    ``rerun(shapes, dtypes, n)`` is the student's vmem_bytes on other shapes and dtypes with
    buffer_count n, with the same block: a mistake is named only when it also gives the
    student's answer to that second question (``second_question``; one answer cannot tell
    "buffer_count ignored" from "every block counted twice" when buffer_count is 1, and an
    answer remembered from an earlier call must not pass for a mistake). Without ``rerun``
    (or when the re-run raises) no diagnosis is made."""
    if isinstance(got, bool) or not isinstance(got, int | np.integer):
        return None
    expected = ref.vmem_bytes(shapes, dtypes, block, buffers)
    if got == expected or rerun is None:
        return None
    shapes2, dtypes2, other = second_question(shapes, dtypes, buffers)
    if block is not None and got == ref.vmem_bytes(shapes, dtypes, block, 2):
        if _same_int(rerun, (shapes2, dtypes2, other),
                     ref.vmem_bytes(shapes2, dtypes2, block, 2)):
            return ("buffer_count is ignored: every operand holds buffer_count buffers of "
                    "one block (lecture §2.2, §3.1)")
    if block is None and got == buffers * expected:
        if _same_int(rerun, (shapes2, dtypes2, other),
                     other * ref.vmem_bytes(shapes2, dtypes2, None, other)):
            return (f"whole arrays are counted buffer_count times ({buffers}): without "
                    "BlockSpecs there is no pipeline, and every operand is resident once, "
                    "whole (lecture §2.1)")
    return None


def _same_int(rerun: Callable[[list, list, int], object], args: tuple, answer: int) -> bool:
    """Whether the student's vmem_bytes on ``args`` (shapes, dtypes, buffer count) returns
    ``answer``; False when it raises, times out or returns anything but that integer."""
    try:
        got = rerun(*args)
    except CheckFailure:
        return False
    return isinstance(got, int | np.integer) and not isinstance(got, bool) and got == answer
