"""JAX's own TPU kernels at small sizes: the cases that
tests/fidelity/test_jax_ops_tpu_kernels.py compares and bench/bench_jax_kernels.py times.

Each case names a kernel module under ``jax/experimental/pallas/ops/tpu/`` of the installed
jax and a call on that module once loaded (``pallas_sim/backends/jax_ops.py``: the file
itself, only its imports rewritten), with the tolerance its outputs are compared at. The
kernels' private entry points (``_flash_attention_impl``, ``_flash_attention_bwd_dkv``/
``_dq``, ``_splash_attention_fwd``/``_bwd``) are called directly for residuals and
gradients: pallas_sim's ``custom_vjp`` records the rules without differentiating.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from ml_dtypes import bfloat16

from pallas_sim.backends import real_jax
from pallas_sim.backends.jax_ops import PREFIX, load_op

RNG = np.random.default_rng(26)
X = RNG.standard_normal((16, 256)).astype(np.float32)
A = RNG.standard_normal((256, 256)).astype(np.float32)
B = RNG.standard_normal((256, 256)).astype(np.float32)
Q1, K1, V1, DO1 = (RNG.standard_normal((1, 1, 256, 128)).astype(np.float32) for _ in range(4))
LHS = RNG.standard_normal((256, 128)).astype(np.float32)
RHS = RNG.standard_normal((3, 128, 128)).astype(np.float32)
GROUPS = np.array([100, 0, 156], np.int32)
T_LHS = RNG.standard_normal((128, 256)).astype(np.float32)
T_RHS = RNG.standard_normal((256, 128)).astype(np.float32)
# paged attention: 2 sequences, 4 query heads on 2 KV heads, 16 pages of 16 tokens
P_Q = RNG.standard_normal((2, 4, 128)).astype(np.float32)
P_K, P_V = (RNG.standard_normal((2, 16, 16, 128)).astype(np.float32) for _ in range(2))
P_LENGTHS = np.array([100, 37], np.int32)
P_PAGES = RNG.permutation(16).reshape(2, 8).astype(np.int32)
# splash attention: one head, 256 tokens, 128-blocks
S_Q, S_K, S_V, S_DO = (RNG.standard_normal((1, 256, 128)).astype(np.float32) for _ in range(4))
FORWARD, BACKWARD = (1e-4, 1e-4), (5e-4, 1e-4)  # (atol, rtol)


def _flash(m: Any) -> Any:
    sizes = m.BlockSizes(block_q=128, block_k_major=128, block_k=128, block_b=1)
    return m.flash_attention(Q1, K1, V1, causal=True, block_sizes=sizes)


def _flash_residuals(m: Any) -> Any:
    """Output, l and m: the forward with save_residuals (what the VJP's forward runs)."""
    return m._flash_attention_impl(Q1, K1, V1, None, None, True, True, 1.0, 1, 128, 128, 128,
                                   False)


def _flash_backward(m: Any) -> Any:
    """dk, dv (the dkv kernel) and dq (the dq kernel) from each backend's own residuals."""
    o, l, mx = _flash_residuals(m)
    di = np.sum(np.asarray(o) * DO1, axis=-1)
    blocks = dict(block_q_major=128, block_k_major=128, block_k=128, sm_scale=1.0,
                  causal=True, mask_value=m.DEFAULT_MASK_VALUE)
    dk, dv = m._flash_attention_bwd_dkv(Q1, K1, V1, None, None, l, mx, DO1, di, block_q=128,
                                        **blocks)
    dq, _ = m._flash_attention_bwd_dq(Q1, K1, V1, None, None, l, mx, DO1, di, debug=False,
                                      **blocks)
    return dk, dv, dq


def _sibling(m: Any, name: str) -> Any:
    """Kernel module ``name`` loaded for the same backend as ``m``."""
    return load_op(name, m.__name__.partition(".")[0][len(PREFIX):])


def _paged(quantized: bool = False, **options: Any) -> Callable[[Any], Any]:
    def call(m: Any) -> Any:
        k, v = P_K, P_V
        if quantized:
            q = _sibling(m, "paged_attention.quantization_utils")
            k, v = q.quantize_to_int8(P_K), q.quantize_to_int8(P_V)
        return m.paged_attention(P_Q, k, v, P_LENGTHS, P_PAGES, pages_per_compute_block=2,
                                 **options)

    return call


def _splash_kernel(m: Any, mqa: bool, mask: str, backward: bool = False,
                   soft_cap: float | None = None) -> Any:
    masks = _sibling(m, "splash_attention.splash_attention_mask")
    one = (masks.CausalMask((256, 256)) if mask == "causal" else
           masks.LocalMask((256, 256), (64, 0), 0))
    blocks = dict(block_q=128, block_kv=128, block_kv_compute=128)
    if backward:
        blocks.update(block_q_dkv=128, block_kv_dkv=128, block_kv_dkv_compute=128,
                      block_q_dq=128, block_kv_dq=128)
    make = m.make_splash_mqa_single_device if mqa else m.make_splash_mha_single_device
    return make(masks.MultiHeadMask([one]), block_sizes=m.BlockSizes(**blocks),
                attn_logits_soft_cap=soft_cap)


def _splash(mqa: bool, mask: str, soft_cap: float | None = None) -> Callable[[Any], Any]:
    def call(m: Any) -> Any:
        kernel = _splash_kernel(m, mqa, mask, soft_cap=soft_cap)
        return kernel(S_Q, S_K[0], S_V[0]) if mqa else kernel(S_Q, S_K, S_V)

    return call


def _splash_backward(mqa: bool) -> Callable[[Any], Any]:
    """Output, dq, dk, dv: the VJP's forward and backward rules called as JAX's custom_vjp
    calls them."""

    def call(m: Any) -> Any:
        kernel = _splash_kernel(m, mqa, "causal", backward=True)
        k, v = (S_K[0], S_V[0]) if mqa else (S_K, S_V)
        kw = kernel.kwargs
        static = (kw["save_residuals"], kw["mask_value"], kw["is_mqa"], kw["block_sizes"],
                  kw["residual_checkpoint_name"], kw["mask_function"],
                  kw["attn_logits_soft_cap"], kw["interpret"])
        out, res = m._splash_attention_fwd(kernel.fwd_mask_info, kernel.dq_mask_info,
                                           kernel.dkv_mask_info, S_Q, k, v, None, None,
                                           *static)
        grads = m._splash_attention_bwd(*static, res, S_DO)
        return (out, *grads[3:6])  # q, k, v gradients after the three mask infos

    return call


_SPLASH = "splash_attention.splash_attention_kernel"
_PAGED = "paged_attention.paged_attention_kernel"

#: name -> (kernel module, call on the loaded module, (atol, rtol))
CASES: dict[str, tuple[str, Callable[[Any], Any], tuple[float, float]]] = {
    "example_kernel.double": ("example_kernel", lambda m: m.double(X), FORWARD),
    "matmul": ("matmul", lambda m: m.matmul(A, B, block_shape=(128, 128), block_k=128),
               FORWARD),
    "flash_attention causal": ("flash_attention", _flash, FORWARD),
    "flash_attention residuals": ("flash_attention", _flash_residuals, FORWARD),
    "flash_attention backward dkv dq": ("flash_attention", _flash_backward, BACKWARD),
    "megablox gmm": ("megablox.gmm", lambda m: m.gmm(LHS, RHS, GROUPS, tiling=(128, 128, 128)),
                     FORWARD),
    "megablox gmm bf16": ("megablox.gmm", lambda m: m.gmm(
        LHS.astype(bfloat16), RHS.astype(bfloat16), GROUPS, tiling=(128, 128, 128)), FORWARD),
    "megablox gmm transpose_rhs": ("megablox.gmm", lambda m: m.gmm(
        LHS, np.ascontiguousarray(RHS.transpose(0, 2, 1)), GROUPS, tiling=(128, 128, 128),
        transpose_rhs=True), FORWARD),
    "megablox tgmm": ("megablox.gmm", lambda m: m.tgmm(T_LHS, T_RHS, GROUPS,
                                                       tiling=(128, 128, 128)), FORWARD),
    "paged_attention f32": (_PAGED, _paged(), FORWARD),
    "paged_attention int8 pages": (_PAGED, _paged(quantized=True), FORWARD),
    "paged_attention soft cap": (_PAGED, _paged(attn_logits_soft_cap=5.0), FORWARD),
    "paged_attention inline_seq_dim=False": (_PAGED, _paged(inline_seq_dim=False), FORWARD),
    "splash MHA causal": (_SPLASH, _splash(False, "causal"), FORWARD),
    "splash MQA local": (_SPLASH, _splash(True, "local"), FORWARD),
    "splash MHA causal soft cap": (_SPLASH, _splash(False, "causal", 5.0), FORWARD),
    "splash MHA backward": (_SPLASH, _splash_backward(False), BACKWARD),
    "splash MQA backward": (_SPLASH, _splash_backward(True), BACKWARD),
}


def leaves(value: Any) -> list[np.ndarray]:
    """A kernel's result as a list of NumPy arrays (one per output)."""
    items = value if isinstance(value, tuple | list) else [value]
    return [np.asarray(v) for v in items]


def run_case(case: str, backend: str, module: Any = None) -> list[np.ndarray]:
    """The outputs of ``case`` on ``backend`` ("sim", "jax": TPU interpret mode, or "hlo":
    ``interpret=True``), as
    NumPy arrays; ``module``: the kernel module already loaded for that backend."""
    name, call, _ = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if backend == "sim":
            return leaves(call(module or load_op(name, "sim")))
        with real_jax.mode("hlo" if backend == "hlo" else "tpu"):
            return leaves(call(module or load_op(name, "jax")))
