"""Task 4.8 choose_flash_config (performance)."""

from __future__ import annotations

from graders.labs.a4_flash_attention.public import worked
from graders.student.public import Api, Mismatch, StudentRaised, public_check

from .attention import HARNESS
from .common import A


def _estimate_flash(api: Api, config: tuple) -> dict:
    """``public_harness.choose_flash_config`` at ``config`` (block_q, block_kv,
    max_logit_const): the student's own flash_attention there through
    ``pallas_sim.estimate`` (the lecture's shapes, bf16, one v7 TensorCore). Blocks that do
    not fit VMEM are the choice's fault; anything else the run raises comes from the
    student's flash_attention or its kernel, and the failure says the check depends on
    Tasks 4.4 and 4.3 (the grade times the kernel in its own call, so a wrapper mistake
    costs the grade's 4.8 nothing)."""
    try:
        return api.kernel(HARNESS, "choose_flash_config", q_shape=worked.Q_SHAPE,
                          v_shape=worked.V_SHAPE, chip="v7",
                          block_candidates=worked.FLASH_BLOCK_CANDIDATES,
                          mle_candidates=worked.FLASH_MLE_CANDIDATES, at=config)
    except StudentRaised as raised:
        if raised.error_type == "VmemOOMError":
            raise
        raise raised.copy(what=f"{raised.what} (this check times your configuration "
                               f"through your flash_attention and its kernel: it depends on "
                               f"Task 4.4 and Task 4.3, fix those first)") from None


@public_check(A, "4.8", "performance: choose_flash_config() returns (block_q, block_kv, "
                        "max_logit_const) from the candidate sets at which your own "
                        "flash_attention runs the lecture's attention with blocks, scratch and "
                        "score tiles within 64 MiB of VMEM, predicted (pallas_sim.estimate) "
                        "within 10 % of your own flash_attention at the lecture's best "
                        "configuration")
def flash_config(api: Api) -> None:
    """Task 4.8: performance: choose_flash_config() returns (block_q, block_kv,
    max_logit_const) from the candidate sets at which your own flash_attention runs the
    lecture's attention with blocks, scratch and score tiles within 64 MiB of VMEM, predicted
    (pallas_sim.estimate) within 10 % of your own flash_attention at the lecture's best
    configuration (the grade's bar is the best candidate for your kernel: it may be lower).
    """
    reply = api.kernel(HARNESS, "choose_flash_config", q_shape=worked.Q_SHAPE,
                       v_shape=worked.V_SHAPE, chip="v7",
                       block_candidates=worked.FLASH_BLOCK_CANDIDATES,
                       mle_candidates=worked.FLASH_MLE_CANDIDATES, estimate=False)
    config = reply.get("config")
    if not isinstance(config, list):
        raise Mismatch("choose_flash_config() must return (block_q, block_kv, "
                       "max_logit_const): two ints and a float or None",
                       expected=f"e.g. (512, 512, None) or (512, 512, {worked.MLE_CONSTANT})",
                       got=str(config))
    sizes = worked.FLASH_BLOCK_CANDIDATES
    if (config[0] not in sizes or config[1] not in sizes
            or config[2] not in worked.FLASH_MLE_CANDIDATES):
        raise Mismatch("a value outside the candidate sets",
                       expected=f"block_q, block_kv each one of {list(sizes)}; "
                                f"max_logit_const None or {worked.MLE_CONSTANT}",
                       got=str(tuple(config)))
    calls = _estimate_flash(api, tuple(config))["calls"]
    if len(calls) != 1:
        raise Mismatch("your flash_attention should make one pallas_call (this check times "
                       "your configuration through it: it depends on Task 4.4, fix that "
                       "first)", expected="1 pallas_call", got=f"{len(calls)} calls")
    call = calls[0]
    need = call["vmem_bytes"] + 2 * 4 * call["largest_intermediate"]
    if need > worked.VMEM_CAPACITY:
        raise Mismatch("the blocks, scratch and two f32 score tiles do not fit VMEM "
                       "(lecture §5.3)", expected="at most 64 MiB",
                       got=f"{need / worked.MiB:.1f} MiB")
    got_ms = call["time_s"] * 1e3
    best = tuple(worked.FLASH_BEST_CONFIG)
    if (tuple(config) == best
            or got_ms <= worked.FLASH_FASTEST_MS * (1 + worked.PERFORMANCE_RTOL)):
        return
    # A correct kernel slower than the reference is held to its own time at the lecture's
    # best configuration, not to the reference's time (the grade compares with your kernel).
    at_best = _estimate_flash(api, best)
    best_ms = at_best["calls"][0]["time_s"] * 1e3 if len(at_best.get("calls") or []) == 1 \
        else worked.FLASH_FASTEST_MS
    limit_ms = best_ms * (1 + worked.PERFORMANCE_RTOL)
    if got_ms > limit_ms:
        raise Mismatch(f"your configuration {tuple(config)} is predicted more than 10 % "
                       f"slower than your own flash_attention at {best}",
                       expected=f"at most {limit_ms:.4f} ms ({best}: {best_ms:.4f} ms)",
                       got=f"{got_ms:.4f} ms (MFU {call['mfu']:.0%})")
