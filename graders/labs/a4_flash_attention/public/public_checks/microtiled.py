"""Task 4.7 flash_attention_kernel_microtiled."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Api, Mismatch, arrays, assert_close, public_check, seeds

from .attention import TOL, attention_cases, dense_attention, run_kernel
from .common import A


@st.composite
def micro_cases(draw, *, causal: bool | None = None) -> dict:
    """Strategy for Task 4.7: ``attention_cases``' plain family with block_kv 16 or 32 and a
    bkv_compute of 4 or 8 below it; d and dv (4 or 8) never exceed bkv_compute, so the
    largest array a micro-tiled kernel computes is its [block_q, bkv_compute] score tile."""
    case = draw(attention_cases(causal=causal))
    block_kv = draw(st.sampled_from([16, 32]))
    length = max(case["block_q"], block_kv) * draw(st.integers(1, 2))
    heads, kv_heads = case["q"].shape[0], case["k"].shape[0]
    d = case["q"].shape[-1]
    dv = case["v"].shape[-1]
    bkv_compute = max(d, dv, draw(st.sampled_from([4, 8])))
    dtype = case["q"].dtype
    q = arrays((heads, length, d), draw(seeds), dtype=np.float64).astype(dtype)
    k = arrays((kv_heads, length, d), draw(seeds), dtype=np.float64).astype(dtype)
    v = arrays((kv_heads, length, dv), draw(seeds)).astype(dtype)
    case.update(q=q, k=k, v=v, block_kv=block_kv, bkv_compute=bkv_compute)
    return case


def _micro_options(case: dict) -> dict:
    return {key: case[key] for key in ("sm_scale", "causal", "block_q", "block_kv",
                                       "bkv_compute")}


@public_check(A, "4.7", "flash_attention_kernel_microtiled, run through your flash_attention's "
                        "pallas_call in place of Task 4.3's kernel, equals "
                        "dense softmax attention, causal or not (lecture §5.3)")
def microtiled_values(api: Api) -> None:
    """Task 4.7: flash_attention_kernel_microtiled, run through your flash_attention's
    pallas_call in place of Task 4.3's kernel (``public_harness``), equals dense
    softmax attention, causal or not (lecture §5.3).
    """
    def body(case: dict) -> None:
        got = run_kernel(api, "flash_attention_kernel_microtiled", case,
                         **_micro_options(case))["out"]
        rtol, atol = TOL[case["q"].dtype.name]
        assert_close(got, dense_attention(case), rtol=rtol, atol=atol,
                     what="the micro-tiled kernel's output")
    api.run_property(micro_cases(), body, max_examples=4)


@public_check(A, "4.7", "micro-tiling: the largest array the kernel computes (the trace's "
                        "largest_intermediate) is block_q × bkv_compute, not block_q × "
                        "block_kv (lecture §5.3)")
def microtiled_largest(api: Api) -> None:
    """Task 4.7: micro-tiling: the largest array the kernel computes (the trace's
    largest_intermediate) is block_q × bkv_compute, not block_q × block_kv (lecture §5.3).
    """
    def body(case: dict) -> None:
        largest = run_kernel(api, "flash_attention_kernel_microtiled", case,
                             **_micro_options(case))["largest"]
        block_q, block_kv, bkv = case["block_q"], case["block_kv"], case["bkv_compute"]
        if int(largest) != block_q * bkv:
            whole = " — the whole kv block at once: bkv_compute is ignored" if (
                int(largest) == block_q * block_kv) else ""
            raise Mismatch("the largest intermediate is not one [block_q, bkv_compute] tile",
                           expected=f"{block_q} × {bkv} = {block_q * bkv} elements",
                           got=f"{int(largest)} elements{whole}")
    api.run_property(micro_cases(), body, max_examples=3)
