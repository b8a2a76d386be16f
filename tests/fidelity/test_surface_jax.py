"""``jax.*`` transformations, pytrees, ``.at`` updates and the refusals, on pallas_sim and on
real JAX 0.10.2 (docs/fidelity.md, "The JAX surface")."""

from __future__ import annotations

import collections
import functools
import importlib
import typing

import jax as real_jax
import numpy as np
import pytest
from surface_helpers import JAX, SIM, compare, run

import pallas_sim
from pallas_sim import UnsupportedJaxAPIError
from pallas_sim._src.indexing import IndexUpdateHelper
from pallas_sim._src.jax_names import JAX_VERSION, NAMES
from pallas_sim.backends.surface_names import NAMESPACES, public_names


class Point(typing.NamedTuple):
    x: object
    y: object


X = np.arange(12, dtype=np.float32).reshape(3, 4)

# -- pytrees ------------------------------------------------------------------------------------

TREES = [
    (1, [2, {"b": 3, "a": None}]), Point((1,), {}), collections.OrderedDict(b=1, a=2),
    collections.defaultdict(list, b=1, a=2), (1,), (), [], {}, [None], None, 1, "leaf",
    {1: 2, 0: 3}, [[]], (None,), {"a": Point(1, [2, 3])},
]


@pytest.mark.parametrize("index", range(len(TREES)))
def test_tree_structure_and_leaves_print_and_order_as_jax(index):
    tree = TREES[index]
    for fn in ("structure", "leaves", "flatten"):
        sim = getattr(SIM.jax.tree, fn)(tree)
        real = getattr(JAX.jax.tree, fn)(tree)
        assert str(sim) == str(real), f"jax.tree.{fn}({tree!r}): {sim} vs JAX {real}"
    structure = SIM.jax.tree.structure(tree)
    real_structure = JAX.jax.tree.structure(tree)
    assert (structure.num_leaves, structure.num_nodes) == (
        real_structure.num_leaves, real_structure.num_nodes), f"counts of {tree!r}"
    leaves = [f"<{i}>" for i in range(structure.num_leaves)]
    assert str(structure.unflatten(leaves)) == str(real_structure.unflatten(leaves))


TREE_CALLS = {
    "map_two_trees": lambda ns: ns.jax.tree.map(lambda a, b: a + b, (1, [2]), (10, [20])),
    "map_prefix": lambda ns: ns.jax.tree.map(lambda a, b: (a, b), (1, 2), ((10, 11), 20)),
    "map_is_leaf": lambda ns: ns.jax.tree.map(len, [(1, 2), (3,)],
                                              is_leaf=lambda t: isinstance(t, tuple)),
    "map_keeps_none": lambda ns: ns.jax.tree.map(lambda a: a * 2, [None, 1, {"k": 2}]),
    "map_refuses_lengths": lambda ns: ns.jax.tree.map(lambda a, b: a, (1, 2), (1, 2, 3)),
    "map_refuses_none_vs_value": lambda ns: ns.jax.tree.map(lambda a, b: b, (None, 1), (5, 2)),
    "map_refuses_keys": lambda ns: ns.jax.tree.map(lambda a, b: a, {"a": 1}, {"b": 1}),
    "leaves_is_leaf_none": lambda ns: ns.jax.tree.leaves([None, 1], is_leaf=lambda t: t is None),
    "leaves_unsortable_keys": lambda ns: ns.jax.tree.leaves({"a": 1, 1: 2}),
    "unflatten_too_few": lambda ns: ns.jax.tree.unflatten(ns.jax.tree.structure((1, 2)), [1]),
    "unflatten_too_many": lambda ns: ns.jax.tree.unflatten(ns.jax.tree.structure((1, 2)),
                                                           [1, 2, 3]),
    "all": lambda ns: ns.jax.tree.all([True, (1, 0)]),
    "all_empty": lambda ns: ns.jax.tree.all([]),
    "reduce": lambda ns: ns.jax.tree.reduce(lambda a, b: a + b, [1, (2, 3)]),
    "reduce_initializer": lambda ns: ns.jax.tree.reduce(lambda a, b: a + b, [], 10),
    "reduce_refuses_empty": lambda ns: ns.jax.tree.reduce(lambda a, b: a + b, []),
    "tree_util_map": lambda ns: ns.jax.tree_util.tree_map(lambda a: a + 1, {"a": 1, "b": (2,)}),
    "tree_util_flatten": lambda ns: ns.jax.tree_util.tree_flatten([1, (2, None)])[0],
    "tree_util_leaves": lambda ns: ns.jax.tree_util.tree_leaves(Point(1, 2)),
    "treedef_is_leaf": lambda ns: ns.jax.tree_util.treedef_is_leaf(ns.jax.tree.structure(1)),
    "all_leaves": lambda ns: ns.jax.tree_util.all_leaves([1, 2.0, None]),
    "flatten_up_to": lambda ns: ns.jax.tree.structure((1, 2)).flatten_up_to(([1], {"a": 2})),
    "flatten_up_to_refuses": lambda ns: ns.jax.tree.structure((1, 2)).flatten_up_to([1, 2]),
    "structures_equal": lambda ns: ns.jax.tree.structure((1, [2])) == ns.jax.tree.structure(
        (5, [6])),
    "namedtuple_is_not_tuple": lambda ns: ns.jax.tree.structure(Point(1, 2)) ==
    ns.jax.tree.structure((1, 2)),
}


@pytest.mark.parametrize("name", sorted(TREE_CALLS))
def test_tree_functions_agree_with_jax(name):
    sim, sim_error = run(TREE_CALLS[name], SIM)
    real, real_error = run(TREE_CALLS[name], JAX)
    assert type(sim_error) is type(real_error), f"pallas_sim {sim_error!r}, JAX {real_error!r}"
    assert str(sim) == str(real), f"pallas_sim {sim!r}, JAX {real!r}"


# -- jit ----------------------------------------------------------------------------------------


def scale(x, k=2):
    return x * k


def keyword_only(x, *, k):
    return x * k


JIT = {
    "plain": lambda ns: ns.jax.jit(scale)(X),
    "static_argnames_keyword": lambda ns: ns.jax.jit(scale, static_argnames="k")(X, k=3),
    "static_argnames_passed_positionally": lambda ns: ns.jax.jit(
        scale, static_argnames="k")(X, 3),
    "static_argnums_passed_by_name": lambda ns: ns.jax.jit(scale, static_argnums=1)(X, k=3),
    "keyword_only_static": lambda ns: ns.jax.jit(keyword_only, static_argnames=["k"])(X, k=2),
    "decorator_with_options": lambda ns: ns.jax.jit(static_argnames="k")(scale)(X, k=4),
    "partial_decorator": lambda ns: functools.partial(ns.jax.jit, static_argnums=(1,))(scale)(
        X, 5),
    "returns_none": lambda ns: ns.jax.jit(lambda x: None)(X),
    "list_argument_is_a_tree": lambda ns: ns.jax.jit(lambda x, y: x + y[0])(X, [1.0]),
    "none_argument": lambda ns: ns.jax.jit(lambda x, y: x)(X, None),
    "refuses_string_argument": lambda ns: ns.jax.jit(scale)(X, "a"),
    "refuses_string_keyword": lambda ns: ns.jax.jit(scale)(X, k="a"),
    "refuses_function_argument": lambda ns: ns.jax.jit(lambda x, f: x)(X, scale),
    "refuses_dtype_argument": lambda ns: ns.jax.jit(lambda x, d: x)(X, np.dtype("float32")),
    "refuses_string_array": lambda ns: ns.jax.jit(lambda x, s: x)(X, np.array(["a"])),
    "refuses_unhashable_static": lambda ns: ns.jax.jit(scale, static_argnums=1)(X, [1]),
    "refuses_unknown_static_name": lambda ns: ns.jax.jit(scale, static_argnames="q"),
    "refuses_static_position_beyond": lambda ns: ns.jax.jit(scale, static_argnums=5),
    "refuses_unknown_option": lambda ns: ns.jax.jit(scale, foo=1),
    "refuses_not_callable": lambda ns: ns.jax.jit(3),
    "refuses_string_result": lambda ns: ns.jax.jit(lambda x: "s")(X),
}


@pytest.mark.parametrize("name", sorted(JIT))
def test_jit_agrees_with_jax(name):
    compare(JIT[name])


def test_jit_keeps_the_functions_name_and_doc():
    def documented(x):
        """Doubles x."""
        return 2 * x

    jitted = SIM.jax.jit(documented)
    assert jitted.__name__ == "documented" and jitted.__doc__ == "Doubles x.", (
        "jax.jit wraps like functools.wraps, as JAX's jitted functions do")


# -- vmap ---------------------------------------------------------------------------------------

VMAP = {
    "rows": lambda ns: ns.jax.vmap(lambda r: r * 2)(X),
    "columns": lambda ns: ns.jax.vmap(lambda c: c.sum(), in_axes=1)(X),
    "negative_axis": lambda ns: ns.jax.vmap(lambda c: c.sum(), in_axes=-1)(X),
    "tuple_in_axes_with_none": lambda ns: ns.jax.vmap(lambda a, b: a + b, in_axes=(0, None))(
        X, X[0]),
    "list_in_axes": lambda ns: ns.jax.vmap(lambda a, b: a + b, in_axes=[0, 0])(X, X),
    "dict_prefix": lambda ns: ns.jax.vmap(lambda d: d["a"] + d["b"],
                                          in_axes=({"a": 0, "b": None},))(
        {"a": X, "b": np.float32(2)}),
    "keyword_mapped_over_axis_0": lambda ns: ns.jax.vmap(lambda a, b: a + b)(X, b=X),
    "out_axes_1": lambda ns: ns.jax.vmap(lambda r: r, out_axes=1)(X),
    "out_axes_negative": lambda ns: ns.jax.vmap(lambda r: r, out_axes=-1)(X),
    "out_axes_none": lambda ns: ns.jax.vmap(lambda r: (r, np.float32(1)), out_axes=(0, None))(X),
    "tuple_outputs": lambda ns: ns.jax.vmap(lambda r: (r.sum(), r.max()))(X),
    "python_scalar_outputs": lambda ns: ns.jax.vmap(lambda r: 1)(X),
    "axis_size_without_mapped_axes": lambda ns: ns.jax.vmap(lambda: np.float32(1), in_axes=(),
                                                            axis_size=3)(),
    "nested": lambda ns: ns.jax.vmap(ns.jax.vmap(lambda v: v * v))(X),
    "over_keys": lambda ns: ns.jax.vmap(lambda k: ns.random.normal(k, (2,)))(
        ns.random.split(ns.random.key(0), 3)).shape,
    "refuses_sizes": lambda ns: ns.jax.vmap(lambda a, b: a)(X, X[:2]),
    "refuses_no_axes": lambda ns: ns.jax.vmap(lambda a: a, in_axes=None)(X),
    "refuses_rank_0": lambda ns: ns.jax.vmap(lambda a: a)(1.0),
    "refuses_axis_beyond_rank": lambda ns: ns.jax.vmap(lambda a: a, in_axes=2)(X),
    "refuses_in_axes_length": lambda ns: ns.jax.vmap(lambda a, b: a, in_axes=(0,))(X, X),
    "refuses_float_in_axes": lambda ns: ns.jax.vmap(lambda a: a, in_axes=0.5)(X),
    "refuses_string_output": lambda ns: ns.jax.vmap(lambda a: "s")(X),
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_agrees_with_jax(name):
    compare(VMAP[name], check_values=name != "over_keys")


def _batched_add(ns, x, y):
    """A wrapper around a pallas_call with a (8, 128) block grid, vmapped over axis 0."""
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def add(a, b):
        spec = ns.pl.BlockSpec((8, 128), lambda i: (i, 0))
        return ns.pl.pallas_call(kernel, grid=(a.shape[0] // 8,), in_specs=[spec, spec],
                                 out_specs=spec,
                                 out_shape=ns.jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)

    return ns.jax.vmap(add)(x, y)


def test_vmap_over_a_function_that_calls_pallas_call_agrees_with_jax():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 16, 128)).astype(np.float32)
    y = rng.standard_normal((3, 16, 128)).astype(np.float32)
    with pallas_sim.trace() as t:
        got = compare(lambda ns: _batched_add(ns, x, y))
    assert np.allclose(got, x + y), "vmap(add) adds every batch element"
    assert len(t.calls) == 3 and all(c.grid == (2,) for c in t.calls), (
        "pallas_sim's vmap runs the pallas_call once per batch element (3 calls of grid (2,)); "
        f"got {[c.grid for c in t.calls]}")


# -- custom_vjp, scopes, devices ------------------------------------------------------------------


def _with_vjp(ns, define):
    @functools.partial(ns.jax.custom_vjp, nondiff_argnums=(1,))
    def f(x, k):
        return x * k

    if define:
        f.defvjp(lambda x, k: (f(x, k), x), lambda k, res, g: (g * k,))
    return f(X, 3)


OTHERS = {
    "custom_vjp_runs_forward": lambda ns: _with_vjp(ns, True),
    "custom_vjp_refuses_without_defvjp": lambda ns: _with_vjp(ns, False),
    "custom_jvp_refuses_without_defjvp": lambda ns: ns.jax.custom_jvp(lambda x: x)(X),
    "named_scope_context": lambda ns: _in_scope(ns),
    "named_scope_decorator": lambda ns: ns.jax.named_scope("s")(lambda: X)(),
    "named_scope_refuses_non_string": lambda ns: ns.jax.named_scope(3),
    "block_until_ready": lambda ns: ns.jax.block_until_ready((X, [X])),
    "device_put_float64": lambda ns: ns.jax.device_put(X.astype(np.float64)),
    "device_put_python_scalar": lambda ns: ns.jax.device_put(1.5),
    "device_count": lambda ns: ns.jax.device_count(),
    "array_isinstance": lambda ns: (isinstance(ns.jnp.zeros(3), ns.jax.Array),
                                    isinstance(ns.jnp.zeros(3), ns.jnp.ndarray),
                                    isinstance(3.0, ns.jax.Array),
                                    isinstance(ns.random.key(0), ns.jax.Array)),
    "lax_rsqrt": lambda ns: ns.lax.rsqrt(np.float32(4)),
    "jnp_names_the_flash_kernel_uses": lambda ns: (
        ns.jnp.rint(np.array([0.5, 1.5, 2.5], np.float32)), ns.jnp.pow(X, 2),
        ns.jnp.zeros(2, ns.jnp.bool).dtype == np.bool_, ns.jnp.zeros(2, ns.jnp.int4).dtype.name),
}


def _in_scope(ns):
    with ns.jax.named_scope("block"):
        return X + 1


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_jax_functions_agree_with_jax(name):
    compare(OTHERS[name])


def test_device_queries_have_jaxs_structure():
    devices = SIM.jax.devices()
    real = JAX.jax.devices()
    assert len(devices) == len(real) == 1 and devices[0].id == real[0].id == 0
    assert isinstance(devices[0].platform, str) and "TPU" in devices[0].device_kind, (
        "pallas_sim's one device is the simulated TPU core (tutorials assert 'TPU' in "
        "device_kind)")
    assert SIM.jax.default_backend() == "tpu" and JAX.jax.default_backend() == "cpu"


# -- .at ----------------------------------------------------------------------------------------

BASE = np.arange(10, dtype=np.int32)
FLOATS = np.arange(10, dtype=np.float32)
GRID = np.arange(12, dtype=np.float32).reshape(3, 4)
DUP = np.array([1, 1, 3], np.int32)
OOB = np.array([1, 12, -1, -12], np.int32)

AT = {
    "set": lambda at: at(BASE)[2].set(9),
    "set_slice": lambda at: at(BASE)[2:5].set(np.array([7, 8, 9], np.int32)),
    "set_negative": lambda at: at(BASE)[-1].set(0),
    "set_out_of_bounds_dropped": lambda at: at(BASE)[12].set(9),
    "set_clip": lambda at: at(BASE)[12].set(9, mode="clip"),
    "set_bool_mask": lambda at: at(BASE)[BASE > 5].set(0),
    "set_reversed_slice": lambda at: at(BASE)[::-1].set(BASE),
    "set_row_broadcast": lambda at: at(GRID)[1].set(np.array([1, 2, 3, 4], np.float32)),
    "set_ellipsis_none": lambda at: at(GRID)[..., None, 0].set(np.float32(-1)),
    "set_mixed_int_and_array": lambda at: at(GRID)[np.array([0, 2]), 1].set(np.float32(5)),
    "set_float_into_int": lambda at: at(BASE)[1].set(2.7),
    "add_repeats_accumulate": lambda at: at(BASE)[DUP].add(1),
    "add_out_of_bounds": lambda at: at(BASE)[OOB].add(100),
    "add_no_wrap": lambda at: at(BASE)[OOB].add(100, wrap_negative_indices=False),
    "add_clip": lambda at: at(BASE)[OOB].add(100, mode="clip"),
    "add_2d": lambda at: at(GRID)[:, np.array([0, 0, 3])].add(np.float32(1)),
    "add_none": lambda at: at(GRID)[None, 1, :2].add(np.ones((1, 2), np.float32)),
    "subtract": lambda at: at(FLOATS)[DUP].subtract(np.float32(0.5)),
    "multiply": lambda at: at(BASE)[1:4].multiply(3),
    "mul": lambda at: at(BASE)[DUP].mul(2),
    "divide_int_becomes_float": lambda at: at(BASE)[1:3].divide(2),
    "divide_float": lambda at: at(FLOATS)[DUP].divide(np.float32(2)),
    "power": lambda at: at(FLOATS)[2].power(np.float32(2)),
    "min": lambda at: at(BASE)[1:3].min(0),
    "max": lambda at: at(BASE)[DUP].max(np.array([5, 7, 2], np.int32)),
    "apply": lambda at: at(FLOATS)[DUP].apply(lambda v: v * 10),
    "get": lambda at: at(BASE)[2:4].get(),
    "get_out_of_bounds_clamps": lambda at: at(BASE)[OOB].get(),
    "get_fill": lambda at: at(FLOATS)[OOB].get(mode="fill", fill_value=-1),
    "get_fill_default_float": lambda at: at(FLOATS)[OOB].get(mode="fill"),
    "get_fill_default_int": lambda at: at(BASE)[OOB].get(mode="fill"),
    "get_2d_fill": lambda at: at(GRID)[np.array([0, 5]), 1:3].get(mode="fill"),
}


@pytest.mark.parametrize("name", sorted(AT))
def test_indexed_updates_agree_with_jaxs_at(name):
    def at(ns):
        return IndexUpdateHelper if ns is SIM else (lambda x: JAX.jnp.asarray(x).at)

    compare(lambda ns: AT[name](at(ns)), exact=True)


def test_at_never_changes_the_array_it_updates():
    before = GRID.copy()
    IndexUpdateHelper(GRID)[0].set(np.float32(-1))
    IndexUpdateHelper(GRID)[np.array([0, 0])].add(np.float32(1))
    assert np.array_equal(GRID, before), "x.at[...].set/add returns a new array; x is unchanged"


# -- the namespaces: what exists, and how the rest is refused --------------------------------------

SIM_MODULES = {
    "jax": pallas_sim.jax, "jax.numpy": pallas_sim.jnp, "jax.lax": pallas_sim.jax.lax,
    "jax.nn": pallas_sim.jax.nn, "jax.random": pallas_sim.jax.random,
    "jax.tree": pallas_sim.jax.tree, "jax.tree_util": pallas_sim.jax.tree_util,
    "jax.experimental.pallas": pallas_sim.pl, "jax.experimental.pallas.tpu": pallas_sim.pltpu,
}


def test_the_stored_jax_names_are_those_of_the_installed_jax():
    assert JAX_VERSION == real_jax.__version__, (
        f"pallas_sim/jax_names.py lists JAX {JAX_VERSION}'s names but JAX "
        f"{real_jax.__version__} is installed: run python -m pallas_sim.backends.surface_names")
    for namespace in NAMESPACES:
        assert NAMES[namespace] == public_names(namespace), (
            f"{namespace}: the stored names differ from the installed JAX's; run "
            "python -m pallas_sim.backends.surface_names")


@pytest.mark.parametrize("namespace", sorted(SIM_MODULES))
def test_every_public_name_exists_in_jax_and_every_missing_one_raises_our_error(namespace):
    module = SIM_MODULES[namespace]
    extra = sorted(set(module.__all__) - NAMES[namespace])
    assert not extra, (f"{module.__name__}.__all__ lists names real {namespace} lacks (code "
                       f"using them would not run on JAX): {extra}")
    for name in sorted(NAMES[namespace] - set(module.__all__)):
        if hasattr(type(module), name) or name in vars(module):
            continue  # a module attribute such as an imported helper module
        with pytest.raises(UnsupportedJaxAPIError, match=f"`{namespace}.{name}`") as info:
            getattr(module, name)
        assert "is not supported by pallas_sim" in str(info.value), str(info.value)


@pytest.mark.parametrize("namespace", sorted(SIM_MODULES))
def test_a_name_jax_lacks_too_says_so(namespace):
    module = SIM_MODULES[namespace]
    with pytest.raises(UnsupportedJaxAPIError, match="does not exist in JAX"):
        module.no_such_function_anywhere  # noqa: B018
    assert not hasattr(module, "no_such_function_anywhere"), (
        "the error is an AttributeError too, so hasattr() is False")
    with pytest.raises(AttributeError) as info:
        module._private_probe  # noqa: B018
    assert not isinstance(info.value, UnsupportedJaxAPIError), "private names: plain errors"


# -- the right namespace for a name ------------------------------------------


def _in_jax(spelled: str) -> bool:
    """Whether the installed JAX has ``spelled`` ("pltpu.make_async_copy", "jnp.exp",
    "jax.lax.fori_loop")."""
    from pallas_sim._src.surface import HOMES

    prefix, _, name = spelled.rpartition(".")
    namespace = next(ns for ns, short, _ in HOMES if short == prefix)
    return hasattr(importlib.import_module(namespace), name)


def test_every_suggested_spelling_exists_in_jax_and_the_refused_one_does_not():
    """Each name pallas_sim offers somewhere, asked for in another namespace that JAX 0.10.2
    lacks it in: the refusal names where it is, and that spelling exists in the installed
    JAX (``pl.make_async_copy`` -> ``pltpu.make_async_copy``, ``jnp.dot_general`` ->
    ``jax.lax.dot_general``, ...)."""
    from pallas_sim._src.surface import HOMES, elsewhere

    offered = {name for _, _, module in HOMES
               for name in importlib.import_module(module).__all__}
    checked = 0
    for namespace, _, module in HOMES:
        sim_module, real_names = importlib.import_module(module), public_names(namespace)
        for name in sorted(offered - set(sim_module.__all__) - real_names):
            home = elsewhere(namespace, name)
            if home is None or name in vars(sim_module):  # a helper import (random.Array)
                continue
            suggested = home.split(" is ")[1].split(" in ")[0]
            assert _in_jax(suggested), f"{home}: JAX has no {suggested}"
            with pytest.raises(UnsupportedJaxAPIError) as info:
                getattr(sim_module, name)
            # the table's sentence, or a hand-written hint (HINTS) naming the same spelling
            assert home in str(info.value) or suggested in str(info.value), str(info.value)
            checked += 1
    assert checked > 100, f"only {checked} cross-namespace names were checked"
