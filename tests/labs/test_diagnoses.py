"""Diagnoses are shown only when the student's output is what the named mistake computes:
the models of a1 to a5 on their own, in the trusted
process, without a worker.

Each test computes a mistake's output with the checks' own model (or with pallas_sim, as
the mistaken code would) and asserts that the diagnosis names that mistake and no other;
outputs that no modelled mistake computes get no diagnosis at all.
"""

from __future__ import annotations

import numpy as np
import pytest

import graders.labs.a1_pallas_basics.hidden.diagnose as a1
import graders.labs.a2_pipelining.hidden.diagnose as a2
import graders.labs.a3_matmul.hidden.checks.common as a3
import graders.labs.a3_matmul.hidden.diagnose as a3_diagnose
import graders.labs.a5_splash_attention.hidden.diagnose as a5_diagnose
import reference.a2_pipelining as ref2
import reference.a5_splash_attention as ref5
from graders.checking.framework import CheckFailure
from graders.checking.strategies import F32, Case, make_array
from graders.labs.a5_splash_attention.hidden.checks import common as a5_common
from graders.labs.a5_splash_attention.hidden.checks import computed as a5_computed
from graders.labs.a5_splash_attention.hidden.checks import kernel as a5_kernel
from pallas_sim import jax, pl, pltpu

# --- a5: the Splash kernel ------------------------------------------------------------------


def _splash_case(mask: np.ndarray, block: int, recipe: str) -> a5_kernel.SplashCase:
    length = mask.shape[0]
    q, k, v = (make_array((2, length, 4), F32, seed, low=-2, high=2) for seed in (1, 2, 3))
    return a5_kernel.SplashCase(q, k, v, a5_common.MaskCase(mask, block, block, recipe), None,
                                (1, 2, 3))


#: local & documents: rows whose first active tile masks all their keys (so -inf without
#: care gives NaN), several q rows of tiles (so an init at g == 0 only is wrong), full tiles.
_MASK = ref5.local_mask(16, (5, 0)) & ref5.segment_mask(np.repeat([0, 1], [6, 10]))
_CASE = _splash_case(_MASK, 2, "local & documents")


def _expected(c: a5_kernel.SplashCase) -> np.ndarray:
    return a5_common._dense_attention(c.q, c.k, c.v, c.case.mask, c.scale)


@pytest.mark.task("5.4")
@pytest.mark.parametrize("index", range(len(a5_diagnose.KERNEL_MISTAKES)))
def test_a_splash_mistake_is_named_by_its_own_output_only(index: int) -> None:
    mistake = a5_diagnose.KERNEL_MISTAKES[index]
    fields = a5_kernel._kernel_fields(_CASE.info)
    got = a5_diagnose.splash_model(_CASE, fields, mistake).astype(np.float32)
    diagnosis = a5_diagnose.diagnose_kernel(got, _CASE, fields, _expected(_CASE))
    assert diagnosis == mistake.text, (
        f"the output of '{mistake.text[:60]}...' must be diagnosed as that mistake alone; "
        f"got {diagnosis!r}")


@pytest.mark.task("5.4")
def test_nan_from_neg_inf_scores_is_not_blamed_on_masking_full_tiles() -> None:
    # The checks' full-tile test hands full tiles an all-False pattern; the -inf kernel's
    # NaN there used to be blamed on masking full tiles.
    info = _CASE.info
    full = info.block_mask == 2
    blocks = info.partial_mask_blocks
    poisoned = np.concatenate([blocks, np.zeros((1, *blocks.shape[1:]), bool)])
    nxt = np.where(full, len(blocks), info.mask_next).astype(np.int32)
    fields = tuple(info._replace(partial_mask_blocks=poisoned, mask_next=nxt))
    neg_inf, init_g0 = a5_diagnose.KERNEL_MISTAKES[2], a5_diagnose.KERNEL_MISTAKES[3]
    for mistake in (neg_inf, init_g0):
        got = a5_diagnose.splash_model(_CASE, fields, mistake)
        diagnosis = a5_diagnose.diagnose_kernel(got, _CASE, fields, _expected(_CASE)) or ""
        assert "applied on full tiles" not in diagnosis, diagnosis
        assert diagnosis == mistake.text


@pytest.mark.task("5.4")
def test_an_output_no_mistake_computes_gets_no_diagnosis() -> None:
    fields = a5_kernel._kernel_fields(_CASE.info)
    expected = _expected(_CASE)
    noisy = expected + np.random.default_rng(0).normal(0, 0.1, expected.shape)
    assert a5_diagnose.diagnose_kernel(noisy, _CASE, fields, expected) is None
    nan = np.full_like(expected, np.nan)
    assert a5_diagnose.diagnose_kernel(nan, _CASE, fields, expected) is None, (
        "all-NaN is not what any modelled mistake computes on this mask")


@pytest.mark.task("5.4")
def test_reinitialising_every_tile_is_told_from_masking_full_tiles_by_the_true_maskinfo(
) -> None:
    # Causal, square tiles: with all-False patterns handed to the full tiles, masking them
    # and keeping only each row's last (diagonal) tile give the same output; the same
    # kernel over the true MaskInfo tells the two apart.
    case = _splash_case(ref5.causal_mask(8), 2, "causal")
    info = case.info
    full = info.block_mask == 2
    blocks = info.partial_mask_blocks
    poisoned = tuple(info._replace(
        partial_mask_blocks=np.concatenate([blocks, np.zeros((1, *blocks.shape[1:]), bool)]),
        mask_next=np.where(full, len(blocks), info.mask_next).astype(np.int32)))
    real = a5_kernel._kernel_fields(info)
    every_tile = next(m for m in a5_diagnose.KERNEL_MISTAKES if m.init_every_tile)
    on_full = a5_diagnose.KERNEL_MISTAKES[0]
    got = a5_diagnose.splash_model(case, poisoned, every_tile)
    alone = a5_diagnose.diagnose_kernel(got, case, poisoned, _expected(case))
    assert alone is not None and on_full.text in alone and every_tile.text in alone, (
        "over the poisoned arrays alone both mistakes compute this output")
    real_out = a5_diagnose.splash_model(case, real, every_tile)
    both = a5_diagnose.diagnose_kernel(got, case, poisoned, _expected(case),
                                       ((real_out, real),))
    assert both == every_tile.text


@pytest.mark.task("5.6")
def test_the_positions_diagnosis_reads_what_the_call_was_handed() -> None:
    length = 4
    q_pos = np.arange(length, dtype=np.int32) + 2
    every = np.arange(length, dtype=np.int32)
    case = a5_computed.ComputedCase(*(np.zeros((1, length, 4), np.float32),) * 3,
                           {"q_positions": q_pos, "causal": True},
                           ref5.causal_mask(length), 2, 2, "causal")

    def call(kv: np.ndarray) -> list:
        return [[((length, 1), "int32", q_pos.reshape(length, 1)),
                 ((1, length), "int32", kv.reshape(1, length))]]

    assert a5_computed._positions_diagnosis(call(q_pos), case) == a5_computed.KV_POSITIONS_FROM_Q
    assert a5_computed._positions_diagnosis(call(every), case) == a5_computed.POSITIONS_FROM_GRID
    assert a5_computed._positions_diagnosis(call(every * 3), case) is None


@pytest.mark.task("5.3")
def test_pattern_diagnoses_follow_the_stored_patterns() -> None:
    docs = ref5.segment_mask(np.repeat([0, 1, 2], [3, 6, 7]))
    case = a5_common.MaskCase(docs, 4, 4, "documents 3/6/7")
    none_shared, by_offset = (patterns for patterns, _ in a5_diagnose.pattern_models(case))
    assert len(none_shared) != len(by_offset), "the mask must tell the two mistakes apart"
    assert "its own pattern" in a5_diagnose.pattern_diagnosis(none_shared, case)
    assert "position" in a5_diagnose.pattern_diagnosis(by_offset, case)
    assert a5_diagnose.pattern_diagnosis(none_shared[::-1].copy(), case) is None, (
        "patterns in another order are not what either mistake stores")


# --- a3: the matmul kernel and the grid ------------------------------------------------------


def _matmul_case(blocks: tuple[int, int, int], activation: str | None = None) -> Case:
    bm, bn, bk = 8, 8, 8
    x = make_array((bm * blocks[0], bk * blocks[2]), F32, 1)
    y = make_array((bk * blocks[2], bn * blocks[1]), F32, 2)
    return Case((x, y), {"block_shape": (bm, bn, bk), "activation": activation}, ("x", "y"))


@pytest.mark.task("3.1")
def test_an_init_on_the_wrong_axis_is_told_from_overwriting() -> None:
    case = _matmul_case((2, 2, 3))
    x, y = case.args
    wrong_axis = a3_diagnose.init_on_axis(x, y, (8, 8, 8), None, 0, "poison")
    overwrite = a3_diagnose.last_step_only(x, y, 8, None)
    text = a3_diagnose.diagnose_values(wrong_axis, case, a3.F32_ACCUMULATION, "poison")
    assert text is not None and "pl.program_id(0) == 0" in text and "overwritten" not in text
    text = a3_diagnose.diagnose_values(overwrite, case, a3.F32_ACCUMULATION, "poison")
    assert text is not None and "overwritten" in text and "program_id(0)" not in text


@pytest.mark.task("3.1")
def test_with_one_block_row_both_mistakes_are_named() -> None:
    case = _matmul_case((1, 2, 3))
    x, y = case.args
    overwrite = a3_diagnose.last_step_only(x, y, 8, None)
    text = a3_diagnose.diagnose_values(overwrite, case, a3.F32_ACCUMULATION, "poison") or ""
    assert "2 known mistakes" in text and "overwritten" in text and "program_id(0)" in text


@pytest.mark.task("3.1")
def test_all_nan_is_a_missing_init_only_with_poisoned_buffers() -> None:
    case = _matmul_case((2, 2, 2), "relu")
    nan = np.full((16, 16), np.nan)
    assert "not zeroed" in (a3_diagnose.diagnose_values(nan, case, a3.BF16_RESULT, "poison") or "")
    assert a3_diagnose.diagnose_values(nan, case, a3.BF16_RESULT, "zero") is None, (
        "with zero-filled buffers a missing init gives the right sum, never NaN")


def _revisit_failure(out_map, grid, semantics) -> CheckFailure:
    """The CheckFailure a student's matmul raising RevisitedOutputBlockError produces."""
    from pallas_sim._src.errors import RevisitedOutputBlockError

    case = _matmul_case((2, 2, 2))
    x, y = case.args

    def kernel(x_ref, y_ref, z_ref):
        z_ref[...] = x_ref[...] @ y_ref[...]

    call = pl.pallas_call(
        kernel, grid=grid,
        in_specs=[pl.BlockSpec((8, 8), lambda *g: (0, 0)), pl.BlockSpec((8, 8),
                                                                         lambda *g: (0, 0))],
        out_specs=pl.BlockSpec((8, 8), out_map),
        out_shape=jax.ShapeDtypeStruct((16, 16), np.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=semantics))
    import pallas_sim
    from graders.grading.grade import GRADING_SIM_OPTIONS

    with pytest.raises(RevisitedOutputBlockError) as raised, \
            pallas_sim.config(**GRADING_SIM_OPTIONS):
        call(x, y)
    return CheckFailure(f"matmul raised RevisitedOutputBlockError: {raised.value}")


@pytest.mark.task("3.2")
def test_a_revisit_is_blamed_on_the_k_axis_only_when_a_k_first_grid_raises_it() -> None:
    case = _matmul_case((2, 2, 2))
    k_first = _revisit_failure(lambda k, i, j: (i, j), (2, 2, 2),
                               ("parallel", "parallel", "arbitrary"))
    assert "the K axis is not the last grid axis" in (
        a3_diagnose.revisit_diagnosis(k_first, case).diagnosis or "")
    ignores_i = _revisit_failure(lambda i, j, k: (0, j), (2, 2, 2),
                                 ("arbitrary", "arbitrary", "arbitrary"))
    assert a3_diagnose.revisit_diagnosis(ignores_i, case).diagnosis is None, (
        "an output index map that ignores i revisits blocks too, with K last")


@pytest.mark.task("3.4")
def test_min_block_diagnoses() -> None:
    peak, bandwidth = 1028.75e12, 3685.5e9
    assert "rounded down" in a3_diagnose.diagnose_block(552, peak, bandwidth, 2, 8)
    assert "not a multiple" in a3_diagnose.diagnose_block(559, peak, bandwidth, 2, 8)
    assert a3_diagnose.diagnose_block(568, peak, bandwidth, 2, 8) is None


@pytest.mark.task("3.4")
def test_a_tie_is_diagnosed_as_not_strictly_greater() -> None:
    # 1000e12 / 4000e9 · 4 = 1000, a multiple of 8: 1000 is the tie, 1008 the answer.
    text = a3_diagnose.diagnose_block(1000, 1000e12, 4000e9, 4, 8)
    assert text is not None and "not strictly greater" in text and "1008" in text
    # Away from a tie the rounding-down diagnosis is unchanged.
    assert "rounded down" in a3_diagnose.diagnose_block(1000, 1000e12, 3990e9, 4, 8)


# --- a1: the bias add's grid order, vmem_bytes ------------------------------------------------


def _bias_traces(column_inner: bool, semantics=("arbitrary", "arbitrary")) -> list:
    import pallas_sim

    x, bias = make_array((64, 64), F32, 1), make_array((1, 64), F32, 2)

    def kernel(x_ref, b_ref, o_ref):
        o_ref[...] = x_ref[...] + b_ref[...]

    if column_inner:
        spec, bias_map, grid = pl.BlockSpec((16, 16), lambda i, j: (i, j)), (
            lambda i, j: (0, j)), (4, 4)
    else:
        spec, bias_map, grid = pl.BlockSpec((16, 16), lambda j, i: (i, j)), (
            lambda j, i: (0, j)), (4, 4)
    call = pl.pallas_call(kernel, grid=grid, in_specs=[spec, pl.BlockSpec((1, 16), bias_map)],
                          out_specs=spec, out_shape=jax.ShapeDtypeStruct((64, 64), np.float32),
                          compiler_params=pltpu.CompilerParams(dimension_semantics=semantics))
    with pallas_sim.trace() as t:
        call(x, bias)
    return t.calls, x, bias


@pytest.mark.task("1.3")
def test_the_bias_diagnosis_needs_the_column_inner_call() -> None:
    calls, x, bias = _bias_traces(column_inner=True)
    assert a1.is_column_inner(calls, x, bias, (16, 16))
    calls, x, bias = _bias_traces(column_inner=False)
    assert not a1.is_column_inner(calls, x, bias, (16, 16)), (
        "a square grid in the right order is not the column-inner mistake")


@pytest.mark.task("1.3")
def test_both_checks_name_the_column_inner_mistake_in_the_same_words() -> None:
    """A TA's walk: the class report listed this one mistake twice (two rows, one student
    each), because the worked-answer check and the trace check worded it differently."""
    from types import SimpleNamespace

    calls, x, bias = _bias_traces(column_inner=True)
    case = SimpleNamespace(args=(x, bias), kwargs={"block_shape": (16, 16)})
    by_dmas = a1.column_inner_dmas(calls, x, bias, (16, 16))
    by_trace = a1.column_inner_trace(calls, [], case)
    assert by_dmas is not None and by_dmas == by_trace
    assert "column-block axis is the inner grid axis" in by_dmas


@pytest.mark.task("1.5")
def test_vmem_diagnoses() -> None:
    shapes, dtypes = [(64, 64)] * 3, ["float32"] * 3

    def times_buffers(shapes, dtypes, n: int) -> int:  # whole arrays counted n times
        return n * a1.ref.vmem_bytes(shapes, dtypes)

    def two_buffers(shapes, dtypes, n: int) -> int:  # buffer_count ignored
        return a1.ref.vmem_bytes(shapes, dtypes, (8, 8), 2)

    whole, block = times_buffers(shapes, dtypes, 1), two_buffers(shapes, dtypes, 2)
    assert "counted buffer_count times" in a1.diagnose_vmem(3 * whole, shapes, dtypes, None, 3,
                                                            times_buffers)
    assert "buffer_count is ignored" in a1.diagnose_vmem(block, shapes, dtypes, (8, 8), 4,
                                                          two_buffers)
    assert a1.diagnose_vmem(whole + 1, shapes, dtypes, None, 2, times_buffers) is None
    assert a1.diagnose_vmem(3 * whole, shapes, dtypes, None, 3) is None, "unverified: none"


@pytest.mark.task("1.5")
def test_a_doubled_vmem_is_not_called_buffer_count_ignored() -> None:
    """A TA's walk: a vmem_bytes that counts every block twice (2 x buffer_count buffers)
    was told "buffer_count is ignored" on a drawn case with one buffer (2 x 1 = the two a
    forgotten buffer_count gives), while the worked check, at two buffers, had just shown
    that buffer_count is read. The diagnosis is now verified at a second buffer count."""
    shapes, dtypes = [(64, 64)] * 3, ["float32"] * 3

    def doubled(shapes, dtypes, n: int) -> int:
        return 2 * a1.ref.vmem_bytes(shapes, dtypes, (8, 8), n)

    assert a1.diagnose_vmem(doubled(shapes, dtypes, 1), shapes, dtypes, (8, 8), 1,
                            doubled) is None

    def raises(shapes, dtypes, n: int) -> int:
        raise CheckFailure("vmem_bytes raised ValueError")

    assert a1.diagnose_vmem(doubled(shapes, dtypes, 1), shapes, dtypes, (8, 8), 1,
                            raises) is None


#: An honest student's walk: mistakes that had no "looks like" line, as functions of
#: (shapes, dtypes, block, buffer count), and the phrase their diagnosis holds.
HONEST_VMEM_MISTAKES = {
    "one buffer of each block": lambda sh, dt, b, n: a1.ref.vmem_bytes(sh, dt, b, 1),
    "with a block_shape, whole arrays": lambda sh, dt, b, n: n * a1.ref.vmem_bytes(sh, dt),
    "bfloat16 is counted as 4 bytes": lambda sh, dt, b, n: a1.ref.vmem_bytes(
        sh, ["float32" if d == "bfloat16" else d for d in dt], b, n),
    "the first operand's dtype": lambda sh, dt, b, n: a1.ref.vmem_bytes(
        sh, [dt[0]] * len(dt), b, n),
}


@pytest.mark.task("1.5")
@pytest.mark.parametrize("phrase", list(HONEST_VMEM_MISTAKES))
def test_honest_vmem_mistakes_are_named(phrase: str) -> None:
    mistake = HONEST_VMEM_MISTAKES[phrase]
    shapes, dtypes, block = [(64, 256), (256, 128)], ["float32", "bfloat16"], (8, 128)
    if phrase.startswith(("bfloat16", "the first")):
        block = None

    def student(sh, dt, n):
        return mistake(sh, dt, block, n)

    got = student(shapes, dtypes, 2)
    diagnosis = a1.diagnose_vmem(got, shapes, dtypes, block, 2, student)
    assert diagnosis is not None and phrase in diagnosis
    # the same answer without the mistake at the second question: not named
    right = a1.diagnose_vmem(got, shapes, dtypes, block, 2,
                             lambda sh, dt, n: a1.ref.vmem_bytes(sh, dt, block, n))
    assert right is None


@pytest.mark.task("1.5")
def test_a_kept_answer_is_not_called_buffer_count_ignored() -> None:
    """A red team's vmem_bytes kept its last answer for the same shapes, dtypes and block:
    asked again at another buffer count only, it returned the two-buffer answer it had kept,
    and the TA read "buffer_count is ignored" of a formula that reads it. The diagnosis'
    second question changes the shapes and dtypes too, so a kept answer does not fit."""
    shapes, dtypes, block = [(512, 1024)] * 2, ["float32", "int8"], (256, 512)
    kept: dict[str, int] = {}

    def cached(shapes, dtypes, n: int) -> int:
        key = repr((shapes, dtypes))
        if key not in kept:
            kept.clear()
            kept[key] = a1.ref.vmem_bytes(shapes, dtypes, block, n)
        return kept[key]

    first = cached(shapes, dtypes, 2)
    assert cached(shapes, dtypes, 3) == first
    assert a1.diagnose_vmem(first, shapes, dtypes, block, 3, cached) is None
    assert a1.second_questions(shapes, dtypes, block, 3) == [
        ([(1536, 3072)] * 2, ["bfloat16", "float32"], n) for n in (1, 4)]


#: An honest student's and a red team's mistakes that a diagnosis named wrongly, because
#: the failing input could not tell them from a modelled mistake: (shapes, dtypes, block,
#: buffers) of that input, and the student's function.
UNLIKE_A_MODELLED_MISTAKE = {
    # None read as the whole dimension: equal to "whole arrays" where the block's other
    # entries are the whole dimensions
    "None as the whole dimension": (
        ([(4096, 512), (16, 512)], ["float32", "bfloat16"], (None, 512), 2),
        lambda sh, dt, b, n: sum(n * (s[0] if b[0] is None else b[0]) * b[1] * a1.ref.vmem_bytes(
            [(1,)], [d]) for s, d in zip(sh, dt, strict=True))),
    # a block clipped to the array: equal to "whole arrays" for a small array
    "block clipped to the array": (
        ([(1,)], ["float32"], (128,), 1),
        lambda sh, dt, b, n: sum(n * min(s[0], b[0]) * a1.ref.vmem_bytes([(1,)], [d])
                                 for s, d in zip(sh, dt, strict=True))),
    # every operand sized by the widest dtype: equal to "bfloat16 at 4 bytes" on f32 + bf16
    "the widest dtype for all": (
        ([(64, 256), (256, 128)], ["float32", "bfloat16"], None, 3),
        lambda sh, dt, b, n: a1.ref.vmem_bytes(
            sh, [max(dt, key=lambda d: a1.ref.vmem_bytes([(1,)], [d]))] * len(dt), b, n)),
}


@pytest.mark.task("1.5")
@pytest.mark.parametrize("name", list(UNLIKE_A_MODELLED_MISTAKE))
def test_a_mistake_the_failing_input_cannot_tell_apart_is_not_misnamed(name: str) -> None:
    (shapes, dtypes, block, buffers), student = UNLIKE_A_MODELLED_MISTAKE[name]
    got = student(shapes, dtypes, block, buffers)
    assert got != a1.ref.vmem_bytes(shapes, dtypes, block, buffers)
    assert a1.diagnose_vmem(got, shapes, dtypes, block, buffers,
                            lambda sh, dt, n: student(sh, dt, block, n)) is None


@pytest.mark.task("1.5")
def test_at_most_two_buffers_is_not_called_buffer_count_ignored() -> None:
    """A red team's vmem_bytes capped the count at two (right at one and two buffers) and
    was told "buffer_count is ignored": the second questions now include one buffer."""
    shapes, dtypes, block = [(512, 1024)] * 2, ["float32", "int8"], (256, 512)

    def capped(shapes, dtypes, n: int) -> int:
        return a1.ref.vmem_bytes(shapes, dtypes, block, min(n, 2))

    assert a1.diagnose_vmem(capped(shapes, dtypes, 4), shapes, dtypes, block, 4,
                            capped) is None


# --- a2: the schedule, utilization and bandwidth ----------------------------------------------


@pytest.mark.task("2.1")
def test_schedule_diagnoses_follow_the_schedule() -> None:
    dma, compute, buffers = [1.0] * 6, [2.0] * 6, 2
    case = Case((dma, compute, buffers), {}, ("dma_times", "compute_times", "n_buffers"))
    one_more = ref2.pipeline_schedule(dma, compute, buffers + 1)
    no_wait = a2.variant_schedule(dma, compute, buffers, slots=False)
    assert not np.allclose(one_more[0], no_wait[0]), "the input must tell the two apart"
    text = a2.diagnose_schedule(one_more, case)
    assert "n_buffers + 1" in text and "free slot" not in text
    text = a2.diagnose_schedule(no_wait, case)
    assert "free slot" in text and "n_buffers + 1" not in text
    dma, compute = [1.0, 3.0, 1.0, 1.0, 2.0], [2.0, 1.0, 4.0, 1.0, 1.0]
    case = Case((dma, compute, buffers), {}, ("dma_times", "compute_times", "n_buffers"))
    text = a2.diagnose_schedule(ref2.pipeline_schedule(dma, compute, buffers + 1), case)
    assert "2 known mistakes" in text and "free slot" in text and "n_buffers + 1" in text, (
        "where both mistakes give the same schedule, both are named")
    overlapping = a2.variant_schedule(dma, compute, buffers, unit=False)
    assert "does not wait for compute k-1" in a2.diagnose_schedule(overlapping, case)
    correct = ref2.pipeline_schedule(dma, compute, buffers)
    shifted = (correct[0] + 0.5, correct[1] + 0.5)
    assert a2.diagnose_schedule(shifted, case) is None


@pytest.mark.task("2.4")
def test_bandwidth_diagnoses() -> None:
    inverted = 100.0 * (1 - 0.25) / (2.0 * 0.25)
    assert "upside down" in a2.diagnose_bandwidth(inverted, 100.0, 2.0, 0.25)
    assert a2.diagnose_bandwidth(1.0, 100.0, 2.0, 0.25) is None


# --- a4: the strict skip test and base 2 with an unconverted constant ------------------------


def _flash_case(block_q: int, block_kv: int, length: int, *, high: bool = False):
    import graders.labs.a4_flash_attention.hidden.checks.problems as a4

    rng = np.random.default_rng(3)
    q, k = rng.uniform(-4, 4, (2, length, 8)), rng.uniform(-4, 4, (1, length, 8))
    v = rng.uniform(-4, 4, (1, length, 8)).astype(np.float32)
    scale = 8 ** -0.5
    if high:
        q, k = np.round(2 * q) / 16, np.round(2 * k) / 16
        q[..., 0] = k[..., 0] = a4.HIGH_FEATURE
        scale = a4.HIGH_SCALE
    case = a4.AttentionCase(q.astype(np.float32), k.astype(np.float32), v, scale, True,
                            block_q, block_kv, None, None, 3, "high" if high else "")
    if high:
        import dataclasses
        case = dataclasses.replace(case, max_logit_const=round(float(case.scores().max()) + 1,
                                                               1))
    return case


@pytest.mark.task("4.3")
def test_a_strict_skip_test_is_named_only_with_odd_blocks() -> None:
    import graders.labs.a4_flash_attention.hidden.diagnose as a4_diagnose

    odd = _flash_case(3, 2, 12)  # kv block 1 starts at key 2, q block 0's last query
    got = a4_diagnose.emulate(odd, skip_strict=True)
    tol = a4_diagnose.ATTENTION_TOL["float32"]
    assert not a4_diagnose.matches_model(got, a4_diagnose.emulate(odd), tol)
    assert "the skip test is off by one" in a4_diagnose.diagnose_kernel(got, odd, tol)
    even = _flash_case(4, 2, 16)
    assert a4_diagnose.matches_model(a4_diagnose.emulate(even, skip_strict=True),
                                     a4_diagnose.emulate(even), tol), (
        "with even blocks the strict test skips nothing more")


@pytest.mark.task("4.3")
def test_an_unconverted_base2_constant_is_named_where_it_overflows() -> None:
    import math

    import graders.labs.a4_flash_attention.hidden.diagnose as a4_diagnose

    case = _flash_case(4, 4, 16, high=True)
    const = case.max_logit_const
    natural_const = a4_diagnose.emulate(case, constant=const * math.log(2.0))
    assert np.isnan(natural_const).all(), "exp2(s·log2 e - c) overflows for scores near 342"
    text = a4_diagnose.diagnose_base2_constant(natural_const, case)
    assert text is not None and "not converted to base-2 units" in text
    right = a4_diagnose.emulate(case)
    assert np.isfinite(right).all() and a4_diagnose.diagnose_base2_constant(right, case) is None
