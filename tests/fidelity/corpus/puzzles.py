"""Corpus: puzzle-style exercises.

Follows the exercise list of Sasha Rush's Triton Puzzles as ported to Pallas
("Pallas Puzzles", https://github.com/rdyro/Pallas-Puzzles, a fork of
https://github.com/srush/Triton-Puzzles) and the basics notebook of
https://github.com/vorushin/pallas_puzzles: constant add (whole array and blocked,
with a ragged last block), a block-reversing index map, outer vector add, fused outer
multiplication and its backward pass, long sum, long softmax, a one-dimensional flash
attention, a 2-D convolution, batched matmul with squeezed batch blocks, and a
matmul on 4-bit weights packed into int32 with group scales and offsets.

These are the project's own versions written for the TPU flavour of Pallas (BlockSpecs
instead of pointer arithmetic and masks): same shapes in spirit, our own code and
comments.
"""

from __future__ import annotations

import numpy as np
from corpus_cases import F32, F32_MATMUL, Case, corpus_case

CASES: list[Case] = []

def _draw(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@corpus_case(CASES, tolerance=F32, exercises="no grid, no BlockSpecs: the whole vector")
def constant_add(ns):
    pl, jax = ns.pl, ns.jax
    (x,) = _draw(1, (32,))

    def add_ten(x_ref, z_ref):
        z_ref[...] = x_ref[...] + 10.0

    return pl.pallas_call(add_ten, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@corpus_case(CASES, tolerance=F32,
             exercises="1-D blocks, pl.cdiv grid, a ragged last block (200 = 128 + 72)")
def constant_add_block(ns):
    pl, jax = ns.pl, ns.jax
    (x,) = _draw(2, (200,))

    def add_ten(x_ref, z_ref):
        z_ref[...] = x_ref[...] + 10.0  # the padding of the last block is never written back

    spec = pl.BlockSpec((128,), lambda i: (i,))
    return pl.pallas_call(add_ten, grid=(pl.cdiv(200, 128),), in_specs=[spec],
                          out_specs=spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@corpus_case(CASES, tolerance=F32, exercises="an index map reading the blocks backwards")
def reversed_block_add(ns):
    pl, jax = ns.pl, ns.jax
    x, y = _draw(3, (512,), (512,))
    blocks = 4

    def add(x_ref, y_ref, z_ref):
        z_ref[...] = x_ref[...] + y_ref[...]

    forward = pl.BlockSpec((128,), lambda i: (i,))
    backward = pl.BlockSpec((128,), lambda i: (blocks - 1 - i,))
    return pl.pallas_call(add, grid=(blocks,), in_specs=[forward, backward],
                          out_specs=forward,
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


@corpus_case(CASES, tolerance=F32, exercises="broadcasting two vectors into a matrix")
def outer_vector_add(ns):
    pl, jax = ns.pl, ns.jax
    x, y = _draw(4, (32,), (32,))

    def outer_add(x_ref, y_ref, z_ref):
        z_ref[...] = x_ref[...][None, :] + y_ref[...][:, None]  # z[j, i] = x[i] + y[j]

    return pl.pallas_call(outer_add, out_shape=jax.ShapeDtypeStruct((32, 32), x.dtype))(x, y)


@corpus_case(CASES, tolerance=F32,
             exercises="2-D grid over 1-D inputs: each vector indexed by one grid axis")
def outer_vector_add_block(ns):
    pl, jax = ns.pl, ns.jax
    x, y = _draw(5, (256,), (384,))

    def outer_add(x_ref, y_ref, z_ref):
        z_ref[...] = x_ref[...][None, :] + y_ref[...][:, None]

    return pl.pallas_call(
        outer_add, grid=(3, 2),
        in_specs=[pl.BlockSpec((128,), lambda j, i: (i,)),
                  pl.BlockSpec((128,), lambda j, i: (j,))],
        out_specs=pl.BlockSpec((128, 128), lambda j, i: (j, i)),
        out_shape=jax.ShapeDtypeStruct((384, 256), x.dtype))(x, y)


@corpus_case(CASES, tolerance=F32, exercises="fused relu(x * y) on outer-product blocks")
def fused_outer_multiplication(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    x, y = _draw(6, (256,), (256,))

    def relu_outer(x_ref, y_ref, z_ref):
        z_ref[...] = jnp.maximum(x_ref[...][None, :] * y_ref[...][:, None], 0.0)

    return pl.pallas_call(
        relu_outer, grid=(2, 2),
        in_specs=[pl.BlockSpec((128,), lambda j, i: (i,)),
                  pl.BlockSpec((128,), lambda j, i: (j,))],
        out_specs=pl.BlockSpec((128, 128), lambda j, i: (j, i)),
        out_shape=jax.ShapeDtypeStruct((256, 256), x.dtype))(x, y)


@corpus_case(CASES, tolerance=F32,
             exercises="backward of relu(x * y[:, None]): jnp.where on a comparison")
def fused_outer_multiplication_backward(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    x, y, dz = _draw(7, (256, 256), (256,), (256, 256))

    def relu_outer_grad(x_ref, y_ref, dz_ref, dx_ref):
        y_col = y_ref[...][:, None]
        dx_ref[...] = jnp.where(x_ref[...] * y_col > 0, y_col * dz_ref[...], 0.0)

    block = pl.BlockSpec((128, 128), lambda j, i: (j, i))
    return pl.pallas_call(
        relu_outer_grad, grid=(2, 2),
        in_specs=[block, pl.BlockSpec((128,), lambda j, i: (j,)), block],
        out_specs=block, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y, dz)


@corpus_case(CASES, tolerance=F32,
             exercises="row sums accumulated across a k grid axis into a 1-D output block")
def long_sum(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    (x,) = _draw(8, (16, 512))

    def row_sum(x_ref, z_ref):
        @pl.when(pl.program_id(1) == 0)
        def _zero():
            z_ref[...] = jnp.zeros_like(z_ref)

        z_ref[...] += jnp.sum(x_ref[...], axis=1)

    return pl.pallas_call(
        row_sum, grid=(2, 4),
        in_specs=[pl.BlockSpec((8, 128), lambda r, k: (r, k))],
        out_specs=pl.BlockSpec((8,), lambda r, k: (r,)),
        out_shape=jax.ShapeDtypeStruct((16,), x.dtype))(x)


@corpus_case(CASES, tolerance=F32,
             exercises="two passes over a long row with fori_loop + pl.ds: online max/sum, "
                       "then normalise")
def long_softmax(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    (x,) = _draw(9, (16, 1024))
    chunk = 256

    def softmax_rows(x_ref, z_ref):
        rows = x_ref.shape[0]

        def gather_stats(c, carry):
            running_max, running_sum = carry
            piece = x_ref[:, pl.ds(c * chunk, chunk)]
            new_max = jnp.maximum(running_max, jnp.max(piece, axis=1, keepdims=True))
            running_sum = (running_sum * jnp.exp(running_max - new_max)
                           + jnp.sum(jnp.exp(piece - new_max), axis=1, keepdims=True))
            return new_max, running_sum

        start = (jnp.full((rows, 1), -jnp.inf, jnp.float32), jnp.zeros((rows, 1), jnp.float32))
        row_max, row_sum = jax.lax.fori_loop(0, x_ref.shape[1] // chunk, gather_stats, start)

        def normalise(c, carry):
            cols = pl.ds(c * chunk, chunk)
            z_ref[:, cols] = jnp.exp(x_ref[:, cols] - row_max) / row_sum
            return carry

        jax.lax.fori_loop(0, x_ref.shape[1] // chunk, normalise, 0)

    spec = pl.BlockSpec((8, 1024), lambda r: (r, 0))
    return pl.pallas_call(softmax_rows, grid=(2,), in_specs=[spec], out_specs=spec,
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@corpus_case(CASES, tolerance=F32,
             exercises="scalar-per-token attention: q blocks, whole k/v looped in chunks, "
                       "online softmax carried through fori_loop")
def simple_flash_attention(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    q, k, v = _draw(10, (256,), (512,), (512,))
    chunk = 128

    def attend(q_ref, k_ref, v_ref, z_ref):
        queries = q_ref[...][:, None]  # (128, 1)

        def fold(c, carry):
            best, total, weighted = carry
            keys = k_ref[pl.ds(c * chunk, chunk)][None, :]  # (1, chunk)
            vals = v_ref[pl.ds(c * chunk, chunk)][None, :]
            scores = queries * keys
            new_best = jnp.maximum(best, jnp.max(scores, axis=1, keepdims=True))
            shrink = jnp.exp(best - new_best)
            weights = jnp.exp(scores - new_best)
            return (new_best, total * shrink + jnp.sum(weights, axis=1, keepdims=True),
                    weighted * shrink + jnp.sum(weights * vals, axis=1, keepdims=True))

        init = (jnp.full((128, 1), -jnp.inf, jnp.float32), jnp.zeros((128, 1), jnp.float32),
                jnp.zeros((128, 1), jnp.float32))
        _, total, weighted = jax.lax.fori_loop(0, k_ref.shape[0] // chunk, fold, init)
        z_ref[...] = (weighted / total)[:, 0]

    whole = pl.BlockSpec((512,), lambda i: (0,))
    return pl.pallas_call(
        attend, grid=(2,),
        in_specs=[pl.BlockSpec((128,), lambda i: (i,)), whole, whole],
        out_specs=pl.BlockSpec((128,), lambda i: (i,)),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype))(q, k, v)


@corpus_case(CASES, tolerance=F32,
             exercises="2-D convolution: static loops over the 4x4 taps, scalar reads of a "
                       "kernel ref, squeezed batch axis")
def conv2d(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    x, taps = _draw(11, (4, 8, 128), (4, 4))
    padded = np.pad(x, ((0, 0), (0, 3), (0, 3)))  # zeros past the bottom/right edges
    height, width = x.shape[1:]

    def convolve(x_ref, taps_ref, z_ref):
        acc = jnp.zeros((height, width), jnp.float32)
        for a in range(4):
            for b in range(4):
                acc = acc + x_ref[a:a + height, b:b + width] * taps_ref[a, b]
        z_ref[...] = acc

    return pl.pallas_call(
        convolve, grid=(4,),
        in_specs=[pl.BlockSpec((None, height + 3, width + 3), lambda n: (n, 0, 0)),
                  pl.BlockSpec((4, 4), lambda n: (0, 0))],
        out_specs=pl.BlockSpec((None, height, width), lambda n: (n, 0, 0)),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(padded, taps)


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="batched matmul: 4-D grid, (None, bm, bk) squeezed blocks, "
                       "accumulate in the output")
def batched_matmul(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    x, y = _draw(12, (2, 128, 256), (2, 256, 128))

    def matmul_step(x_ref, y_ref, z_ref):
        @pl.when(pl.program_id(3) == 0)
        def _zero():
            z_ref[...] = jnp.zeros_like(z_ref)

        z_ref[...] += jnp.dot(x_ref[...], y_ref[...])

    return pl.pallas_call(
        matmul_step, grid=(2, 1, 1, 2),
        in_specs=[pl.BlockSpec((None, 128, 128), lambda b, i, j, k: (b, i, k)),
                  pl.BlockSpec((None, 128, 128), lambda b, i, j, k: (b, k, j))],
        out_specs=pl.BlockSpec((None, 128, 128), lambda b, i, j, k: (b, i, j)),
        out_shape=jax.ShapeDtypeStruct((2, 128, 128), jnp.float32))(x, y)


def _pack_nibbles(values: np.ndarray) -> np.ndarray:
    """int32 (..., 8 * n) of 0..15 -> int32 (..., n), value 8c + s in bits 4s..4s+3."""
    shaped = values.reshape(*values.shape[:-1], -1, 8).astype(np.uint32)
    packed = np.zeros(shaped.shape[:-1], np.uint32)
    for s in range(8):
        packed |= shaped[..., s] << np.uint32(4 * s)
    return packed.view(np.int32)


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="int32 shifts and masks unpacking 4-bit weights, group scales, "
                       "jnp.stack/reshape in the kernel, int -> float casts")
def quantized_matmul(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    rng = np.random.default_rng(13)
    rows, depth, group = 128, 256, 64
    weights = rng.integers(0, 16, (rows, depth)).astype(np.int32)
    offsets = rng.integers(0, 16, (rows, depth // group)).astype(np.int32)
    scales = rng.uniform(0.01, 0.1, (rows, depth // group)).astype(np.float32)
    activations = rng.standard_normal((depth, 128)).astype(np.float32)
    packed_w = _pack_nibbles(weights)  # (128, 32)
    packed_off = _pack_nibbles(np.pad(offsets, ((0, 0), (0, 4))))  # 4 groups + 4 unused: (128, 1)

    def unpack(packed):  # int32 (r, n) -> int32 (r, 8 n) of 0..15
        nibbles = [(packed >> (4 * s)) & 0xF for s in range(8)]
        return jnp.stack(nibbles, axis=-1).reshape(packed.shape[0], packed.shape[1] * 8)

    def dequantize_matmul(w_ref, scale_ref, off_ref, act_ref, z_ref):
        w = unpack(w_ref[...])  # (rows, depth)
        off = unpack(off_ref[...])[:, :depth // group]  # (rows, groups)
        per_group = (w.reshape(rows, depth // group, group) - off[:, :, None]).astype(
            jnp.float32) * scale_ref[...][:, :, None]
        z_ref[...] = jnp.dot(per_group.reshape(rows, depth), act_ref[...])

    return pl.pallas_call(dequantize_matmul,
                          out_shape=jax.ShapeDtypeStruct((rows, 128), jnp.float32),
                          )(packed_w, scales, packed_off, activations)
