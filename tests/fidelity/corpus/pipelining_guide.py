"""Corpus: the pipelining guides.

Follows "Software Pipelining" (https://docs.jax.dev/en/latest/pallas/pipelining.html)
and "TPU Pipelining" (https://docs.jax.dev/en/latest/pallas/tpu/pipelining.html):
elementwise addition pipelined over a 2-D grid, block sizes as parameters (with the
input array itself as ``out_shape``), a reduction over a squeezed leading axis with the
reduction axis last, the megacore "parallel" split, an HBM (``pl.ANY``) input copied into
VMEM scratch by hand, a hand-written double-buffered pipeline, and the newer helpers
(``pltpu.sync_copy``/``async_copy``, ``pl.run_scoped``, ``pltpu.emit_pipeline``).

These are the project's own versions: same API usage at small shapes, our own code and
comments.
"""

from __future__ import annotations

import numpy as np
from corpus_cases import EXACT, F32, Case, corpus_case

CASES: list[Case] = []
_RNG = np.random.default_rng(7)
X = _RNG.uniform(size=(256, 256)).astype(np.float32)
Y = _RNG.uniform(size=(256, 256)).astype(np.float32)
STACK = _RNG.standard_normal((3, 64, 256), dtype=np.float32)


def _elementwise_add(x_ref, y_ref, z_ref):
    # Load both VMEM blocks, add them on the VPU, store the block back.
    z_ref[...] = x_ref[...] + y_ref[...]


@corpus_case(CASES, tolerance=F32, exercises="2-D grid of (128, 128) blocks, one index map")
def add_pipelined_2d(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    block = (128, 128)
    spec = pl.BlockSpec(block, index_map=lambda i, j: (i, j))
    grid = tuple(total // b for total, b in zip(X.shape, block, strict=True))
    return pl.pallas_call(_elementwise_add, grid=grid, in_specs=[spec, spec], out_specs=spec,
                          out_shape=jax.ShapeDtypeStruct(X.shape, dtype=jnp.float32))(X, Y)


@corpus_case(CASES, tolerance=F32,
             exercises="block sizes as arguments; an input array passed as out_shape")
def add_with_block_parameters(ns):
    pl = ns.pl

    def add(x, y, *, bm, bn):
        m, n = x.shape
        spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
        return pl.pallas_call(_elementwise_add, out_shape=x, in_specs=[spec, spec],
                              out_specs=spec, grid=(m // bm, n // bn))(x, y)

    return [add(X, Y, bm=128, bn=256), add(X, Y, bm=256, bn=64)]


@corpus_case(CASES, tolerance=F32,
             exercises="reduction axis last, squeezed (None) leading block dim, pl.when init")
def sum_over_leading_axis(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp

    def reduce_kernel(x_ref, total_ref):
        @pl.when(pl.program_id(2) == 0)
        def _zero():
            total_ref[...] = jnp.zeros_like(total_ref)

        total_ref[...] += x_ref[...]

    def leading_sum(x, block=(32, 128)):
        depth, *plane = x.shape
        grid = (*(p // b for p, b in zip(plane, block, strict=True)), depth)
        return pl.pallas_call(
            reduce_kernel,
            grid=grid,
            in_specs=[pl.BlockSpec((None, *block), lambda i, j, d: (d, i, j))],
            out_specs=pl.BlockSpec(block, lambda i, j, d: (i, j)),
            out_shape=jax.ShapeDtypeStruct(tuple(plane), x.dtype),
        )(x)

    return leading_sum(STACK)


@corpus_case(CASES, tolerance=F32,
             exercises="megacore split: a 'parallel' grid axis of row blocks")
def add_megacore_parallel(ns):
    pl, pltpu, jax = ns.pl, ns.pltpu, ns.jax
    spec = pl.BlockSpec((128, 256), lambda i: (i, 0))
    return pl.pallas_call(
        _elementwise_add,
        out_shape=jax.ShapeDtypeStruct.like(X),
        in_specs=[spec, spec],
        out_specs=spec,
        grid=(2,),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )(X, Y)


@corpus_case(CASES, tolerance=F32,
             exercises="pl.ANY input, make_async_copy of ref.at[0:1] into VMEM scratch")
def first_row_through_async_copy(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(x_hbm, out_ref, row_vmem, sem):
        copy = pltpu.make_async_copy(x_hbm.at[0:1], row_vmem, sem)
        copy.start()
        copy.wait()
        out_ref[...] = row_vmem[...] + 1

    return pl.pallas_call(kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_shape=jax.ShapeDtypeStruct((1, 256), jnp.float32),
                          scratch_shapes=(pltpu.VMEM(shape=(1, 256), dtype=jnp.float32),
                                          pltpu.SemaphoreType.DMA))(X)


@corpus_case(CASES, tolerance=F32,
             exercises="hand-written double buffering: DMA((2,)) semaphores, fori_loop")
def double_buffered_by_hand(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    rows, chunks = 32, X.shape[0] // 32

    def kernel(x_hbm, out_ref, slots, sems):
        def fetch(chunk, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(chunk * rows, rows)], slots.at[slot],
                                         sems.at[slot])

        fetch(0, 0).start()  # prologue: the first chunk is in flight

        def step(chunk, carry):
            slot = chunk % 2
            fetch(chunk, slot).wait()

            @pl.when(chunk + 1 < chunks)
            def _prefetch():
                fetch(chunk + 1, 1 - slot).start()

            out_ref[pl.ds(chunk * rows, rows), :] = slots[slot] * 2.0
            return carry

        jax.lax.fori_loop(0, chunks, step, 0)

    return pl.pallas_call(kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_shape=jax.ShapeDtypeStruct(X.shape, jnp.float32),
                          scratch_shapes=[pltpu.VMEM((2, rows, 256), jnp.float32),
                                          pltpu.SemaphoreType.DMA((2,))])(X)


# -- the newer helpers ---------------------------------------------------------------------


@corpus_case(CASES, tolerance=F32,
             exercises="pltpu.sync_copy of an HBM slice into VMEM scratch")
def first_row_through_sync_copy(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(x_hbm, out_ref, row_vmem):
        pltpu.sync_copy(x_hbm.at[0:1], row_vmem)
        out_ref[...] = row_vmem[...] + 1

    return pl.pallas_call(kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_shape=jax.ShapeDtypeStruct((1, 256), jnp.float32),
                          scratch_shapes=(pltpu.VMEM(shape=(1, 256), dtype=jnp.float32),))(X)


@corpus_case(CASES, tolerance=F32,
             exercises="pl.run_scoped VMEM buffer + DMA semaphore, pltpu.async_copy(...).wait()")
def scoped_buffer_and_async_copy(ns):
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(x_hbm, out_ref):
        # Read program_id outside the scoped body: JAX 0.10.2's interpret=True loses the
        # grid inside pl.run_scoped.
        rows = x_hbm.at[pl.ds(pl.program_id(0) * 64, 64)]

        def with_buffer(buf, sem):
            pltpu.async_copy(rows, buf, sem).wait()
            out_ref[...] = buf[...] - 0.5

        pl.run_scoped(with_buffer, pltpu.VMEM((64, 256), jnp.float32),
                      pltpu.SemaphoreType.DMA)

    return pl.pallas_call(kernel, grid=(4,), in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          out_specs=pl.BlockSpec((64, 256), lambda i: (i, 0)),
                          out_shape=jax.ShapeDtypeStruct(X.shape, jnp.float32))(X)


@corpus_case(CASES, tolerance=EXACT,
             exercises="pallas_call over pl.ANY refs running pltpu.emit_pipeline inside")
def inner_emit_pipeline_over_hbm_refs(ns):
    pl, pltpu, jax = ns.pl, ns.pltpu, ns.jax
    hbm = pl.BlockSpec(memory_space=pl.ANY)

    def kernel(x_hbm, y_hbm, out_hbm):
        spec = pl.BlockSpec((64, 128), lambda i, j: (i, j))
        pltpu.emit_pipeline(_elementwise_add, grid=(4, 2), in_specs=[spec, spec],
                            out_specs=spec)(x_hbm, y_hbm, out_hbm)

    return pl.pallas_call(kernel, in_specs=[hbm, hbm], out_specs=hbm,
                          out_shape=jax.ShapeDtypeStruct.like(X))(X, Y)
