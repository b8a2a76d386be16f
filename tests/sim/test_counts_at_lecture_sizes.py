"""Op counts at the lecture's sizes (issue 23 item 3): every count is a Python int (int64 in
per-step arrays), so products whose operand sizes multiply past 2**31 count exactly.

``jax.lax.dot_general``, the lecture's §5.2 spelling of a product, used to raise
``OverflowError`` (int32) in its op accounting once the product of its operands' sizes
reached 2**31 (its count went through ``lax.max``, which makes an int32 array). Every
expected count is the exact Python-int formula (2 * M * N * K FLOPs), never read back from
the simulator.
"""

from __future__ import annotations

import numpy as np

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
