"""Corpus: the Pallas quickstarts.

Follows "Pallas Quickstart" (https://docs.jax.dev/en/latest/pallas/quickstart.html)
and "Quickstart: TPU" (https://docs.jax.dev/en/latest/pallas/tpu/quickstart.html):
vector addition, slicing refs with ``.at``, ``program_id`` over a grid with an SMEM
output, a matmul carved by BlockSpecs with a fused activation and under ``jax.vmap``,
and the ``pl.kernel`` style with explicit copies and ``emit_pipeline``.

These are the project's own versions: same shapes (scaled down), same API usage, our
own code and comments.
"""

from __future__ import annotations

import functools

import numpy as np
from corpus_cases import EXACT, F32, F32_MATMUL, Case, corpus_case

CASES: list[Case] = []
_RNG = np.random.default_rng(14)
X = _RNG.standard_normal((128, 128), dtype=np.float32)
Y = _RNG.standard_normal((128, 128), dtype=np.float32)


@corpus_case(CASES, tolerance=EXACT,
             exercises="whole-array refs (no grid), jax.jit, ShapeDtypeStruct.like, int32")
def add_vectors(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp

    def sum_kernel(a_ref, b_ref, out_ref):
        a, b = a_ref[...], b_ref[...]  # load both vectors, add, store
        out_ref[...] = a + b

    @jax.jit
    def add(a, b):
        return pl.pallas_call(sum_kernel, out_shape=jax.ShapeDtypeStruct.like(a))(a, b)

    return add(jnp.arange(8), jnp.arange(8) * 10)


@corpus_case(CASES, tolerance=F32,
             exercises="sub-refs: ref.at[slice] chained twice, then read or written")
def add_sliced(ns):
    pl, jax = ns.pl, ns.jax
    half = 64

    def quadrants_kernel(a_ref, b_ref, out_ref):
        a_lo, a_hi = a_ref.at[:half], a_ref.at[half:]
        b_lo, b_hi = b_ref.at[:half], b_ref.at[half:]
        first, second = out_ref.at[:2 * half], out_ref.at[2 * half:]
        first.at[:half][...] = a_lo[...] + b_lo[...]
        first.at[half:][...] = a_lo[...] + b_hi[...]
        second.at[:half][...] = a_hi[...] + b_lo[...]
        second.at[half:][...] = a_hi[...] + b_hi[...]

    a, b = X[0], Y[0]
    return pl.pallas_call(quadrants_kernel,
                          out_shape=jax.ShapeDtypeStruct((4 * half,), a.dtype))(a, b)


@corpus_case(CASES, tolerance=EXACT,
             exercises="grid + program_id stored as a scalar into an SMEM output")
def iota_into_smem(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def index_kernel(out_ref):
        step = pl.program_id(0)
        out_ref[step] = step

    return pl.pallas_call(index_kernel,
                          out_specs=pl.BlockSpec(memory_space=pltpu.SMEM),
                          out_shape=jax.ShapeDtypeStruct((8,), jnp.int32),
                          grid=(8,))()


def _blocked_matmul(ns, x, y, activation=None):
    """z = activation(x @ y) on a (2, 2) grid: row blocks of x times column blocks of y."""
    pl, jax = ns.pl, ns.jax

    def product_kernel(x_ref, y_ref, z_ref, *, activation):
        z = x_ref[...] @ y_ref[...]
        z_ref[...] = z if activation is None else activation(z)

    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        functools.partial(product_kernel, activation=activation),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(2, 2),
        in_specs=[pl.BlockSpec((m // 2, k), lambda i, j: (i, 0)),
                  pl.BlockSpec((k, n // 2), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((m // 2, n // 2), lambda i, j: (i, j)),
    )(x, y)


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="(2, 2) grid, row/column BlockSpecs, `@` on float32 blocks")
def matmul_row_column_blocks(ns):
    return _blocked_matmul(ns, X, Y)


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="activation passed through functools.partial (jax.nn.relu)")
def matmul_fused_relu(ns):
    return _blocked_matmul(ns, X, Y, activation=ns.jax.nn.relu)


@corpus_case(CASES, tolerance=F32_MATMUL,
             exercises="jax.vmap over a wrapper that calls pallas_call (batch of 2)")
def matmul_under_vmap(ns):
    jax = ns.jax
    xs = np.stack([X, Y])[:, :64]
    ys = np.stack([Y, X])[:, :, :64]
    relu_matmul = functools.partial(_blocked_matmul, ns, activation=jax.nn.relu)
    return jax.vmap(relu_matmul)(xs, ys)


# -- the pl.kernel style (TPU quickstart) ---------------------------------------------------


def _single_core_mesh(ns):
    # One TensorCore, named "core"; a CPU has no TPU to ask for its core count.
    return ns.pltpu.create_tensorcore_mesh("core", num_cores=1)


@corpus_case(CASES, tolerance=EXACT,
             exercises="pl.kernel with a VMEM scratch dict, pltpu.sync_copy VMEM -> HBM")
def fill_with_pl_kernel(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    @pl.kernel(out_type=jax.ShapeDtypeStruct((8, 128), jnp.float32),
               mesh=_single_core_mesh(ns),
               scratch_types={"staging": pltpu.VMEM((8, 128), jnp.float32)})
    def fill(out_hbm, staging):
        staging[...] = jnp.full_like(staging, 7.0)  # compute in VMEM ...
        pltpu.sync_copy(staging, out_hbm)  # ... then copy to the HBM output

    return fill()


@corpus_case(CASES, tolerance=F32,
             exercises="pl.kernel over HBM refs with pltpu.emit_pipeline and 2-D BlockSpecs")
def add_with_pl_kernel_and_emit_pipeline(ns):
    pl, pltpu, jax = ns.pl, ns.pltpu, ns.jax

    def add(x, y):
        @pl.kernel(out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
                   mesh=_single_core_mesh(ns))
        def pipelined(x_hbm, y_hbm, out_hbm):
            def block_sum(x_vmem, y_vmem, out_vmem):
                out_vmem[...] = x_vmem[...] + y_vmem[...]

            spec = pl.BlockSpec((64, 64), lambda i, j: (i, j))
            pltpu.emit_pipeline(block_sum, grid=(2, 2), in_specs=[spec, spec],
                                out_specs=spec)(x_hbm, y_hbm, out_hbm)

        return pipelined(x, y)

    return add(X, Y)
