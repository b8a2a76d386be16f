"""The JAX-spelled API inside and around kernels: program_id, num_programs, when,
ds, cdiv, jnp.dot, ShapeDtypeStruct, out_shape tuples, squeezed dims, whole-array
operands, aliasing, dimension semantics and ref bounds."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS, add_kernel, grid_points, traced

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim._src.values import concrete  # the tests' own records of traced values


def test_grid_runs_row_major_with_the_last_axis_fastest():
    visits = []

    def kernel(o_ref):
        visits.append(
            (tuple(int(concrete(pl.program_id(a))) for a in range(3)),
             tuple(int(pl.num_programs(a)) for a in range(3)))
        )
        o_ref[...] = jnp.zeros(o_ref.shape, np.float32)

    pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8, 128), np.float32),
        grid=(2, 3, 2),
        out_specs=pl.BlockSpec((8, 128), lambda i, j, k: (0, 0)),
    )()
    assert [v[0] for v in visits] == grid_points((2, 3, 2)), (
        f"program ids in visiting order {[v[0] for v in visits]}; grid (2, 3, 2) runs "
        "row-major, last axis fastest: (0,0,0), (0,0,1), (0,1,0), ..."
    )
    assert all(v[1] == (2, 3, 2) for v in visits), "pl.num_programs(a) is the grid's size on a"


def test_integer_grid_means_a_one_axis_grid():
    x = np.arange(32 * 128, dtype=np.float32).reshape(32, 128)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    out, call = traced(
        pl.pallas_call(
            add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=4, in_specs=[spec, spec], out_specs=spec,
        ),
        x,
        x,
    )
    assert tuple(call.grid) == (4,) and call.num_steps == 4, f"grid=4 is (4,); got {call.grid}"
    assert np.array_equal(out, 2 * x), "x + x over 4 row blocks"


def test_when_runs_its_body_only_when_true_and_the_trace_counts_it():
    ran = []

    def kernel(o_ref):
        i = pl.program_id(0)

        @pl.when(i == 0)
        def _():
            ran.append(("first", int(concrete(i))))

        @pl.when(i == pl.num_programs(0) - 1)
        def _():
            ran.append(("last", int(concrete(i))))

        @pl.when(i < 0)
        def _():
            ran.append(("never", int(concrete(i))))

        o_ref[...] = jnp.zeros(o_ref.shape, np.float32)

    _, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((40, 128), np.float32),
            grid=(5,),
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        )
    )
    assert ran == [("first", 0), ("last", 4)], (
        f"bodies run: {ran}; pl.when(cond) runs its body exactly at the steps where cond holds"
    )
    assert call.when_bodies_run == 2, (
        f"when_bodies_run {call.when_bodies_run}; 3 pl.when per step x 5 steps, of which "
        "i == 0 once and i == 4 once are true: 2"
    )


def test_ds_selects_a_dynamic_slice_of_a_ref():
    def kernel(x_ref, o_ref):
        k = pl.program_id(0)
        o_ref[pl.ds(0, 8), :] = x_ref[pl.ds(k * 8, 8), :]
        o_ref[pl.dslice(8, 8), :] = x_ref[pl.dslice(0, 8), :]

    x = np.arange(32 * 128, dtype=np.float32).reshape(32, 128)
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((4 * 16, 128), np.float32),
        grid=(4,),
        in_specs=[pl.BlockSpec((32, 128), lambda k: (0, 0))],
        out_specs=pl.BlockSpec((16, 128), lambda k: (k, 0)),
    )(x)
    for k in range(4):
        assert np.array_equal(out[16 * k:16 * k + 8], x[8 * k:8 * k + 8]), (
            f"step {k}: pl.ds({8 * k}, 8) reads rows {8 * k}..{8 * k + 7}"
        )
        assert np.array_equal(out[16 * k + 8:16 * k + 16], x[0:8]), "pl.dslice(0, 8): rows 0..7"


def test_ds_takes_jaxs_other_forms_none_a_length_and_a_stride():
    """As jax.experimental.pallas.ds: ds(None) is ``:``, ds(j) is ``:j``, ds(i, j, s) is
    j elements from i, s apart (the reference flash-attention kernel reads its bias with
    ``pl.dslice(None)``)."""
    def kernel(x_ref, o_ref):
        o_ref[0:1, :] = x_ref[pl.ds(None)][0:1, :]
        o_ref[1:2, :] = x_ref[pl.ds(1), :] * 2
        o_ref[pl.ds(2, 3, 2), :] = x_ref[pl.dslice(0, 3, 3), :]  # rows 2, 4, 6 <- 0, 3, 6
        o_ref[pl.ds(3, 3, 2), :] = jnp.zeros((3, 128), jnp.float32)  # rows 3, 5, 7

    x = np.arange(8 * 128, dtype=np.float32).reshape(8, 128)
    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    np.testing.assert_array_equal(out[0], x[0], err_msg="pl.ds(None) reads the whole ref")
    np.testing.assert_array_equal(out[1], 2 * x[0], err_msg="pl.ds(1) is the slice :1")
    np.testing.assert_array_equal(out[[2, 4, 6]], x[[0, 3, 6]],
                                  err_msg="pl.ds(0, 3, 3) is rows 0, 3, 6; ds(2, 3, 2) 2, 4, 6")
    assert not out[[3, 5, 7]].any()
    with pytest.raises(ValueError, match="stride"):
        pl.ds(0, 4, -1)


@given(a=st.integers(0, 10**6), b=st.integers(1, 10**4))
@SIM_SETTINGS
def test_cdiv_is_ceiling_division(a, b):
    assert pl.cdiv(a, b) == -(-a // b), f"cdiv({a}, {b}) = ceil({a} / {b}) = {-(-a // b)}"


def test_cdiv_worked_values():
    assert (pl.cdiv(1000, 256), pl.cdiv(1024, 256), pl.cdiv(1, 256)) == (4, 4, 1), (
        "cdiv(1000, 256) = 4 (3.9 rounded up), cdiv(1024, 256) = 4, cdiv(1, 256) = 1"
    )


@SIM_SETTINGS
@given(m=st.integers(1, 16), k=st.integers(1, 300), n=st.integers(1, 16), seed=st.integers(0, 99))
def test_bf16_dot_with_f32_preferred_element_type_matches_float64(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(jnp.bfloat16)
    b = rng.standard_normal((k, n)).astype(jnp.bfloat16)
    got = jnp.dot(a, b, preferred_element_type=jnp.float32)
    assert np.dtype(got.dtype) == np.float32, (
        f"preferred_element_type=f32 gives f32, got {got.dtype}"
    )
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    bound = 4 * k * np.finfo(np.float32).eps * scale + 1e-30
    assert np.all(np.abs(got - exact) <= bound), (
        f"bf16 ({m},{k}) @ ({k},{n}) accumulated in f32 must match the float64 product of the "
        f"same bf16 values within 4*K*eps32*(|a|@|b|); max error "
        f"{np.max(np.abs(got - exact)):.3g}"
    )


def test_bf16_dot_inside_a_kernel_accumulates_in_f32():
    def kernel(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    a = np.full((8, 512), 1 + 2**-7, jnp.bfloat16)  # 1.0078125 is a bf16 value
    b = np.ones((512, 128), jnp.bfloat16)
    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(a, b)
    assert out.dtype == np.float32 and np.all(out == 512 * (1 + 2**-7)), (
        "512 x 1.0078125 = 516.0 exactly in f32; a bf16 accumulator would have lost the "
        f"fraction (bf16 spacing at 512 is 4); got {np.unique(out)}"
    )


def test_shape_dtype_struct_holds_shape_and_dtype():
    s = jax.ShapeDtypeStruct((8, 128), jnp.bfloat16)
    assert tuple(s.shape) == (8, 128) and np.dtype(s.dtype) == np.dtype(jnp.bfloat16), (
        f"ShapeDtypeStruct((8, 128), bfloat16) -> shape {s.shape}, dtype {s.dtype}"
    )
    out = pl.pallas_call(lambda o_ref: None, out_shape=s)()
    assert out.shape == (8, 128) and out.dtype == np.dtype(jnp.bfloat16), (
        "the output array takes out_shape's shape and dtype"
    )


def test_shape_dtype_struct_like_takes_an_arrays_shape_in_jaxs_32_bit_dtypes():
    """jax.ShapeDtypeStruct.like(x) (the Pallas quickstart's ``out_shape``): x's shape,
    and its dtype as JAX would hold it with 64-bit types off."""
    like = jax.ShapeDtypeStruct.like
    assert like(np.zeros((8, 128), jnp.bfloat16)) == jax.ShapeDtypeStruct((8, 128), jnp.bfloat16)
    assert like(np.zeros((2, 3))) == jax.ShapeDtypeStruct((2, 3), np.float32), "float64 -> f32"
    assert like(np.arange(4)) == jax.ShapeDtypeStruct((4,), np.int32), "int64 -> int32"
    assert like(jax.ShapeDtypeStruct((5,), jnp.int8)) == jax.ShapeDtypeStruct((5,), jnp.int8)
    assert (like(3), like(2.5), like(True)) == (jax.ShapeDtypeStruct((), np.int32),
                                                jax.ShapeDtypeStruct((), np.float32),
                                                jax.ShapeDtypeStruct((), np.bool_))
    x = np.ones((16, 128), np.float32)
    out = pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct.like(x))(x, x)
    assert out.shape == x.shape and out.dtype == x.dtype and (out == 2).all()


def test_tuple_out_shape_returns_a_tuple_of_outputs():
    def kernel(x_ref, y_ref, s_ref, d_ref):
        s_ref[...] = x_ref[...] + y_ref[...]
        d_ref[...] = (x_ref[...] - y_ref[...]).astype(np.int32)

    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, (16, 256)).astype(np.float32)
    y = rng.integers(-50, 50, (16, 256)).astype(np.float32)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    result, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=(jax.ShapeDtypeStruct(x.shape, np.float32),
                       jax.ShapeDtypeStruct(x.shape, np.int32)),
            grid=(2, 2),
            in_specs=[spec, spec],
            out_specs=(spec, spec),
        ),
        x,
        y,
    )
    assert isinstance(result, tuple) and len(result) == 2, "tuple out_shape -> tuple of 2 arrays"
    s, d = result
    assert s.dtype == np.float32 and np.array_equal(s, x + y), "first output: x + y, f32"
    assert d.dtype == np.int32 and np.array_equal(d, (x - y).astype(np.int32)), "second: int32"
    roles = [(op.name, op.role) for op in call.operands]
    assert roles == [("x_ref", "in"), ("y_ref", "in"), ("s_ref", "out"), ("d_ref", "out")], (
        f"trace operands in kernel order inputs, outputs, named after the kernel's "
        f"parameters: {roles}"
    )


def test_none_block_dim_is_squeezed_but_still_indexed_by_the_index_map():
    shapes, blocks = [], []

    def kernel(x_ref, o_ref):
        shapes.append(tuple(x_ref.shape))
        blocks.append(concrete(x_ref[...]))
        o_ref[...] = x_ref[...] * 2

    x = np.arange(3 * 16 * 128, dtype=np.float32).reshape(3, 16, 128)
    spec = pl.BlockSpec((None, 8, 128), lambda h, i: (h, i, 0))
    out, call = traced(
        pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(3, 2),
            in_specs=[spec],
            out_specs=spec,
        ),
        x,
    )
    assert set(shapes) == {(8, 128)}, (
        f"block (None, 8, 128) gives the kernel a squeezed (8, 128) ref; got {set(shapes)}"
    )
    for t, (h, i) in enumerate(grid_points((3, 2))):
        assert np.array_equal(blocks[t], x[h, 8 * i:8 * i + 8]), (
            f"step {(h, i)}: the index map's first component {h} picks the head"
        )
    assert np.array_equal(out, 2 * x), "every (head, row block) written"
    x_op = call.operands[0]
    indices = np.asarray(x_op.block_indices)
    assert indices.shape == (6, 3), (
        f"block_indices shape {indices.shape}; 6 steps x 3 dims (the squeezed dim keeps its "
        "block index)"
    )
    assert tuple(x_op.block_shape) == (None, 8, 128), (
        f"trace block_shape {x_op.block_shape} keeps None for the squeezed dim"
    )
    assert call.vmem_bytes == 2 * 2 * 8 * 128 * 4, (
        f"vmem_bytes {call.vmem_bytes}; a squeezed dim counts 1: 2 operands x 2 buffers x "
        "8*128*4 B = 16384"
    )


def test_no_in_specs_puts_every_whole_array_in_vmem():
    shapes = []

    def kernel(x_ref, y_ref, o_ref):
        shapes.append((tuple(x_ref.shape), tuple(y_ref.shape), tuple(o_ref.shape)))
        o_ref[...] = x_ref[...] + y_ref[...]

    x = np.arange(24 * 256, dtype=np.float32).reshape(24, 256)
    y = np.ones((24, 256), np.float32)
    out, call = traced(pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)),
                       x, y)
    assert shapes == [((24, 256), (24, 256), (24, 256))], (
        f"without BlockSpecs the kernel runs once on whole-array refs; saw {shapes}"
    )
    assert np.array_equal(out, x + y), "x + y"
    assert call.vmem_bytes == 3 * 24 * 256 * 4, (
        f"vmem_bytes {call.vmem_bytes}; 3 whole arrays, 1 buffer each: 3 x 24*256*4 B"
    )


def test_input_output_alias_returns_acc_plus_x_and_never_changes_the_callers_array():
    def kernel(acc_ref, x_ref, o_ref):
        o_ref[...] = acc_ref[...] + x_ref[...]

    acc = np.arange(32 * 256, dtype=np.float32).reshape(32, 256)
    before = acc.copy()
    x = np.full((32, 256), 0.5, np.float32)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(acc.shape, acc.dtype),
        grid=(4, 2),
        in_specs=[spec, spec],
        out_specs=spec,
        input_output_aliases={0: 0},
    )(acc, x)
    assert np.array_equal(out, before + 0.5), "the output holds acc + x"
    assert out is not acc and np.array_equal(acc, before), (
        "JAX arrays are immutable: aliasing reuses acc's HBM buffer on a TPU, but the "
        "caller's acc keeps its values")
    with pallas_sim.trace() as t:
        again = pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(acc.shape, acc.dtype), grid=(4, 2),
            in_specs=[spec, spec], out_specs=spec, input_output_aliases={0: 0})(acc, x)
    assert np.array_equal(again, out), "a second call with the same acc sees the same acc"
    assert t.calls[0].input_output_aliases == ((0, 0),), "the trace records the aliasing"


def test_aliased_output_buffer_is_not_filled_from_hbm():
    def kernel(acc_ref, o_ref):
        o_ref[...] += 1  # reads the output buffer before writing it: a bug

    acc = np.zeros((8, 128), np.float32)
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(acc.shape, acc.dtype),
        input_output_aliases={0: 0},
    )(acc)
    assert np.all(np.isnan(out)), (
        "an output buffer is never filled from HBM, even when aliased: it starts poisoned, "
        "so o_ref += 1 gives NaN, not 1"
    )


@pytest.mark.parametrize(
    ("out_shape", "what"),
    [(jax.ShapeDtypeStruct((8, 256), np.float32), "shape"),
     (jax.ShapeDtypeStruct((8, 128), np.int32), "dtype")],
)
def test_input_output_alias_with_mismatched_shape_or_dtype_is_a_value_error(out_shape, what):
    acc = np.zeros((8, 128), np.float32)
    with pytest.raises(ValueError) as info:
        pl.pallas_call(
            lambda acc_ref, o_ref: None, out_shape=out_shape, input_output_aliases={0: 0}
        )(acc)
    assert info.value is not None, (
        f"input 0 f32[8,128] aliased to an output with a different {what} must be refused"
    )


@pytest.mark.parametrize("semantics", [("parallel",), ("parallel", "arbitrary", "arbitrary")])
def test_dimension_semantics_needs_one_entry_per_grid_axis(semantics):
    x = np.zeros((16, 256), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    with pytest.raises(ValueError):
        pl.pallas_call(
            add_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(2, 2),
            in_specs=[spec, spec],
            out_specs=spec,
            compiler_params=pltpu.CompilerParams(dimension_semantics=semantics),
        )(x, x)


@pytest.mark.parametrize(
    "semantics",
    [("arbitrary", "parallel"), (pltpu.ARBITRARY, pltpu.PARALLEL)],
    ids=["strings", "constants"],
)
def test_parallel_axes_must_form_a_prefix_of_the_grid(semantics):
    x = np.zeros((16, 256), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    with pytest.raises(ValueError) as info:
        pl.pallas_call(
            add_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(2, 2),
            in_specs=[spec, spec],
            out_specs=spec,
            compiler_params=pltpu.CompilerParams(dimension_semantics=semantics),
        )(x, x)
    message = "Dimensions with parallel semantics must form a prefix of the grid."
    assert message in str(info.value), (
        f"JAX's message for ('arbitrary', 'parallel'); got: {info.value}"
    )


def test_dimension_semantics_are_recorded_in_the_trace():
    x = np.zeros((16, 256), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    _, call = traced(
        pl.pallas_call(
            add_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(2, 2),
            in_specs=[spec, spec],
            out_specs=spec,
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=(pltpu.PARALLEL, "arbitrary")
            ),
        ),
        x,
        x,
    )
    assert tuple(call.dimension_semantics) == ("parallel", "arbitrary"), (
        f"trace dimension_semantics {call.dimension_semantics}; pltpu.PARALLEL is 'parallel'"
    )


@pytest.mark.parametrize(
    ("read", "ref_name"),
    [
        (lambda x_ref, o_ref: x_ref[8, 0], "x_ref"),
        (lambda x_ref, o_ref: x_ref[pl.ds(4, 8), :], "x_ref"),
        (lambda x_ref, o_ref: x_ref[:, 128], "x_ref"),
        (lambda x_ref, o_ref: o_ref.__setitem__((pl.ds(1, 8), slice(None)),
                                                np.zeros((8, 128), np.float32)), "o_ref"),
    ],
    ids=["row 8 of 8", "ds(4, 8) of 8 rows", "column 128 of 128", "write ds(1, 8)"],
)
def test_indexing_a_ref_outside_its_shape_is_an_index_error_naming_the_ref(read, ref_name):
    def kernel(x_ref, o_ref):
        read(x_ref, o_ref)
        o_ref[...] = x_ref[...]

    x = np.zeros((16, 128), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    with pytest.raises(IndexError) as info:
        pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(2,), in_specs=[spec], out_specs=spec,
        )(x)
    assert ref_name in str(info.value), (
        f"the (8, 128) block ref {ref_name} was indexed out of bounds; the IndexError must "
        f"name it: {info.value}"
    )


@pytest.mark.parametrize(("store", "target", "value"), [
    (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, 0.0), (8, 128), ()),
    (lambda x_ref, o_ref: o_ref.__setitem__((slice(None), slice(None)), -np.inf), (8, 128), ()),
    (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, x_ref[0:1, :]), (8, 128), (1, 128)),
    (lambda x_ref, o_ref: o_ref.__setitem__(Ellipsis, jnp.max(x_ref[...], axis=1)[:, None]),
     (8, 128), (8, 1)),
    (lambda x_ref, o_ref: o_ref.__setitem__(0, jnp.float32(1)), (128,), ()),
], ids=["python float into a block", "-inf into [:, :]", "a row into a block",
        "a (8, 1) column into a block", "a scalar into a row"])
def test_a_store_must_have_the_targets_shape_as_in_jax(store, target, value):
    """JAX 0.10.x never broadcasts a stored value ("Invalid shape for `swap`"), not even a
    scalar; NumPy would, so a kernel that relies on it ran here and failed on JAX."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        store(x_ref, o_ref)

    x = np.zeros((8, 128), np.float32)
    with pytest.raises(ValueError, match=re.escape(
            f"Invalid shape for `swap`. Ref shape: (8, 128). Expected shape: {target}. "
            f"Value shape: {value}.")):
        pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def test_stores_of_the_targets_shape_are_fine_a_scalar_into_one_element_too():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += 1
        o_ref[0, 0] = 5.0  # a 0-d target takes a Python scalar
        o_ref[1, :] = jnp.full((128,), 2.0, jnp.float32)
        o_ref[pl.ds(2, 2), :] = jnp.broadcast_to(x_ref[0:1, :], (2, 128))

    x = np.full((8, 128), 7.0, np.float32)
    out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    assert out[0, 0] == 5 and (out[1] == 2).all() and (out[2:4] == 7).all()
    assert (out[4:] == 1).all() and (out[0, 1:] == 1).all()


def test_kernel_returning_a_value_is_an_error():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        return o_ref[...]

    x = np.zeros((8, 128), np.float32)
    with pytest.raises(pallas_sim.PallasSimError):
        pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def test_interpret_name_and_debug_are_accepted_and_ignored():
    x = np.ones((8, 128), np.float32)
    out, call = traced(
        pl.pallas_call(
            add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            interpret=True, name="my_add", debug=False,
        ),
        x,
        x,
    )
    assert np.array_equal(out, 2 * x), "interpret/debug change nothing"
    assert call.name == "my_add", f"trace name {call.name!r}; name= names the call"


def test_grid_spec_form_equals_the_keyword_form():
    x = np.arange(32 * 256, dtype=np.float32).reshape(32, 256)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    keyword, call_a = traced(
        pl.pallas_call(add_kernel, out_shape=out_shape, grid=(4, 2),
                       in_specs=[spec, spec], out_specs=spec),
        x,
        x,
    )
    grid_spec = pl.GridSpec(grid=(4, 2), in_specs=[spec, spec], out_specs=spec)
    via_spec, call_b = traced(
        pl.pallas_call(add_kernel, out_shape=out_shape, grid_spec=grid_spec), x, x
    )
    assert np.array_equal(keyword, via_spec) and np.array_equal(via_spec, 2 * x)
    assert call_a == call_b, "grid_spec=pl.GridSpec(...) is the same call as grid=/in_specs=/..."


def test_ragged_aliased_accumulate_returns_the_sum_without_padding():
    def kernel(acc_ref, x_ref, o_ref):
        o_ref[...] = acc_ref[...] + x_ref[...]

    acc = np.arange(10 * 130, dtype=np.float32).reshape(10, 130)
    before = acc.copy()
    x = np.ones((10, 130), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(acc.shape, acc.dtype),
        grid=(2, 2),
        in_specs=[spec, spec],
        out_specs=spec,
        input_output_aliases={0: 0},
    )(acc, x)
    assert out.shape == acc.shape and np.array_equal(out, before + 1), (
        "f32[10,130] with (8,128) blocks is ragged on both axes; aliased, the result holds "
        "acc + x, with no padding leaking in"
    )
    assert np.array_equal(acc, before), "the caller's acc is unchanged"


def test_a_call_without_aliasing_leaves_its_inputs_unchanged():
    def kernel(x_ref, o_ref):
        x_ref[...] = jnp.zeros(x_ref.shape, np.float32)  # scribbles on the VMEM copy only
        o_ref[...] = x_ref[...]

    x = np.ones((16, 128), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(2,), in_specs=[spec], out_specs=spec,
    )(x)
    assert np.all(x == 1), (
        "writing an input ref changes its VMEM buffer, never the caller's HBM array"
    )


def test_a_ref_slice_that_selects_nothing_is_refused_naming_the_ref():
    # JAX fails on one with a ZeroDivisionError while tracing; pallas_sim says why.
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[6:2, :].sum() + x_ref[...]

    x = np.zeros((8, 128), np.float32)
    with pytest.raises(IndexError, match="selects nothing on axis 0 of x_ref"):
        pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
