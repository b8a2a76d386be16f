"""The block shapes a TPU compile refuses, decided as JAX decides them.

JAX lowers a ``pallas_call`` for TPU without a TPU when asked to export for the
``tpu`` platform (``jax.export.export(..., platforms=["tpu"])``): its Mosaic lowering
runs its block-shape checks and raises ``ValueError`` for a shape it cannot tile. Each
case here is exported that way and estimated on pallas_sim: ``pallas_sim.estimate``
lists a problem (``Estimate.lowering_problems``) exactly when JAX's lowering refuses, and
refuses it with ``lowering="refuse"``; the concrete run stays as lenient as interpret mode.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import pallas as jpl

import pallas_sim
from pallas_sim import jnp, pl

#: (array shape, block shape, dtype name, rule named or None when JAX compiles it).
CASES = [
    ((40, 256), (8, 128), "float32", None),
    ((40, 200), (8, 128), "float32", None),           # edge blocks are fine
    ((40, 200), (40, 200), "float32", None),          # the whole array
    ((40, 200), (10, 100), "float32", "(8, 128) tiling"),
    ((40, 200), (40, 100), "float32", "(8, 128) tiling"),
    ((40, 256), (4, 128), "float32", "(8, 128) tiling"),
    ((64, 256), (16, 256), "bfloat16", None),
    ((4, 16, 256), (None, 8, 128), "float32", None),   # a squeezed leading dim
    ((4, 16, 256), (2, 4, 128), "float32", "(8, 128) tiling"),
    ((16, 4, 256), (8, None, 128), "float32", "(8, 128) tiling"),  # squeezed counts as 1
    ((16, 1, 256), (8, None, 128), "float32", None),   # ... which is the whole dim here
    ((4096,), (1024,), "float32", None),
    ((4096,), (256,), "float32", None),                # a power of two >= 128
    ((4096,), (64,), "float32", "1-D tiling"),
    ((4096,), (256,), "bfloat16", None),               # >= 128 * 2 for 16-bit
    ((4096,), (128,), "bfloat16", "1-D tiling"),
    ((3000,), (3000,), "float32", None),
    ((3000,), (600,), "float32", "1-D tiling"),
]


def _grid(shape, block):
    return tuple(-(-a // (1 if b is None else b)) for a, b in zip(shape, block, strict=True))


def _index_map(ndim):
    return lambda *ids: ids[:ndim]


def _call(pl_mod, np_mod, shape, block, dtype):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1

    grid = _grid(shape, block)
    spec = pl_mod.BlockSpec(block, _index_map(len(shape)))
    return pl_mod.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(shape, dtype) if
                              np_mod is jjnp else pallas_sim.jax.ShapeDtypeStruct(shape, dtype),
                              grid=grid, in_specs=[spec], out_specs=spec)


@pytest.fixture(autouse=True)
def _a_v5e_for_jax_s_lowering(monkeypatch):
    """JAX's 1-D block rule asks the device for its lane and sublane counts; on a CPU host
    it is told a v5e's (every TPU generation has 128 lanes and 8 sublanes)."""
    from jax._src.pallas.mosaic import tpu_info

    v5e = tpu_info.get_tpu_info_for_chip(tpu_info.ChipVersion.TPU_V5E, 1)
    monkeypatch.setattr(tpu_info, "get_tpu_info", lambda: v5e)


def _jax_refuses(shape, block, dtype) -> str | None:
    """JAX's TPU lowering's ValueError message, or None when it lowers."""
    def f(x):
        return _call(jpl, jjnp, shape, block, dtype)(x)

    try:
        jax.export.export(jax.jit(f), platforms=["tpu"])(jax.ShapeDtypeStruct(shape, dtype))
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("shape,block,dtype,rule", CASES,
                         ids=[f"{d}{list(s)}-{b}" for s, b, d, _ in CASES])
def test_estimate_lists_the_block_shapes_jax_s_tpu_lowering_refuses(shape, block, dtype, rule):
    refused = _jax_refuses(shape, block, dtype)
    assert (refused is not None) == (rule is not None), refused
    if refused is not None:
        assert "Pallas TPU lowering" in refused
    def call(x):
        return _call(pl, jnp, shape, block, dtype)(x)

    est = pallas_sim.estimate(call, jax.ShapeDtypeStruct(shape, dtype))
    if rule is None:
        assert est.lowering_problems == []
        return
    assert len(est.lowering_problems) == 2  # the input and the output share the spec
    assert all(f"rule '{rule}'" in p for p in est.lowering_problems)
    with pytest.raises(pallas_sim.MosaicLoweringError, match=rule.replace("(", r"\(")
                       .replace(")", r"\)")) as info:
        pallas_sim.estimate(call, jax.ShapeDtypeStruct(shape, dtype), lowering="refuse")
    assert isinstance(info.value, ValueError)  # the kind JAX's lowering raises
    with pytest.warns(UserWarning, match="a TPU compile would refuse"):
        pallas_sim.estimate(call, jax.ShapeDtypeStruct(shape, dtype), lowering="warn")
    # interpret mode's leniency: the concrete run computes it
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape).astype(dtype)
    np.testing.assert_array_equal(np.asarray(call(x), np.float32),
                                  (x.astype(np.float32) + 1).astype(dtype).astype(np.float32))


def test_a_whole_hbm_operand_compiles_on_both():
    """``memory_space=pl.ANY`` leaves the whole operand in HBM for the kernel's own
    copies: JAX's lowering accepts it, and pallas_sim's estimate lists no problem."""
    def jax_kernel(x_ref, o_ref):
        o_ref[...] = jjnp.zeros(o_ref.shape, o_ref.dtype)

    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)

    def jax_call(x):
        return jpl.pallas_call(
            jax_kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jjnp.float32),
            in_specs=[jpl.BlockSpec(memory_space=jpl.ANY)],
            out_specs=jpl.BlockSpec((8, 128), lambda: (0, 0)))(x)

    def sim_call(x):
        return pl.pallas_call(
            kernel, out_shape=pallas_sim.jax.ShapeDtypeStruct((8, 128), jnp.float32),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((8, 128), lambda: (0, 0)))(x)

    struct = jax.ShapeDtypeStruct((64, 128), jjnp.float32)
    jax.export.export(jax.jit(jax_call), platforms=["tpu"])(struct)  # lowers: no ValueError
    assert pallas_sim.estimate(sim_call, struct).lowering_problems == []
