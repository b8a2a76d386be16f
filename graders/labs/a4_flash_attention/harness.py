"""Harnesses for a4_flash_attention (lecture §5): the grader's pallas_call around a kernel.

Runs inside the untrusted worker; imports only numpy and pallas_sim.
"""

from __future__ import annotations

import functools
from types import ModuleType

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

from .common import beside_kernel

#: Lanes of the m and l scratch buffers (one vector register row, student-api.md 4.3).
LANES = 128


def _kernel(sub: ModuleType, name: str):
    kernel = getattr(sub, name, None)
    if not callable(kernel):
        raise NameError(f"function {name!r} is not defined in the submission")
    return kernel


def flash_attention_kernel(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
                           sm_scale: float, causal: bool, block_q: int, block_kv: int,
                           soft_cap: float | None = None,
                           max_logit_const: float | None = None) -> np.ndarray:
    """Run the student's ``flash_attention_kernel`` in the intended pallas_call.

    q: [H, L, d]; k: [Hkv, L, d]; v: [Hkv, L, dv] (f32 or bf16), H % Hkv == 0
    and L a multiple of both block sizes (the grader draws them so).  Grid
    (H, L/block_q, L/block_kv) with ("parallel", "parallel", "arbitrary");
    head dims squeezed; query head h reads kv head h // (H // Hkv); scratch
    m, l f32 (block_q, 128) and acc f32 (block_q, dv).  Returns f32 [H, L, dv].
    """
    heads, length, d = q.shape
    group = heads // k.shape[0]
    dv = v.shape[-1]
    kernel = functools.partial(
        _kernel(sub, "flash_attention_kernel"), sm_scale=sm_scale, causal=causal,
        block_q=block_q, block_kv=block_kv, soft_cap=soft_cap, max_logit_const=max_logit_const)
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((heads, length, dv), jnp.float32),
        grid=(heads, length // block_q, length // block_kv),
        in_specs=[
            pl.BlockSpec((None, block_q, d), lambda h, i, j: (h, i, 0)),
            pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h // group, j, 0)),
            pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h // group, j, 0)),
        ],
        out_specs=pl.BlockSpec((None, block_q, dv), lambda h, i, j: (h, i, 0)),
        scratch_shapes=[pltpu.VMEM((block_q, LANES), jnp.float32),
                        pltpu.VMEM((block_q, LANES), jnp.float32),
                        pltpu.VMEM((block_q, dv), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
        name="grader_flash_attention",
    )(q, k, v)


def flash_attention(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                    **options: object) -> tuple:
    """The student's ``flash_attention`` beside their kernel in the intended call.

    ``options`` are the wrapper's keywords (causal, sm_scale, block_q, block_kv,
    soft_cap, max_logit_const; student-api.md, Task 4.4); the kernel gets the same,
    with ``sm_scale`` defaulting to ``1/sqrt(d)``. Returns ``(wrapper_out, kernel_out,
    kernel_error)`` (``common.beside_kernel``).
    """
    out = _kernel(sub, "flash_attention")(q, k, v, **options)
    sm_scale = options.get("sm_scale")
    kernel_options = {
        "sm_scale": float(1.0 / np.sqrt(q.shape[-1]) if sm_scale is None else sm_scale),
        "causal": bool(options.get("causal", False)),
        "block_q": int(options.get("block_q", 128)), "block_kv": int(options.get("block_kv", 128)),
        "soft_cap": options.get("soft_cap"), "max_logit_const": options.get("max_logit_const")}
    return beside_kernel(out, lambda: flash_attention_kernel(sub, q, k, v, **kernel_options))
