"""``pltpu.emit_pipeline``: pallas_call's block rules one level down,
over HBM refs inside a kernel, in the forms of JAX's pipelining guide and TPU quickstart."""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

X = np.arange(32 * 256, dtype=np.float32).reshape(32, 256)
F32 = jax.ShapeDtypeStruct((32, 256), jnp.float32)
ANY = pl.BlockSpec(memory_space=pl.ANY)
ROWS = pl.BlockSpec((8, 256), lambda i: (i, 0))
BLOCK = 8 * 256 * 4  # bytes of one (8, 256) f32 block


def over_hbm(inner, *, grid=(4,), in_specs=(ROWS,), out_specs=(ROWS,), outer_grid=(),
             out_shape=F32, x=X):
    """pallas_call whose kernel runs ``emit_pipeline(inner, ...)`` over its HBM refs."""
    def outer(x_hbm, o_hbm):
        pltpu.emit_pipeline(inner, grid=grid, in_specs=list(in_specs),
                            out_specs=list(out_specs))(x_hbm, o_hbm)

    with pallas_sim.trace() as t:
        out = pl.pallas_call(outer, out_shape=out_shape, grid=outer_grid, in_specs=[ANY],
                             out_specs=ANY)(x)
    return out, t.last


def test_the_guides_form_copies_each_block_in_and_out_once():
    def inner(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    out, call = over_hbm(inner)
    np.testing.assert_array_equal(out, X * 2)
    assert call.manual_dma_count == 8, "4 input blocks in, 4 output blocks back"
    assert call.manual_dma_bytes == 8 * BLOCK
    assert call.scoped_vmem_bytes == 2 * 2 * BLOCK, "x and o blocks, double-buffered"
    assert call.vmem_bytes == call.scoped_vmem_bytes, "the HBM operands take no VMEM"


def test_the_quickstart_form_runs_in_a_mesh_kernel_with_a_core_axis():
    mesh = pltpu.create_tensorcore_mesh("core")

    @pl.kernel(out_type=F32, mesh=mesh)
    def kernel(x_hbm, y_hbm, o_hbm):
        def add(x_vmem, y_vmem, o_vmem):
            o_vmem[...] = x_vmem[...] + y_vmem[...]

        block = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        pltpu.emit_pipeline(add, grid=(4, 2), in_specs=[block, block], out_specs=block,
                            core_axis_name="core",
                            dimension_semantics=(pltpu.PARALLEL, pltpu.ARBITRARY))(
            x_hbm, y_hbm, o_hbm)

    np.testing.assert_array_equal(kernel(X, X + 1), 2 * X + 1)


def test_program_id_inside_the_body_is_the_pipelines():
    def inner(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref) + pl.program_id(0) * 10 + pl.num_programs(0)

    out, _ = over_hbm(inner, outer_grid=(1,))
    np.testing.assert_array_equal(out[::8, 0], [4, 14, 24, 34])


def test_a_reduction_axis_keeps_its_output_block_and_revisits_are_allowed():
    def accumulate(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += x_ref[...]

    out, call = over_hbm(accumulate, grid=(4, 2),
                         in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, k))],
                         out_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, 0))],
                         out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32))
    np.testing.assert_array_equal(out, X[:, :128] + X[:, 128:])
    revisit, _ = over_hbm(lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...]),
                          grid=(2, 4), in_specs=[pl.BlockSpec((8, 256), lambda k, i: (i, 0))],
                          out_specs=[pl.BlockSpec((8, 256), lambda k, i: (i, 0))])
    np.testing.assert_array_equal(revisit, X)


def test_sub_refs_a_vmem_destination_squeezed_and_element_dims_work():
    def plus_one(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    def halves(x_hbm, o_hbm):
        i = pl.program_id(0)
        pltpu.emit_pipeline(plus_one, grid=(2,), in_specs=[ROWS], out_specs=[ROWS])(
            x_hbm.at[pl.ds(i * 16, 16)], o_hbm.at[pl.ds(i * 16, 16)])

    out = pl.pallas_call(halves, grid=(2,), out_shape=F32, in_specs=[ANY], out_specs=ANY)(X)
    np.testing.assert_array_equal(out, X + 1)
    into_vmem = pl.pallas_call(
        lambda x_hbm, o_vmem: pltpu.emit_pipeline(plus_one, grid=(4,), in_specs=[ROWS],
                                                  out_specs=[ROWS])(x_hbm, o_vmem),
        out_shape=F32, in_specs=[ANY])(X)
    np.testing.assert_array_equal(into_vmem, X + 1)
    row = pl.BlockSpec((None, 256), lambda i: (i, 0))
    squeezed, _ = over_hbm(plus_one, grid=(32,), in_specs=[row], out_specs=[row])
    np.testing.assert_array_equal(squeezed, X + 1)
    element, _ = over_hbm(plus_one, in_specs=[pl.BlockSpec((pl.Element(8), 256),
                                                           lambda i: (i * 8, 0))])
    np.testing.assert_array_equal(element, X + 1)


def test_a_block_the_body_never_writes_stays_poisoned():
    out, _ = over_hbm(lambda x_ref, o_ref: None)
    assert np.isnan(out).all()


def test_scratches_and_buffer_counts():
    def inner(x_ref, o_ref, acc):
        acc[...] = x_ref[...] * 3
        o_ref[...] = acc[...]

    def outer(x_hbm, o_hbm, acc):
        pltpu.emit_pipeline(
            inner, grid=(4,),
            in_specs=[pl.BlockSpec((8, 256), lambda i: (i, 0), pipeline_mode=pl.Buffered(3))],
            out_specs=[ROWS])(x_hbm, o_hbm, scratches=[acc])

    with pallas_sim.trace() as t:
        out = pl.pallas_call(outer, out_shape=F32, in_specs=[ANY], out_specs=ANY,
                             scratch_shapes=[pltpu.VMEM((8, 256), jnp.float32)])(X)
    np.testing.assert_array_equal(out, X * 3)
    assert t.last.scoped_vmem_bytes == (3 + 2) * BLOCK, "Buffered(3) input + 2 output buffers"
    whole = pl.BlockSpec((32, 256), lambda i: (0, 0))
    _, call = over_hbm(lambda x_ref, o_ref: None, grid=(2,), in_specs=[whole],
                       out_specs=[whole])
    assert call.scoped_vmem_bytes == 2 * 4 * BLOCK, "a whole-array block needs one buffer"


def test_refusals():
    with pytest.raises(ValueError, match=r"All elements in the grid must be strictly "
                                         r"positive, but got grid=\(0,\)"):
        pltpu.emit_pipeline(lambda x, o: None, grid=(0,))
    with pytest.raises(pallas_sim.BlockIndexError, match="at pipeline step"):
        over_hbm(lambda x_ref, o_ref: None,
                 in_specs=[pl.BlockSpec((8, 256), lambda i: (i + 1, 0))])
    with pytest.raises(pallas_sim.UnsupportedJaxUsageError, match="divide"):
        over_hbm(lambda x_ref, o_ref: None, grid=(3,),
                 in_specs=[pl.BlockSpec((12, 256), lambda i: (i, 0))],
                 out_specs=[pl.BlockSpec((12, 256), lambda i: (i, 0))])
    with pytest.raises(pallas_sim.OutsideKernelError):
        pltpu.emit_pipeline(lambda x, o: None, grid=(1,), in_specs=[ROWS],
                            out_specs=[ROWS])(X, X)
    with pytest.raises(ValueError, match="core_axis and core_axis_name cannot both"):
        pltpu.emit_pipeline(lambda x, o: None, grid=(1,), core_axis=0, core_axis_name="core")
