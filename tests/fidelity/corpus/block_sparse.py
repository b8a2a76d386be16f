"""Corpus: scalar prefetch and block-sparse computation.

Follows "Scalar Prefetch and Block-Sparse Computation" in the Pallas TPU guides
(https://docs.jax.dev/en/latest/pallas/tpu/sparse.html): a block dynamic slice whose
index maps read a prefetched block index, a sparse @ dense matmul whose grid walks the
non-zero blocks listed in SMEM (output aliased to a zeros input so blocks never visited
stay zero), and a dense @ dense matmul masked by a block-sparse output mask that skips
the empty blocks and stops fetching for them.

These are the project's own versions: the guide's prefetch layout and index maps at
small shapes, with the sparse structure built by our own NumPy code (the guide builds it
with jax.random and a Python loop; ``checkify`` is left out).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
from corpus_cases import BF16, EXACT, Case, corpus_case

CASES: list[Case] = []

@corpus_case(CASES, tolerance=EXACT,
             exercises="PrefetchScalarGridSpec(1): index map reads the block index from SMEM")
def block_dynamic_slice(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def copy_block(block_index_ref, x_ref, out_ref):
        del block_index_ref  # only the index maps need it
        out_ref[...] = x_ref[...]

    @functools.partial(jax.jit, static_argnums=(2,))
    def block_slice(x, starts, sizes):
        grid_spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(1, 1),
            in_specs=[pl.BlockSpec(sizes, lambda i, j, where: (where[0], where[1]))],
            out_specs=pl.BlockSpec(sizes, lambda *_: (0, 0)),
        )
        where = jnp.array([starts[0] // sizes[0], starts[1] // sizes[1]], dtype=jnp.int32)
        return pl.pallas_call(copy_block, grid_spec=grid_spec,
                              out_shape=jax.ShapeDtypeStruct(sizes, x.dtype))(where, x)

    x = np.arange(256 * 512, dtype=np.int32).reshape(256, 512)
    return block_slice(x, (128, 256), (128, 128))


def _block_sparse(rng, shape, block, density, dtype):
    """A (rows, cols) matrix that is zero outside a random set of (br, bc) blocks.

    Returns (dense, blocks, block_rows, block_cols): the non-zero blocks in row-major
    order of their position, and where each sits (block units)."""
    grid_rows, grid_cols = shape[0] // block[0], shape[1] // block[1]
    present = rng.uniform(size=(grid_rows, grid_cols)) < density
    present[0, 0] = present[-1, -1] = True  # at least two blocks, in two block rows
    block_rows, block_cols = np.nonzero(present)
    blocks = rng.uniform(size=(len(block_rows), *block)).astype(dtype)
    dense = np.zeros(shape, dtype)
    for b, (r, c) in enumerate(zip(block_rows, block_cols, strict=True)):
        dense[r * block[0]:(r + 1) * block[0], c * block[1]:(c + 1) * block[1]] = blocks[b]
    return dense, blocks, block_rows.astype(np.int32), block_cols.astype(np.int32)


@corpus_case(CASES, tolerance=BF16,
             exercises="sparse @ dense: 2 prefetch tables, input_output_aliases={4: 0}, bf16")
def sparse_times_dense(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    bm = bk = bn = 128
    rng = np.random.default_rng(2718)  # drawn afresh on every call: same inputs for both
    _, blocks, rows, cols = _block_sparse(rng, (384, 256), (bm, bk), 0.5, ml_dtypes.bfloat16)
    dense_rhs = rng.uniform(size=(256, 256)).astype(ml_dtypes.bfloat16)
    n_blocks = len(rows)

    def kernel(rows_ref, cols_ref, block_ref, rhs_ref, zeros_ref, out_ref, acc_ref):
        del cols_ref, zeros_ref  # read by the index maps / aliased to the output
        b = pl.program_id(1)
        first_of_row = (b == 0) | (rows_ref[b] != rows_ref[jnp.maximum(b - 1, 0)])
        last_of_row = ((b == n_blocks - 1)
                       | (rows_ref[b] != rows_ref[jnp.minimum(b + 1, n_blocks - 1)]))

        @pl.when(first_of_row)
        def _zero():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jnp.dot(block_ref[0, :, :], rhs_ref[...],
                                preferred_element_type=jnp.float32)

        @pl.when(last_of_row)
        def _store():
            out_ref[...] = acc_ref[...].astype(out_ref.dtype)

    def block_map(j, b, rows_ref, cols_ref):
        return (b, 0, 0)

    def rhs_map(j, b, rows_ref, cols_ref):
        return (cols_ref[b], j)

    def out_map(j, b, rows_ref, cols_ref):
        return (rows_ref[b], j)

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=2,
        grid=(256 // bn, n_blocks),
        in_specs=[pl.BlockSpec((1, bm, bk), block_map),
                  pl.BlockSpec((bk, bn), rhs_map),
                  pl.BlockSpec((bm, bn), out_map)],  # the zeros, aliased to the output
        out_specs=pl.BlockSpec((bm, bn), out_map),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    )
    call = pl.pallas_call(kernel, grid_spec=grid_spec,
                          out_shape=jax.ShapeDtypeStruct((384, 256), jnp.bfloat16),
                          input_output_aliases={4: 0})
    zeros = jnp.zeros((384, 256), dtype=jnp.bfloat16)
    return call(rows, cols, blocks, dense_rhs, zeros)


def _mask_tables(mask, block):
    """Host-side summary of an output mask, as the guide's preprocessing produces it.

    Returns:
      block_nonzero: int32 (gm, gn), 1 where the mask block has a non-zero.
      next_kind: int32 (gm, gn), which distinct mask block to fetch at (i, j): the
        block's own kind, or for an empty block the next non-empty one's.
      next_i, next_j: int32 (gm, gn), the x-row / y-column block to fetch there.
      kinds: (n_kinds, bm, bn) the distinct non-empty mask blocks.
    """
    bm, bn = block
    gm, gn = mask.shape[0] // bm, mask.shape[1] // bn
    block_nonzero = np.zeros((gm, gn), np.int32)
    next_kind, next_i, next_j = (np.zeros((gm, gn), np.int32) for _ in range(3))
    kinds: list[np.ndarray] = []
    upcoming = (0, gm - 1, gn - 1)  # walk backwards so "next" is already known
    for i in reversed(range(gm)):
        for j in reversed(range(gn)):
            piece = mask[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
            if piece.any():
                same = [k for k, seen in enumerate(kinds) if np.array_equal(seen, piece)]
                if not same:
                    kinds.append(piece)
                upcoming = (same[0] if same else len(kinds) - 1, i, j)
                block_nonzero[i, j] = 1
            next_kind[i, j], next_i[i, j], next_j[i, j] = upcoming
    return block_nonzero, next_kind, next_i, next_j, np.stack(kinds)


@corpus_case(CASES, tolerance=BF16,
             exercises="4 prefetch tables, pl.when skips empty mask blocks, nested pl.when")
def dense_matmul_with_sparse_output_mask(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    m = n = k = 256
    bm = bn = bk = 128
    rng = np.random.default_rng(3141)
    x = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    mask = np.tril(np.ones((m, n), np.int32))
    block_nonzero, next_kind, next_i, next_j, kinds = _mask_tables(mask, (bm, bn))

    def kernel(nonzero_ref, kind_ref, i_ref, j_ref, x_ref, y_ref, mask_ref, out_ref, acc_ref):
        del kind_ref, i_ref, j_ref  # only the index maps need them
        i, j, kk = pl.program_id(0), pl.program_id(1), pl.program_id(2)

        @pl.when(kk == 0)
        def _zero():
            out_ref[...] = jnp.zeros_like(out_ref)
            acc_ref[...] = jnp.zeros_like(acc_ref)

        @pl.when(nonzero_ref[i, j] != 0)
        def _compute():
            acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

            @pl.when(kk == pl.num_programs(2) - 1)
            def _store():
                out_ref[...] = (mask_ref[0, ...] * acc_ref[...]).astype(out_ref.dtype)

    def x_map(i, j, kk, nonzero, kind, next_i_ref, next_j_ref):
        fetch_k = (nonzero[i, j] != 0) * kk  # empty block: keep k still, no new fetch
        return (next_i_ref[i, j], fetch_k)

    def y_map(i, j, kk, nonzero, kind, next_i_ref, next_j_ref):
        fetch_k = (nonzero[i, j] != 0) * kk
        return (fetch_k, next_j_ref[i, j])

    def mask_map(i, j, kk, nonzero, kind, *_):
        return (kind[i, j], 0, 0)

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=4,
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), x_map), pl.BlockSpec((bk, bn), y_map),
                  pl.BlockSpec((1, bm, bn), mask_map)],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk, *_: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    )
    return pl.pallas_call(kernel, grid_spec=grid_spec,
                          out_shape=jax.ShapeDtypeStruct((m, n), jnp.bfloat16),
                          )(block_nonzero, next_kind, next_i, next_j, x, y, kinds)
