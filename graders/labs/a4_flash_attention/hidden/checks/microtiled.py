"""Task 4.7 flash_attention_kernel_microtiled."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import strategies as st

from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import seeds
from graders.labs.a4_flash_attention.public import worked

from .common import F32, A
from .problems import BF16, HEAD_GROUPS, AttentionCase, _check_attention

# --- Task 4.7 flash_attention_kernel_microtiled ----------------------------------------------

@dataclasses.dataclass(frozen=True)
class MicroCase:
    """A drawn attention problem (``base``: no soft cap, no constant) and the
    ``bkv_compute`` of the micro-tiled kernel (a proper divisor of ``base.block_kv``)."""

    base: AttentionCase
    bkv_compute: int

    @property
    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.base.args

    @property
    def kwargs(self) -> dict[str, object]:
        return {"sm_scale": self.base.scale, "causal": self.base.causal,
                "block_q": self.base.block_q, "block_kv": self.base.block_kv,
                "bkv_compute": self.bkv_compute}

    @property
    def intended(self) -> int:
        """Elements of the largest intermediate of a micro-tiled kernel: block_q · bkv_compute
        (the draws keep d and dv <= bkv_compute where this is graded)."""
        return self.base.block_q * self.bkv_compute

    def __repr__(self) -> str:
        return f"{self.base!r}, bkv_compute = {self.bkv_compute}"


@st.composite
def micro_cases(draw, *, causal: bool | None = None, narrow_heads: bool = False) -> MicroCase:
    """Drawn problems for Task 4.7: H 1-6 with a GQA group, block_q 8/16/32, block_kv
    16/32/64, bkv_compute 8/16/32 below block_kv (a divisor), L a multiple of both blocks
    (up to 128), f32 or bf16, ``causal`` drawn unless given; d and dv 4-48, or no larger
    than bkv_compute with ``narrow_heads`` (then the score tile is the largest array a
    micro-tiled kernel computes)."""
    kv_heads, group = draw(st.sampled_from(HEAD_GROUPS))
    heads = kv_heads * group
    block_q = draw(st.sampled_from([8, 16, 32]))
    block_kv = draw(st.sampled_from([32, 16, 64]))
    bkv_compute = draw(st.sampled_from([c for c in (8, 16, 32) if c < block_kv]))
    unit = math.lcm(block_q, block_kv)
    length = unit * draw(st.integers(1, max(1, min(3, 128 // unit))))
    top = bkv_compute if narrow_heads else 48
    d, dv = draw(st.integers(4, top)), draw(st.integers(4, top))
    dtype = draw(st.sampled_from([F32, BF16]))
    is_causal = draw(st.booleans()) if causal is None else causal
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-4, 4, (heads, length, d)).astype(dtype)
    k = rng.uniform(-4, 4, (kv_heads, length, d)).astype(dtype)
    v = rng.uniform(-4, 4, (kv_heads, length, dv)).astype(dtype)
    scale = round(draw(st.sampled_from([1.0, 0.25, 2.0])) / math.sqrt(d), 6)
    base = AttentionCase(q, k, v, scale, is_causal, block_q, block_kv, None, None, seed)
    return MicroCase(base, bkv_compute)


def _micro_values(s: Session, case: MicroCase) -> None:
    """Run the micro-tiled kernel in the grader's call and compare with dense attention."""
    got = s.invoke("flash_attention_kernel_microtiled", case.args, case.kwargs,
                   harness="a4").value
    _check_attention(got, case.base, "the micro-tiled kernel's output")


@check(A, "4.7", 2, "flash_attention_kernel_microtiled, run in the grader's pallas_call, equals "
                    "dense float64 attention (drawn heads, GQA, blocks, bkv_compute < block_kv, "
                    "f32/bf16; no mask)")
def microtiled_values(s: Session) -> None:
    """Task 4.7: flash_attention_kernel_microtiled, run in the grader's pallas_call, equals dense
    float64 attention (drawn heads, GQA, blocks, bkv_compute < block_kv, f32/bf16; no mask).
    """
    run_property(micro_cases(causal=False), lambda case: _micro_values(s, case),
                 max_examples=5)


@check(A, "4.7", 1, "with causal=True the micro-tiled kernel masks key position > query "
                    "position, counting the slice's offset inside the kv block")
def microtiled_causal_values(s: Session) -> None:
    """Task 4.7: with causal=True the micro-tiled kernel masks key position > query position,
    counting the slice's offset inside the kv block.
    """
    run_property(micro_cases(causal=True), lambda case: _micro_values(s, case),
                 max_examples=6)


def _largest_failure(largest: int, *, block_q: int, block_kv: int,
                     bkv_compute: int) -> CheckFailure:
    """The failure for a largest intermediate other than block_q · bkv_compute; the
    diagnosis "bkv_compute is ignored" only when it is exactly block_q · block_kv."""
    ignored = largest == block_q * block_kv
    return CheckFailure(
        "the largest array the kernel computes is not one [block_q, bkv_compute] tile",
        expected=f"largest intermediate {block_q} × {bkv_compute} = {block_q * bkv_compute} "
                 "elements",
        got=f"{largest} elements"
            + (f" = {block_q} × {block_kv}, a whole [block_q, block_kv] tile" if ignored else ""),
        diagnosis=("bkv_compute is ignored: the kernel scores the whole kv block at once, so "
                   "the largest intermediate is [block_q, block_kv] although the values are "
                   "right. Loop over the block bkv_compute keys at a time "
                   "(k_ref[pl.ds(start, bkv_compute), :]) and update m, l and acc after each "
                   "slice (lecture §5.3)") if ignored else None,
        hint=None if ignored else
        "the trace counts every array an op produces in the kernel (arithmetic, exp, casts, "
        "products; not ref loads or broadcast_to): keep per-row values as (block_q, 1) "
        "columns and score one slice of keys at a time")


@check(A, "4.7", 1, "micro-tiling: with d, dv <= bkv_compute, the largest array the kernel "
                    "computes (trace: largest_intermediate) is block_q × bkv_compute, not "
                    "block_q × block_kv, and the output is right (lecture §5.3)")
def microtiled_largest_intermediate(s: Session) -> None:
    """Task 4.7: micro-tiling: with d, dv <= bkv_compute, the largest array the kernel computes
    (trace: largest_intermediate) is block_q × bkv_compute, not block_q × block_kv, and the
    output is right (lecture §5.3).
    """
    def body(case: MicroCase) -> None:
        reply = s.invoke("flash_attention_kernel_microtiled", case.args,
                         {**case.kwargs, "report_largest": True}, harness="a4")
        value = reply.value
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise CheckFailure("the grader's call returned no trace figure", status="error",
                               internal=True)
        _check_attention(value[0], case.base, "the micro-tiled kernel's output")
        largest = int(value[1])
        if largest != case.intended:
            raise _largest_failure(largest, block_q=case.base.block_q,
                                   block_kv=case.base.block_kv, bkv_compute=case.bkv_compute)
    run_property(micro_cases(narrow_heads=True), body, max_examples=4)


@check(A, "4.7", 1, "worked answers at the lecture's sizes (shapes only, bf16, d 192, dv 128): "
                    "4096 × 4096 blocks with bkv_compute 1024 keep two f32 score tiles of "
                    "32 MiB instead of 128 MiB; 2048 × 2048 with bkv_compute 512, 8 MiB")
def microtiled_worked(s: Session) -> None:
    """Task 4.7: worked answers at the lecture's sizes (shapes only, bf16, d 192, dv 128): 4096 ×
    4096 blocks with bkv_compute 1024 keep two f32 score tiles of 32 MiB instead of 128 MiB;
    2048 × 2048 with bkv_compute 512, 8 MiB.
    """
    for (block_q, block_kv, bkv_compute), mib in worked.MICROTILED_MIB.items():
        length = max(block_q, block_kv)
        shapes = ([1, length, worked.HEAD_DIM], [1, length, worked.HEAD_DIM],
                  [1, length, worked.VALUE_DIM])
        where = (f"q, k = bf16[1, {length}, {worked.HEAD_DIM}], v = bf16[1, {length}, "
                 f"{worked.VALUE_DIM}] (shapes only), block_q = {block_q}, block_kv = "
                 f"{block_kv}, bkv_compute = {bkv_compute}, causal = False")
        try:
            largest = int(s.invoke(
                "flash_attention_kernel_microtiled", shapes,
                {"sm_scale": worked.HEAD_DIM ** -0.5, "causal": False, "block_q": block_q,
                 "block_kv": block_kv, "bkv_compute": bkv_compute,
                 "abstract_dtype": "bfloat16"}, harness="a4").value)
        except CheckFailure as failure:
            raise failure.copy(input=where) from None
        if largest != block_q * bkv_compute:
            failure = _largest_failure(largest, block_q=block_q, block_kv=block_kv,
                                       bkv_compute=bkv_compute)
            raise failure.copy(input=where) from None
        got_mib = worked.score_tile_mib(block_q, bkv_compute)
        if got_mib != mib:  # the worked table and its formula disagree: a grader bug
            raise CheckFailure(f"worked answer {mib} MiB != {got_mib} MiB", status="error",
                               internal=True)
