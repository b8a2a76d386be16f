"""``pl.kernel`` on a TensorCore mesh: the newest Pallas TPU style,
where the body gets every operand as an HBM ref and moves data with DMAs.

Expected values are what JAX 0.10.x's TPU interpret mode gives (tests/fidelity runs the
same kernels there).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)


def test_the_default_mesh_has_the_one_simulated_core():
    mesh = pltpu.create_tensorcore_mesh("core")
    assert dict(mesh.shape) == {"core": 1} and mesh.axis_names == ("core",), (
        "pallas_sim's device is one TensorCore, so the mesh has one core on axis 'core'")
    assert mesh == pltpu.create_tensorcore_mesh("core", num_cores=1)
    assert mesh.default_memory_space is pl.ANY, "a mesh kernel's operands live in HBM"


def test_a_mesh_of_more_cores_or_both_devices_and_num_cores_is_refused():
    with pytest.raises(pallas_sim.UnsupportedJaxUsageError, match="one TensorCore"):
        pltpu.create_tensorcore_mesh("core", num_cores=2)
    with pytest.raises(ValueError, match="cannot specify both devices and num_cores"):
        pltpu.create_tensorcore_mesh("core", devices=jax.devices(), num_cores=1)


def copy_plus_one(x_hbm, o_hbm, buf):
    """HBM -> VMEM, +1, VMEM -> HBM: the shape of every quickstart kernel."""
    pltpu.sync_copy(x_hbm, buf)
    buf[...] = buf[...] + 1
    pltpu.sync_copy(buf, o_hbm)


@pytest.mark.parametrize("form", ["call", "decorator", "partial"])
def test_pl_kernel_runs_the_body_once_on_hbm_refs_in_every_spelling(form):
    mesh = pltpu.create_tensorcore_mesh("core")
    kwargs = dict(out_type=F32, mesh=mesh, scratch_types=[pltpu.VMEM((16, 128), jnp.float32)])
    if form == "call":
        fn = pl.kernel(copy_plus_one, **kwargs)
    elif form == "decorator":
        fn = pl.kernel(**kwargs)(copy_plus_one)
    else:
        fn = functools.partial(pl.kernel, **kwargs)(copy_plus_one)
    with pallas_sim.trace() as t:
        out = fn(X)
    np.testing.assert_array_equal(out, X + 1)
    call = t.last
    assert call.kind == "kernel" and call.grid == () and call.num_steps == 1
    assert [op.memory_space for op in call.operands] == ["any", "any", "vmem"], (
        "inputs and outputs of pl.kernel are HBM refs; the scratch is VMEM")
    assert call.manual_dma_count == 2 and call.manual_dma_bytes == 2 * X.nbytes, (
        "two sync_copy calls of f32[16,128] (8 KiB each)")
    assert call.vmem_bytes == X.nbytes, "only the VMEM scratch takes VMEM"


def test_outputs_start_poisoned_and_dict_outputs_and_scratch_arrive_as_trees():
    mesh = pltpu.create_tensorcore_mesh("core")
    out_type = {"a": jax.ShapeDtypeStruct((8, 128), jnp.float32),
                "b": jax.ShapeDtypeStruct((8,), jnp.int32),
                "untouched": jax.ShapeDtypeStruct((4,), jnp.float32)}

    @pl.kernel(out_type=out_type, mesh=mesh,
               scratch_types=dict(v=pltpu.VMEM((8, 128), jnp.float32),
                                  s=pltpu.SMEM((8,), jnp.int32)))
    def k(x, o, v, s):
        assert isinstance(o, dict) and sorted(o) == ["a", "b", "untouched"]
        pltpu.sync_copy(x.at[:8], v)
        pltpu.sync_copy(v, o["a"])
        for i in range(8):
            s[i] = i * 3
        pltpu.sync_copy(s, o["b"])

    out = k(X)
    assert sorted(out) == ["a", "b", "untouched"], "the result has out_type's structure"
    np.testing.assert_array_equal(out["a"], X[:8])
    np.testing.assert_array_equal(out["b"], np.arange(8, dtype=np.int32) * 3)
    assert np.isnan(out["untouched"]).all(), "an output never written keeps its poison (NaN)"


def test_no_out_type_means_no_outputs_and_a_list_out_type_returns_a_list():
    mesh = pltpu.create_tensorcore_mesh("core")
    assert pl.kernel(lambda x: None, mesh=mesh)(X) == (), "out_type=() gives ()"
    out = pl.kernel(lambda o: None, out_type=[F32], mesh=mesh)()
    assert isinstance(out, list) and len(out) == 1, "JAX keeps a list out_type a list"


def test_axis_index_is_the_core_and_axis_size_the_mesh():
    mesh = pltpu.create_tensorcore_mesh("core")
    seen = {}

    @pl.kernel(out_type=jax.ShapeDtypeStruct((8, 128), jnp.float32), mesh=mesh,
               scratch_types=[pltpu.VMEM((8, 128), jnp.float32)])
    def k(o, v):
        i = jax.lax.axis_index("core")
        seen["index"], seen["size"] = i, jax.lax.axis_size("core")
        v[...] = jnp.zeros((8, 128), jnp.float32) + i
        pltpu.sync_copy(v, o)

    np.testing.assert_array_equal(k(), np.zeros((8, 128), np.float32))
    assert pallas_sim._src.values.is_traced(seen["index"]) and seen["index"].dtype == np.int32, (
        "axis_index is a traced int32 value, as in JAX")
    assert seen["size"] == 1 and type(seen["size"]) is int, "axis_size is a static int"
    with pytest.raises(pallas_sim.UnboundAxisError, match="unbound axis name: core"):
        jax.lax.axis_index("core")


def test_program_id_has_no_grid_in_a_mesh_kernel():
    mesh = pltpu.create_tensorcore_mesh("core")
    fn = pl.kernel(lambda o: pl.program_id(0), out_type=F32, mesh=mesh)
    with pytest.raises(pallas_sim.NoGridError, match="axis_index"):
        fn()
    with pytest.raises(AssertionError):  # what JAX raises
        fn()


def test_loading_an_hbm_ref_is_refused_with_jaxs_message():
    mesh = pltpu.create_tensorcore_mesh("core")

    def body(x, o):
        o[...] = x[...] + 1

    with pytest.raises(pallas_sim.HBMAccessError,
                       match=r"get_p: Buffers with a memory space of HBM or ANY cannot be "
                             r"referenced directly"):
        pl.kernel(body, out_type=F32, mesh=mesh)(X)


def test_a_body_that_returns_a_value_or_captures_an_array_is_refused():
    mesh = pltpu.create_tensorcore_mesh("core")
    with pytest.raises(ValueError, match="The kernel function in mpmd_map .* should return "
                                         r"None. It returns a PyTree: PyTreeDef\(\*\)"):
        pl.kernel(lambda o: 1, out_type=F32, mesh=mesh)()
    table = np.ones((16, 128), np.float32)

    def body(x, o, v):
        pltpu.sync_copy(x, v)
        v[...] = v[...] + table

    with pytest.raises(pallas_sim.CapturedConstantError,
                       match=r"mpmd_map captures non-Ref constants \[f32\[16,128\]\]"):
        pl.kernel(body, out_type=F32, mesh=mesh,
                  scratch_types=[pltpu.VMEM((16, 128), jnp.float32)])(X)


def test_sequences_of_meshes_follow_jaxs_rules():
    mesh = pltpu.create_tensorcore_mesh("core")
    with pytest.raises(ValueError, match="mesh cannot be a sequence when using pl.kernel as a "
                                         "decorator"):
        pl.kernel(out_type=F32, mesh=[mesh])
    with pytest.raises(ValueError, match="mesh cannot be a sequence when body is a single"):
        pl.kernel(copy_plus_one, out_type=F32, mesh=[mesh])
    with pytest.raises(pallas_sim.UnsupportedJaxUsageError, match="MPMD"):
        pl.kernel([copy_plus_one, copy_plus_one], out_type=F32, mesh=[mesh, mesh])


def test_a_cost_estimate_is_kept_on_the_kernels_trace():
    mesh = pltpu.create_tensorcore_mesh("core")
    cost = pl.CostEstimate(flops=2048, transcendentals=0, bytes_accessed=2 * X.nbytes)
    with pallas_sim.trace() as t:
        pl.kernel(copy_plus_one, out_type=F32, mesh=mesh, cost_estimate=cost,
                  scratch_types=[pltpu.VMEM((16, 128), jnp.float32)])(X)
    assert t.last.cost_estimate == {"flops": 2048, "transcendentals": 0,
                                    "bytes_accessed": 16384, "remote_bytes_transferred": 0}
    again = pallas_sim.CallTrace.from_dict(t.last.to_dict())
    assert again == t.last and again.kind == "kernel", "the record survives to_dict/from_dict"


def test_the_newer_quickstart_spelling_is_refused_with_the_0_10_name():
    with pytest.raises(pallas_sim.UnsupportedJaxAPIError,
                       match="create_tensorcore_mesh"):
        pltpu.TensorCoreMesh  # noqa: B018
