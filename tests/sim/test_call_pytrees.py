"""``None`` and pytrees in ``pallas_call``: ``in_specs``/``out_specs``
entries, ``out_shape`` trees, argument trees and dict scratch, as JAX 0.10.x treats them
(``None`` is an empty subtree, never "the whole array")."""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)
ROWS = pl.BlockSpec((8, 128), lambda i: (i, 0))


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(in_specs=[None], out_specs=ROWS),
     r"Pytree for `in_specs` and `inputs` do not match. There are 1 mismatches, including:\n"
     r"    \* at \[0\], `in_specs` is a <class 'NoneType'> but `inputs` is a pytree leaf, so "
     r"their Python types differ"),
    (dict(in_specs=[ROWS], out_specs=None),
     r"\* `out_specs` is a <class 'NoneType'> but `out_shape` is a pytree leaf"),
    (dict(in_specs=[ROWS], out_specs=[None]),
     r"`out_specs` is a <class 'tuple'> but `out_shape` is a pytree leaf"),
    (dict(in_specs=None, out_specs=ROWS), r"`in_specs` must be a tuple or a list. Found: None"),
    (dict(in_specs=ROWS, out_specs=ROWS), r"`in_specs` must be a tuple or a list. Found: "
                                          r"BlockSpec"),
])
def test_none_entries_and_bare_specs_are_refused_with_jaxs_messages(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pl.pallas_call(copy_kernel, out_shape=F32, grid=(2,), **kwargs)(X)


def test_in_specs_of_the_wrong_length_name_both_lengths():
    with pytest.raises(ValueError, match="`in_specs` is a tuple of length 1 but `inputs` is a "
                                         "tuple of length 2"):
        pl.pallas_call(lambda x, y, o: None, out_shape=F32, grid=(2,), in_specs=[ROWS],
                       out_specs=ROWS)(X, X)


def test_left_out_specs_give_whole_arrays():
    out = pl.pallas_call(copy_kernel, out_shape=F32, in_specs=pl.no_block_spec)(X)
    np.testing.assert_array_equal(out, X)
    assert repr(pl.no_block_spec) == "NoBlockSpec"


def test_out_shape_trees_come_back_as_the_same_trees():
    def dict_kernel(x_ref, o):
        o["a"][...] = x_ref[...]
        o["b"][...] = x_ref[...] * 2

    out = pl.pallas_call(dict_kernel, out_shape={"a": F32, "b": F32}, grid=(2,),
                         in_specs=[ROWS], out_specs={"a": ROWS, "b": ROWS})(X)
    assert sorted(out) == ["a", "b"]
    np.testing.assert_array_equal(out["b"], X * 2)

    def nested_kernel(x_ref, first, rest):
        first[...] = x_ref[...]
        rest[0][...] = x_ref[...] + 1

    out = pl.pallas_call(nested_kernel, out_shape=[F32, (F32,)])(X)
    assert isinstance(out, tuple) and isinstance(out[1], tuple), (
        "a top-level list becomes a tuple, as in JAX; the inner tuple stays")
    np.testing.assert_array_equal(out[1][0], X + 1)


def test_a_none_in_out_shape_makes_no_output_and_the_kernel_sees_none():
    seen = []

    def kernel(x_ref, o_ref, nothing):
        seen.append(nothing)
        o_ref[...] = x_ref[...]

    out = pl.pallas_call(kernel, out_shape=(F32, None))(X)
    assert seen == [None] and out[1] is None
    np.testing.assert_array_equal(out[0], X)
    assert pl.pallas_call(lambda x_ref: None, out_shape=())(X) == ()


def test_argument_trees_reach_the_kernel_as_trees_of_refs():
    def kernel(pair, o_ref):
        o_ref[...] = pair[0][...] + pair[1][...]

    with pallas_sim.trace() as t:
        out = pl.pallas_call(kernel, out_shape=F32, grid=(2,), in_specs=[(ROWS, ROWS)],
                             out_specs=ROWS)((X, X + 1))
    np.testing.assert_array_equal(out, 2 * X + 1)
    assert [op.name for op in t.last.role("in")] == ["pair[0]", "pair[1]"], (
        "each leaf is named by its parameter and key path")


def test_dict_scratch_shapes_arrive_as_keyword_arguments():
    def kernel(x_ref, o_ref, *, acc, count):
        acc[...] = x_ref[...] * 3
        count[0] = 7
        o_ref[...] = acc[...] + count[0]

    with pallas_sim.trace() as t:
        out = pl.pallas_call(kernel, out_shape=F32, scratch_shapes=dict(
            acc=pltpu.VMEM((16, 128), jnp.float32), count=pltpu.SMEM((1,), jnp.int32)))(X)
    np.testing.assert_array_equal(out, X * 3 + 7)
    assert [op.name for op in t.last.role("scratch")] == ["acc", "count"]


def test_input_output_aliases_count_flattened_leaves():
    def kernel(pair, o_ref):
        o_ref[...] = pair[1][...] + 1

    acc = X * 2
    with pallas_sim.trace() as t:
        out = pl.pallas_call(kernel, out_shape=F32, input_output_aliases={1: 0})((X, acc))
    assert t.last.input_output_aliases == ((1, 0),), "leaf 1 (pair[1]) is aliased to output 0"
    np.testing.assert_array_equal(out, X * 2 + 1)
    np.testing.assert_array_equal(acc, X * 2)  # JAX arrays are immutable: acc is unchanged
