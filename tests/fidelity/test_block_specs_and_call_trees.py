"""Block-dimension kinds, memory spaces, grid semantics, cost estimates and the pytrees of
``pallas_call`` on both backends.

Each kernel is one ``build(ns)`` run on pallas_sim and on JAX 0.10.2 in both interpreters
(``api_helpers``); docs/fidelity.md lists the rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from api_helpers import JAX, SIM, assert_refused, assert_same_values, outcomes

import pallas_sim

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)


def f32(ns, *shape):
    return ns.jax.ShapeDtypeStruct(shape or (16, 128), ns.jnp.float32)


def copy(ns, in_spec, out_spec=None, grid=(4,), kernel=None):
    pl = ns.pl

    def plain(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    out_spec = out_spec or pl.BlockSpec((4, 128), lambda i: (i, 0))
    return pl.pallas_call(kernel or plain, out_shape=f32(ns), grid=grid, in_specs=[in_spec],
                          out_specs=out_spec)(X)


# -- block dimensions ----------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda pl: (pl.Blocked(4), 128),
    lambda pl: (pl.Blocked(4), pl.Blocked(128)),
], ids=["Blocked rows", "Blocked both"])
def test_blocked_is_the_int_in_both(make):
    assert_same_values(lambda ns: copy(ns, ns.pl.BlockSpec(make(ns.pl), lambda i: (i, 0))))


@pytest.mark.parametrize("which", ["Squeezed()", "squeezed"])
def test_squeezed_is_none_in_both(which):
    def build(ns):
        pl = ns.pl
        dim = pl.Squeezed() if which == "Squeezed()" else pl.squeezed
        spec = pl.BlockSpec((dim, 128), lambda i: (i, 0))
        return copy(ns, spec, spec, grid=(16,))

    np.testing.assert_array_equal(assert_same_values(build), X)


@pytest.mark.parametrize("offset", [lambda i: i * 4, lambda i: i * 3, lambda i: 12 - i * 4],
                         ids=["tiling", "overlapping", "backwards"])
def test_element_dimensions_take_element_offsets_in_both(offset):
    assert_same_values(lambda ns: copy(ns, ns.pl.BlockSpec((ns.pl.Element(4), 128),
                                                           lambda i: (offset(i), 0))))


def test_overlapping_element_output_windows_end_as_in_both():
    def build(ns):
        pl = ns.pl
        return copy(ns, pl.BlockSpec((4, 128), lambda i: (i, 0)),
                    pl.BlockSpec((pl.Element(4), 128), lambda i: (i * 2, 0)))

    assert np.isnan(assert_same_values(build)[10:]).all(), "rows no window covers: poison"


def test_element_padding_pads_as_the_hlo_interpreter_and_the_docs_say():
    def build(ns):
        return copy(ns, ns.pl.BlockSpec((ns.pl.Element(4, (1, 1)), 128),
                                        lambda i: (i * 4, 0)))

    out = assert_same_values(build, modes=("hlo",))
    assert np.isnan(out[0]).all() and np.array_equal(out[1:], X[:15])
    tpu = outcomes(build, ("tpu",))["tpu"]
    assert np.array_equal(tpu.value, X), (
        f"JAX 0.10.2's TPU interpret mode ignores Element padding: {tpu}")


def test_an_element_window_outside_the_array_is_refused_as_in_tpu_interpret_mode():
    def build(ns):
        return copy(ns, ns.pl.BlockSpec((ns.pl.Element(4), 128), lambda i: (13, 0)))

    assert_refused(build, pallas_sim.BlockIndexError,
                   {"tpu": "Out-of-bounds block index (13, 0)"},
                   match="Out-of-bounds block index (13, 0)")
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert np.array_equal(hlo.value[:4], X[12:]), f"the HLO interpreter clamps: {hlo}"


def test_bounded_slices_and_unknown_entries_are_refused_in_both():
    def bounded(ns):
        return copy(ns, ns.pl.BlockSpec((ns.pl.BoundedSlice(4), 128),
                                        lambda i: (ns.pl.ds(i * 4, 4), 0)))

    message = "Unsupported block dim type"
    assert_refused(bounded, ValueError, {"hlo": message, "tpu": message}, match=message)
    message = "Unsupported block dimension type: <class 'str'>"
    assert_refused(lambda ns: copy(ns, ns.pl.BlockSpec(("a", 128), lambda i: (i, 0))),
                   ValueError, {"hlo": message, "tpu": message}, match=message)


def test_block_dims_print_the_same():
    for make in (lambda pl: pl.Element(4), lambda pl: pl.Element(4, (1, 2)),
                 lambda pl: pl.Blocked(3), lambda pl: pl.squeezed):
        assert str(make(SIM.pl)) == str(make(JAX.pl))
    assert repr(SIM.pl.BoundedSlice(3)) == repr(JAX.pl.BoundedSlice(3))


# -- memory spaces, grid semantics, cost estimates -----------------------------------------


@pytest.mark.parametrize("space", ["HBM", "ANY"])
def test_an_hbm_block_spec_is_reached_by_dma_in_both(space):
    def build(ns):
        pl, pltpu = ns.pl, ns.pltpu
        where = pltpu.HBM if space == "HBM" else pl.ANY

        def kernel(x_hbm, o_ref, sem):
            copy = pltpu.make_async_copy(x_hbm, o_ref, sem)
            copy.start()
            copy.wait()

        return pl.pallas_call(kernel, out_shape=f32(ns),
                              in_specs=[pl.BlockSpec(memory_space=where)],
                              out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
                              scratch_shapes=[pltpu.SemaphoreType.DMA])(X)

    np.testing.assert_array_equal(assert_same_values(build), X)


def test_memory_spaces_print_and_compare_the_same():
    for make in (lambda ns: ns.pltpu.VMEM, lambda ns: ns.pltpu.SMEM, lambda ns: ns.pltpu.HBM,
                 lambda ns: ns.pltpu.SEMAPHORE, lambda ns: ns.pl.ANY):
        assert str(make(SIM)) == str(make(JAX)) and make(SIM).name == make(JAX).name
    assert repr(SIM.pltpu.VMEM) == repr(JAX.pltpu.VMEM) == "VMEM"


def test_hbm_scratch_is_refused_as_in_tpu_interpret_mode():
    def build(ns):
        return ns.pl.pallas_call(lambda x, o, s: None, out_shape=f32(ns),
                                 scratch_shapes=[ns.pltpu.HBM((8, 128), ns.jnp.float32)])(X)

    assert_refused(build, ValueError, {"tpu": "AssertionError"},
                   match="Cannot allocate HBM in scratch")


def semantics_call(ns, semantics):
    pl, pltpu = ns.pl, ns.pltpu
    rows = pl.BlockSpec((8, 128), lambda i, j: (i, 0))
    return pl.pallas_call(lambda x, o: o.__setitem__(Ellipsis, x[...] + 1), out_shape=f32(ns),
                          grid=(2, 2), in_specs=[rows], out_specs=rows,
                          compiler_params=pltpu.CompilerParams(dimension_semantics=semantics))(X)


@pytest.mark.parametrize("semantics", [
    lambda pltpu: (pltpu.CORE_PARALLEL, pltpu.ARBITRARY),
    lambda pltpu: ("core_parallel", "arbitrary"),
    lambda pltpu: (pltpu.ARBITRARY, pltpu.CORE_PARALLEL),
    lambda pltpu: (pltpu.PARALLEL, pltpu.CORE_PARALLEL),
], ids=["CORE_PARALLEL first", "the string", "CORE_PARALLEL after ARBITRARY",
        "PARALLEL then CORE_PARALLEL"])
def test_core_parallel_is_accepted_in_both_as_a_member_or_a_string(semantics):
    assert_same_values(lambda ns: semantics_call(ns, semantics(ns.pltpu)))


def test_parallel_after_core_parallel_breaks_the_prefix_rule_in_tpu_interpret_mode():
    def build(ns):
        return semantics_call(ns, (ns.pltpu.CORE_PARALLEL, ns.pltpu.PARALLEL))

    message = "Dimensions with parallel semantics must form a prefix of the grid."
    assert_refused(build, pallas_sim.GridSemanticsError, {"tpu": message}, match=message)
    assert outcomes(build, ("hlo",))["hlo"].error is None, "interpret=True checks nothing"


def test_a_cost_estimate_changes_nothing_and_checks_its_fields_in_both():
    def build(ns):
        cost = ns.pl.CostEstimate(flops=2048, transcendentals=0, bytes_accessed=16384)
        return ns.pl.pallas_call(lambda x, o: o.__setitem__(Ellipsis, x[...] * 2),
                                 out_shape=f32(ns), cost_estimate=cost)(X)

    np.testing.assert_array_equal(assert_same_values(build), X * 2)
    message = "All fields in CostEstimate must be ints. flops is not an int: <class 'float'>"
    for ns in (SIM, JAX):
        with pytest.raises(ValueError, match=message):
            ns.pl.CostEstimate(flops=1.0, transcendentals=0, bytes_accessed=0)
    assert SIM.pl.CostEstimate(1, 2, 3).to_json() == JAX.pl.CostEstimate(1, 2, 3).to_json()


def test_an_unhashable_cost_estimate_is_refused_in_both():
    def build(ns):
        return ns.pl.pallas_call(lambda x, o: None, out_shape=f32(ns),
                                 cost_estimate={"flops": 1})(X)

    message = "unhashable type: 'dict'"
    assert_refused(build, TypeError, {"hlo": message, "tpu": message}, match=message)


# -- None and pytrees in pallas_call --------------------------------------------------------


def rows(ns):
    return ns.pl.BlockSpec((8, 128), lambda i: (i, 0))


@pytest.mark.parametrize(("specs", "message"), [
    (lambda ns: dict(in_specs=[None], out_specs=rows(ns)),
     "Pytree for `in_specs` and `inputs` do not match"),
    (lambda ns: dict(in_specs=[rows(ns)], out_specs=None),
     "Pytree for `out_specs` and `out_shape` do not match"),
    (lambda ns: dict(in_specs=[rows(ns)], out_specs=[None]),
     "Pytree for `out_specs` and `out_shape` do not match"),
    (lambda ns: dict(in_specs=None, out_specs=rows(ns)),
     "`in_specs` must be a tuple or a list. Found: None"),
    (lambda ns: dict(in_specs=rows(ns), out_specs=rows(ns)),
     "`in_specs` must be a tuple or a list. Found: BlockSpec"),
], ids=["None in in_specs", "out_specs None", "None in out_specs", "in_specs None",
        "a bare BlockSpec"])
def test_none_specs_are_refused_in_both_with_jaxs_message(specs, message):
    def build(ns):
        return ns.pl.pallas_call(lambda x, o: o.__setitem__(Ellipsis, x[...]),
                                 out_shape=f32(ns), grid=(2,), **specs(ns))(X)

    assert_refused(build, ValueError, {"hlo": message, "tpu": message}, match=message)


def out_trees(ns):
    pl = ns.pl

    def kernel(pair, o, nested, nothing):
        o["a"][...] = pair[0][...] + pair[1][...]
        o["b"][...] = pair[0][...] * 2
        nested[0][...] = pair[1][...]

    r = rows(ns)
    return pl.pallas_call(kernel, out_shape=[{"a": f32(ns), "b": f32(ns)}, (f32(ns),), None],
                          grid=(2,), in_specs=[(r, r)],
                          out_specs=[{"a": r, "b": r}, (r,), None])((X, X + 1))


def dict_scratch(ns):
    pltpu, jnp = ns.pltpu, ns.jnp

    def kernel(x, o, *, acc, count):
        acc[...] = x[...] * 3
        count[0] = 7
        o[...] = acc[...] + count[0]

    return ns.pl.pallas_call(kernel, out_shape=f32(ns), scratch_shapes=dict(
        acc=pltpu.VMEM((16, 128), jnp.float32), count=pltpu.SMEM((1,), jnp.int32)))(X)


def flat_aliases(ns):
    def kernel(pair, o):
        o[...] = pair[1][...] + 1
    return ns.pl.pallas_call(kernel, out_shape=f32(ns), input_output_aliases={1: 0})(
        (X, X * 2))


@pytest.mark.parametrize("build", [out_trees, dict_scratch, flat_aliases],
                         ids=lambda f: f.__name__)
def test_pytrees_of_arguments_specs_outputs_and_scratch_match_jax_in_both(build):
    assert_same_values(build)


def test_a_none_output_is_none_in_both():
    def build(ns):
        return ns.pl.pallas_call(lambda x, o, nothing: o.__setitem__(Ellipsis, x[...]),
                                 out_shape=(f32(ns), None))(X)

    got = outcomes(build)
    assert all(o.error is None and o.value[1] is None for o in got.values()), got
