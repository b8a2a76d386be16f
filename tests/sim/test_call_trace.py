"""The trace records graders read (docs/pallas-sim.md "The trace"; docs/architecture.md
"Trace records")."""

from __future__ import annotations

import json

import numpy as np
from sim_helpers import MiB, blocked_add, traced

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu


def to_json(value):
    """json.dumps default=: NumPy arrays and scalars become lists and Python numbers."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def matmul_like_call(x, w):
    """A call with every kind of operand: blocked input, constant input, output, scratch."""

    def kernel(x_ref, w_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, np.float32)

        acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)
        o_ref[...] = acc_ref[...]

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((x.shape[0], w.shape[1]), np.float32),
        grid=(x.shape[0] // 8, x.shape[1] // 128),
        in_specs=[
            pl.BlockSpec((8, 128), lambda i, k: (i, k)),
            pl.BlockSpec((128, 128), lambda i, k: (k, 0)),
        ],
        out_specs=pl.BlockSpec((8, 128), lambda i, k: (i, 0)),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="matmul_like",
    )(x, w)


def test_trace_records_one_call_per_pallas_call_in_order_with_totals():
    x = np.ones((16, 256), np.float32)
    with pallas_sim.trace() as t:
        blocked_add(x, x, (8, 128))
        blocked_add(x, x, (16, 256))
    assert len(t.calls) == 2, f"{len(t.calls)} calls recorded; two pallas_calls ran"
    assert [c.num_steps for c in t.calls] == [4, 1], "call order kept: grid (2,2) then (1,1)"
    assert t.dma_count == sum(c.dma_count for c in t.calls) == 12 + 3, (
        f"trace total dma_count {t.dma_count}; 4 steps x 3 operands = 12, then 1 x 3 = 3"
    )
    assert t.hbm_bytes_read == 2 * 2 * 16 * 256 * 4, (
        f"trace total hbm_bytes_read {t.hbm_bytes_read}; 2 calls x 2 inputs x 16 KiB"
    )
    assert t.hbm_bytes_written == 2 * 16 * 256 * 4, (
        f"trace total hbm_bytes_written {t.hbm_bytes_written}; 2 calls x 16 KiB"
    )


def test_nothing_is_recorded_outside_a_trace_block():
    x = np.ones((8, 128), np.float32)
    with pallas_sim.trace() as t:
        pass
    blocked_add(x, x, (8, 128))
    assert len(t.calls) == 0, "calls made after the with block are not recorded"


def test_operand_records_describe_every_operand():
    x = np.ones((32, 256), np.float32)
    w = np.ones((256, 128), np.float32)
    out, call = traced(matmul_like_call, x, w)
    assert np.array_equal(out, x @ w), "the kernel computes x @ w"
    assert call.name == "matmul_like" and tuple(call.grid) == (4, 2) and call.num_steps == 8
    ops = {op.name: op for op in call.operands}
    assert [op.name for op in call.operands] == ["x_ref", "w_ref", "o_ref", "acc_ref"], (
        "operands in kernel order (inputs, outputs, scratch), named after kernel parameters"
    )
    assert [op.role for op in call.operands] == ["in", "in", "out", "scratch"]
    x_op, w_op, o_op = ops["x_ref"], ops["w_ref"], ops["o_ref"]
    assert tuple(x_op.shape) == (32, 256) and np.dtype(x_op.dtype) == np.float32
    assert tuple(x_op.block_shape) == (8, 128) and tuple(w_op.block_shape) == (128, 128)
    assert (x_op.buffers, w_op.buffers, o_op.buffers) == (2, 2, 2), "an 8-step grid: 2 buffers"
    assert (x_op.dma_count, w_op.dma_count, o_op.dma_count) == (8, 8, 4), (
        f"DMAs x/w/o = {(x_op.dma_count, w_op.dma_count, o_op.dma_count)}; x block (i, k) "
        "changes every step: 8; w block (k, 0) alternates 0,1,0,1,...: 8; o block (i, 0) is "
        "written back once per i: 4"
    )
    assert x_op.hbm_bytes == 8 * 8 * 128 * 4 and w_op.hbm_bytes == 8 * 128 * 128 * 4
    assert o_op.hbm_bytes == 4 * 8 * 128 * 4
    assert call.hbm_bytes_read == x_op.hbm_bytes + w_op.hbm_bytes, "read = input copies"
    assert call.hbm_bytes_written == o_op.hbm_bytes, "written = output write-backs"
    assert call.vmem_bytes == 2 * (8 * 128 + 128 * 128 + 8 * 128) * 4 + 8 * 128 * 4, (
        f"vmem_bytes {call.vmem_bytes}; 2 buffers x (4 KiB + 64 KiB + 4 KiB) + 4 KiB scratch"
    )
    assert call.vmem_limit_bytes == 32 * MiB
    assert tuple(call.dimension_semantics) == ("parallel", "arbitrary")


def test_block_indices_hold_the_index_map_result_of_every_step():
    x = np.ones((32, 256), np.float32)
    w = np.ones((256, 128), np.float32)
    _, call = traced(matmul_like_call, x, w)
    ops = {op.name: op for op in call.operands}
    steps = [(i, k) for i in range(4) for k in range(2)]
    expected = {
        "x_ref": [(i, k) for i, k in steps],
        "w_ref": [(k, 0) for i, k in steps],
        "o_ref": [(i, 0) for i, k in steps],
    }
    for name, want in expected.items():
        got = np.asarray(ops[name].block_indices)
        assert got.shape == (8, 2) and np.issubdtype(got.dtype, np.integer), (
            f"{name}.block_indices: an int array [steps, ndim] = [8, 2]; got {got.dtype}"
            f"{list(got.shape)}"
        )
        assert got.tolist() == [list(w) for w in want], (
            f"{name}.block_indices {got.tolist()} must be the index map at each step {want}"
        )


def test_call_trace_round_trips_through_json_and_compares_equal():
    x = np.ones((32, 256), np.float32)
    w = np.ones((256, 128), np.float32)
    _, call = traced(matmul_like_call, x, w)
    text = json.dumps(call.to_dict(), default=to_json)
    back = type(call).from_dict(json.loads(text))
    assert back == call, (
        "CallTrace.from_dict(json.loads(json.dumps(call.to_dict()))) must equal the "
        "original (arrays turned to lists on the way)"
    )
    assert back.dma_count == call.dma_count and back.operands[0].name == "x_ref"
    assert np.array_equal(np.asarray(back.operands[0].block_indices),
                          np.asarray(call.operands[0].block_indices))
    again = type(call).from_dict(call.to_dict())
    assert again == call, "from_dict(to_dict()) without JSON is the identity too"


def test_different_calls_compare_unequal():
    x = np.ones((16, 256), np.float32)
    _, a = traced(blocked_add, x, x, (8, 128))
    _, b = traced(blocked_add, x, x, (16, 128))
    assert a != b, "two calls with different grids and block indices are different traces"
    _, c = traced(blocked_add, x, x, (8, 128))
    assert a == c, "the same call twice gives equal traces"


def test_call_trace_prints_as_a_readable_table():
    x = np.ones((16, 256), np.float32)
    _, call = traced(blocked_add, x, x, (8, 128))
    text = str(call)
    for name in ("x_ref", "y_ref", "o_ref"):
        assert name in text, f"the printed trace must list operand {name}:\n{text}"
    assert "\n" in text, f"a table spans several lines:\n{text}"


def test_a_large_grids_record_prints_in_a_few_lines() -> None:
    """``repr`` of a call's record shows each per-step array as its dtype and shape: a
    4096-step grid prints under 1.5 KB (the dataclass default printed every block index)."""
    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    x = np.zeros((8 * 4096, 128), np.float32)
    with pallas_sim.trace() as t:
        pl.pallas_call(double, grid=(4096,), in_specs=[spec], out_specs=spec,
                       out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    text = repr(t.last)
    assert len(text) < 1500, len(text)
    assert "block_indices=int32[4096, 2]" in text and "kernel_reads=int32[4096]" in text
    assert "dma_count=4096" in text and "name='x_ref'" in text
