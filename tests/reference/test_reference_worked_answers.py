"""The reference and the solutions both reproduce the lecture's worked answers,
and the solutions agree with the reference on drawn inputs.

The reference (``reference/``) is what graders compare students with; the
solutions (``solutions/``) are what the handouts are cut from. Two
independent implementations that agree with each other and with the lecture's
numbers (docs/worked-answers.md, §2 and §5) are the evidence that both are right.
Solutions are loaded by file path, the way a grader's worker loads a
submission, never imported as a package.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pallas_sim
import reference.a1_pallas_basics as ref_a1
import reference.a4_flash_attention as ref_a4
from graders.labs.a1_pallas_basics.public import worked as a1_worked
from graders.labs.a4_flash_attention.public import worked as a4_worked
from reference.dense_attention import dense_attention
from tests.helpers.labs import load_solution

ROOT = Path(__file__).resolve().parents[2]
MiB, GiB = 2**20, 2**30
WORKED_RTOL = a4_worked.WORKED_RTOL  # worked numbers are printed to 3-4 significant digits

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)

AGREEMENT = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                     print_blob=False, suppress_health_check=[HealthCheck.too_slow])


sol_a1 = load_solution("a1_pallas_basics")
sol_a4 = load_solution("a4_flash_attention")

A1 = pytest.mark.parametrize("impl", [ref_a1, sol_a1], ids=["reference", "solution"])
A4 = pytest.mark.parametrize("impl", [ref_a4, sol_a4], ids=["reference", "solution"])


def traced(fn, *args, **kwargs):
    """(result, the single pallas_call's CallTrace) of one wrapper call."""
    with pallas_sim.trace() as t:
        result = fn(*args, **kwargs)
    assert len(t.calls) == 1, f"{fn.__name__} should make exactly one pallas_call"
    return result, t.calls[0]


def rel_close(got: float, expected: float, rtol: float = WORKED_RTOL) -> bool:
    return math.isclose(float(got), expected, rel_tol=rtol)


# --- a1 worked answers (lecture §2, Ex1, Ex2) ----------------------------------------------

@A1
@pytest.mark.parametrize("answer", a1_worked.VMEM, ids=lambda a: f"{a.mib}MiB")
def test_vmem_bytes_gives_the_worked_answers(impl, answer):
    got = impl.vmem_bytes([*answer.shapes], [*answer.dtypes], block_shape=answer.block_shape,
                          buffer_count=answer.buffer_count)
    assert got == answer.vmem_bytes, f"vmem_bytes for {answer.label}"


@A1
def test_vmem_accepts_numpy_names_and_jnp_dtypes_including_bfloat16(impl):
    by_name = impl.vmem_bytes([(8, 128)] * 2, ["bfloat16", "float32"])
    by_type = impl.vmem_bytes([(8, 128)] * 2, [pallas_sim.jnp.bfloat16, np.float32])
    assert by_name == by_type == 8 * 128 * (2 + 4)
    assert impl.vmem_bytes([(64, 64)], ["int8"], block_shape=(None, 64), buffer_count=3) == 192


@A1
def test_bias_add_fetches_each_bias_block_once_per_column_of_blocks(impl):
    answer = a1_worked.BIAS_ADD
    x = np.ones(answer.shape, np.float32)
    bias = np.arange(answer.shape[1], dtype=np.float32).reshape(1, -1)
    out, call = traced(impl.bias_add, x, bias, block_shape=answer.block_shape)
    np.testing.assert_array_equal(out, x + bias)
    assert call.dma_count == answer.dma_count, (
        f"bias_add made {call.dma_count} DMAs; with the column-block axis outer each bias "
        "block is fetched once (64 x + 8 bias + 64 write-backs = 136)")
    assert call.grid == answer.grid


@A1
def test_the_worked_blocked_add_moves_each_element_once(impl):
    answer = a1_worked.BLOCKED_ADD
    x = np.ones(answer.shape, np.float32)
    out, call = traced(impl.blocked_add, x, x, block_shape=answer.block_shape)
    assert out.dtype == np.float32 and float(out.min()) == float(out.max()) == 2.0
    assert (call.hbm_bytes_read, call.hbm_bytes_written) == (answer.hbm_bytes_read,
                                                             answer.hbm_bytes_written)
    assert call.vmem_bytes == answer.vmem_bytes and call.grid == answer.grid


@A1
def test_ragged_1000_square_add_with_256_blocks_is_95_4_percent_valid(impl):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1000, 1000)).astype(np.float32)
    y = rng.standard_normal((1000, 1000)).astype(np.float32)
    out, call = traced(impl.blocked_add, x, y, block_shape=(256, 256))
    np.testing.assert_array_equal(out, x + y)
    assert call.grid == (4, 4) and call.elements_computed == 1_048_576
    assert rel_close(call.elements_valid / call.elements_computed, 0.9537)


@A1
def test_accumulate_inplace_aliases_acc_and_returns_a_new_array(impl):
    acc = np.full((300, 200), 1.5, np.float32)
    out, call = traced(impl.accumulate_inplace, acc, np.ones((300, 200), np.float32),
                       block_shape=(128, 128))
    np.testing.assert_array_equal(out, np.full((300, 200), 2.5, np.float32))
    assert call.input_output_aliases == ((0, 0),), "input_output_aliases={0: 0}"
    assert out is not acc, "JAX arrays are immutable: the result is a new array"
    np.testing.assert_array_equal(acc, np.full((300, 200), 1.5, np.float32))
    assert call.grid == (3, 2)


# --- a4 worked answers (lecture §5.1, Ex7, Ex9, Ex10) ----------------------------------------

def assert_trace(trace, expected):
    got = [(float(m), float(s)) for m, s in trace]
    assert len(got) == len(expected), f"one (m, l) per block expected, got {got}"
    for (gm, gl), (em, el) in zip(got, expected, strict=True):
        assert gm == em and rel_close(gl, el), f"trace {got}, lecture {expected}"


@A4
@pytest.mark.parametrize("answer", a4_worked.SOFTMAX_TRACES, ids=lambda a: f"x{list(a.x)}")
def test_online_softmax_lecture_traces(impl, answer):
    x = np.array(answer.x, np.float32)
    probs, trace = impl.online_softmax(x, answer.block_size)
    assert_trace(trace, answer.trace)
    np.testing.assert_allclose(probs, np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
                               rtol=1e-6)
    if answer.probs is not None:
        np.testing.assert_allclose(probs, answer.probs, rtol=WORKED_RTOL)


@A4
def test_merging_the_two_halves_of_exercise_7_gives_its_softmax(impl):
    scores = np.array([[2.0, 0.0, 4.0, 1.0]])
    values = np.eye(4)  # acc / l is then the softmax row itself

    def state(cols):
        m = scores[:, cols].max(axis=-1)
        w = np.exp(scores[:, cols] - m[:, None])
        return m, w.sum(axis=-1), w @ values[cols]

    merged = impl.merge_attention_states(state([0, 1]), state([2, 3]))
    assert float(merged[0][0]) == 4.0 and rel_close(merged[1][0], 1.2034)
    np.testing.assert_allclose(impl.finalize_attention_state(merged)[0],
                               [0.1125, 0.0152, 0.8310, 0.0414], rtol=WORKED_RTOL)


@A4
def test_exercise_10_safe_constants_for_scores_in_minus_30_to_40(impl):
    low, high = impl.mle_safe_range(*a4_worked.MLE_ARGS)
    assert rel_close(low, a4_worked.MLE_SAFE_RANGE[0]), (low, high)
    assert rel_close(high, a4_worked.MLE_SAFE_RANGE[1]), (low, high)
    assert rel_close(impl.mle_safe_range(0.0, 0.0)[0], -a4_worked.LN_F32_MAX)
    assert rel_close(impl.mle_safe_range(0.0, 0.0)[1], -a4_worked.LN_F32_TINY)


@A4
@pytest.mark.parametrize("answer", a4_worked.TRAFFIC, ids=lambda a: f"{a.func}{a.args}")
def test_traffic_and_flops_worked_answers(impl, answer):
    assert getattr(impl, answer.func)(*answer.args) == answer.value, answer.why


@A4
def test_attention_flops_is_an_int_of_1_3744e12_and_xla_traffic_24_75_gib(impl):
    xla = next(a for a in a4_worked.TRAFFIC if a.func == "xla_attention_hbm_bytes")
    assert impl.xla_attention_hbm_bytes(*xla.args) == 24.75 * GiB
    flops = impl.attention_flops(*a4_worked.SHAPE)
    assert isinstance(flops, int) and rel_close(flops, 1.3744e12)
    assert flops == 2 * 128 * 4096**2 * (192 + 128)


@A4
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_equals_dense_attention_with_gqa(impl, causal):
    rng = np.random.default_rng(7)
    q = rng.uniform(-3, 3, (4, 64, 16)).astype(np.float32)
    k = rng.uniform(-3, 3, (2, 64, 16)).astype(np.float32)
    v = rng.uniform(-3, 3, (2, 64, 8)).astype(np.float32)
    got, call = traced(impl.flash_attention, q, k, v, causal=causal, block_q=16, block_kv=8)
    want = dense_attention(q, k, v, causal=causal)
    assert got.dtype == np.float32 and got.shape == (4, 64, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert call.grid == (4, 4, 8) and call.dimension_semantics == (
        "parallel", "parallel", "arbitrary")
    reads = call.role("in")[1].kernel_reads
    visible = sum(1 for i in range(4) for j in range(8) if j * 8 <= i * 16 + 15)
    assert int((reads > 0).sum()) == 4 * (visible if causal else 32), (
        "K is read only where a tile has a visible key: causal skips fully masked tiles")


def test_reference_exposes_exactly_the_student_api():
    def public(module: ModuleType) -> set[str]:
        return {name for name in vars(module) if not name.startswith("_")}

    assert public(ref_a1) == set(ref_a1.__all__) == {
        "add_kernel", "blocked_add", "bias_add", "accumulate_inplace", "vmem_bytes"}
    assert set(ref_a4.__all__) == {
        "online_softmax", "merge_attention_states", "finalize_attention_state",
        "flash_attention_kernel", "flash_attention", "mle_safe_range",
        "flash_attention_hbm_bytes", "xla_attention_hbm_bytes", "attention_flops",
        "flash_attention_kernel_microtiled", "choose_flash_config"}
    # Besides the student API, only Task 4.8's trusted side of grading (the problem, the
    # candidates, the prediction and the kept fastest configuration).
    assert public(ref_a4) - set(ref_a4.__all__) == {
        "BEST_FLASH_CONFIG", "FLASH_BLOCK_CANDIDATES", "FLASH_MLE_CANDIDATES",
        "PERFORMANCE_CHIP", "PERFORMANCE_Q_SHAPE", "PERFORMANCE_V_SHAPE",
        "SCORE_TILE_BYTES_PER_ELEMENT", "best_flash_config", "flash_config_candidates",
        "flash_vmem_capacity", "predicted_flash_run", "predicted_flash_time"}


# --- solutions agree with the reference on drawn inputs -------------------------------------

def tolerance(dtype: np.dtype) -> dict[str, float]:
    if dtype == I32:
        return {"rtol": 0.0, "atol": 0.0}
    return {"rtol": 1e-2, "atol": 1e-2} if dtype == BF16 else {"rtol": 1e-5, "atol": 1e-6}


def as64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def array_of(shape: tuple[int, ...], dtype: np.dtype, seed: int, scale: float = 3.0):
    values = np.random.default_rng(seed).uniform(-scale, scale, shape)
    return values.astype(dtype)


dtypes = st.sampled_from([F32, BF16])
a1_dtypes = st.sampled_from([F32, BF16, I32])
seeds = st.integers(0, 2**32 - 1)


def same_trace(a, b) -> None:
    """The parts of a CallTrace the graders compare."""
    assert a.grid == b.grid
    assert [op.block_shape for op in a.operands] == [op.block_shape for op in b.operands]
    assert a.dma_count == b.dma_count and a.vmem_bytes == b.vmem_bytes
    for op_a, op_b in zip(a.operands, b.operands, strict=True):
        np.testing.assert_array_equal(op_a.block_indices, op_b.block_indices)


@AGREEMENT
@given(m=st.integers(1, 300), n=st.integers(1, 300), bm=st.sampled_from([8, 16, 64, 128, 256]),
       bn=st.sampled_from([128, 256]), dtype=a1_dtypes, seed=seeds)
def test_blocked_add_agrees_on_any_shape_and_block(m, n, bm, bn, dtype, seed):
    x, y = array_of((m, n), dtype, seed), array_of((m, n), dtype, seed + 1)
    got, got_call = traced(sol_a1.blocked_add, x, y, block_shape=(bm, bn))
    want, want_call = traced(ref_a1.blocked_add, x, y, block_shape=(bm, bn))
    assert got.dtype == want.dtype == dtype and got.shape == (m, n)
    np.testing.assert_allclose(as64(got), as64(want), **tolerance(dtype))
    same_trace(got_call, want_call)


@AGREEMENT
@given(rows=st.integers(1, 4), cols=st.integers(1, 4), bm=st.sampled_from([8, 32, 128]),
       bn=st.sampled_from([128, 256]), dtype=a1_dtypes, seed=seeds)
def test_bias_add_agrees_and_makes_the_dma_minimal_calls(rows, cols, bm, bn, dtype, seed):
    x = array_of((rows * bm, cols * bn), dtype, seed)
    bias = array_of((1, cols * bn), dtype, seed + 1)
    got, got_call = traced(sol_a1.bias_add, x, bias, block_shape=(bm, bn))
    want, want_call = traced(ref_a1.bias_add, x, bias, block_shape=(bm, bn))
    np.testing.assert_allclose(as64(got), as64(x) + as64(bias), **tolerance(dtype))
    np.testing.assert_allclose(as64(got), as64(want), **tolerance(dtype))
    same_trace(got_call, want_call)
    assert got_call.dma_count == 2 * rows * cols + cols


@AGREEMENT
@given(m=st.integers(1, 300), n=st.integers(1, 300), bm=st.sampled_from([8, 64, 256]),
       bn=st.sampled_from([128, 256]), dtype=a1_dtypes, seed=seeds)
def test_accumulate_inplace_agrees_and_aliases(m, n, bm, bn, dtype, seed):
    acc, x = array_of((m, n), dtype, seed), array_of((m, n), dtype, seed + 1)
    before = acc.copy()
    got, got_call = traced(sol_a1.accumulate_inplace, acc, x, block_shape=(bm, bn))
    np.testing.assert_array_equal(acc, before)  # JAX arrays are immutable
    want, want_call = traced(ref_a1.accumulate_inplace, acc, x, block_shape=(bm, bn))
    np.testing.assert_allclose(as64(got), as64(want), **tolerance(dtype))
    assert got_call.input_output_aliases == want_call.input_output_aliases == ((0, 0),)
    same_trace(got_call, want_call)


@AGREEMENT
@given(shapes=st.lists(st.tuples(st.integers(1, 4096), st.integers(1, 4096)), min_size=1,
                       max_size=4),
       names=st.lists(st.sampled_from(["float32", "bfloat16", "int8", "float16", "int32"]),
                      min_size=4, max_size=4),
       block=st.one_of(st.none(), st.tuples(st.sampled_from([None, 8, 256]),
                                            st.sampled_from([128, 512]))),
       buffers=st.integers(1, 4))
def test_vmem_bytes_agrees(shapes, names, block, buffers):
    dtypes_ = names[: len(shapes)]
    assert (sol_a1.vmem_bytes(shapes, dtypes_, block, buffers)
            == ref_a1.vmem_bytes(shapes, dtypes_, block, buffers))


@AGREEMENT
@given(rows=st.one_of(st.none(), st.integers(1, 5)), n=st.integers(1, 40),
       block=st.integers(1, 12), scale=st.sampled_from([1.0, 30.0, 90.0]), dtype=dtypes,
       seed=seeds)
def test_online_softmax_agrees_on_rows_blocks_and_dtypes(rows, n, block, scale, dtype, seed):
    x = array_of((n,) if rows is None else (rows, n), dtype, seed, scale)
    probs, trace = sol_a4.online_softmax(x, block)
    want_probs, want_trace = ref_a4.online_softmax(x, block)
    assert probs.shape == x.shape and len(trace) == len(want_trace) == -(-n // block)
    np.testing.assert_allclose(as64(probs), want_probs, rtol=1e-5, atol=1e-7)
    for (m, s), (want_m, want_s) in zip(trace, want_trace, strict=True):
        assert np.shape(m) == np.shape(want_m) == x.shape[:-1]
        np.testing.assert_allclose(as64(m), want_m, rtol=1e-6)
        np.testing.assert_allclose(as64(s), want_s, rtol=1e-5)


@st.composite
def states(draw, rows: int, dv: int):
    """(m, l, acc) in float32 of a drawn set of keys for `rows` query rows."""
    n = draw(st.integers(1, 8))
    scale = draw(st.sampled_from([1.0, 30.0, 90.0]))
    seed = draw(seeds)
    scores = array_of((rows, n), np.dtype(np.float64), seed, scale)
    values = array_of((n, dv), np.dtype(np.float64), seed + 1)
    m = scores.max(axis=-1)
    w = np.exp(scores - m[:, None])
    return tuple(a.astype(np.float32) for a in (m, w.sum(axis=-1), w @ values))


@st.composite
def state_triples(draw):
    rows, dv = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    return tuple(draw(states(rows, dv)) for _ in range(3))


def assert_states_close(got, want, rtol: float = 1e-5) -> None:
    for g, w, name in zip(got, want, ("m", "l", "acc"), strict=True):
        np.testing.assert_allclose(as64(g), as64(w), rtol=rtol, atol=1e-6, err_msg=name)


@AGREEMENT
@given(triple=state_triples())
def test_merge_agrees_and_is_commutative_and_associative(triple):
    a, b, c = triple
    assert_states_close(sol_a4.merge_attention_states(a, b), ref_a4.merge_attention_states(a, b))
    for impl in (sol_a4, ref_a4):
        ab, ba = impl.merge_attention_states(a, b), impl.merge_attention_states(b, a)
        for x, y in zip(ab, ba, strict=True):
            np.testing.assert_array_equal(x, y)  # exactly: the recipe is symmetric
        left = impl.merge_attention_states(ab, c)
        right = impl.merge_attention_states(a, impl.merge_attention_states(b, c))
        assert_states_close(left, right)
    np.testing.assert_allclose(as64(sol_a4.finalize_attention_state(a)),
                               ref_a4.finalize_attention_state(a), rtol=1e-6)


@A4
def test_merging_two_empty_states_stays_empty_without_nan(impl):
    empty = (np.full(2, -np.inf, np.float32), np.zeros(2, np.float32),
             np.zeros((2, 3), np.float32))
    m, total, acc = impl.merge_attention_states(empty, empty)
    assert np.all(np.isneginf(m)) and not np.any(np.isnan(total)) and not np.any(np.isnan(acc))
    full = (np.array([1.0, 2.0], np.float32), np.ones(2, np.float32),
            np.ones((2, 3), np.float32))
    assert_states_close(impl.merge_attention_states(empty, full), full)


@AGREEMENT
@given(top=st.floats(-200, 200), bottom=st.floats(-200, 200))
def test_mle_range_agrees(top, bottom):
    # The solution takes ln(f32 max) and ln(f32 tiny) in float32 (about 88.72 and 87.34, so
    # within 88.72 · 2**-24 ≈ 5e-6 of the reference's float64 logs): near 0 the bounds agree
    # to that absolute error, not to a relative one (Hypothesis drew top = 89.0 in the full
    # suite, where its pool of constants differs).
    np.testing.assert_allclose(sol_a4.mle_safe_range(top, bottom),
                               ref_a4.mle_safe_range(top, bottom), rtol=1e-6, atol=1e-5)
    assert sol_a4.mle_safe_range(89.0, 0.0) == pytest.approx(
        ref_a4.mle_safe_range(89.0, 0.0), rel=1e-6, abs=1e-5)


@AGREEMENT
@given(heads=st.integers(1, 256), length=st.integers(1, 8192), d=st.integers(1, 256),
       dv=st.integers(1, 256), block_q=st.integers(1, 4096),
       in_bytes=st.sampled_from([1, 2, 4]), out_bytes=st.sampled_from([2, 4]))
def test_traffic_and_flops_agree(heads, length, d, dv, block_q, in_bytes, out_bytes):
    assert (sol_a4.flash_attention_hbm_bytes(heads, length, d, dv, block_q, in_bytes=in_bytes,
                                             out_bytes=out_bytes)
            == ref_a4.flash_attention_hbm_bytes(heads, length, d, dv, block_q,
                                                in_bytes=in_bytes, out_bytes=out_bytes))
    assert (sol_a4.xla_attention_hbm_bytes(heads, length, d, dv, in_bytes=in_bytes,
                                           out_bytes=out_bytes)
            == ref_a4.xla_attention_hbm_bytes(heads, length, d, dv, in_bytes=in_bytes,
                                              out_bytes=out_bytes))
    assert sol_a4.attention_flops(heads, length, d, dv) == ref_a4.attention_flops(
        heads, length, d, dv)


@settings(AGREEMENT, max_examples=25)
@given(kv_heads=st.sampled_from([1, 2]), group=st.sampled_from([1, 2, 3]),
       block_q=st.sampled_from([8, 16]), block_kv=st.sampled_from([8, 16, 32]),
       blocks=st.integers(1, 3), d=st.integers(4, 40), dv=st.integers(4, 40), dtype=dtypes,
       causal=st.booleans(), cap=st.sampled_from([None, 10.0]),
       use_mle=st.booleans(), seed=seeds)
def test_flash_attention_agrees_in_values_and_trace(kv_heads, group, block_q, block_kv,
                                                    blocks, d, dv, dtype, causal, cap,
                                                    use_mle, seed):
    length = math.lcm(block_q, block_kv) * blocks
    q = array_of((kv_heads * group, length, d), dtype, seed)
    k = array_of((kv_heads, length, d), dtype, seed + 1)
    v = array_of((kv_heads, length, dv), dtype, seed + 2)
    # |q·k|·sm_scale <= 9·sqrt(d) < 57 here, so c = 0 is inside every safe range
    # (max - 88.72, min_row_max + 87.34) of these scores.
    kwargs = dict(causal=causal, block_q=block_q, block_kv=block_kv, soft_cap=cap,
                  max_logit_const=0.0 if use_mle else None)
    got, got_call = traced(sol_a4.flash_attention, q, k, v, **kwargs)
    want, want_call = traced(ref_a4.flash_attention, q, k, v, **kwargs)
    dense = dense_attention(q, k, v, causal=causal, soft_cap=cap)
    np.testing.assert_allclose(got, dense, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(want, dense, rtol=1e-4, atol=1e-4)
    same_trace(got_call, want_call)
    for op_a, op_b in zip(got_call.role("in"), want_call.role("in"), strict=True):
        np.testing.assert_array_equal(op_a.kernel_reads > 0, op_b.kernel_reads > 0)
