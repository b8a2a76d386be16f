"""Op counts at the lecture's sizes: every count is a Python int (int64 in
per-step arrays), so products whose operand sizes multiply past 2**31 count exactly.

``jax.lax.dot_general``, the lecture's §5.2 spelling of a product, used to raise
``OverflowError`` (int32) in its op accounting once the product of its operands' sizes
reached 2**31 (its count went through ``lax.max``, which makes an int32 array). Every
expected count is the exact Python-int formula (2 * M * N * K FLOPs), never read back from
the simulator. The property tests run every op that counts work (lax, jnp, nn, refs, DMA)
abstractly (``pallas_sim.estimate``) at the lecture's full sizes and at products past 2**31.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pallas_sim
from pallas_sim import jax, jnp, lax, pl, pltpu

#: Task 3.5's matmul (lecture §4.1, §4.2): x [M, K] @ y [K, N] in bf16.
M, K, N = 4096, 7168, 18432


def _matmul_kernel(x_ref, y_ref, z_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += lax.dot_general(x_ref[...], y_ref[...], (((1,), (0,)), ((), ())),
                                    preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        z_ref[...] = acc_ref[...]


def _matmul(x, y, bm, bn, bk):
    (m, k), n = x.shape, y.shape[1]
    return pl.pallas_call(
        _matmul_kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)])(x, y)


def test_lax_dot_general_counts_the_lecture_matmul_under_estimate():
    bm, bn, bk = 1024, 1024, 1024  # 1024**4 = 2**40: the operands' sizes multiplied
    est = pallas_sim.estimate(_matmul, jax.ShapeDtypeStruct((M, K), jnp.bfloat16),
                              jax.ShapeDtypeStruct((K, N), jnp.bfloat16), bm, bn, bk)
    ops = est.last.ops
    steps = (M // bm) * (N // bn) * (K // bk)
    assert ops.num_steps == steps
    np.testing.assert_array_equal(ops["mxu_flops_bf16"], np.full(steps, 2 * bm * bn * bk))
    assert ops.total("mxu_flops_bf16") == 2 * M * N * K  # 1.08e15, far above 2**31
    assert est.timelines[0].mxu_flops == 2 * M * N * K


def test_lax_dot_general_counts_a_512_block_product_in_a_concrete_run():
    x = np.ones((512, 512), jnp.bfloat16)  # 512**4 = 2**36 operand-size product
    with pallas_sim.trace() as t:
        z = _matmul(x, x, 512, 512, 512)
    np.testing.assert_array_equal(z, np.full((512, 512), 512, np.float32))
    assert t.calls[-1].ops.total("mxu_flops_bf16") == 2 * 512 ** 3


# -- every op that counts work, abstractly, at lecture sizes and past 2**31 -----------------

#: Dimensions of the lecture's problems: Task 3.5's matmul (M 4096, K 7168, N 18432), the
#: flash layer (H 128, L 4096, d 192, dv 128), Splash (L 8192) and their blocks.
SIZES = (128, 192, 256, 1024, 2048, 4096, 7168, 8192, 18432)
HEADS = (1, 8, 128)
BF16, F32 = np.dtype(jnp.bfloat16), np.dtype(np.float32)


def _origin(ndim):
    """An index map of no grid axes to block (0, ..., 0)."""
    return lambda: (0,) * ndim


def _ops_of(body, *shapes_dtypes):
    """Counts of one grid step whose kernel runs ``body(*values)``: each value a (1, ...)
    bf16/f32 block loaded and broadcast to its shape (an abstract value of any size: no
    VMEM holds it, so sizes need not fit)."""
    def kernel(*refs):
        o_ref = refs[-1]
        values = [jnp.broadcast_to(r[...], shape) for r, (shape, _) in
                  zip(refs[:-1], shapes_dtypes, strict=True)]
        body(*values)
        o_ref[...] = jnp.zeros_like(o_ref)

    def call(*xs):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
            in_specs=[pl.BlockSpec((1,) * len(s), _origin(len(s))) for s, _ in shapes_dtypes],
            out_specs=pl.BlockSpec((8, 128), lambda: (0, 0)))(*xs)

    est = pallas_sim.estimate(call, *(jax.ShapeDtypeStruct((1,) * len(s), d)
                                      for s, d in shapes_dtypes))
    assert est.last.num_steps == 1 and np.isfinite(est.time_s) and est.time_s > 0
    ops = est.last.ops
    got = {k: ops.total(k) for k in ops.keys()}
    assert all(type(v) is int for v in got.values())
    return got, est


_NT = (((2,), (2,)), ((0,), (0,)))  # q @ k^T per head: contract d, batch h
_NN = (((2,), (1,)), ((0,), (0,)))  # p @ v per head

#: Products: (name, body, operand shapes of (h, m, n, k), operand dtype).
PRODUCTS = [
    ("lax.dot_general q@k^T", lambda a, b: lax.dot_general(
        a, b, _NT, preferred_element_type=jnp.float32), "nt"),
    ("lax.dot_general p@v", lambda a, b: lax.dot_general(
        a, b, _NN, preferred_element_type=jnp.float32), "nn"),
    ("lax.dot", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32), "2d"),
    ("jnp.dot", lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32), "2d"),
    ("jnp.matmul", lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32), "nn"),
    ("a @ b", lambda a, b: a @ b, "nn"),
    ("jnp.einsum", lambda a, b: jnp.einsum("hqd,hkd->hqk", a, b,
                                           preferred_element_type=jnp.float32), "nt"),
]


def _product_shapes(form: str, h: int, m: int, n: int, k: int):
    if form == "2d":
        return (m, k), (k, n)
    return (h, m, k), ((h, n, k) if form == "nt" else (h, k, n))


dims = st.tuples(st.sampled_from(HEADS), st.sampled_from(SIZES), st.sampled_from(SIZES),
                 st.sampled_from(SIZES))


@pytest.mark.parametrize("name,body,form", PRODUCTS, ids=[p[0] for p in PRODUCTS])
@pytest.mark.parametrize("dtype", [BF16, F32], ids=["bf16", "f32"])
@settings(max_examples=12, deadline=None)
@given(hmnk=dims)
@example(hmnk=(128, 4096, 4096, 192))   # the flash layer's q @ k^T (lecture §5.3)
@example(hmnk=(1, 4096, 18432, 7168))   # Task 3.5's whole matmul
@example(hmnk=(1, 1024, 1024, 2048))    # 2 * M * N * K = 2**32 exactly
def test_every_product_counts_2mnk_exactly(name, body, form, dtype, hmnk):
    h, m, n, k = hmnk
    a, b = _product_shapes(form, h, m, n, k)
    got, est = _ops_of(body, (a, dtype), (b, dtype))
    batch = 1 if form == "2d" else h
    flops = 2 * batch * m * n * k
    key = "mxu_flops_bf16" if dtype == BF16 else "mxu_flops_f32"
    assert got[key] == flops, (name, hmnk)
    assert est.timelines[0].mxu_flops == flops
    # f32 operands enter the MXU rounded to bf16: every element of both is a cast
    assert got.get("cast_elements", 0) == (0 if dtype == BF16 else math.prod(a) + math.prod(b))
    assert est.last.ops.largest_intermediate == batch * m * n


#: Vector work on one operand x of shape (h, m, n): (name, body, dtype, key -> formula).
def _size(s):
    return math.prod(s)


VECTOR_OPS = [
    ("jnp.exp", lambda x: jnp.exp(x), F32, lambda s: {"eup_ops": _size(s)}),
    ("lax.exp", lambda x: lax.exp(x), F32, lambda s: {"eup_ops": _size(s)}),
    ("nn.softmax", lambda x: jax.nn.softmax(x, axis=-1), F32,
     lambda s: {"eup_ops": _size(s)}),
    ("nn.relu", lambda x: jax.nn.relu(x), F32, lambda s: {"vpu_ops": _size(s)}),
    ("x + x", lambda x: x + x, F32, lambda s: {"vpu_ops": _size(s)}),
    ("lax.add", lambda x: lax.add(x, x), BF16, lambda s: {"vpu_ops": _size(s)}),
    ("jnp.maximum", lambda x: jnp.maximum(x, 0.0), F32, lambda s: {"vpu_ops": _size(s)}),
    ("jnp.where", lambda x: jnp.where(x > 0, x, 0.0), F32,
     lambda s: {"vpu_ops": 2 * _size(s)}),
    ("x.max(-1)", lambda x: x.max(axis=-1), F32,
     lambda s: {"vpu_ops": _size(s), "xlane_elements": _size(s)}),
    ("jnp.sum(axis=1)", lambda x: jnp.sum(x, axis=1), F32, lambda s: {"vpu_ops": _size(s)}),
    ("lax.reduce_max", lambda x: lax.reduce_max(x, (2,)), F32,
     lambda s: {"vpu_ops": _size(s), "xlane_elements": _size(s)}),
    ("astype", lambda x: x.astype(jnp.bfloat16), F32, lambda s: {"cast_elements": _size(s)}),
    ("lax.convert_element_type", lambda x: lax.convert_element_type(x, jnp.float32), BF16,
     lambda s: {"cast_elements": _size(s)}),
]


@pytest.mark.parametrize("name,body,dtype,want", VECTOR_OPS, ids=[v[0] for v in VECTOR_OPS])
@settings(max_examples=8, deadline=None)
@given(hmnk=dims)
@example(hmnk=(128, 4096, 4096, 1))     # the flash layer's whole score tensor: 2**31
@example(hmnk=(128, 8192, 8192, 1))     # Splash's (lecture §6.6): 2**33 elements
def test_every_vector_op_counts_its_elements_exactly(name, body, dtype, want, hmnk):
    shape = hmnk[:3]
    got, _ = _ops_of(body, (shape, dtype))
    for key, n in want(shape).items():
        assert got.get(key, 0) == n, (name, key, shape)


@settings(max_examples=10, deadline=None)
@given(hmn=st.tuples(st.sampled_from(HEADS), st.sampled_from(SIZES), st.sampled_from(SIZES)))
@example(hmn=(128, 8192, 8192))  # 2**34 bytes of bf16
def test_manual_dmas_count_their_bytes_exactly(hmn):
    nbytes = math.prod(hmn) * 2

    def kernel(x_hbm, o_hbm, sem):
        copy = pltpu.make_async_copy(x_hbm, o_hbm, sem)
        copy.start()
        copy.wait()
        pltpu.sync_copy(x_hbm.at[0], o_hbm.at[0])

    def call(x):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[pltpu.SemaphoreType.DMA])(x)

    est = pallas_sim.estimate(call, jax.ShapeDtypeStruct(hmn, jnp.bfloat16))
    call_trace = est.last
    assert call_trace.ops.total("manual_dma_bytes") == nbytes + nbytes // hmn[0]
    assert call_trace.manual_dma_bytes == nbytes + nbytes // hmn[0]
    assert call_trace.ops.total("manual_dma_exposed_count") == 2
    assert np.isfinite(est.time_s) and est.time_s > 0


@pytest.mark.parametrize("shape,block", [((128, 8192, 8192), (None, 512, 8192)),
                                         ((4096, 18432), (1024, 2048))])
def test_blocked_refs_count_hbm_and_vmem_bytes_exactly(shape, block):
    """Block copies at lecture sizes: every block read once and written back once, so the
    HBM bytes are the array's (2**34 for Splash's [128, 8192, 8192] bf16 scores)."""
    kernel_block = tuple(1 if b is None else b for b in block)

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    grid = tuple(d // b for d, b in zip(shape, kernel_block, strict=True))

    def call(x):
        spec = pl.BlockSpec(block, lambda *ij: ij)
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=grid, in_specs=[spec], out_specs=spec)(x)

    est = pallas_sim.estimate(call, jax.ShapeDtypeStruct(shape, jnp.bfloat16))
    trace = est.last
    nbytes = math.prod(shape) * 2
    assert [op.hbm_bytes for op in trace.operands] == [nbytes, nbytes]
    assert (trace.hbm_bytes_read, trace.hbm_bytes_written) == (nbytes, nbytes)
    steps = math.prod(grid)
    assert trace.ops.total("vpu_ops") == math.prod(shape) and trace.num_steps == steps
    assert est.timelines[0].hbm_bytes == 2 * nbytes
    assert trace.vmem_bytes == 2 * 2 * math.prod(kernel_block) * 2  # 2 operands x 2 buffers
