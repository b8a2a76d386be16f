# Attack: reach modules an allowed module re-exports (dataclasses.sys, typing.operator), then
# the simulator's live trace list, and forge the trace of a bias_add whose grid order makes
# 192 DMAs instead of 136: the trace checks see the DMA-minimal call.
# Defence: the import allowlist names what may be imported from each allowed module.
import dataclasses
from dataclasses import sys
from typing import operator


def _bias_kernel(x_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...] + b_ref[...]


def bias_add(x, bias, *, block_shape=(128, 128)):
    bm, bn = block_shape
    rows, cols = x.shape
    out = pl.pallas_call(
        _bias_kernel, grid=(rows // bm, cols // bn),
        in_specs=[pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
                  pl.BlockSpec((1, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, bias)
    tracing = sys.modules["pallas_sim.tracing"]
    for trace in operator.attrgetter("_ACTIVE")(tracing):
        call = trace.calls[-1]
        operands = tuple(
            dataclasses.replace(op, dma_count=cols // bn)
            if op.role == "in" and op.shape[0] == 1 else op
            for op in call.operands)
        trace.calls[-1] = dataclasses.replace(call, grid=(cols // bn, rows // bm),
                                              operands=operands)
    return out
