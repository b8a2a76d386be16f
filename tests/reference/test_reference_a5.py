"""a5 Splash Attention: the reference and the solution both reproduce the lecture's
worked answers (docs/worked-answers.md §6) and agree with each other on drawn masks.

The solution is loaded by file path, the way the worker loads a submission.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pallas_sim
import reference.a5_splash_attention as ref
from graders.labs.a5_splash_attention.hidden.checks.common import MaskCase, mask_cases
from graders.labs.a5_splash_attention.hidden.checks.computed import ComputedCase, computed_cases
from graders.labs.a5_splash_attention.public import worked as a5_worked
from reference.dense_attention import masked_dense_attention
from tests.helpers.labs import load_solution

ROOT = Path(__file__).resolve().parents[2]
MiB = 2**20
AGREEMENT = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                     print_blob=False, suppress_health_check=[HealthCheck.too_slow])


sol = load_solution("a5_splash_attention")
BOTH = pytest.mark.parametrize("impl", [ref, sol], ids=["reference", "solution"])
API = {"causal_mask", "local_mask", "segment_mask", "classify_blocks", "render_block_mask",
       "build_mask_info", "splash_attention_kernel", "splash_attention", "mask_stats",
       "splash_computed_mask_kernel", "splash_attention_computed_mask", "choose_splash_blocks"}
#: Task 5.7's trusted side of grading (the problem, the op-counting prediction, the kept
#: bests): public for the grader, outside ``__all__`` (as a3's Task 3.5 names).
GRADING = {"SPLASH_BLOCK_CANDIDATES", "PERFORMANCE_LENGTH", "PERFORMANCE_HEADS",
           "PERFORMANCE_HEAD_DIM", "PERFORMANCE_VALUE_DIM", "PERFORMANCE_CHIP",
           "PERFORMANCE_WINDOW", "PERFORMANCE_DOCUMENTS", "PERFORMANCE_MASKS",
           "performance_mask", "performance_mask_info", "predicted_splash_time",
           "splash_block_candidates", "best_splash_blocks", "BEST_SPLASH_BLOCKS"}


def test_the_reference_exposes_exactly_the_student_api_and_mask_info():
    assert set(ref.__all__) == API | {"MaskInfo"}
    public = {n for n in vars(ref) if not n.startswith("_")}
    assert public == API | {"MaskInfo"} | GRADING, (
        f"unexpected public names: {public - API - GRADING}")
    assert ref.MaskInfo._fields == sol.MaskInfo._fields == (
        "active_rows", "active_cols", "block_mask", "mask_next", "partial_mask_blocks",
        "bounds_start", "bounds_end"), "the reference's MaskInfo is the handout's"


@BOTH
def test_causal_length_8_in_2x2_blocks_draws_the_lectures_picture(impl):
    picture = impl.render_block_mask(impl.classify_blocks(impl.causal_mask(8), 2, 2))
    assert picture == "P · · ·\nF P · ·\nF F P ·\nF F F P"


@BOTH
def test_causal_4096_with_blocks_1024_by_2048_gives_the_lectures_arrays(impl):
    mask = impl.causal_mask(4096)
    assert impl.classify_blocks(mask, 1024, 2048).tolist() == [[1, 0], [1, 0], [2, 1], [2, 1]]
    info = impl.build_mask_info(mask, 1024, 2048)
    T, F = True, False
    expected = {
        "active_rows": ([0, 1, 2, 2, 3, 3], np.int32),
        "active_cols": ([0, 0, 0, 1, 0, 1], np.int32),
        "block_mask": ([1, 1, 2, 1, 2, 1], np.int8),
        "mask_next": ([0, 1, 0, 0, 1, 1], np.int32),
        "bounds_start": ([T, T, T, F, T, F], np.bool_),
        "bounds_end": ([T, T, F, T, F, T], np.bool_),
    }
    for name, (values, dtype) in expected.items():
        got = getattr(info, name)
        assert got.dtype == dtype and got.tolist() == values, f"{name}: {got!r}"
    patterns = info.partial_mask_blocks
    assert patterns.shape == (2, 1024, 2048) and patterns.dtype == np.bool_, (
        "4 partial tiles, 2 patterns: (0,0) = (2,1) and (1,0) = (3,1) (same q - kv offset)")
    np.testing.assert_array_equal(patterns[0], mask[:1024, :2048])
    np.testing.assert_array_equal(patterns[1], mask[1024:2048, :2048])


@BOTH
def test_ex11_causal_4096_block_1024_has_10_active_tiles_6_full_4_partial_1_pattern(impl):
    stats = impl.mask_stats(impl.causal_mask(4096), 1024, 1024)
    assert (stats["num_active"], stats["num_full"], stats["num_partial"],
            stats["num_patterns"]) == (10, 6, 4, 1)


@BOTH
def test_ex12_three_documents_give_4_empty_2_full_10_partial_tiles(impl):
    ids = np.repeat([0, 1, 2], [1000, 2000, 1096])
    kinds = impl.classify_blocks(impl.segment_mask(ids), 1024, 1024)
    assert kinds.tolist() == [[1, 1, 1, 0], [1, 2, 1, 0], [1, 1, 1, 1], [0, 0, 1, 2]], (
        "document boundaries at 1000 and 3000: the lecture's answer grid")
    assert [(kinds == k).sum() for k in (0, 2, 1)] == [4, 2, 10]


@BOTH
def test_causal_512_in_64_blocks_has_36_active_tiles_8_partial_28_full(impl):
    info = impl.build_mask_info(impl.causal_mask(512), 64, 64)
    assert len(info.active_rows) == 36
    assert (info.block_mask == 1).sum() == 8 and (info.block_mask == 2).sum() == 28


@BOTH
def test_l16384_block_1024_pattern_counts(impl):
    causal = impl.causal_mask(16384)
    stats = impl.mask_stats(causal, 1024, 1024)
    assert (stats["num_patterns"], stats["pattern_bytes"]) == (1, 1 * MiB), (
        "causal: every diagonal tile is the same triangle, one 1 MiB pattern")
    windowed = impl.mask_stats(causal & impl.local_mask(16384, (2048, None)), 1024, 1024)
    assert (windowed["num_patterns"], windowed["pattern_bytes"]) == (2, 2 * MiB), (
        "causal & block-aligned window 2048: the diagonal and the window's edge")
    del causal


@BOTH
def test_a_window_that_is_not_block_aligned_needs_more_than_two_patterns(impl):
    # Same geometry as L 16384 / 1024 scaled by 1/32: window 64 is aligned, 60 is not.
    causal = impl.causal_mask(512)
    aligned = impl.mask_stats(causal & impl.local_mask(512, (64, None)), 32, 32)
    unaligned = impl.mask_stats(causal & impl.local_mask(512, (60, None)), 32, 32)
    assert aligned["num_patterns"] == 2 and unaligned["num_patterns"] == 3


@BOTH
def test_savings_at_l32768_block_1024_scaled_to_l4096_block_128(impl):
    # The saving depends only on L / block and window / block (lecture §6.4 table).
    causal = impl.causal_mask(4096)
    assert impl.mask_stats(causal, 128, 128)["compute_saving"] == pytest.approx(1024 / 528)
    windowed = impl.mask_stats(causal & impl.local_mask(4096, (256, None)), 128, 128)
    assert windowed["num_active"] == 32 + 31 + 30 and windowed["compute_saving"] == (
        pytest.approx(11.01, abs=0.01)), "causal & window 2048 saves about 11x"


@BOTH
@pytest.mark.parametrize("args, pattern", [
    ((np.ones((12, 8), bool), 5, 4), r"block_q\W+5"),
    ((np.ones((12, 8), bool), 4, 3), r"block_kv\W+3"),
])
def test_a_block_size_that_does_not_divide_its_length_is_named(impl, args, pattern):
    with pytest.raises(ValueError, match=pattern):
        impl.build_mask_info(*args)


@BOTH
def test_the_first_query_row_with_no_visible_key_is_named(impl):
    mask = impl.causal_mask(8)
    mask[[5, 6]] = False
    with pytest.raises(ValueError, match=r"\b5\b") as raised:
        impl.build_mask_info(mask, 2, 2)
    assert "6" not in str(raised.value), "only the first such row is named"


def _dense(q, k, v, mask, scale):
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v.astype(np.float64))


@BOTH
def test_splash_on_the_lectures_example_matches_float64_to_about_4e7(impl):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 512, 64)).astype(np.float32) for _ in range(3))
    mask = impl.causal_mask(512)
    with pallas_sim.trace() as t:
        out = impl.splash_attention(q, k, v, impl.build_mask_info(mask, 64, 64))
    assert out.dtype == np.float32 and out.shape == (2, 512, 64)
    assert np.abs(out - _dense(q, k, v, mask, 1 / 8)).max() < 2e-6
    (call,) = t.calls
    assert call.grid == (2, 36) and call.dimension_semantics == ("parallel", "arbitrary")
    assert [op.role for op in call.operands].count("prefetch") == 6
    dmas = {op.name: op.dma_count for op in call.operands if op.role in ("in", "out")}
    assert dmas["k_ref"] == 2 * 35 and dmas["o_ref"] == 2 * 8 and dmas["q_ref"] == 2 * 8, (
        "causal: cols run 0 | 0 1 | 0 1 2 | ..., so K changes at every active tile except "
        "from (0, 0) to (1, 0): 35 per head; q and o change once per q row per head")
    assert dmas["mask_ref"] == 1, (
        "one pattern, and the mask's block index does not involve the head: fetched once")
    assert call.smem_bytes == 6 * 36 * 4


@AGREEMENT
@given(mask_cases(blocks=(1, 2, 4, 8)))
def test_solution_and_reference_build_identical_mask_info(case: MaskCase):
    a = ref.build_mask_info(case.mask, case.block_q, case.block_kv)
    b = sol.build_mask_info(case.mask, case.block_q, case.block_kv)
    for name in ref.MaskInfo._fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert ref.mask_stats(case.mask, case.block_q, case.block_kv) == sol.mask_stats(
        case.mask, case.block_q, case.block_kv)
    kinds = ref.classify_blocks(case.mask, case.block_q, case.block_kv)
    assert np.array_equal(kinds, sol.classify_blocks(case.mask, case.block_q, case.block_kv))
    assert ref.render_block_mask(kinds) == sol.render_block_mask(kinds)


@AGREEMENT
@given(st.integers(1, 20), st.one_of(st.none(), st.integers(1, 20)), st.integers(-5, 25),
       st.tuples(st.one_of(st.none(), st.integers(0, 22)), st.one_of(st.none(),
                                                                     st.integers(0, 22))))
def test_solution_and_reference_masks_agree(q_len, kv_len, offset, window):
    assert np.array_equal(ref.causal_mask(q_len, kv_len, offset=offset),
                          sol.causal_mask(q_len, kv_len, offset=offset))
    assert np.array_equal(ref.local_mask(q_len, window, kv_len),
                          sol.local_mask(q_len, window, kv_len))
    ids = np.arange(q_len) // 3
    assert np.array_equal(ref.segment_mask(ids), sol.segment_mask(ids))


@settings(AGREEMENT, max_examples=15)
@given(mask_cases(square=True, blocks=(2, 4, 8), max_len=32), st.integers(0, 2**16))
def test_both_splash_wrappers_equal_dense_float64_attention(case: MaskCase, seed: int):
    rng = np.random.default_rng(seed)
    length = case.mask.shape[0]
    q, k, v = (rng.uniform(-2, 2, (2, length, 8)).astype(np.float32) for _ in range(3))
    info = ref.build_mask_info(case.mask, case.block_q, case.block_kv)
    expected = _dense(q, k, v, case.mask, 0.5)
    for impl in (ref, sol):
        out = impl.splash_attention(q, k, v, info, sm_scale=0.5)
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-6, err_msg=impl.__name__)


# --- Task 5.6: masks computed in the kernel (lecture §6.6) ---------------------------------

@AGREEMENT
@given(st.integers(1, 20), st.integers(0, 6), st.tuples(
    st.one_of(st.none(), st.integers(0, 22)), st.one_of(st.none(), st.integers(0, 22))))
def test_the_positional_rule_is_the_task_5_1_masks(length, offset, window):
    every = np.arange(length)
    one_document, ids = np.zeros(length, int), every // 3
    rule = ref._rule_mask(every, every, one_document, one_document, True, window)
    assert np.array_equal(rule, ref.causal_mask(length) & ref.local_mask(length, window)), (
        "with positions 0..L-1 and one document the rule is causal_mask & local_mask")
    shifted = ref._rule_mask(every + offset, every, ids, ids, True, None)
    assert np.array_equal(shifted, ref.causal_mask(length, offset=offset)
                          & ref.segment_mask(ids)), (
        "queries shifted by offset: causal_mask(L, offset=offset) & segment_mask(ids)")


@settings(AGREEMENT, max_examples=15)
@given(computed_cases())
def test_both_computed_mask_wrappers_equal_dense_float64_attention(case: ComputedCase):
    expected = masked_dense_attention(case.q, case.k, case.v, case.mask,
                                      sm_scale=case.kwargs.get("sm_scale"))
    for impl in (ref, sol):
        out = impl.splash_attention_computed_mask(case.q, case.k, case.v, case.info,
                                                  **case.kwargs)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-6, err_msg=impl.__name__)


def _input_bytes(call) -> dict[str, tuple[str, int]]:
    return {op.name: (op.dtype, op.hbm_bytes) for op in call.operands if op.role == "in"}


@pytest.mark.parametrize("saved", [p for p in a5_worked.SAVED if p.reproducible],
                         ids=lambda p: p.mask)
def test_the_computed_mask_moves_none_of_the_patterns_the_lecture_counts(saved):
    # Lecture §6.6 at L 16384 / 1024, scaled by 1/8 (the counts depend on L / block and
    # window / block only): Task 5.4 copies its stored patterns, Task 5.6 none.
    length = a5_worked.LENGTH // a5_worked.SCALE
    block = a5_worked.BLOCK // a5_worked.SCALE
    window = (a5_worked.WINDOW // a5_worked.SCALE, None) if "window" in saved.mask else None
    mask = ref.causal_mask(length) & ref.local_mask(length, window or (None, None))
    info = ref.build_mask_info(mask, block, block)
    assert info.partial_mask_blocks.shape[0] == saved.patterns
    stats = sol.mask_stats(mask, block, block)
    assert stats["pattern_bytes"] * a5_worked.SCALE**2 == saved.pattern_bytes == (
        saved.saved_mib * MiB), f"{saved.mask}: {saved.patterns} pattern(s) of 1 MiB at full size"
    rng = np.random.default_rng(0)
    q, k, v = (rng.uniform(-2, 2, (1, length, 8)).astype(np.float32) for _ in range(3))
    with pallas_sim.trace() as stored:
        ref.splash_attention(q, k, v, info)
    moved = _input_bytes(stored.calls[0])["mask_ref"]
    assert moved[0] == "bool" and moved[1] >= saved.patterns * block * block, (
        "Task 5.4 copies each stored pattern from HBM at least once")
    for impl in (ref, sol):
        with pallas_sim.trace() as computed:
            out = impl.splash_attention_computed_mask(q, k, v, info, causal=True, window=window)
        inputs = _input_bytes(computed.calls[0])
        assert all(dtype != "bool" for dtype, _ in inputs.values()), inputs
        per_token = sum(n for name, (_, n) in inputs.items() if name not in
                        ("q_ref", "k_ref", "v_ref"))
        assert per_token <= 4 * 4 * length * 2 * (length // block), (
            "only int32 positions and ids move besides q, k, v: at most 4 arrays of L int32 "
            "per q-row pass")
        np.testing.assert_allclose(out, masked_dense_attention(q, k, v, mask), rtol=2e-5,
                                   atol=2e-6)


def test_the_lecture_counts_are_written_once():
    counts = {p.mask: (p.patterns, p.saved_mib) for p in a5_worked.SAVED}
    assert counts == {"causal": (1, 1.0), "causal & window 2048": (2, 2.0),
                      "documents (the lecture's draw)": (28, 28.0)}, (
        "lecture §6.6: 1 / 2 / 28 patterns of a 1024 x 1024 tile, 1 / 2 / 28 MiB")


# --- Task 5.7 (performance): the fastest legal blocks per mask at L 8192 -------------------------

PERF_Q = pallas_sim.jax.ShapeDtypeStruct(
    (ref.PERFORMANCE_HEADS, ref.PERFORMANCE_LENGTH, ref.PERFORMANCE_HEAD_DIM),
    pallas_sim.jnp.bfloat16)
PERF_V = pallas_sim.jax.ShapeDtypeStruct(
    (ref.PERFORMANCE_HEADS, ref.PERFORMANCE_LENGTH, ref.PERFORMANCE_VALUE_DIM),
    pallas_sim.jnp.bfloat16)


@pytest.mark.slow  # a sweep of every legal candidate: half a minute and more
@pytest.mark.parametrize("kind", ref.PERFORMANCE_MASKS)
def test_the_kept_best_splash_blocks_are_the_fastest_legal_candidate(kind):
    """The grader reads ``ref.BEST_SPLASH_BLOCKS`` instead of searching 25 candidates per mask;
    the search must still find it, or the timeline model changed and the constant is stale.
    Its time is worked.py's PERF_FASTEST_MS (4 decimals), the public check's threshold."""
    blocks, seconds = ref.best_splash_blocks(kind)
    assert blocks == ref.BEST_SPLASH_BLOCKS[kind], (
        f"the fastest legal candidate for {kind} is now {blocks} ({seconds * 1e3:.4f} ms), "
        f"not {ref.BEST_SPLASH_BLOCKS[kind]}: update reference/a5_splash_attention.py")
    assert a5_worked.PERF_BEST_BLOCKS[kind] == blocks
    assert a5_worked.PERF_FASTEST_MS[kind] == round(seconds * 1e3, 4), (
        f"worked.PERF_FASTEST_MS[{kind!r}] must be the reference's {seconds * 1e3:.4f} ms")
    assert sol.choose_splash_blocks(kind) == blocks, "the solution chooses the fastest blocks"


@pytest.mark.parametrize(("kind", "blocks"), [("causal", (2048, 2048)), ("local", (512, 1024)),
                                              ("document", (4096, 256))])
def test_solution_and_reference_predict_the_same_splash_time(kind, blocks):
    """The reference's op-counting kernel stands for the lecture's kernel: the solution's
    splash_attention over the same MaskInfo gets the same predicted time."""
    info = ref.performance_mask_info(kind, *blocks)
    got = pallas_sim.estimate(sol.splash_attention, PERF_Q, PERF_Q, PERF_V, info,
                              chip=ref.PERFORMANCE_CHIP).timelines[0].time_s
    want = ref.predicted_splash_time(kind, blocks)
    assert abs(got - want) <= 1e-9 * want, (
        f"{kind} at {blocks}: solution {got * 1e3:.4f} ms, reference {want * 1e3:.4f} ms")


def test_the_whole_sequence_tile_does_not_fit_vmem():
    """(4096, 4096): the double-buffered 16 MiB bool pattern alone takes the 32 MiB."""
    with pytest.raises(pallas_sim.VmemOOMError, match="limit 32.00M"):
        ref.predicted_splash_time("causal", (4096, 4096))


def test_the_performance_problem_is_stated_once():
    """worked.py (public checks, handout text) and the reference state the same problem."""
    assert a5_worked.PERF_BLOCK_CANDIDATES == ref.SPLASH_BLOCK_CANDIDATES
    assert a5_worked.PERF_MASKS == ref.PERFORMANCE_MASKS
    assert (a5_worked.PERF_LENGTH, a5_worked.PERF_HEADS, a5_worked.PERF_HEAD_DIM,
            a5_worked.PERF_VALUE_DIM) == (ref.PERFORMANCE_LENGTH, ref.PERFORMANCE_HEADS,
                                          ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM)
    assert a5_worked.PERF_WINDOW == ref.PERFORMANCE_WINDOW
    assert a5_worked.PERF_DOCUMENTS == ref.PERFORMANCE_DOCUMENTS
    assert sum(ref.PERFORMANCE_DOCUMENTS) == ref.PERFORMANCE_LENGTH
    local = ref.performance_mask("local")
    assert local[5000, 5000 - 2048] and not local[5000, 5000 - 2049] and not local[5000, 5001]
