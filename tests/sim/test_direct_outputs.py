"""Outputs written in place in HBM (pallas_sim/_src/direct_outputs.py) give what the
per-step buffer, poisoning and write-back give: the same results bit for bit (poison where a
kernel reads or leaves an output element unwritten, accumulation over consecutive steps,
ragged edges, squeezed dims) and the same trace; calls where something could read HBM
meanwhile keep the buffers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp, pl
from pallas_sim._src import direct_outputs


def _add(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def _reads_before_writing(x_ref, o_ref):
    o_ref[...] = o_ref[...] + x_ref[...]  # the first visit reads poison


def _half_written(x_ref, o_ref):
    o_ref[:4, :] = x_ref[:4, :]  # the lower half of each block keeps the poison


def _accumulate(x_ref, o_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += x_ref[...]


def _calls() -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 300)).astype(np.float32)
    y = rng.standard_normal((40, 300)).astype(np.float32)
    tile = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    f32 = jax.ShapeDtypeStruct(x.shape, np.float32)
    xs = rng.standard_normal((16, 512)).astype(np.float32)
    return {
        "ragged add": lambda: pl.pallas_call(
            _add, grid=(5, 3), in_specs=[tile, tile], out_specs=tile, out_shape=f32)(x, y),
        "read before write": lambda: pl.pallas_call(
            _reads_before_writing, grid=(5, 3), in_specs=[tile], out_specs=tile,
            out_shape=f32)(x),
        "half written": lambda: pl.pallas_call(
            _half_written, grid=(5, 3), in_specs=[tile], out_specs=tile, out_shape=f32)(x),
        "accumulated over the inner axis": lambda: pl.pallas_call(
            _accumulate, grid=(2, 4),
            in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, k))],
            out_specs=pl.BlockSpec((8, 128), lambda i, k: (i, 0)),
            out_shape=jax.ShapeDtypeStruct((16, 128), np.float32))(xs),
        "squeezed rows": lambda: pl.pallas_call(
            _add, grid=(40, 3),
            in_specs=[pl.BlockSpec((None, 128), lambda i, j: (i, j))] * 2,
            out_specs=pl.BlockSpec((None, 128), lambda i, j: (i, j)), out_shape=f32)(x, y),
    }


def _run(make: Callable[[], object]) -> tuple[np.ndarray, list]:
    with pallas_sim.trace() as record:
        out = np.asarray(make())
    return out, [(c.grid, c.dma_count, c.hbm_bytes_read, c.hbm_bytes_written, c.vmem_bytes)
                 for c in record.calls]


@pytest.mark.parametrize("name", list(_calls()))
def test_in_place_outputs_match_the_buffered_steps(name: str, monkeypatch) -> None:
    seen: list[bool] = []
    decide = direct_outputs.can_write_in_place

    def spy(*args):
        seen.append(decide(*args))
        return seen[-1]

    monkeypatch.setattr(direct_outputs, "can_write_in_place", spy)
    in_place, in_place_trace = _run(_calls()[name])
    assert seen == [True], "the case must take the in-place path"
    monkeypatch.setattr(direct_outputs, "can_write_in_place", lambda *args: False)
    buffered, buffered_trace = _run(_calls()[name])
    np.testing.assert_array_equal(in_place, buffered)  # NaN positions equal too
    assert in_place_trace == buffered_trace
    if name in ("read before write", "half written"):
        assert np.isnan(in_place).any(), "poison must show where nothing was written"


def test_aliased_and_hbm_operands_keep_their_buffers() -> None:
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    tile = pl.BlockSpec((8, 128), lambda i: (i, 0))
    seen: list[bool] = []
    decide = direct_outputs.can_write_in_place
    try:
        direct_outputs.can_write_in_place = lambda *a: seen.append(decide(*a)) or seen[-1]
        x = np.ones((16, 128), np.float32)
        out = pl.pallas_call(kernel, grid=(2,), in_specs=[tile], out_specs=tile,
                             out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                             input_output_aliases={0: 0})(x)
    finally:
        direct_outputs.can_write_in_place = decide
    assert seen == [False]
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_array_equal(x, 1)  # the caller's array is unchanged
