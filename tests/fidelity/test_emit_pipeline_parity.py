"""``pltpu.emit_pipeline`` on both backends, in the forms of JAX's
pipelining guide (a pallas_call over ``pl.ANY`` refs) and TPU quickstart (``pl.kernel``).

JAX's pipeline asks for the chip's tiling, which a CPU lacks; ``real_jax`` registers the
CPU as a single-core TPU v5e in JAX's chip table so that both interpreters run it.
"""

from __future__ import annotations

import numpy as np
import pytest
from api_helpers import assert_refused, assert_same_values, outcomes

import pallas_sim

X = np.arange(32 * 256, dtype=np.float32).reshape(32, 256)


def over_hbm(ns, inner, *, grid=(4,), in_specs=None, out_specs=None, outer_grid=(),
             out_shape=None):
    pl, pltpu = ns.pl, ns.pltpu
    rows = pl.BlockSpec((8, 256), lambda i: (i, 0))

    def outer(x_hbm, o_hbm):
        pltpu.emit_pipeline(inner, grid=grid, in_specs=in_specs or [rows],
                            out_specs=out_specs or [rows])(x_hbm, o_hbm)

    any_spec = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(outer, grid=outer_grid, in_specs=[any_spec], out_specs=any_spec,
                          out_shape=out_shape or ns.jax.ShapeDtypeStruct((32, 256),
                                                                         ns.jnp.float32))(X)


def guide(ns):
    return over_hbm(ns, lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...] * 2))


def program_ids(ns):
    pl = ns.pl

    def inner(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 0 + pl.program_id(0) * 10 + pl.num_programs(0)

    return over_hbm(ns, inner, outer_grid=(1,))


def reduction(ns):
    pl, jnp = ns.pl, ns.jnp

    def inner(x_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += x_ref[...]

    return over_hbm(ns, inner, grid=(4, 2),
                    in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, k))],
                    out_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, 0))],
                    out_shape=ns.jax.ShapeDtypeStruct((32, 128), jnp.float32))


def revisits(ns):
    pl = ns.pl
    spec = pl.BlockSpec((8, 256), lambda k, i: (i, 0))
    return over_hbm(ns, lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...] + 1),
                    grid=(2, 4), in_specs=[spec], out_specs=[spec])


def sub_refs(ns):
    pl, pltpu = ns.pl, ns.pltpu
    rows = pl.BlockSpec((8, 256), lambda j: (j, 0))

    def outer(x_hbm, o_hbm):
        i = pl.program_id(0)
        pltpu.emit_pipeline(lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...] + i),
                            grid=(2,), in_specs=[rows], out_specs=[rows])(
            x_hbm.at[pl.ds(i * 16, 16)], o_hbm.at[pl.ds(i * 16, 16)])

    any_spec = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(outer, grid=(2,), in_specs=[any_spec], out_specs=any_spec,
                          out_shape=ns.jax.ShapeDtypeStruct((32, 256), ns.jnp.float32))(X)


def squeezed_rows(ns):
    pl = ns.pl
    row = pl.BlockSpec((None, 256), lambda i: (i, 0))
    return over_hbm(ns, lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...] + 1),
                    grid=(32,), in_specs=[row], out_specs=[pl.BlockSpec((pl.squeezed, 256),
                                                                        lambda i: (i, 0))])


def into_vmem_with_scratch(ns):
    pl, pltpu, jnp = ns.pl, ns.pltpu, ns.jnp
    rows = pl.BlockSpec((8, 256), lambda i: (i, 0))

    def inner(x_ref, o_ref, acc):
        acc[...] = x_ref[...] * 3
        o_ref[...] = acc[...]

    def outer(x_hbm, o_vmem, acc):
        pltpu.emit_pipeline(inner, grid=(4,), in_specs=[rows], out_specs=rows)(
            x_hbm, o_vmem, scratches=[acc])

    return pl.pallas_call(outer, out_shape=ns.jax.ShapeDtypeStruct((32, 256), jnp.float32),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          scratch_shapes=[pltpu.VMEM((8, 256), jnp.float32)])(X)


@pytest.mark.parametrize("build", [guide, program_ids, reduction, revisits, sub_refs,
                                   squeezed_rows, into_vmem_with_scratch],
                         ids=lambda f: f.__name__)
def test_emit_pipeline_gives_jaxs_numbers_in_both(build):
    assert_same_values(build)


def test_the_quickstart_pipeline_in_a_mesh_kernel_matches_tpu_interpret_mode():
    def build(ns):
        pl, pltpu = ns.pl, ns.pltpu
        block = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        mesh = pltpu.create_tensorcore_mesh("core", num_cores=1)

        @pl.kernel(out_type=ns.jax.ShapeDtypeStruct((32, 256), ns.jnp.float32), mesh=mesh)
        def kernel(x_hbm, y_hbm, o_hbm):
            def add(x_vmem, y_vmem, o_vmem):
                o_vmem[...] = x_vmem[...] + y_vmem[...]
            pltpu.emit_pipeline(add, grid=(4, 2), in_specs=[block, block], out_specs=block,
                                core_axis_name="core",
                                dimension_semantics=(pltpu.PARALLEL, pltpu.ARBITRARY))(
                x_hbm, y_hbm, o_hbm)

        return kernel(X, X + 1)

    np.testing.assert_array_equal(assert_same_values(build, modes=("tpu",)), 2 * X + 1)
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert isinstance(hlo.error, NameError), (
        f"JAX's HLO interpreter cannot bind the core axis the pipeline asks for: {hlo}")


def test_an_element_block_in_a_pipeline_matches_tpu_interpret_mode():
    def build(ns):
        pl = ns.pl
        return over_hbm(ns, lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[...] + 1),
                        in_specs=[pl.BlockSpec((pl.Element(8), 256), lambda i: (i * 8, 0))])

    np.testing.assert_array_equal(assert_same_values(build, modes=("tpu",)), X + 1)
    assert isinstance(outcomes(build, ("hlo",))["hlo"].error, TypeError), (
        "JAX 0.10.2's HLO interpreter cannot trace an Element window in a pipeline")


def test_an_output_block_the_body_never_writes_is_poison_in_both():
    assert np.isnan(assert_same_values(lambda ns: over_hbm(ns, lambda x_ref, o_ref: None))).all()


def test_a_block_outside_its_ref_is_refused_as_in_tpu_interpret_mode():
    def build(ns):
        return over_hbm(ns, lambda x_ref, o_ref: None,
                        in_specs=[ns.pl.BlockSpec((8, 256), lambda i: (i + 1, 0))])

    assert_refused(build, pallas_sim.BlockIndexError, {"tpu": "JaxRuntimeError"},
                   match="Out-of-bounds block index (4, 0)")
    assert outcomes(build, ("hlo",))["hlo"].error is None, "the HLO interpreter clamps"


def test_a_grid_of_zero_steps_is_refused_in_both():
    def build(ns):
        return ns.pltpu.emit_pipeline(lambda x, o: None, grid=(0,))

    message = "All elements in the grid must be strictly positive, but got grid=(0,)"
    assert_refused(build, ValueError, {"hlo": message, "tpu": message}, match=message)
