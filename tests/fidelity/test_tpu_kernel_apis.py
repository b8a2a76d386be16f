"""The APIs JAX's own TPU kernels need (``jax/experimental/pallas/ops/tpu``), compared with
JAX: each expression runs on pallas_sim and on JAX and must give the same values and
dtypes, or raise the same kind of error (``surface_helpers.compare``); the kernel-level
behaviours run on pallas_sim and in JAX's TPU interpret mode.

JAX's behaviours mirrored: ``pl.ds`` returns a ``pl.Slice``; ``pl.estimate_cost`` counts
2*M*N*K per product and the arguments' and result's bytes; float -> integer conversion of
an array saturates (XLA's rule); ``jnp.repeat(total_repeat_length=)`` cuts or pads with
the last element; ``jnp.histogram``; ``register_pytree_node_class``;
``jax.sharding.PartitionSpec``; ``jax.ad_checkpoint.checkpoint_name``; a scalar-prefetch
operand may be a pytree; an index map must return integers, a block shape must have the
array's rank and a ``pl.ds`` past a ref's end is refused, each with a ``ValueError``.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from typing import Any

import jax.ad_checkpoint  # noqa: F401 - JAX's jax.ad_checkpoint is not loaded by `import jax`
import numpy as np
import pytest
from surface_helpers import JAX, SIM, compare

import pallas_sim
from pallas_sim.backends import real_jax

F = np.array([127.5, 300.0, -200.0, np.nan, 3e9, -0.7, np.inf, -np.inf], np.float32)
X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)


def _dev(ns: types.SimpleNamespace, a: np.ndarray) -> Any:
    """``a`` as an array of ``ns`` (a JAX device array on JAX: conversions of host NumPy
    arrays are NumPy's, which pallas_sim cannot tell apart)."""
    return ns.jnp.asarray(a)


# -- float -> integer conversion saturates --------------------------------------------------

CASTS: dict[str, Callable[[types.SimpleNamespace], Any]] = {
    "jnp_astype_int8": lambda ns: ns.jnp.astype(_dev(ns, F), ns.jnp.int8),
    "jnp_astype_uint8": lambda ns: ns.jnp.astype(_dev(ns, F), ns.jnp.uint8),
    "jnp_astype_int32": lambda ns: ns.jnp.astype(_dev(ns, F), ns.jnp.int32),
    "jnp_astype_uint32": lambda ns: ns.jnp.astype(_dev(ns, F), ns.jnp.uint32),
    "jnp_astype_int16": lambda ns: ns.jnp.astype(_dev(ns, F), ns.jnp.int16),
    "jnp_uint8_of_floats": lambda ns: ns.jnp.uint8(_dev(ns, F)),
    "jnp_int8_of_rint": lambda ns: ns.jnp.int8(ns.jnp.rint(_dev(ns, F))),
    "asarray_int8": lambda ns: ns.jnp.asarray(_dev(ns, F), ns.jnp.int8),
    "lax_convert": lambda ns: ns.lax.convert_element_type(_dev(ns, F), ns.jnp.int8),
    "int_to_narrower_int_wraps": lambda ns: _dev(
        ns, np.array([300, -200, 70000], np.int32)).astype(ns.jnp.int8),
    "int8_dtype": lambda ns: (ns.jnp.zeros(3, ns.jnp.int8).dtype.name,
                              np.dtype(ns.jnp.int8).name, np.dtype(ns.jnp.uint32).name),
}


@pytest.mark.parametrize("name", sorted(CASTS))
def test_float_to_int_conversion_saturates_as_in_jax(name: str) -> None:
    compare(CASTS[name], exact=True)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "outside a kernel pallas_sim's arrays are NumPy arrays, whose .astype method is "
    "NumPy's: out-of-range floats wrap or become 0 (300 -> 44, 3e9 -> 0) where JAX "
    "saturates (127); jnp.astype, jnp.int8(x), jnp.asarray(x, dtype) and .astype on a "
    "value inside a kernel saturate"))
def test_the_astype_method_of_a_host_array_saturates_as_in_jax() -> None:
    compare(lambda ns: _dev(ns, F).astype(ns.jnp.int8), exact=True)


def test_an_int8_cast_in_a_kernel_saturates_as_in_tpu_interpret_mode() -> None:
    x = np.linspace(-400, 400, 8 * 128, dtype=np.float32).reshape(8, 128)

    def build(ns: types.SimpleNamespace) -> Any:
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...].astype(ns.jnp.int8)

        return ns.pl.pallas_call(kernel, out_shape=ns.jax.ShapeDtypeStruct(x.shape,
                                                                            ns.jnp.int8))(x)

    got = np.asarray(build(SIM))
    with real_jax.mode("tpu"):
        want = np.asarray(build(JAX))
    np.testing.assert_array_equal(got, want)
    assert got.min() == -128 and got.max() == 127


# -- jnp.repeat(total_repeat_length=), jnp.histogram ----------------------------------------

REPEATS: dict[str, Callable[[types.SimpleNamespace], Any]] = {
    "cut": lambda ns: ns.jnp.repeat(ns.jnp.arange(3), ns.jnp.array([1, 2, 3]),
                                    total_repeat_length=4),
    "pad_with_last": lambda ns: ns.jnp.repeat(ns.jnp.arange(3), ns.jnp.array([1, 2, 0]),
                                              total_repeat_length=6),
    "exact": lambda ns: ns.jnp.repeat(ns.jnp.arange(3), 2, total_repeat_length=6),
    "scalar_repeats": lambda ns: ns.jnp.repeat(ns.jnp.arange(4), 2, total_repeat_length=5),
    "axis_1": lambda ns: ns.jnp.repeat(ns.jnp.arange(6).reshape(2, 3), ns.jnp.array([2, 0, 1]),
                                       axis=1, total_repeat_length=4),
    "zero_length": lambda ns: ns.jnp.repeat(ns.jnp.arange(3), 1, total_repeat_length=0),
    "megablox_group_ids": lambda ns: ns.jnp.repeat(
        ns.jnp.arange(4, dtype=ns.jnp.int32), ns.jnp.array([2, 0, 3, 1], ns.jnp.int32),
        total_repeat_length=8),
}


@pytest.mark.parametrize("name", sorted(REPEATS))
def test_repeat_with_total_repeat_length_agrees_with_jax(name: str) -> None:
    compare(REPEATS[name], exact=True)


HIST = np.array([1.0, 2.0, 2.0, 5.0, 9.0, 9.0, -3.0], np.float32)
HISTOGRAMS: dict[str, Callable[[types.SimpleNamespace], Any]] = {
    "bins_int": lambda ns: ns.jnp.histogram(HIST, bins=4),
    "range_drops_outside": lambda ns: ns.jnp.histogram(HIST, bins=3, range=(0, 6)),
    "int_input": lambda ns: ns.jnp.histogram(np.arange(7, dtype=np.int32), bins=3),
    "edges_given": lambda ns: ns.jnp.histogram(HIST, bins=np.array([0.0, 2.0, 5.0, 9.0],
                                                                   np.float32)),
    "weights": lambda ns: ns.jnp.histogram(HIST, bins=2, weights=np.arange(7, dtype=np.float32)),
    "density": lambda ns: ns.jnp.histogram(HIST, bins=4, density=True),
    "constant_input": lambda ns: ns.jnp.histogram(np.full(4, 3.0, np.float32), bins=2),
    "megablox_group_sizes": lambda ns: ns.jnp.histogram(
        np.array([0, 0, 2, 3, 3, 3], np.int32), bins=4, range=(0, 4)),
}


@pytest.mark.parametrize("name", sorted(HISTOGRAMS))
def test_histogram_agrees_with_jax(name: str) -> None:
    compare(HISTOGRAMS[name], rtol=1e-6)


# -- pl.ds and pl.Slice ------------------------------------------------------------------------


def _slice_fields(s: Any) -> Any:
    if isinstance(s, slice):
        return ("slice", s.start, s.stop, s.step)
    return (type(s).__name__, int(s.start), int(s.size), int(s.stride))


SLICES: dict[str, Callable[[types.SimpleNamespace], Any]] = {
    "ds_start_size": lambda ns: _slice_fields(ns.pl.ds(2, 4)),
    "ds_size_only": lambda ns: _slice_fields(ns.pl.ds(5)),
    "ds_stride": lambda ns: _slice_fields(ns.pl.ds(1, 3, 2)),
    "ds_none_is_a_python_slice": lambda ns: _slice_fields(ns.pl.ds(None)),
    "dslice_alias": lambda ns: _slice_fields(ns.pl.dslice(3, 5)),
    "is_a_pl_slice": lambda ns: isinstance(ns.pl.ds(0, 8), ns.pl.Slice),
    "from_slice": lambda ns: _slice_fields(ns.pl.Slice.from_slice(slice(2, None, 3), 10)),
    "from_slice_negative": lambda ns: _slice_fields(ns.pl.Slice.from_slice(slice(-4, None),
                                                                           10)),
    "equal": lambda ns: ns.pl.ds(2, 4) == ns.pl.Slice(2, 4),
    "negative_stride": lambda ns: ns.pl.ds(0, 4, -1),
}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_ds_returns_jaxs_slice(name: str) -> None:
    compare(SLICES[name], exact=True)


def _ds_kernel(ns: types.SimpleNamespace) -> Any:
    """Reads rows through a pl.Slice and uses its .size, as JAX's splash kernel does."""
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp

    def kernel(x_ref, o_ref):
        rows = pl.ds(pl.program_id(0) * 4, 4)
        tile = x_ref[rows, :]
        o_ref[...] = jnp.broadcast_to(jnp.sum(tile, axis=0, keepdims=True) / rows.size,
                                      o_ref.shape)
        o_ref[pl.ds(0, 2, 2), :] = x_ref[pl.ds(1, 2, 3), :]

    return pl.pallas_call(kernel, grid=(4,), in_specs=[pl.BlockSpec((16, 128), lambda i: (0, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                          out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32))(X)


def test_a_kernel_indexing_with_pl_slices_agrees_with_tpu_interpret_mode() -> None:
    got = np.asarray(_ds_kernel(SIM))
    with real_jax.mode("tpu"):
        want = np.asarray(_ds_kernel(JAX))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# -- pl.estimate_cost ---------------------------------------------------------------------------

COSTS: dict[str, Callable[[types.SimpleNamespace], Any]] = {
    "matmul": lambda ns: ns.pl.estimate_cost(
        lambda a, b: a @ b, ns.jax.ShapeDtypeStruct((64, 32), ns.jnp.float32),
        ns.jax.ShapeDtypeStruct((32, 16), ns.jnp.float32)),
    "batched_einsum": lambda ns: ns.pl.estimate_cost(
        lambda a, b: ns.jnp.einsum("bqd,bkd->bqk", a, b),
        ns.jax.ShapeDtypeStruct((2, 8, 128), ns.jnp.float32),
        ns.jax.ShapeDtypeStruct((2, 16, 128), ns.jnp.float32)),
    "exp": lambda ns: ns.pl.estimate_cost(lambda a: ns.jnp.exp(a),
                                          ns.jax.ShapeDtypeStruct((8, 128), ns.jnp.float32)),
    "exp_plus_one": lambda ns: ns.pl.estimate_cost(
        lambda a: ns.jnp.exp(a) + 1, ns.jax.ShapeDtypeStruct((8, 128), ns.jnp.float32)),
    "arrays_and_bf16": lambda ns: ns.pl.estimate_cost(
        lambda a, b: ns.jnp.tanh(a.astype(ns.jnp.float32)) * b,
        np.zeros((8, 128), pallas_sim.jnp.bfloat16), np.zeros((8, 128), np.float32)),
}


@pytest.mark.parametrize("name", sorted(COSTS))
def test_estimate_cost_agrees_with_jax_on_products_transcendentals_and_bytes(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = COSTS[name](SIM), COSTS[name](JAX)
    assert type(got).__name__ == type(want).__name__ == "CostEstimate"
    assert (got.transcendentals, got.bytes_accessed) == (want.transcendentals,
                                                         want.bytes_accessed)
    # flops: products exactly as JAX; pallas_sim's elementwise count may add compares,
    # selects and the casts JAX leaves out, never less
    assert got.flops >= want.flops
    if name in ("matmul", "batched_einsum", "exp", "exp_plus_one"):
        assert got.flops == want.flops


# -- pytrees, PartitionSpec, checkpoint_name ---------------------------------------------------


def _pair_class(ns: types.SimpleNamespace) -> type:
    @ns.jax.tree_util.register_pytree_node_class
    class Pair:
        def __init__(self, a: Any, b: Any, tag: str = "t") -> None:
            self.a, self.b, self.tag = a, b, tag

        def tree_flatten(self) -> tuple[tuple[Any, Any], str]:
            return (self.a, self.b), self.tag

        @classmethod
        def tree_unflatten(cls, aux: str, children: Any) -> Pair:
            return cls(*children, tag=aux)

    return Pair


def _pair_roundtrip(ns: types.SimpleNamespace) -> Any:
    pair = _pair_class(ns)(np.float32(1), [np.float32(2), np.float32(3)], "x")
    doubled = ns.jax.tree.map(lambda v: v * 2, pair)
    return (ns.jax.tree.leaves(pair), ns.jax.tree.leaves(doubled), doubled.tag,
            type(doubled).__name__, ns.jax.tree.structure(pair).num_leaves)


def _subclass_is_a_leaf(ns: types.SimpleNamespace) -> Any:
    class Sub(_pair_class(ns)):
        pass

    return len(ns.jax.tree.leaves(Sub(np.float32(1), np.float32(2))))


TREES: dict[str, Callable[[types.SimpleNamespace], Any]] = {
    "register_pytree_node_class": _pair_roundtrip,
    "subclass_not_registered": _subclass_is_a_leaf,
    "partition_spec": lambda ns: (len(ns.jax.sharding.PartitionSpec("x", None)),
                                  ns.jax.sharding.PartitionSpec("x", None)[0],
                                  ns.jax.sharding.PartitionSpec(None, ("x", "y"))[1],
                                  ns.jax.sharding.PartitionSpec("x") ==
                                  ns.jax.sharding.PartitionSpec("x")),
    "checkpoint_name": lambda ns: ns.jax.ad_checkpoint.checkpoint_name(X[:2, :4] + 1, "res"),
}


@pytest.mark.parametrize("name", sorted(TREES))
def test_pytree_classes_partition_specs_and_checkpoint_names_agree_with_jax(name: str) -> None:
    compare(TREES[name], exact=True)


def test_the_device_reads_as_a_tpu_generation() -> None:
    import re

    kind = SIM.jax.devices()[0].device_kind
    assert kind == "TPU v5 lite", "JAX's name of a v5e device"
    assert re.match(r"TPU v(\d+)", kind), "megablox reads the generation this way"


def test_a_missing_name_imported_with_from_keeps_the_explanation() -> None:
    with pytest.raises(ImportError, match="pallas_sim") as info:
        from pallas_sim.jax import shard_map  # noqa: F401
    assert isinstance(info.value, pallas_sim.UnsupportedJaxImportError)
    assert "cannot import name" not in str(info.value)
    with pytest.raises(pallas_sim.UnsupportedJaxAPIError):
        pallas_sim.jax.sharding.NamedSharding  # noqa: B018 - attribute access, no import


# -- kernels: pytree scalar prefetch; the ValueError kinds -------------------------------------


def _prefetch_tree(ns: types.SimpleNamespace, with_none: bool) -> Any:
    """Two tables in one tuple operand (JAX's megablox group metadata), and a None."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    rows = np.array([1, 0], np.int32)
    cols = np.array([0, 0], np.int32)

    def index_map(i, tables, *rest):
        return tables[0][i], tables[1][i]

    def kernel(tables, *refs):
        x_ref, o_ref = refs[-2:]
        o_ref[...] = x_ref[...] * 2 + tables[0][pl.program_id(0)]

    prefetch = ((rows, cols), None) if with_none else ((rows, cols),)
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=len(prefetch), grid=(2,),
        in_specs=[pl.BlockSpec((8, 128), index_map)],
        out_specs=pl.BlockSpec((8, 128), lambda i, *rest: (i, 0)))
    return pl.pallas_call(kernel, grid_spec=spec,
                          out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32))(*prefetch, X)


@pytest.mark.parametrize("with_none", [False, True])
def test_a_scalar_prefetch_operand_may_be_a_pytree_as_in_jax(with_none: bool) -> None:
    got = np.asarray(_prefetch_tree(SIM, with_none))
    with real_jax.mode("tpu"):
        want = np.asarray(_prefetch_tree(JAX, with_none))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:8], X[8:] * 2 + 1)


def _copy(ns: types.SimpleNamespace, in_map: Callable[..., Any], block: tuple[int, ...] = (8, 128)
          ) -> Any:
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    return ns.pl.pallas_call(kernel, grid=(2,), in_specs=[ns.pl.BlockSpec(block, in_map)],
                             out_specs=ns.pl.BlockSpec((8, 128), lambda i: (i, 0)),
                             out_shape=ns.jax.ShapeDtypeStruct((16, 128), ns.jnp.float32))(X)


def _ds_past_the_end(ns: types.SimpleNamespace) -> Any:
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[ns.pl.ds(8, 16), :]

    return ns.pl.pallas_call(kernel, out_shape=ns.jax.ShapeDtypeStruct((16, 128),
                                                                       ns.jnp.float32))(X)


REFUSED: dict[str, tuple[Callable[[types.SimpleNamespace], Any], type[Exception], str, str]] = {
    # name: (build, pallas_sim's class, pallas_sim's words, JAX's words)
    "float_index_map": (lambda ns: _copy(ns, lambda i: (i * 1.0, 0)), ValueError,
                        "must return integer scalars", "must return integer scalars"),
    "bool_index_map": (lambda ns: _copy(ns, lambda i: (i == 1, 0)), ValueError,
                       "must return integer scalars", "must return integer scalars"),
    "block_shape_rank": (lambda ns: _copy(ns, lambda i: (i,), block=(8,)),
                         pallas_sim.BlockShapeError, "1 dims but the array has shape",
                         "must have the same number of dimensions"),
    "ds_past_the_end": (_ds_past_the_end, pallas_sim.RefIndexError, "out of bounds",
                        "Out of bound slice"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_kernels_raise_a_value_error_in_both(name: str) -> None:
    build, sim_class, sim_words, jax_words = REFUSED[name]
    with pytest.raises(sim_class, match=sim_words) as info:
        build(SIM)
    assert isinstance(info.value, ValueError), "JAX raises a ValueError"
    with real_jax.mode("tpu"), pytest.raises(ValueError, match=jax_words):
        build(JAX)
    real_jax.reset()


def test_the_new_error_classes_keep_their_old_kinds_too() -> None:
    assert issubclass(pallas_sim.BlockShapeError, pallas_sim.KernelSignatureError)
    assert issubclass(pallas_sim.BlockShapeError, TypeError)  # a KernelSignatureError is one
    assert issubclass(pallas_sim.RefIndexError, IndexError)
    assert issubclass(pallas_sim.UnsupportedJaxImportError, ImportError)
    with pytest.raises(IndexError):
        _ds_past_the_end(SIM)


@pytest.mark.parametrize(("rows", "out_rows"), [
    (slice(0, 40), 16), (slice(-4, None), 4), (slice(None, -2), 14), (slice(2, 300, 2), 7)],
    ids=["past the end", "negative start", "negative stop", "stepped past the end"])
def test_a_python_slice_of_a_ref_reads_as_in_jax(rows: slice, out_rows: int) -> None:
    """JAX reads a Python slice of a ref as NumPy does when it traces the kernel
    (``x_ref[0:40]`` on 16 rows is the 16 rows, ``x_ref[-4:]`` the last 4), on every
    backend; pallas_sim used to refuse the first three. A ``pl.ds`` past the end is still
    refused, as JAX refuses it (``ds_past_the_end`` above)."""

    def build(ns: types.SimpleNamespace) -> Any:
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[rows, :] * 2

        return ns.pl.pallas_call(kernel, out_shape=ns.jax.ShapeDtypeStruct(
            (out_rows, 128), ns.jnp.float32))(X)

    ours = np.asarray(build(SIM))
    np.testing.assert_array_equal(ours, X[rows] * 2)
    with real_jax.mode("tpu"):
        np.testing.assert_array_equal(np.asarray(build(JAX)), ours)
