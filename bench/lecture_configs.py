"""The lecture's configurations as functions ``pallas_sim.estimate`` can run at full size,
with the lecture's measured times (lecture 13; every number is the slides', quoted by
the lecture text). Used by bench/bench_estimate.py (speed of the abstract run) and
bench/calibrate.py (the timeline model's constants and leave-one-out errors).

Kernels come from solutions/ where the lecture's kernel is an assignment (matmul, Flash,
Splash); the others are written here: the serialized-DMA matmul of slide 50 (lecture
§3.2) and three memory-bound kernels that move the bytes of XLA's three attention
fusions (slide 58, lecture §1.1): scores written once, read twice.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graders.course.catalog import get_assignment  # noqa: E402
from pallas_sim import jax, jnp, pl, pltpu  # noqa: E402

MS = 1e-3


def load_solution(stem: str) -> ModuleType:
    """solutions/<stem>.py as a module."""
    spec = importlib.util.spec_from_file_location(f"lecture_{stem}", ROOT / "solutions" /
                                                  f"{stem}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


A3 = load_solution(get_assignment("a3").stem)
A4 = load_solution(get_assignment("a4").stem)
A5 = load_solution(get_assignment("a5").stem)

# The lecture's shapes.
M, K, N = 4096, 7168, 18432          # §4.2: (4096, 7168) @ (7168, 18432), bf16
H, L, D, DV = 128, 4096, 192, 128    # §5.2: DeepSeek-V3 attention


def sds(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
    """A shape-only argument."""
    return jax.ShapeDtypeStruct(shape, dtype)


def serialized_dma_matmul(x: Any, y: Any, *, block: int = 1024) -> Any:
    """Slide 50's counter-example (lecture §3.2): x and y stay in HBM (``pl.ANY``); every
    step copies its two blocks with ``start()`` immediately followed by ``wait()``, so
    nothing overlaps the copies; the f32 output block is pipelined as usual."""
    m, k = x.shape
    n = y.shape[1]

    def kernel(x_hbm, y_hbm, z_ref, x_buf, y_buf, sem):
        i, j, kk = pl.program_id(0), pl.program_id(1), pl.program_id(2)

        @pl.when(kk == 0)
        def _():
            z_ref[...] = jnp.zeros_like(z_ref)

        copy_x = pltpu.make_async_copy(
            x_hbm.at[pl.ds(i * block, block), pl.ds(kk * block, block)], x_buf, sem)
        copy_x.start()
        copy_x.wait()
        copy_y = pltpu.make_async_copy(
            y_hbm.at[pl.ds(kk * block, block), pl.ds(j * block, block)], y_buf, sem)
        copy_y.start()
        copy_y.wait()
        z_ref[...] += jnp.dot(x_buf[...], y_buf[...], preferred_element_type=jnp.float32)

    return pl.pallas_call(
        kernel, grid=(m // block, n // block, k // block),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((block, block), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        scratch_shapes=[pltpu.VMEM((block, block), x.dtype),
                        pltpu.VMEM((block, block), y.dtype), pltpu.SemaphoreType.DMA],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)


_ROWS = 512  # query rows per step of the XLA-traffic kernels


def xla_scores(q: Any, k: Any) -> Any:
    """XLA's first attention fusion's traffic: s = q kᵀ, written to HBM in float32."""
    h, seq, d = q.shape

    def kernel(q_ref, k_ref, s_ref):
        s_ref[...] = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32)

    return pl.pallas_call(
        kernel, grid=(h, seq // _ROWS),
        in_specs=[pl.BlockSpec((None, _ROWS, d), lambda i, r: (i, r, 0)),
                  pl.BlockSpec((None, seq, d), lambda i, r: (i, 0, 0))],
        out_specs=pl.BlockSpec((None, _ROWS, seq), lambda i, r: (i, r, 0)),
        out_shape=jax.ShapeDtypeStruct((h, seq, seq), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel"),
                                             vmem_limit_bytes=48 << 20))(q, k)


def xla_softmax_stats(s: Any) -> Any:
    """XLA's second fusion's traffic: read the f32 scores, write each row's max and sum
    of exponentials."""
    h, seq, _ = s.shape

    def kernel(s_ref, m_ref, l_ref):
        x = s_ref[...]
        m = x.max(axis=-1, keepdims=True)
        m_ref[...] = m
        l_ref[...] = jnp.exp(x - m).sum(axis=-1, keepdims=True)

    row = pl.BlockSpec((None, _ROWS, 1), lambda i, r: (i, r, 0))
    return pl.pallas_call(
        kernel, grid=(h, seq // _ROWS),
        in_specs=[pl.BlockSpec((None, _ROWS, seq), lambda i, r: (i, r, 0))],
        out_specs=(row, row),
        out_shape=(jax.ShapeDtypeStruct((h, seq, 1), jnp.float32),) * 2,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel"),
                                             vmem_limit_bytes=48 << 20))(s)


def xla_weighted_sum(s: Any, m: Any, l: Any, v: Any) -> Any:
    """XLA's third fusion's traffic: read the f32 scores again, exp/normalize, multiply
    by v, write the f32 output."""
    h, seq, _ = s.shape
    dv = v.shape[-1]

    def kernel(s_ref, m_ref, l_ref, v_ref, o_ref):
        p = jnp.exp(s_ref[...] - m_ref[...]) / l_ref[...]
        o_ref[...] = jnp.dot(p.astype(jnp.bfloat16), v_ref[...],
                             preferred_element_type=jnp.float32)

    row = pl.BlockSpec((None, _ROWS, 1), lambda i, r: (i, r, 0))
    return pl.pallas_call(
        kernel, grid=(h, seq // _ROWS),
        in_specs=[pl.BlockSpec((None, _ROWS, seq), lambda i, r: (i, r, 0)), row, row,
                  pl.BlockSpec((None, seq, dv), lambda i, r: (i, 0, 0))],
        out_specs=pl.BlockSpec((None, _ROWS, dv), lambda i, r: (i, r, 0)),
        out_shape=jax.ShapeDtypeStruct((h, seq, dv), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel"),
                                             vmem_limit_bytes=48 << 20))(s, m, l, v)


@dataclasses.dataclass(frozen=True)
class Config:
    """One lecture configuration: a function and its shape-only arguments, the measured
    time in seconds (None when the lecture measured nothing) and where that number is."""

    key: str
    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    measured_s: float | None
    source: str


def _matmul(block: int) -> Config:
    return Config(f"matmul_{block}", f"matmul {block}³ blocks (auto pipeline)", A3.matmul,
                  (sds((M, K), jnp.bfloat16), sds((K, N), jnp.bfloat16)),
                  {"block_shape": (block, block, block)},
                  {512: 4.63 * MS, 1024: 1.68 * MS}.get(block),
                  "§4.2 block-size sweep (slides 38-39)")


def _flash(bq: int, bkv: int, mle: float | None, measured: float | None, source: str) -> Config:
    tag = f"flash_{bq}x{bkv}" + ("_mle" if mle is not None else "")
    label = f"flash attention bq {bq}, bkv {bkv}" + (" + MLE" if mle is not None else "")
    return Config(tag, label, A4.flash_attention,
                  (sds((H, L, D), jnp.bfloat16), sds((H, L, D), jnp.bfloat16),
                   sds((H, L, DV), jnp.bfloat16)),
                  {"block_q": bq, "block_kv": bkv, "max_logit_const": mle}, measured, source)


#: The lecture's measured points (time in seconds). Flash 1024 x 2048: 3.36 ms x 1.19
#: (2048-row query blocks are 19 % faster, §5.3) = 4.0 ms, which is also the slides'
#: "≈ 4 ms, 33 % MFU" DeepSeek-V3 run (§5.2: 1.3744 TFLOP in 4 ms).
MEASURED: list[Config] = [
    _matmul(512),
    _matmul(1024),
    Config("matmul_1024_serial_dma", "matmul 1024³, start()/wait() DMA", serialized_dma_matmul,
           (sds((M, K), jnp.bfloat16), sds((K, N), jnp.bfloat16)), {},
           2 * M * N * K / 1028.75e12 / 0.234,
           "§3.2 slide 50: 23.4 % MXU utilisation"),
    _flash(1024, 2048, None, 3.36 * MS * 1.19,
           "§5.3 / §5.2: 19 % slower than 2048 x 2048; ≈ 4 ms, 33 % MFU (DeepSeek-V3)"),
    _flash(2048, 2048, None, 3.36 * MS, "§5.4 slide 85: 3.36 ms"),
    _flash(2048, 2048, 70.0, 2.64 * MS, "§5.4 slide 85: 2.64 ms with MLE"),
    Config("xla_scores", "XLA fusion 1: q·kᵀ → f32 scores", xla_scores,
           (sds((H, L, D), jnp.bfloat16), sds((H, L, D), jnp.bfloat16)), {}, 3.34 * MS,
           "§1.1 slide 58"),
    Config("xla_softmax_stats", "XLA fusion 2: row max / sum of exp", xla_softmax_stats,
           (sds((H, L, L), jnp.float32),), {}, 3.29 * MS, "§1.1 slide 58"),
    Config("xla_weighted_sum", "XLA fusion 3: exp, normalise, · v", xla_weighted_sum,
           (sds((H, L, L), jnp.float32), sds((H, L, 1), jnp.float32),
            sds((H, L, 1), jnp.float32), sds((H, L, DV), jnp.bfloat16)), {}, 3.68 * MS,
           "§1.1 slide 58"),
]


@functools.lru_cache(maxsize=8)
def causal_mask_info(seq: int, block: int) -> Any:
    """Splash's MaskInfo of a causal [seq, seq] mask (built by the a5 solution)."""
    return A5.build_mask_info(A5.causal_mask(seq), block, block)


def splash(seq: int, block: int, heads: int = H) -> Config:
    """Splash attention at length ``seq`` with ``block`` x ``block`` tiles of a causal
    mask (lecture §6.5; no measured time in the lecture)."""
    info = causal_mask_info(seq, block)
    return Config(f"splash_causal_{seq}_{block}", f"splash causal L {seq}, block {block}",
                  A5.splash_attention,
                  (sds((heads, seq, D), jnp.bfloat16), sds((heads, seq, D), jnp.bfloat16),
                   sds((heads, seq, DV), jnp.bfloat16), info), {}, None, "§6.5")


def full_size_configs() -> list[Config]:
    """Every lecture size the abstract run must handle."""
    return [_matmul(512), _matmul(1024),
            _flash(1024, 2048, None, None, ""), _flash(2048, 2048, None, None, ""),
            _flash(2048, 2048, 70.0, None, ""),
            splash(8192, 1024), splash(32768, 1024)]


def as_array(x: Any) -> Any:
    """A concrete zero array for a shape-only argument (small sizes only)."""
    return np.zeros(x.shape, x.dtype)
