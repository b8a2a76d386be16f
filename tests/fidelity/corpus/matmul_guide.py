"""Corpus: the TPU matrix multiplication guide.

Follows "Matrix Multiplication" in the Pallas TPU guides
(https://docs.jax.dev/en/latest/pallas/tpu/matmul.html): a blocked matmul over an
(i, j, k) grid accumulating in its output block, the bfloat16 version with a float32
VMEM accumulator and ``preferred_element_type``, the transposed right-hand side through
``jax.lax.dot_general``, and the templated version with a fused activation, each behind
``jax.jit`` with static block sizes.

These are the project's own versions: same API usage and grid layout at smaller shapes
(256 instead of 4096, blocks of 128), our own code and comments.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
from corpus_cases import BF16, F32_MATMUL, Case, corpus_case

CASES: list[Case] = []
_RNG = np.random.default_rng(41)
A = _RNG.standard_normal((256, 256), dtype=np.float32)
B = _RNG.standard_normal((256, 256), dtype=np.float32)
A16, B16 = A.astype(ml_dtypes.bfloat16), B.astype(ml_dtypes.bfloat16)
PARALLEL_PARALLEL_ARBITRARY = ("parallel", "parallel", "arbitrary")


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="(i, j, k) grid, k last; the output block is the accumulator")
def accumulate_in_output_block(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(a_ref, b_ref, c_ref):
        @pl.when(pl.program_id(2) == 0)
        def _start():
            c_ref[...] = jnp.zeros_like(c_ref)

        c_ref[...] += a_ref[...] @ b_ref[...]

    def matmul(a, b, *, bm=128, bk=128, bn=128):
        m, k = a.shape
        n = b.shape[1]
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            grid=(m // bm, n // bn, k // bk),
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=PARALLEL_PARALLEL_ARBITRARY),
        )(a, b)

    return matmul(A, B)


def _accumulating_kernel(a_ref, b_ref, c_ref, acc_ref, *, ns, k_steps, contract_rhs_rows,
                         activation):
    """One (i, j, k) step: acc += a @ b (or a @ b.T) in float32; the last k step writes
    activation(acc) in c's dtype."""
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp

    @pl.when(pl.program_id(2) == 0)
    def _start():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    rhs_axis = 0 if contract_rhs_rows else 1  # which axis of b meets a's columns
    acc_ref[...] += jax.lax.dot_general(a_ref[...], b_ref[...], (((1,), (rhs_axis,)), ((), ())),
                                        preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == k_steps - 1)
    def _finish():
        c_ref[...] = activation(acc_ref[...]).astype(c_ref.dtype)


def _templated_matmul(ns):
    """The guide's final wrapper: bf16-friendly, optional transposed rhs, fused activation."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    @functools.partial(jax.jit, static_argnames=["bm", "bk", "bn", "transpose_rhs",
                                                 "activation"])
    def matmul(a, b, *, bm=128, bk=128, bn=128, transpose_rhs=False,
               activation=lambda v: v):
        if transpose_rhs:
            b = b.swapaxes(0, 1)  # b is now (n, k): block (j, kk) holds rows j, columns kk
            b_spec = pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk))
            n = b.shape[0]
        else:
            b_spec = pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))
            n = b.shape[1]
        m, k = a.shape
        kernel = functools.partial(_accumulating_kernel, ns=ns, k_steps=k // bk,
                                   contract_rhs_rows=not transpose_rhs, activation=activation)
        return pl.pallas_call(
            kernel,
            grid_spec=pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=0,
                in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), b_spec],
                out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
                scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
                grid=(m // bm, n // bn, k // bk),
            ),
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=PARALLEL_PARALLEL_ARBITRARY),
        )(a, b)

    return matmul


@corpus_case(CASES, tolerance=BF16,
             exercises="bf16 inputs, f32 VMEM scratch, preferred_element_type, jit statics")
def bf16_with_f32_scratch(ns):
    return _templated_matmul(ns)(A16, B16)


@corpus_case(CASES, tolerance=BF16,
             exercises="rhs transposed on the host, lax.dot_general contracting (1, 1)")
def bf16_transposed_rhs(ns):
    return _templated_matmul(ns)(A16, B16, transpose_rhs=True)


@corpus_case(CASES, tolerance=BF16,
             exercises="fused activation (jax.nn.gelu) on the accumulator, a static jit arg")
def bf16_fused_gelu(ns):
    return _templated_matmul(ns)(A16, B16, bk=256, activation=ns.jax.nn.gelu)


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="the same template in float32 with unequal blocks (bm=64, bn=128)")
def f32_uneven_blocks_fused_relu(ns):
    return _templated_matmul(ns)(A, B[:, :128], bm=64, activation=ns.jax.nn.relu)
