"""``pl.kernel`` on a TensorCore mesh on both backends: the newest
Pallas TPU style, a body on HBM refs that moves data with ``pltpu.sync_copy``.

Each kernel is one ``build(ns)`` run on pallas_sim and on JAX 0.10.2 in both interpreters
(``api_helpers``). Where the interpreters disagree the test says what each does, and
pallas_sim follows TPU interpret mode (docs/fidelity.md, "Behaviours").
"""

from __future__ import annotations

import numpy as np
import pytest
from api_helpers import JAX, SIM, assert_refused, assert_same_values, outcomes

import pallas_sim

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)


def mesh(ns):
    """A one-core mesh; JAX on a CPU needs ``num_cores`` spelled out."""
    return ns.pltpu.create_tensorcore_mesh("core", num_cores=1)


def f32(ns, *shape):
    return ns.jax.ShapeDtypeStruct(shape or (16, 128), ns.jnp.float32)


# -- pl.kernel ---------------------------------------------------------------------------------


def quickstart_copy(ns):
    pl, pltpu, jnp = ns.pl, ns.pltpu, ns.jnp

    @pl.kernel(out_type=f32(ns), mesh=mesh(ns),
               scratch_types=[pltpu.VMEM((16, 128), jnp.float32)])
    def kernel(x_hbm, o_hbm, buf):
        pltpu.sync_copy(x_hbm, buf)
        buf[...] = buf[...] * 2 + 1
        pltpu.sync_copy(buf, o_hbm)

    return kernel(X)


def tree_outputs_and_named_scratch(ns):
    pl, pltpu, jnp = ns.pl, ns.pltpu, ns.jnp
    out_type = {"rows": f32(ns, 8, 128), "ints": ns.jax.ShapeDtypeStruct((8,), jnp.int32),
                "never": f32(ns, 4)}

    @pl.kernel(out_type=out_type, mesh=mesh(ns),
               scratch_types=dict(v=pltpu.VMEM((8, 128), jnp.float32),
                                  s=pltpu.SMEM((8,), jnp.int32)))
    def kernel(x_hbm, o, v, s):
        pltpu.sync_copy(x_hbm.at[pl.ds(8, 8)], v)
        pltpu.sync_copy(v, o["rows"])
        for i in range(8):
            s[i] = i * 3
        pltpu.sync_copy(s, o["ints"])

    return kernel(X)


@pytest.mark.parametrize("build", [quickstart_copy, tree_outputs_and_named_scratch],
                         ids=lambda f: f.__name__)
def test_pl_kernel_on_a_tensorcore_mesh_gives_jaxs_numbers_in_both(build):
    assert_same_values(build)


def test_an_output_pl_kernel_never_writes_is_poison_in_both():
    def build(ns):
        return ns.pl.kernel(lambda o: None, out_type=f32(ns, 8, 128), mesh=mesh(ns))()

    assert np.isnan(assert_same_values(build)).all()


def test_a_pl_kernel_body_returning_a_value_is_refused_in_both():
    def build(ns):
        return ns.pl.kernel(lambda o: 1, out_type=f32(ns), mesh=mesh(ns))()

    assert_refused(build, ValueError, {m: "should return None. It returns a PyTree: PyTreeDef(*)"
                                       for m in ("hlo", "tpu")}, match="mpmd_map")


def test_a_pl_kernel_capturing_a_numpy_array_is_refused_in_both():
    table = np.ones((16, 128), np.float32)

    def build(ns):
        pltpu = ns.pltpu

        def body(x, o, v):
            pltpu.sync_copy(x, v)
            v[...] = v[...] + table
            pltpu.sync_copy(v, o)

        return ns.pl.kernel(body, out_type=f32(ns), mesh=mesh(ns),
                            scratch_types=[pltpu.VMEM((16, 128), ns.jnp.float32)])(X)

    assert_refused(build, pallas_sim.CapturedConstantError,
                   {m: "captures non-Ref constants [f32[16,128]]" for m in ("hlo", "tpu")})


def test_program_id_in_a_pl_kernel_fails_an_assertion_in_both():
    def build(ns):
        return ns.pl.kernel(lambda o: ns.pl.program_id(0), out_type=f32(ns), mesh=mesh(ns))()

    assert_refused(build, AssertionError, {"hlo": "AssertionError", "tpu": "AssertionError"})


def test_axis_index_is_the_core_in_tpu_interpret_mode_and_unbound_in_the_hlo_one():
    def build(ns):
        pltpu, jnp = ns.pltpu, ns.jnp

        @ns.pl.kernel(out_type=f32(ns, 8, 128), mesh=mesh(ns),
                      scratch_types=[pltpu.VMEM((8, 128), jnp.float32)])
        def kernel(o, v):
            v[...] = jnp.zeros((8, 128), jnp.float32) + ns.jax.lax.axis_index("core") \
                + ns.jax.lax.axis_size("core") * 10
            pltpu.sync_copy(v, o)

        return kernel()

    np.testing.assert_array_equal(assert_same_values(build, modes=("tpu",)), 10)
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert isinstance(hlo.error, NameError) and "unbound axis name: core" in str(hlo.error), (
        f"JAX's HLO interpreter cannot bind the mesh axis: {hlo}")


def test_loading_an_hbm_ref_is_refused_as_in_tpu_interpret_mode():
    def build(ns):
        def body(x, o):
            o[...] = x[...] + 1
        return ns.pl.kernel(body, out_type=f32(ns), mesh=mesh(ns))(X)

    assert_refused(build, pallas_sim.HBMAccessError, {
        "tpu": "get_p: Buffers with a memory space of HBM or ANY cannot be referenced directly"})
    hlo = outcomes(build, ("hlo",))["hlo"]
    assert hlo.error is None and np.array_equal(hlo.value, X + 1), (
        f"the HLO interpreter computes on HBM refs directly: {hlo}")


def test_a_mesh_without_num_cores_has_one_core_here_and_fails_on_a_jax_cpu():
    assert dict(SIM.pltpu.create_tensorcore_mesh("core").shape) == {"core": 1}
    with pytest.raises(AttributeError):  # a CPU device has no num_cores
        JAX.pltpu.create_tensorcore_mesh("core")
