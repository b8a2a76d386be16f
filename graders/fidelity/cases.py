"""What the fidelity suite calls, per assignment, and on which inputs.

Each :class:`FidelityCase` names a public function of a solution or
submission file (student-api.md), the kernels it exercises, and a hypothesis
strategy of ``(args, kwargs)``.  Shapes are small (grids of at most a dozen
steps) because JAX's TPU interpret mode costs tens of milliseconds per grid
step and compiles once per shape; the lecture's worked numbers are fixed
examples.  A function that uses ``pl``/``pltpu``/``jnp``/``jax`` must appear
here (as ``func`` or in ``covers``): tests/fidelity checks that.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from graders.labs.a1_pallas_basics import worked as a1_worked
from graders.labs.a3_matmul import worked as a3_worked
from graders.labs.a4_flash_attention import worked as a4_worked

F32 = np.float32


@dataclasses.dataclass(frozen=True)
class FromModule:
    """An argument computed by the module under test: ``module.<func>(*args)``.

    Used for inputs that the file itself builds in plain NumPy (a Splash
    ``MaskInfo``), so each backend gets its own module's object.
    """

    func: str
    args: tuple[Any, ...]

    def resolve(self, module: object) -> Any:
        """Call ``module.<func>(*args)``.

        Raises:
          AttributeError: the module has no such function.
        """
        return getattr(module, self.func)(*self.args)


@dataclasses.dataclass(frozen=True)
class FidelityCase:
    """One function to run on both backends.

    Attributes:
      func: the public function called (student-api.md name).
      inputs: strategy of ``(args tuple, kwargs dict)``; arrays are NumPy.
      covers: other functions of the file this call runs (its kernels).
      max_examples: hypothesis examples per JAX mode.
      driver: for a kernel the file does not wrap itself (a handout task that is only a
        kernel), ``driver(module, *args, **kwargs)`` builds the pallas_call around
        ``module.<func>`` with the module's own ``pl``/``pltpu``/``jax``/``jnp`` (so it runs
        on either backend); None calls ``module.<func>(*args, **kwargs)``.
    """

    func: str
    inputs: SearchStrategy
    covers: tuple[str, ...] = ()
    max_examples: int = 3
    driver: Callable[..., Any] | None = None


def _array(shape: tuple[int, ...], seed: int, dtype: Any = F32) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape).astype(dtype)


@st.composite
def _blocked_pair(draw, *, ragged: bool, n_inputs: int = 2):
    bm = draw(st.sampled_from([8, 16]))
    bn = 128
    if ragged:
        rows, cols = draw(st.integers(1, 3 * bm)), draw(st.integers(1, 2 * bn + 5))
    else:
        rows, cols = bm * draw(st.integers(1, 3)), bn * draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    arrays = tuple(_array((rows, cols), seed + i) for i in range(n_inputs))
    return arrays, {"block_shape": (bm, bn)}


@st.composite
def _double_buffered(draw):
    """a2 Task 2.5: x (1-3 blocks of 8 or 16 rows, 128 columns, f32 or bf16) and a scale."""
    block_rows = draw(st.sampled_from([8, 16]))
    rows = block_rows * draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([F32, ml_dtypes.bfloat16]))
    x = _array((rows, 128), draw(st.integers(0, 2**16)), dtype)
    return (x, draw(st.sampled_from([2.0, -0.5]))), {"block_rows": block_rows}


@st.composite
def _bias_add(draw):
    (x,), kwargs = draw(_blocked_pair(ragged=False, n_inputs=1))
    bias = _array((1, x.shape[1]), draw(st.integers(0, 2**16)))
    return (x, bias), kwargs


_VMEM_WORKED = st.sampled_from([
    *((([*a.shapes], [*a.dtypes]), {} if a.block_shape is None else
       {"block_shape": a.block_shape}) for a in a1_worked.VMEM),
    (([(1024, 512), (512, 256)], ["bfloat16", "float32"]),
     {"block_shape": (None, 128, 256), "buffer_count": 3}),
])


@st.composite
def _matmul(draw):
    bm, bn, bk = (draw(st.sampled_from([8, 16])), 128, draw(st.sampled_from([128, 256])))
    m, n, k = bm * draw(st.integers(1, 2)), bn * draw(st.integers(1, 2)), bk * draw(
        st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    dtype = draw(st.sampled_from(["float32", "bfloat16"]))
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else F32
    activation = draw(st.sampled_from([None, "relu"]))
    return ((_array((m, k), seed, dt), _array((k, n), seed + 1, dt)),
            {"block_shape": (bm, bn, bk), "activation": activation})


@st.composite
def _flash(draw):
    block = draw(st.sampled_from([8, 16]))
    length = block * draw(st.integers(1, 3))
    hkv = draw(st.integers(1, 2))
    heads = hkv * draw(st.integers(1, 2))
    d = draw(st.sampled_from([8, 16]))
    seed = draw(st.integers(0, 2**16))
    q, k, v = (_array((h, length, d), seed + i) for i, h in enumerate((heads, hkv, hkv)))
    kwargs = {"causal": draw(st.booleans()), "block_q": block, "block_kv": block}
    extra = draw(st.sampled_from(["none", "soft_cap", "max_logit_const", "use_base2_exp"]))
    if extra == "soft_cap":
        kwargs["soft_cap"] = 5.0
    elif extra == "max_logit_const":
        kwargs["max_logit_const"] = 3.0
    elif extra == "use_base2_exp":
        kwargs["use_base2_exp"] = True
    return (q, k, v), kwargs


def _microtiled_call(module: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
                     causal: bool, block_q: int, block_kv: int, bkv_compute: int) -> Any:
    """``module.flash_attention_kernel_microtiled`` (Task 4.7, a kernel without a wrapper
    in the handout) in Task 4.3's pallas_call, spelled with the module's own ``pl``,
    ``pltpu``, ``jax`` and ``jnp`` so that it runs on either backend. q, k, v: [1, L, d]."""
    pl, pltpu, jax, jnp = module.pl, module.pltpu, module.jax, module.jnp
    _, length, d = q.shape
    dv = v.shape[-1]
    kernel = functools.partial(module.flash_attention_kernel_microtiled, sm_scale=d ** -0.5,
                               causal=causal, block_q=block_q, block_kv=block_kv,
                               bkv_compute=bkv_compute)
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((1, length, dv), jnp.float32),
        grid=(1, length // block_q, length // block_kv),
        in_specs=[pl.BlockSpec((None, block_q, d), lambda h, i, j: (h, i, 0)),
                  pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h, j, 0)),
                  pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h, j, 0))],
        out_specs=pl.BlockSpec((None, block_q, dv), lambda h, i, j: (h, i, 0)),
        scratch_shapes=[pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, dv), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(q, k, v)


@st.composite
def _flash_microtiled(draw):
    """Task 4.7 in Task 4.3's call (``_microtiled_call``): block_kv 16 or 32 scored 8 keys
    at a time (a Python loop over static pl.ds slices inside the kernel)."""
    block_q, block_kv = draw(st.sampled_from([8, 16])), draw(st.sampled_from([16, 32]))
    length = block_kv * draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    q, k, v = (_array((1, length, 8), seed + i) for i in range(3))
    return (q, k, v), {"causal": draw(st.booleans()), "block_q": block_q,
                       "block_kv": block_kv, "bkv_compute": 8}


@st.composite
def _splash(draw):
    block = draw(st.sampled_from([8, 16]))
    nblocks = draw(st.integers(1, 3))
    length = block * nblocks
    heads, d = draw(st.integers(1, 2)), 8
    seed = draw(st.integers(0, 2**16))
    kind = draw(st.sampled_from(["causal", "document", "full"]))
    q_pos = np.arange(length)[:, None]
    kv_pos = np.arange(length)[None, :]
    if kind == "causal":
        mask = q_pos >= kv_pos
    elif kind == "document":
        cuts = sorted(draw(st.lists(st.integers(1, length - 1), max_size=2, unique=True))
                      if length > 1 else [])
        segments = np.searchsorted(np.asarray(cuts, int), np.arange(length), side="right")
        mask = (segments[:, None] == segments[None, :]) & (q_pos >= kv_pos)
    else:
        mask = np.ones((length, length), bool)
    q, k, v = (_array((heads, length, d), seed + i) for i in range(3))
    return ((q, k, v, FromModule("build_mask_info", (mask, block, block))),
            {"use_base2_exp": draw(st.booleans())})


@st.composite
def _splash_computed(draw):
    """Task 5.6: a causal, windowed or document rule with its MaskInfo (built by the file
    itself from the dense mask), queries at 0..L-1 or shifted after the keys."""
    block = draw(st.sampled_from([8, 16]))
    length = block * draw(st.integers(1, 3))
    heads, seed = draw(st.integers(1, 2)), draw(st.integers(0, 2**16))
    kind = draw(st.sampled_from(["causal", "causal & window", "documents"]))
    every = np.arange(length, dtype=np.int32)
    offset = draw(st.integers(0, 3)) if kind != "documents" else 0
    q_pos = every + offset
    kwargs: dict[str, Any] = {"q_positions": q_pos}
    mask = np.ones((length, length), bool)
    if "causal" in kind:
        kwargs["causal"] = True
        mask &= q_pos[:, None] >= every[None, :]
    if "window" in kind:
        kwargs["window"] = (block // 2 + offset, None)
        mask &= q_pos[:, None] - (block // 2 + offset) <= every[None, :]
    if kind == "documents":
        ids = (every >= length // 3).astype(np.int32) + (every >= 2 * length // 3)
        kwargs["q_segment_ids"] = ids
        mask &= ids[:, None] == ids[None, :]
    q, k, v = (_array((heads, length, 8), seed + i) for i in range(3))
    return (q, k, v, FromModule("build_mask_info", (mask, block, block))), kwargs


_IRONWOOD = (a3_worked.PEAK_FLOPS, a3_worked.HBM_BANDWIDTH)


def _just(calls) -> SearchStrategy:
    """Fixed calls (the lecture's worked numbers): an iterable of (args, kwargs)."""
    return st.sampled_from(list(calls))


CASES: dict[str, tuple[FidelityCase, ...]] = {
    "a1_pallas_basics": (
        FidelityCase("blocked_add", _blocked_pair(ragged=True), covers=("add_kernel",)),
        FidelityCase("bias_add", _bias_add(), covers=("_bias_add_kernel",)),
        # Not ragged: JAX 0.10.2's TPU interpret mode cannot lower a ragged aliased
        # output (docs/fidelity.md; tests/fidelity/test_error_parity.py).
        FidelityCase("accumulate_inplace", _blocked_pair(ragged=False),
                     covers=("_accumulate_kernel",)),
        FidelityCase("vmem_bytes", _VMEM_WORKED, max_examples=4),
    ),
    "a2_pipelining": (
        FidelityCase("double_buffered_scale", _double_buffered(),
                     covers=("double_buffer_kernel",)),
    ),
    "a3_matmul": (
        FidelityCase("matmul", _matmul(), covers=("matmul_kernel",)),
        FidelityCase("matmul_vmem_bytes", _just(
            (a3_worked.SHAPE, {"block": a3_worked.VMEM_BLOCK, "grid": g})
            for g in a3_worked.VMEM_MIB)),
        FidelityCase("arithmetic_intensity", _just([((512,), {}), ((1024,), {"dtype_bytes": 4})])),
        FidelityCase("min_compute_bound_block", _just([(_IRONWOOD, {})])),
        FidelityCase("ideal_matmul_time", _just(
            ((*a3_worked.SHAPE, b), {"peak_flops": a3_worked.PEAK_FLOPS,
                                     "hbm_bandwidth": a3_worked.HBM_BANDWIDTH})
            for b in a3_worked.IDEAL_MS)),
    ),
    "a4_flash_attention": (
        FidelityCase("flash_attention", _flash(), covers=("flash_attention_kernel",),
                     max_examples=4),
        FidelityCase("flash_attention_kernel_microtiled", _flash_microtiled(),
                     max_examples=3, driver=_microtiled_call),
        *(FidelityCase(func, _just([(a.args, {}) for a in a4_worked.TRAFFIC if a.func == func]))
          for func in dict.fromkeys(a.func for a in a4_worked.TRAFFIC)),
    ),
    "a5_splash_attention": (
        FidelityCase("splash_attention", _splash(), covers=("splash_attention_kernel",),
                     max_examples=4),
        FidelityCase("splash_attention_computed_mask", _splash_computed(),
                     covers=("splash_computed_mask_kernel",), max_examples=3),
    ),
}


def cases_for(stem: str) -> tuple[FidelityCase, ...]:
    """The cases of an assignment file stem (``"a1_pallas_basics"``); () if none."""
    return CASES.get(stem, ())
