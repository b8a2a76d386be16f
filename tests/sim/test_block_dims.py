"""Block-dimension kinds in ``BlockSpec.block_shape``: ``pl.Blocked``,
``pl.Squeezed``/``pl.squeezed``, ``pl.Element(n, padding)``, ``pl.BoundedSlice``, with
JAX's index-map semantics, DMA counting and VMEM accounting."""

from __future__ import annotations

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)
OUT = pl.BlockSpec((4, 128), lambda i: (i, 0))


def copy(in_spec, out_spec=OUT, grid=(4,), x=X):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    with pallas_sim.trace() as t:
        out = pl.pallas_call(kernel, out_shape=F32, grid=grid, in_specs=[in_spec],
                             out_specs=out_spec)(x)
    return out, t.last


def test_blocked_and_squeezed_are_the_int_and_the_none():
    plain, plain_call = copy(pl.BlockSpec((4, 128), lambda i: (i, 0)))
    blocked, blocked_call = copy(pl.BlockSpec((pl.Blocked(4), pl.Blocked(128)),
                                              lambda i: (i, 0)))
    np.testing.assert_array_equal(blocked, plain)
    assert blocked_call == plain_call, "pl.Blocked(n) is the int n, trace and all"
    rows = pl.BlockSpec((None, 128), lambda i: (i, 0))
    for squeezed in (pl.Squeezed(), pl.squeezed):
        out, call = copy(pl.BlockSpec((squeezed, 128), lambda i: (i, 0)),
                         pl.BlockSpec((squeezed, 128), lambda i: (i, 0)), grid=(16,))
        none_out, none_call = copy(rows, rows, grid=(16,))
        np.testing.assert_array_equal(out, none_out)
        assert call == none_call and call.operands[0].block_shape == (None, 128)


def test_an_element_dimension_takes_element_offsets_and_windows_may_overlap():
    out, call = copy(pl.BlockSpec((pl.Element(4), 128), lambda i: (i * 3, 0)))
    expected = np.concatenate([X[3 * i:3 * i + 4] for i in range(4)])
    np.testing.assert_array_equal(out, expected)
    x_op = call.operand("x_ref")
    assert x_op.element_dims == (0,) and x_op.block_shape == (4, 128)
    assert x_op.block_indices[:, 0].tolist() == [0, 3, 6, 9], "offsets, not block numbers"
    assert x_op.dma_count == 4 and x_op.hbm_bytes == 4 * 4 * 128 * 4
    assert call.vmem_bytes == 2 * (4 * 128 * 4) * 2, "x and o: (4, 128) f32 blocks, 2 buffers"


def test_element_padding_pads_the_dimension_with_poison_before_slicing():
    out, call = copy(pl.BlockSpec((pl.Element(4, (1, 1)), 128), lambda i: (i * 4, 0)))
    assert np.isnan(out[0]).all(), "offset 0 starts in the low padding: undefined (poison)"
    np.testing.assert_array_equal(out[1:], X[:15])
    assert call.operand("x_ref").hbm_bytes == 15 * 128 * 4, (
        "only rows inside the array move from HBM: 3 + 4 + 4 + 4")


def test_an_element_window_outside_the_dimension_is_an_out_of_bounds_error():
    for offset in (13, -1):
        with pytest.raises(pallas_sim.BlockIndexError,
                           match=rf"Out-of-bounds block index \({offset}, 0\) for input "
                                 r"'x_ref'.*element offset"):
            copy(pl.BlockSpec((pl.Element(4), 128), lambda i, offset=offset: (offset, 0)))


def test_an_element_output_writes_its_window_and_later_windows_win():
    out, _ = copy(pl.BlockSpec((4, 128), lambda i: (i, 0)),
                  pl.BlockSpec((pl.Element(4), 128), lambda i: (i * 2, 0)))
    np.testing.assert_array_equal(out[:10], np.concatenate([X[0:2], X[4:6], X[8:10],
                                                            X[12:16]]))
    assert np.isnan(out[10:]).all(), "rows no window covers keep the output's poison"


def test_bounded_slices_and_other_types_are_refused_with_jaxs_messages():
    with pytest.raises(ValueError, match="Unsupported block dim type"):
        copy(pl.BlockSpec((pl.BoundedSlice(4), 128), lambda i: (pl.ds(i * 4, 4), 0)))
    with pytest.raises(ValueError, match=r"Unsupported block dimension type: <class 'str'>"):
        pl.BlockSpec(("a", 128), lambda i: (i, 0))


def test_block_dims_print_as_jaxs():
    assert str(pl.Element(4)) == "Element(4)"
    assert str(pl.Element(4, (1, 2))) == "Element(4, padding=(1, 2))"
    assert str(pl.Blocked(3)) == "Blocked(3)" and repr(pl.BoundedSlice(3)) == "BoundedSlice(3)"
    assert pl.squeezed == pl.Squeezed()
