"""The APIs JAX's TPU kernels need, without JAX installed: the values below are those JAX
0.10.2 gives (tests/fidelity/test_tpu_kernel_apis.py compares with JAX itself)."""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl

F = np.array([127.5, 300.0, -200.0, np.nan, 3e9, -0.7], np.float32)


def test_float_to_int8_saturates_rounds_toward_zero_and_maps_nan_to_zero() -> None:
    want = np.array([127, 127, -128, 0, 127, 0], np.int8)
    np.testing.assert_array_equal(jnp.astype(F, jnp.int8), want)
    np.testing.assert_array_equal(jnp.int8(F), want)
    np.testing.assert_array_equal(jnp.asarray(F, jnp.uint8),
                                  np.array([127, 255, 0, 0, 255, 0], np.uint8))
    assert np.dtype(jnp.int8) == np.int8 and issubclass(jnp.int32, np.integer)


def test_repeat_with_total_length_cuts_or_pads_with_the_last_element() -> None:
    np.testing.assert_array_equal(jnp.repeat(np.arange(3), np.array([1, 2, 3]),
                                             total_repeat_length=4), [0, 1, 1, 2])
    np.testing.assert_array_equal(jnp.repeat(np.arange(3), np.array([1, 2, 0]),
                                             total_repeat_length=6), [0, 1, 1, 2, 2, 2])
    assert jnp.repeat(np.arange(3), 1, total_repeat_length=0).shape == (0,)
    with pytest.raises(ValueError):
        jnp.repeat(np.arange(3), 1, total_repeat_length=-1)


def test_histogram_has_jaxs_edges_and_counts() -> None:
    counts, edges = jnp.histogram(np.array([1.0, 2, 2, 5, 9], np.float32), bins=4)
    np.testing.assert_array_equal(counts, [3, 0, 1, 1])
    np.testing.assert_array_equal(edges, [1, 3, 5, 7, 9])
    counts, edges = jnp.histogram(np.arange(5), bins=3, range=(0, 3))
    np.testing.assert_array_equal(counts, [1, 1, 2])
    assert counts.dtype == np.float32 and edges.dtype == np.float32


def test_ds_returns_a_pl_slice_and_none_a_python_slice() -> None:
    s = pl.ds(2, 4, 2)
    assert isinstance(s, pl.Slice) and (s.start, s.size, s.stride) == (2, 4, 2)
    assert pl.ds(None) == slice(None)
    assert pl.Slice.from_slice(slice(2, None, 3), 10) == pl.Slice(2, 3, 3)
    with pytest.raises(ValueError):
        pl.ds(0, 4, -1)


def test_estimate_cost_counts_products_transcendentals_and_bytes_as_jax() -> None:
    cost = pl.estimate_cost(lambda a, b: a @ b, jax.ShapeDtypeStruct((64, 32), jnp.float32),
                            jax.ShapeDtypeStruct((32, 16), jnp.float32))
    assert (cost.flops, cost.transcendentals, cost.bytes_accessed) == (65536, 0, 14336)
    cost = pl.estimate_cost(lambda a: jnp.exp(a) + 1, jax.ShapeDtypeStruct((8, 128),
                                                                            jnp.float32))
    assert (cost.flops, cost.transcendentals, cost.bytes_accessed) == (1024, 1024, 8192)


def test_estimate_cost_traces_shapes_without_computing() -> None:
    """JAX's flash_attention.py calls ``pl.estimate_cost`` on its reference attention at
    every call: pallas_sim ran that reference on zeros (38 % of the kernel's time on
    pallas_sim). It now counts shapes only, as JAX traces: a product of two 4 TiB
    operands (whose zeros cannot even be allocated) is counted at once; a function that
    needs values is still counted, on zeros."""
    huge = jax.ShapeDtypeStruct((1 << 20, 1 << 20), jnp.float32)
    cost = pl.estimate_cost(lambda a, b: jnp.exp(a @ b), huge, huge)
    assert cost.flops == 2 * (1 << 60) and cost.transcendentals == 1 << 40
    assert cost.bytes_accessed == 3 * (1 << 42)

    def gathered(a):  # indexes by a computed value: the shape-only run cannot
        return a[jnp.argmax(a[0])] * 2

    cost = pl.estimate_cost(gathered, jax.ShapeDtypeStruct((8, 128), jnp.float32))
    assert cost.bytes_accessed == 4096 + 512 and cost.flops >= 128


def test_estimate_cost_is_worked_out_once_per_function_shapes_and_static_arguments(
) -> None:
    """A jitted JAX wrapper estimates when it is traced, once; pallas_sim runs the wrapper
    at every call and reuses the estimate for the same function, shapes, dtypes and static
    arguments; other shapes or arguments are worked out anew."""
    runs = []

    def scaled(a, b, *, power):
        runs.append(power)
        return jnp.exp(a @ b) ** power

    f32 = jax.ShapeDtypeStruct((64, 32), jnp.float32)
    g32 = jax.ShapeDtypeStruct((32, 16), jnp.float32)
    first = pl.estimate_cost(scaled, f32, g32, power=2)
    assert pl.estimate_cost(scaled, np.ones((64, 32), np.float32), g32, power=2) == first
    assert runs == [2], "the same shapes, dtypes and static arguments: no second run"
    assert pl.estimate_cost(scaled, f32, g32, power=3) == first and runs == [2, 3]
    bigger = pl.estimate_cost(scaled, jax.ShapeDtypeStruct((128, 32), jnp.float32), g32,
                              power=2)
    assert bigger.flops > first.flops and runs == [2, 3, 2]


def test_pytree_node_classes_partition_specs_checkpoint_names_and_device_kind() -> None:
    @jax.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    doubled = jax.tree.map(lambda v: v * 2, Pair(1, [2, 3]))
    assert isinstance(doubled, Pair) and jax.tree.leaves(doubled) == [2, 4, 6]
    spec = jax.sharding.PartitionSpec("x", None)
    assert len(spec) == 2 and spec[0] == "x"
    assert jax.ad_checkpoint.checkpoint_name(F, "r") is F
    assert jax.devices()[0].device_kind == "TPU v5 lite"


def test_from_import_of_a_missing_name_keeps_the_explanation() -> None:
    with pytest.raises(pallas_sim.UnsupportedJaxImportError, match="pallas_sim"):
        from pallas_sim.jax import shard_map  # noqa: F401
