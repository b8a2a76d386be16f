"""What a Flash Attention kernel needs from the simulator (lecture §5.2-5.3).

Squeezed (``None``) head dims of 3-D and 4-D arrays, scratch buffers that
start poisoned and persist across grid steps, bf16 dots that accumulate in
f32, and per-step ``kernel_reads`` that make skipped work visible.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim._src.tracing import CallTrace


def copy_heads(x, block, *, squeeze=True):
    """Copy x [B, H, L, d] block by block through refs that drop B and H."""
    b_, h_, length, d = x.shape
    lead = (None, None) if squeeze else (1, 1)
    spec = pl.BlockSpec((*lead, block, d), lambda b, h, i: (b, h, i, 0))
    seen = []

    def kernel(x_ref, o_ref):
        seen.append(x_ref.shape)
        o_ref[...] = x_ref[...] * 2

    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         grid=(b_, h_, length // block), in_specs=[spec],
                         out_specs=spec)(x)
    return out, seen


@SIM_SETTINGS
@given(b=st.integers(1, 2), h=st.integers(1, 3), nblocks=st.integers(1, 3),
       block=st.sampled_from([8, 16]), d=st.sampled_from([4, 8]))
def test_none_dims_of_a_4d_array_are_squeezed_from_the_kernel_ref(b, h, nblocks, block, d):
    x = np.random.default_rng(b * 100 + h).standard_normal((b, h, nblocks * block, d))
    x = x.astype(np.float32)
    out, seen = copy_heads(x, block)
    assert set(seen) == {(block, d)}, (
        f"kernel refs had shapes {set(seen)}; a BlockSpec (None, None, {block}, {d}) drops "
        "the two None dims, so the ref is 2-D")
    np.testing.assert_array_equal(out, 2 * x)


def test_size_one_block_dims_are_kept_unlike_none():
    x = np.ones((1, 2, 16, 4), np.float32)
    _, seen = copy_heads(x, 8, squeeze=False)
    assert set(seen) == {(1, 1, 8, 4)}, "a block dim of 1 stays in the ref; only None squeezes"


def test_squeezed_dims_still_take_their_index_from_the_index_map():
    # Query head h reads kv head h // 2 (GQA with groups of two).
    kv = np.arange(2 * 8 * 4, dtype=np.float32).reshape(2, 8, 4)

    def kernel(k_ref, o_ref):
        o_ref[...] = k_ref[...]

    out = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((4, 8, 4), np.float32), grid=(4,),
        in_specs=[pl.BlockSpec((None, 8, 4), lambda h: (h // 2, 0, 0))],
        out_specs=pl.BlockSpec((None, 8, 4), lambda h: (h, 0, 0)))(kv)
    np.testing.assert_array_equal(out, kv[[0, 0, 1, 1]])


def running_sum(x, block, *, init=True):
    """Row sums of x [M, N] over a grid (M/block, N/block) with an f32 scratch accumulator."""
    def kernel(x_ref, o_ref, acc_ref):
        if init:
            @pl.when(pl.program_id(1) == 0)
            def _():
                acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...].sum(axis=1, keepdims=True)

        @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    m, n = x.shape
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((m, 1), np.float32),
        grid=(m // block, n // block),
        in_specs=[pl.BlockSpec((block, block), lambda i, j: (i, j))],
        out_specs=pl.BlockSpec((block, 1), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((block, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
    )(x)


def test_scratch_persists_across_steps_of_the_reduction_axis():
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    with pallas_sim.trace() as t:
        out = running_sum(x, 8)
    np.testing.assert_allclose(out[:, 0], x.sum(axis=1), rtol=1e-6)
    assert t.last.when_bodies_run == 4 * 2, (
        f"{t.last.when_bodies_run} pl.when bodies ran; 4 row blocks x (init + finish) = 8")


def test_scratch_starts_poisoned_so_a_missing_init_gives_nan():
    x = np.ones((16, 16), np.float32)
    out = running_sum(x, 8, init=False)
    assert np.isnan(out).all(), "scratch is NaN until written; forgetting the init shows"
    with pallas_sim.config(uninitialized="zero"):
        zeroed = running_sum(x, 8, init=False)[:, 0]
    # One scratch buffer for the whole call: without the init the second row block
    # starts from the first one's total (16) instead of 0.
    np.testing.assert_array_equal(zeroed, [16.0] * 8 + [32.0] * 8)


def test_bf16_dot_accumulates_in_f32():
    # 256 products of 1 + 2^-7: a bf16 running sum (8-bit significand) would lose the 2^-7s.
    a = np.full((1, 256), 1 + 2**-7, ml_dtypes.bfloat16)
    b = np.ones((256, 1), ml_dtypes.bfloat16)
    got = jnp.dot(a, b, preferred_element_type=jnp.float32)
    assert got.dtype == np.float32
    assert got[0, 0] == pytest.approx(256 * (1 + 2**-7), rel=1e-6), (
        "bf16 inputs are multiplied and summed in f32, as the MXU does")
    assert jnp.dot(a, b).dtype == ml_dtypes.bfloat16, "without preferred_element_type: bf16"


def causal_block_sums(x, block, *, skip):
    """For each q block i, the sum of x's kv blocks j <= i; blocks j > i skipped or zeroed."""
    def kernel(x_ref, o_ref):
        i, j = pl.program_id(0), pl.program_id(1)

        @pl.when(j == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        if skip:
            @pl.when(j <= i)
            def _():
                o_ref[...] += x_ref[...]
        else:
            o_ref[...] += x_ref[...] * (j <= i)

    n = x.shape[0] // block
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((x.shape[0], block), np.float32), grid=(n, n),
        in_specs=[pl.BlockSpec((block, block), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((block, block), lambda i, j: (i, 0)))(x)


@pytest.mark.parametrize("skip", [True, False])
def test_kernel_reads_show_which_steps_did_work(skip):
    x = np.ones((32, 8), np.float32)
    with pallas_sim.trace() as t:
        causal_block_sums(x, 8, skip=skip)
    call = t.last
    (inp,) = call.role("in")
    steps = np.array([(i, j) for i in range(4) for j in range(4)])
    masked = steps[:, 1] > steps[:, 0]
    assert inp.kernel_reads.shape == (16,), "one read count per grid step"
    if skip:
        assert (inp.kernel_reads[masked] == 0).all(), (
            "blocks behind a false pl.when are never read: the skipped work is visible")
        assert (inp.kernel_reads[~masked] == 1).all()
        assert call.when_bodies_run == 4 + 10, "4 inits + 10 of 16 blocks on or below the diagonal"
    else:
        assert (inp.kernel_reads == 1).all(), "masking without pl.when reads every block"
        assert call.when_bodies_run == 4
    assert call.role("out")[0].kernel_reads.size == 0, "reads are recorded for inputs only"


def test_kernel_reads_survive_the_dict_round_trip():
    with pallas_sim.trace() as t:
        causal_block_sums(np.ones((16, 8), np.float32), 8, skip=True)
    again = CallTrace.from_dict(t.last.to_dict())
    assert again == t.last
    np.testing.assert_array_equal(again.role("in")[0].kernel_reads, [1, 0, 1, 1])
