"""``pltpu.PrefetchScalarGridSpec`` (docs/pallas-sim.md, rule 9, and the calling
convention) and the DMA rules when blocks are chosen through prefetched indices
(item 2: same block index at consecutive steps → no copy), as Splash Attention
uses them (lecture §6.3).

Expected DMA counts and block sequences are computed here from the index
tables, never read back from the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS, input_dma_count, output_writeback_count, traced

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim._src.values import concrete  # the tests' own records of traced values

ROWS = 8  # rows per block of the gathered array


def gather_kernel(table_ref, x_ref, o_ref):
    """Step g copies block table[g] of x into output block g."""
    o_ref[...] = x_ref[...]


def gather(x: np.ndarray, table: np.ndarray, **call_kwargs):
    """out block g = x block table[g], x block chosen by a prefetched index."""
    steps = len(table)
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(steps,),
        in_specs=[pl.BlockSpec((ROWS, x.shape[1]), lambda g, tbl: (tbl[g], 0))],
        out_specs=pl.BlockSpec((ROWS, x.shape[1]), lambda g, tbl: (g, 0)))
    return pl.pallas_call(
        gather_kernel, grid_spec=spec,
        out_shape=jax.ShapeDtypeStruct((steps * ROWS, x.shape[1]), x.dtype),
        **call_kwargs)(table, x)


@st.composite
def index_tables(draw):
    """A table of block indices into an array of ``nblocks`` blocks, with runs of repeats."""
    nblocks = draw(st.integers(1, 5))
    runs = draw(st.lists(st.tuples(st.integers(0, nblocks - 1), st.integers(1, 4)),
                         min_size=1, max_size=8))
    table = np.asarray([b for b, n in runs for _ in range(n)], np.int32)
    return nblocks, table


@SIM_SETTINGS
@given(index_tables())
def test_input_blocks_chosen_by_prefetched_indices_are_copied_only_when_the_index_changes(
        drawn):
    nblocks, table = drawn
    x = np.arange(nblocks * ROWS * 128, dtype=np.float32).reshape(nblocks * ROWS, 128)
    out, call = traced(gather, x, table)
    expected = np.concatenate([x[b * ROWS:(b + 1) * ROWS] for b in table])
    np.testing.assert_array_equal(out, expected, err_msg="step g must see block table[g]")
    x_trace = [op for op in call.operands if op.role == "in"][0]
    want = input_dma_count([(int(b), 0) for b in table])
    assert x_trace.dma_count == want, (
        f"table {table.tolist()}: x is copied at the first step and whenever table[g] differs "
        f"from table[g - 1] ({want} copies), got {x_trace.dma_count}")
    assert x_trace.block_indices[:, 0].tolist() == table.tolist(), (
        "the trace records, per step, the block index the index map read from SMEM")
    assert x_trace.hbm_bytes == want * ROWS * 128 * 4


@SIM_SETTINGS
@given(index_tables())
def test_output_blocks_chosen_by_prefetched_indices_are_written_back_once_per_run(drawn):
    nblocks, table = drawn
    # Make the table non-decreasing so no output block is revisited after its write-back.
    table = np.sort(table)
    steps = len(table)

    def scatter_add_kernel(tbl_ref, x_ref, o_ref):
        g = pl.program_id(0)
        first = jnp.logical_or(g == 0, tbl_ref[jnp.maximum(g - 1, 0)] != tbl_ref[g])

        @pl.when(first)
        def _():
            o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

        o_ref[...] += x_ref[...]

    x = np.arange(steps * ROWS * 4, dtype=np.float32).reshape(steps * ROWS, 4)
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(steps,),
        in_specs=[pl.BlockSpec((ROWS, 4), lambda g, tbl: (g, 0))],
        out_specs=pl.BlockSpec((ROWS, 4), lambda g, tbl: (tbl[g], 0)))
    run = pl.pallas_call(scatter_add_kernel, grid_spec=spec,
                         out_shape=jax.ShapeDtypeStruct((nblocks * ROWS, 4), np.float32),
                         compiler_params=pltpu.CompilerParams(
                             dimension_semantics=("arbitrary",)))
    with pallas_sim.config(uninitialized="zero"):
        out, call = traced(run, table, x)
    out_trace = [op for op in call.operands if op.role == "out"][0]
    want = output_writeback_count([(int(b), 0) for b in table])
    assert out_trace.dma_count == want, (
        f"table {table.tolist()}: one write-back per run of equal indices ({want}), "
        f"got {out_trace.dma_count}")
    blocks = x.reshape(steps, ROWS, 4)
    for b in np.unique(table):
        np.testing.assert_allclose(out[b * ROWS:(b + 1) * ROWS], blocks[table == b].sum(axis=0))


def test_splash_style_table_fetches_kv_once_per_active_column_change():
    # Lecture §6.2: causal 4096 with blocks (1024, 2048), scaled to 16 with (4, 8):
    # rows [0,1,2,2,3,3], cols [0,0,0,1,0,1], mask_next [0,1,0,0,1,1].
    rows = np.array([0, 1, 2, 2, 3, 3], np.int32)
    cols = np.array([0, 0, 0, 1, 0, 1], np.int32)
    nxt = np.array([0, 1, 0, 0, 1, 1], np.int32)
    q = np.ones((16, 8), np.float32)
    k = np.ones((16, 8), np.float32)
    patterns = np.ones((2, 4, 8), bool)

    def kernel(rows_ref, cols_ref, nxt_ref, q_ref, k_ref, m_ref, o_ref):
        o_ref[...] = q_ref[...] * 0

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=3, grid=(len(rows),),
        in_specs=[pl.BlockSpec((4, 8), lambda g, r, c, n: (r[g], 0)),
                  pl.BlockSpec((8, 8), lambda g, r, c, n: (c[g], 0)),
                  pl.BlockSpec((None, 4, 8), lambda g, r, c, n: (n[g], 0, 0))],
        out_specs=pl.BlockSpec((4, 8), lambda g, r, c, n: (r[g], 0)))
    _, call = traced(pl.pallas_call(kernel, grid_spec=spec,
                                    out_shape=jax.ShapeDtypeStruct((16, 8), np.float32)),
                     rows, cols, nxt, q, k, patterns)
    dmas = {op.name: op.dma_count for op in call.operands if op.role in ("in", "out")}
    assert dmas == {"q_ref": 4, "k_ref": 4, "m_ref": 4, "o_ref": 4}, (
        "q copies and o write-backs follow the q row (runs 0 | 1 | 2 2 | 3 3); k follows "
        "cols (runs 0 0 0 | 1 | 0 | 1) and the mask follows mask_next (runs 0 | 1 | 0 0 | "
        f"1 1): 4 each; got {dmas}")
    assert call.dma_count == 16
    k_trace = [op for op in call.operands if op.name == "k_ref"][0]
    assert k_trace.block_indices[:, 0].tolist() == cols.tolist()


def test_prefetch_refs_come_first_to_the_kernel_and_after_the_grid_indices_to_index_maps():
    seen_kernel, seen_maps = [], []
    table = np.array([2, 0, 1], np.int32)
    extra = np.array([7, 8, 9], np.int32)

    def kernel(tbl_ref, extra_ref, x_ref, o_ref):
        g = pl.program_id(0)
        seen_kernel.append((tbl_ref.memory_space, int(concrete(tbl_ref[g])),
                            int(concrete(extra_ref[g])),
                            x_ref.memory_space))
        o_ref[...] = x_ref[...]

    def index_map(g, tbl, ext):
        seen_maps.append((type(tbl).__name__, tbl.memory_space, ext.shape))
        return tbl[g], 0

    x = np.arange(3 * ROWS * 128, dtype=np.float32).reshape(3 * ROWS, 128)
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=2, grid=(3,),
        in_specs=[pl.BlockSpec((ROWS, 128), index_map)],
        out_specs=pl.BlockSpec((ROWS, 128), lambda g, tbl, ext: (g, 0)))
    out, call = traced(pl.pallas_call(kernel, grid_spec=spec,
                                      out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)),
                       table, extra, x)
    assert seen_kernel == [("smem", 2, 7, "vmem"), ("smem", 0, 8, "vmem"),
                           ("smem", 1, 9, "vmem")], (
        "the kernel gets the prefetch refs first, in SMEM, then the VMEM block refs")
    assert seen_maps and all(m == ("Ref", "smem", (3,)) for m in seen_maps), (
        "index maps get the prefetch refs (SMEM) after the grid indices")
    np.testing.assert_array_equal(out, np.concatenate([x[16:24], x[0:8], x[8:16]]))
    pre = [op for op in call.operands if op.role == "prefetch"]
    assert [(op.name, op.shape, op.memory_space) for op in pre] == [
        ("tbl_ref", (3,), "smem"), ("extra_ref", (3,), "smem")]


@pytest.mark.parametrize("n_active", [3, 50])
def test_prefetch_arrays_are_counted_in_smem_not_vmem(n_active):
    # 50 steps takes the vectorized index-map path, 3 the step-by-step one.
    table = np.zeros(n_active, np.int32)
    kinds = np.ones(n_active, np.int8)
    x = np.ones((ROWS, 128), np.float32)

    def kernel(tbl_ref, kinds_ref, x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=2, grid=(n_active,),
        in_specs=[pl.BlockSpec((ROWS, 128), lambda g, t, k: (t[g], 0))],
        out_specs=pl.BlockSpec((ROWS, 128), lambda g, t, k: (t[g], 0)),
        scratch_shapes=[pltpu.SMEM((4,), jnp.int32)])

    def kernel_with_scratch(tbl_ref, kinds_ref, x_ref, o_ref, s_ref):
        kernel(tbl_ref, kinds_ref, x_ref, o_ref)

    _, call = traced(pl.pallas_call(kernel_with_scratch, grid_spec=spec,
                                    out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)),
                     table, kinds, x)
    assert call.smem_bytes == n_active * 4 + n_active * 1 + 16, (
        "SMEM = int32 table + int8 kinds + 4 int32 of SMEM scratch")
    assert call.vmem_bytes == 2 * 2 * ROWS * 128 * 4, (
        "VMEM holds only the double-buffered x and o blocks; prefetch arrays are not in it")
    assert call.dma_count == 2, "one copy in, one write-back: the index never changes"


def test_an_index_map_that_branches_in_python_on_a_prefetched_value_is_refused_as_in_jax():
    # JAX traces index maps: `if tbl[g] == 0` asks for the truth of a tracer and raises
    # TracerBoolConversionError. jnp.where is the way to choose, and gives the same blocks.
    table = np.array([0, 0, 1, 1, 1, 0, 2, 2, 2, 2, 1, 1], np.int32)
    x = np.arange(3 * ROWS * 128, dtype=np.float32).reshape(3 * ROWS, 128)

    def branching(g, tbl):
        if tbl[g] == 0:
            return 0, 0
        return tbl[g], 0

    def choosing(g, tbl):
        return jnp.where(tbl[g] == 0, 0, tbl[g]), 0

    def call(index_map):
        spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(len(table),),
            in_specs=[pl.BlockSpec((ROWS, 128), index_map)],
            out_specs=pl.BlockSpec((ROWS, 128), lambda g, tbl: (g, 0)))
        return pl.pallas_call(gather_kernel, grid_spec=spec, out_shape=jax.ShapeDtypeStruct(
            (len(table) * ROWS, 128), x.dtype))

    with pytest.raises(pallas_sim.TracerConversionError, match=r"jnp\.where"):
        call(branching)(table, x)
    out_w, call_w = traced(call(choosing), table, x)
    out_p, call_p = traced(gather, x, table)
    np.testing.assert_array_equal(out_w, out_p)
    assert [op.dma_count for op in call_w.operands] == [op.dma_count for op in call_p.operands]
    assert call_p.operands[1].dma_count == 5, "runs 0,0 | 1,1,1 | 0 | 2,2,2,2 | 1,1"


def test_a_prefetched_index_out_of_range_names_the_operand_and_the_step():
    table = np.array([0, 1, 3], np.int32)
    x = np.ones((2 * ROWS, 128), np.float32)
    with pytest.raises(pallas_sim.BlockIndexError, match=r"\(3, 0\).*'x_ref'.*\(2,\)"):
        gather(x, table)


def test_too_few_arguments_for_the_declared_prefetch_count_is_a_value_error():
    spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=3, grid=(1,))
    call = pl.pallas_call(lambda a, b, c, o: None, grid_spec=spec,
                          out_shape=jax.ShapeDtypeStruct((1,), np.float32))
    with pytest.raises(ValueError, match="3 scalar-prefetch arguments"):
        call(np.zeros(1, np.int32), np.zeros(1, np.int32))


def test_aliases_count_the_prefetch_arguments_as_inputs():
    table = np.array([1, 0], np.int32)
    acc = np.arange(2 * ROWS * 128, dtype=np.float32).reshape(2 * ROWS, 128)

    def kernel(tbl_ref, a_ref, o_ref):
        o_ref[...] = a_ref[...] + 1

    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(2,),
        in_specs=[pl.BlockSpec((ROWS, 128), lambda g, t: (t[g], 0))],
        out_specs=pl.BlockSpec((ROWS, 128), lambda g, t: (t[g], 0)))
    expected = acc + 1
    with pallas_sim.trace() as t:
        out = pl.pallas_call(kernel, grid_spec=spec, input_output_aliases={1: 0},
                             out_shape=jax.ShapeDtypeStruct(acc.shape, acc.dtype))(table, acc)
    assert t.calls[0].input_output_aliases == ((1, 0),), (
        "input 1 (counting the prefetch array) is output 0")
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(acc, expected - 1)  # the caller's array is unchanged
