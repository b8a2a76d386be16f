"""``pltpu.MemorySpace``/``pl.MemorySpace``, ``pltpu.GridDimensionSemantics`` (with
``CORE_PARALLEL``) and ``pl.CostEstimate``, as in JAX 0.10.x."""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)


def test_memory_spaces_are_enums_whose_members_declare_buffers():
    assert list(pltpu.MemorySpace) == [pltpu.VMEM, pltpu.SMEM, pltpu.SEMAPHORE, pltpu.HBM]
    assert pltpu.MemorySpace.HBM is pltpu.HBM and pl.MemorySpace.ANY is pl.ANY
    assert (str(pltpu.VMEM), repr(pltpu.VMEM), str(pl.ANY)) == ("vmem", "VMEM", "any"), (
        "JAX prints a TPU memory space by its value and its name")
    buf = pltpu.VMEM((8, 128), jnp.float32)
    assert (buf.shape, buf.dtype, buf.memory_space) == ((8, 128), np.float32, "vmem")


def test_members_jax_has_for_other_hardware_are_refused_by_name():
    for space, name in ((pltpu.MemorySpace, "VMEM_SHARED"), (pltpu.MemorySpace, "CMEM"),
                        (pl.MemorySpace, "HOST")):
        with pytest.raises(pallas_sim.UnsupportedJaxAPIError, match=f"MemorySpace.{name}`"):
            getattr(space, name)
    with pytest.raises(pallas_sim.UnsupportedJaxAPIError, match="SparseCore"):
        pltpu.GridDimensionSemantics.SUBCORE_PARALLEL  # noqa: B018


@pytest.mark.parametrize("space", [pl.ANY, pltpu.HBM])
def test_an_hbm_block_spec_gives_a_raw_ref_that_dma_reaches(space):
    def kernel(x_hbm, o_ref, sem):
        copy = pltpu.make_async_copy(x_hbm, o_ref, sem)
        copy.start()
        copy.wait()

    with pallas_sim.trace() as t:
        out = pl.pallas_call(kernel, out_shape=F32, in_specs=[pl.BlockSpec(memory_space=space)],
                             scratch_shapes=[pltpu.SemaphoreType.DMA])(X)
    np.testing.assert_array_equal(out, X)
    op = t.last.operand("x_hbm")
    assert op.memory_space == str(space) and op.buffers == 0 and op.dma_count == 0


def test_vmem_and_smem_block_specs_and_refused_placements():
    def kernel(x, o):
        o[...] = x[...]

    with pallas_sim.trace() as t:
        pl.pallas_call(kernel, out_shape=F32, in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM)],
                       out_specs=pl.BlockSpec(memory_space=pltpu.VMEM))(X)
    assert [op.memory_space for op in t.last.operands] == ["smem", "vmem"]
    with pytest.raises(ValueError, match="semaphore memory"):
        pl.pallas_call(kernel, out_shape=F32,
                       in_specs=[pl.BlockSpec(memory_space=pltpu.SEMAPHORE)])(X)
    for space in (pltpu.HBM, pl.ANY):
        with pytest.raises(ValueError, match="Cannot allocate HBM in scratch"):
            pl.pallas_call(lambda x, o, s: None, out_shape=F32,
                           scratch_shapes=[space((8, 128), jnp.float32)])(X)


def copy_call(semantics, grid=(2, 2)):
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, 0))

    def kernel(x, o):
        o[...] = x[...]

    with pallas_sim.trace() as t:
        pl.pallas_call(kernel, out_shape=F32, grid=grid, in_specs=[spec], out_specs=spec,
                       compiler_params=pltpu.CompilerParams(dimension_semantics=semantics))(X)
    return t.last


def test_semantics_members_and_their_strings_are_the_same_and_recorded_as_strings():
    assert pltpu.PARALLEL is pltpu.GridDimensionSemantics.PARALLEL
    assert pltpu.CORE_PARALLEL.value == "core_parallel" and pltpu.PARALLEL != "parallel", (
        "JAX's members are a plain Enum: unequal to their strings")
    for given in [(pltpu.CORE_PARALLEL, pltpu.ARBITRARY), ("core_parallel", "arbitrary")]:
        assert copy_call(given).dimension_semantics == ("core_parallel", "arbitrary")


def test_core_parallel_is_neither_shuffled_nor_bound_by_the_prefix_rule():
    call = copy_call((pltpu.ARBITRARY, pltpu.CORE_PARALLEL))
    assert call.dimension_semantics == ("arbitrary", "core_parallel"), (
        "JAX's TPU interpret mode checks the prefix rule for 'parallel' only")
    orders = {}
    for kind in (pltpu.PARALLEL, pltpu.CORE_PARALLEL):
        with pallas_sim.config(shuffle_parallel=True, shuffle_seed=3):
            spec = pl.BlockSpec((2, 128), lambda i, j: (i, 0))
            with pallas_sim.trace() as t:
                pl.pallas_call(lambda x, o: o.__setitem__(Ellipsis, x[...]), out_shape=F32,
                               grid=(8, 1), in_specs=[spec], out_specs=spec,
                               compiler_params=pltpu.CompilerParams(
                                   dimension_semantics=(kind, pltpu.ARBITRARY)))(X)
        orders[kind] = t.last.operand("x").block_indices[:, 0].tolist()
    assert sorted(orders[pltpu.PARALLEL]) == list(range(8)) != orders[pltpu.PARALLEL], (
        "with seed 3 the parallel axis is visited in a shuffled order")
    assert orders[pltpu.CORE_PARALLEL] == list(range(8)), (
        "a core_parallel axis runs in order on the one core (JAX does not shuffle it)")
    with pytest.raises(pallas_sim.GridSemanticsError, match="must form a prefix"):
        copy_call((pltpu.CORE_PARALLEL, pltpu.PARALLEL))


@pytest.mark.parametrize("bad", ["PARALLEL", "subcore_parallel", "bogus", 1])
def test_unknown_semantics_are_refused(bad):
    with pytest.raises(pallas_sim.GridSemanticsError, match="unknown dimension semantics"):
        copy_call((bad, "arbitrary"))


def test_a_cost_estimate_checks_its_fields_and_is_recorded():
    with pytest.raises(ValueError, match=r"All fields in CostEstimate must be ints. flops is "
                                         r"not an int: <class 'float'>\(1.0\)"):
        pl.CostEstimate(flops=1.0, transcendentals=0, bytes_accessed=0)
    with pytest.raises(ValueError, match="numpy.int64"):
        pl.CostEstimate(flops=np.int64(3), transcendentals=0, bytes_accessed=0)
    cost = pl.CostEstimate(flops=4, transcendentals=5, bytes_accessed=6)
    assert cost.remote_bytes_transferred == 0
    assert cost.to_json() == (b'{"flops": 4, "transcendentals": 5, "bytes_accessed": 6, '
                              b'"remote_bytes_transferred": 0}')
    with pallas_sim.trace() as t:
        pl.pallas_call(lambda x, o: o.__setitem__(Ellipsis, x[...]), out_shape=F32,
                       cost_estimate=cost)(X)
    assert t.last.cost_estimate == {"flops": 4, "transcendentals": 5, "bytes_accessed": 6,
                                    "remote_bytes_transferred": 0}
    assert pallas_sim.CallTrace.from_dict(t.last.to_dict()) == t.last


def test_a_cost_estimate_of_another_type_is_refused():
    with pytest.raises(TypeError, match="unhashable type: 'dict'"):
        pl.pallas_call(lambda x, o: None, out_shape=F32, cost_estimate={"flops": 1})
    with pytest.raises(TypeError, match="pl.CostEstimate"):
        pl.pallas_call(lambda x, o: None, out_shape=F32, cost_estimate="bogus")
