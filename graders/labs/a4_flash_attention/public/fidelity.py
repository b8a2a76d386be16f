"""Fidelity cases of a4_flash_attention (Flash attention, its micro-tiled kernel and the
§5.2 traffic answers): ``CASES`` for ``graders.fidelity.cases.cases_for``, which says what a
case is."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from graders.fidelity.cases import FidelityCase, array, just
from graders.labs.a4_flash_attention.public import worked as a4_worked


@st.composite
def _flash(draw):
    block = draw(st.sampled_from([8, 16]))
    length = block * draw(st.integers(1, 3))
    hkv = draw(st.integers(1, 2))
    heads = hkv * draw(st.integers(1, 2))
    d = draw(st.sampled_from([8, 16]))
    seed = draw(st.integers(0, 2**16))
    q, k, v = (array((h, length, d), seed + i) for i, h in enumerate((heads, hkv, hkv)))
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
    in the handout) run through the module's own ``flash_attention`` (Task 4.4), whose
    ``flash_attention_kernel`` is replaced for the call by the micro-tiled kernel (given
    only the keywords it takes), so that it runs on either backend and no call of the
    grader's is spelled out here. q, k, v: [1, L, d]."""
    micro = module.flash_attention_kernel_microtiled
    own = module.flash_attention_kernel

    def kernel(*refs: Any, sm_scale: float, causal: bool, block_q: int, block_kv: int,
               **_options: Any) -> None:
        micro(*refs, sm_scale=sm_scale, causal=causal, block_q=block_q, block_kv=block_kv,
              bkv_compute=bkv_compute)

    module.flash_attention_kernel = kernel
    try:
        return module.flash_attention(q, k, v, causal=causal, sm_scale=q.shape[-1] ** -0.5,
                                      block_q=block_q, block_kv=block_kv)
    finally:
        module.flash_attention_kernel = own


@st.composite
def _flash_microtiled(draw):
    """Task 4.7 through the wrapper of Task 4.4 (``_microtiled_call``): block_kv 16 or 32
    scored 8 keys at a time (a Python loop over static pl.ds slices inside the kernel)."""
    block_q, block_kv = draw(st.sampled_from([8, 16])), draw(st.sampled_from([16, 32]))
    length = block_kv * draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    q, k, v = (array((1, length, 8), seed + i) for i in range(3))
    return (q, k, v), {"causal": draw(st.booleans()), "block_q": block_q,
                       "block_kv": block_kv, "bkv_compute": 8}


#: The functions of this lab that use ``pl``/``pltpu``/``jnp``/``jax`` (as ``func`` or in
#: ``covers``) and the inputs they are compared on.
CASES: tuple[FidelityCase, ...] = (
    FidelityCase("flash_attention", _flash(), covers=("flash_attention_kernel",),
                 max_examples=4),
    FidelityCase("flash_attention_kernel_microtiled", _flash_microtiled(),
                 max_examples=3, driver=_microtiled_call),
    *(FidelityCase(func, just([(a.args, {}) for a in a4_worked.TRAFFIC if a.func == func]))
      for func in dict.fromkeys(a.func for a in a4_worked.TRAFFIC)),
)
