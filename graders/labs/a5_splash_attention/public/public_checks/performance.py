"""Task 5.7 choose_splash_blocks (performance)."""

from __future__ import annotations

import numpy as np

from graders.labs.a5_splash_attention.public import worked
from graders.student.public import Api, Mismatch, StudentRaised, public_check

from .common import FIELDS, A, mask_info
from .kernel import HARNESS

# -- Task 5.7 ------------------------------------------------------------------------------------

@public_check(A, "5.7", "performance: choose_splash_blocks(mask_kind) returns (block_q, block_kv) "
                        "from the candidate set for the causal, local and document masks at "
                        "L 8192, at which your own splash_attention runs within the 32 MiB "
                        "scoped VMEM, predicted (pallas_sim.estimate) within 10 % of your own "
                        "splash_attention at the lecture's best blocks (the grade compares "
                        "with every candidate)")
def splash_blocks(api: Api) -> None:
    """Task 5.7: performance: choose_splash_blocks(mask_kind) returns (block_q, block_kv) from
    the candidate set for the causal, local and document masks at L 8192, at which your own
    splash_attention runs within the 32 MiB scoped VMEM, predicted (pallas_sim.estimate)
    within 10 % of your own splash_attention at the lecture's best blocks (the grade
    compares with every candidate: sweep them yourself to be sure).
    """
    length = worked.PERF_LENGTH
    ids = np.repeat(np.arange(len(worked.PERF_DOCUMENTS)), worked.PERF_DOCUMENTS)
    rows, cols = np.arange(length)[:, None], np.arange(length)[None, :]
    masks = {"causal": rows >= cols,
             "local": (rows >= cols) & (cols >= rows - worked.PERF_WINDOW),
             "document": ids[:, None] == ids[None, :]}
    shape = dict(length=length, heads=worked.PERF_HEADS, head_dim=worked.PERF_HEAD_DIM,
                 value_dim=worked.PERF_VALUE_DIM, chip="v7",
                 candidates=worked.PERF_BLOCK_CANDIDATES)
    for kind in worked.PERF_MASKS:
        label = f"choose_splash_blocks({kind!r}), L {length}"
        blocks = api.call("choose_splash_blocks", kind).value
        if not (isinstance(blocks, tuple | list) and len(blocks) == 2
                and all(isinstance(b, int | np.integer) and not isinstance(b, bool)
                        for b in blocks)):
            raise Mismatch("choose_splash_blocks must return a tuple of two ints "
                           "(block_q, block_kv)", input=label, expected="e.g. (512, 512)",
                           got=repr(blocks))
        if not all(b in worked.PERF_BLOCK_CANDIDATES for b in blocks):
            raise Mismatch("a block size outside the candidate set", input=label,
                           expected=f"each one of {list(worked.PERF_BLOCK_CANDIDATES)}",
                           got=str(tuple(blocks)))
        blocks = [int(b) for b in blocks]
        got_ms, mfu = _own_time(api, kind, masks[kind], tuple(blocks), label, shape, at=None)
        best = tuple(worked.PERF_BEST_BLOCKS[kind])
        if best == tuple(blocks):
            continue
        best_ms, _ = _own_time(api, kind, masks[kind], best, label, shape, at=best)
        if got_ms > best_ms * (1 + worked.PERFORMANCE_RTOL):
            raise Mismatch(f"your blocks {tuple(blocks)} for the {kind} mask are predicted "
                           f"more than 10 % slower than your own splash_attention at {best}",
                           input=label, expected=f"at most {best_ms * 1.1:.4f} ms ({best}: "
                           f"{best_ms:.4f} ms)", got=f"{got_ms:.4f} ms (MFU {mfu:.0%})")


def _own_time(api: Api, kind: str, mask: np.ndarray, blocks: tuple, label: str, shape: dict,
              *, at: tuple | None) -> tuple[float, float]:
    """(predicted ms, MFU) of the student's splash_attention at ``blocks`` over ``mask``."""
    info = mask_info(mask, int(blocks[0]), int(blocks[1]))
    try:
        reply = api.kernel(HARNESS, "choose_splash_blocks", kind,
                           tuple(info[name] for name in FIELDS), **shape, at=at)
    except StudentRaised as raised:
        if raised.error_type == "VmemOOMError":
            raise raised.copy(input=label, diagnosis="the double-buffered q, k, v, "
                              "pattern and output blocks exceed 32 MiB") from None
        raise
    calls = reply.get("calls") or []
    if len(calls) != 1 or calls[0]["vmem_bytes"] > worked.PERF_SCOPED_VMEM:
        raise Mismatch("your splash_attention should make one pallas_call within the "
                       "scoped VMEM", input=f"{label} at {blocks}",
                       expected="1 pallas_call, at most 32 MiB",
                       got=", ".join(f"{c['vmem_bytes'] / 2**20:.1f} MiB" for c in calls)
                       or "no pallas_call")
    return calls[0]["time_s"] * 1e3, calls[0]["mfu"]
