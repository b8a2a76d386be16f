"""Task 3.5 choose_matmul_blocks (performance)."""

from __future__ import annotations

import functools

import numpy as np

import reference.a3_matmul as ref
from graders.checking import measures, performance, step_model
from graders.checking.framework import CheckFailure, Session, check
from graders.labs.a3_matmul.hidden import timing
from graders.labs.a3_matmul.public import worked

from .common import F32_ACCUMULATION, HBM_BANDWIDTH, PEAK_FLOPS, A, MiB

# --- Task 3.5 choose_matmul_blocks (performance) -------------------------------------------

#: Full points within this fraction above the best candidate's predicted time for the
#: student's own kernel.
PERFORMANCE_RTOL = worked.PERFORMANCE_RTOL
#: Seconds the worker may take for the measurement: about 100 abstract small runs (one per
#: legal candidate, at most three grid steps each) and two concrete ones (the chosen and
#: the reference's best candidate: up to 12.9 GFLOP of bf16 products in NumPy), about
#: 1-2 s here.
PERFORMANCE_TIMEOUT = 30.0
_PERF_M, _PERF_K = ref.PERFORMANCE_X_SHAPE
_PERF_N = ref.PERFORMANCE_Y_SHAPE[1]
_PERF_LABEL = (f"bf16 x [{_PERF_M}, {_PERF_K}] @ y [{_PERF_K}, {_PERF_N}] on one Ironwood "
               "TensorCore (lecture §4.2); your matmul_kernel in the grader's standard "
               "pallas_call")


@functools.lru_cache(maxsize=1)
def best_candidate() -> tuple[tuple[int, int, int], float]:
    """(the reference's fastest legal candidate, its predicted seconds with the reference
    kernel).

    The search over all candidates takes seconds, so its winner is kept in the reference
    (``ref.BEST_MATMUL_BLOCKS``, recomputed by tests/reference/test_reference_a2_a3.py); only its
    time is predicted here, once per grading process.
    """
    blocks = tuple(ref.BEST_MATMUL_BLOCKS)
    return blocks, ref.predicted_matmul_time(blocks)


def _intensity_note(blocks: tuple[int, int, int]) -> str:
    """What the blocks cost per the lecture's arithmetic (§4.2): steps and FLOP/B per step."""
    bm, bn, bk = blocks
    steps = (_PERF_M // bm) * (_PERF_N // bn) * (_PERF_K // bk)
    intensity = (2 * bm * bn * bk) / (2 * (bm * bk + bk * bn))  # bf16: 2 B per element
    return (f"{steps} grid steps of about a microsecond's fixed cost each; "
            f"{intensity:.0f} FLOP per copied byte per step (Ironwood's balance point: "
            f"{PEAK_FLOPS / HBM_BANDWIDTH:.0f})")


def _oom_diagnosis() -> str:
    return ("the blocks need "
            "2·(bm·bk·2 + bk·bn·2 + bm·bn·4) B of double buffers, more than the 32 MiB scoped "
            "VMEM (Task 3.3's arithmetic, lecture §4.1)")


def _validate_blocks(reply: object) -> tuple[int, int, int]:
    """The chosen blocks from the harness's reply (plain data). Raises ``CheckFailure``:
    not three ints, or not candidates."""
    if not isinstance(reply, dict) or not isinstance(reply.get("blocks"), list):
        got = reply.get("blocks") if isinstance(reply, dict) else repr(reply)
        raise CheckFailure("choose_matmul_blocks() must return a tuple of three ints "
                           "(bm, bn, bk)", expected="e.g. (512, 512, 512)", got=str(got)[:200])
    blocks = reply["blocks"]
    candidates = ref.MATMUL_BLOCK_CANDIDATES
    if len(blocks) != 3 or not all(type(b) is int and b in candidates for b in blocks):
        raise CheckFailure("choose_matmul_blocks() returned a block size outside the candidate "
                           "set", expected=f"each of bm, bn, bk one of {list(candidates)}",
                           got=str(tuple(blocks))[:200])
    return tuple(blocks)  # type: ignore[return-value]


def _require_fits(blocks: tuple[int, int, int]) -> None:
    """The chosen blocks divide the problem and their double buffers fit the scoped VMEM
    (decided here, on the grader's own call). Raises ``CheckFailure``."""
    bm, bn, bk = blocks
    if not timing.divides(blocks):
        dims = [f"{name} = {b} does not divide {dim} = {size}" for name, b, dim, size in
                (("bm", bm, "M", _PERF_M), ("bn", bn, "N", _PERF_N), ("bk", bk, "K", _PERF_K))
                if size % b]
        raise CheckFailure("your blocks do not divide the lecture's matmul", input=_PERF_LABEL,
                           expected="(bm, bn, bk) dividing (M, N, K) = "
                                    f"({_PERF_M}, {_PERF_N}, {_PERF_K})",
                           got=f"{blocks}: " + "; ".join(dims))
    call = timing.small_call(blocks)
    if isinstance(call, str):
        raise CheckFailure(f"your blocks {blocks} do not fit the 32 MiB scoped VMEM",
                           input=_PERF_LABEL, expected="at most 32 MiB of blocks and buffers",
                           got=call.splitlines()[0], diagnosis=_oom_diagnosis())


def _verified(reply: dict, blocks: tuple[int, int, int], *, whose: str) -> step_model.StepRecord:
    """The student's kernel's per-step work at ``blocks``, measured concretely (values
    checked against float64 x @ y on the grader's sample) and equal to the abstract run's.
    ``whose`` names the blocks in messages ("your blocks", "the reference's best blocks").

    Raises:
      CheckFailure: the kernel raised there, computed wrong values, did different work on
        shapes only, ran fewer MXU FLOPs per step than its block product, or allocated
        more VMEM than the scoped limit.
    """
    key = timing.key(blocks)
    rows, cols = timing.sample_of(blocks)
    where = f"{whose} {blocks}"
    concrete = step_model.parse_record(
        (reply.get("concrete") or {}).get(key), num_steps=timing.k_steps(blocks),
        sample_shape=(len(rows), len(cols)))
    if isinstance(concrete, step_model.KernelRaised):
        raise CheckFailure(f"your matmul_kernel raised in the grader's standard pallas_call at "
                           f"{where}", input=_PERF_LABEL, got=concrete.error,
                           diagnosis=_oom_diagnosis() if concrete.error_type == "VmemOOMError"
                           else None)
    exact, magnitude = timing.expected_sample(blocks)
    got = concrete.sample.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - exact) <= F32_ACCUMULATION * magnitude)
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise CheckFailure(
            f"your matmul_kernel's output at {where} is wrong, so its time is not given "
            "(Task 3.1 grades the kernel's values)", input=_PERF_LABEL + f"; {len(rows)} × "
            f"{len(cols)} output elements checked of x {timing.small_shapes(blocks)[0]} @ y "
            f"{timing.small_shapes(blocks)[1]}, seeded",
            expected=f"x @ y within {F32_ACCUMULATION:g}·(|x| @ |y|); at [{rows[r]}, "
                     f"{cols[c]}]: {exact[r, c]:.6g}",
            got=f"{int(bad.sum())} of {bad.size} wrong; at [{rows[r]}, {cols[c]}]: "
                f"{got[r, c]:.6g}")
    abstract = step_model.parse_record((reply.get("abstract") or {}).get(key),
                                       num_steps=timing.k_steps(blocks))
    if isinstance(abstract, step_model.KernelRaised):
        raise CheckFailure(f"your kernel raised on shapes only at {where} (it ran on data)",
                           input=_PERF_LABEL, got=abstract.error,
                           hint="a kernel's work must not depend on whether its blocks hold "
                                "values (pallas_sim.estimate runs the same kernel on shapes "
                                "only)")
    step_model.require_same_work(concrete, abstract, where=where, input=_PERF_LABEL)
    bm, bn, bk = blocks
    step_model.require_step_flops(
        concrete, 2 * bm * bn * bk, input=_PERF_LABEL,
        message=f"your matmul_kernel at {where} does not compute its block product: a step "
                "ran fewer MXU FLOPs than 2·bm·bn·bk")
    _require_scoped(blocks, concrete)
    return concrete


def _require_scoped(blocks: tuple[int, int, int], record: step_model.StepRecord) -> None:
    blocks_bytes, limit = timing.vmem(blocks)
    if blocks_bytes + record.scoped_vmem_bytes > limit:
        raise CheckFailure(f"your kernel's VMEM at {blocks} exceeds the 32 MiB scoped VMEM",
                           input=_PERF_LABEL, expected=f"at most {limit:,} B",
                           got=f"{blocks_bytes:,} B of blocks + "
                               f"{record.scoped_vmem_bytes:,} B of run_scoped")


def _legal_candidates() -> list[tuple[int, int, int]]:
    """The candidates that divide the problem and whose blocks fit the grader's call."""
    return [b for b in timing.all_candidates() if timing.fits(b)]


def projected_best(blocks: tuple[int, int, int], record: step_model.StepRecord
                   ) -> tuple[tuple[tuple[int, int, int], float], dict]:
    """The fastest legal candidate for the student's kernel, its work measured (verified)
    only at the chosen ``blocks`` and projected elsewhere from the reference kernel's
    (``timing.projected``): ((candidate, seconds), the times computed, by candidate).
    At ``blocks`` the time is the measured record's own."""
    records = {b: timing.projected(b, blocks, record) for b in _legal_candidates()}
    found, seen = step_model.sweep_times(
        records, lambda b: timing.lower_bound(b, records[b]),
        lambda b: float(timing.full_timeline(b, records[b]).time_s))
    assert found is not None
    return found, seen


def _measure(s: Session) -> dict:
    """The student's choice and their kernel's measured runs at it, concrete and abstract
    (one worker round trip per session; no other candidate is run). Raises
    ``CheckFailure``: the chooser raised, or returned no candidate."""
    kwargs = {"problems": timing.problems(), "candidates": ref.MATMUL_BLOCK_CANDIDATES,
              "sweep": (), "concrete": ()}
    outcome = performance.invoke_once(s, "choose_matmul_blocks", kwargs, harness="a3",
                                      timeout=PERFORMANCE_TIMEOUT)
    if isinstance(outcome, CheckFailure):
        raise outcome.copy(input=_PERF_LABEL)
    return outcome  # type: ignore[return-value]


def _chosen_time(s: Session) -> tuple[dict, tuple[int, int, int], step_model.StepRecord, object]:
    """(reply, chosen blocks, their verified record, their full-size timeline)."""
    reply = _measure(s)
    blocks = _validate_blocks(reply)
    _require_fits(blocks)
    record = _verified(reply, blocks, whose="your blocks")
    return reply, blocks, record, timing.full_timeline(blocks, record)


@check(A, "3.5", 3, "performance: choose_matmul_blocks() returns candidate blocks (bm, bn, bk) "
                    "at which your matmul_kernel, in the grader's standard pallas_call, runs "
                    "the lecture's matmul within the 32 MiB scoped VMEM with checked values")
def blocks_fit(s: Session) -> None:
    """Task 3.5: performance: choose_matmul_blocks() returns candidate blocks (bm, bn, bk) at
    which your matmul_kernel, in the grader's standard pallas_call, runs the lecture's matmul
    within the 32 MiB scoped VMEM with checked values.
    """
    _, _, _, line = _chosen_time(s)
    measures.record(s, measures.PREDICTED_MS, line.time_s * 1e3)


@check(A, "3.5", 7, "performance: your blocks are predicted within 10 % of the best candidate "
                    "for your own kernel (every legal candidate, your kernel's work measured "
                    "per grid step at your blocks and projected onto the others from the "
                    "reference's, the full size predicted by the model; lecture §4.2)")
def blocks_fast(s: Session) -> None:
    """Task 3.5: performance: your blocks are predicted within 10 % of the best candidate for
    your own kernel (every legal candidate, your kernel's work measured per grid step at your
    blocks and projected onto the others from the reference's, the full size predicted by
    the model; lecture §4.2).
    """
    _, blocks, record, line = _chosen_time(s)
    got_s = float(line.time_s)
    (fastest, best_s), _ = projected_best(blocks, record)
    if got_s <= best_s * (1 + PERFORMANCE_RTOL):
        return
    raise CheckFailure(
        f"your blocks {blocks} are predicted {step_model.ratio_text(got_s, best_s)} than "
        f"{fastest}, the best candidate for your own kernel", input=_PERF_LABEL,
        expected=f"at most {best_s * (1 + PERFORMANCE_RTOL) * 1e3:.3f} ms "
                 f"({PERFORMANCE_RTOL * 100:g} % above your kernel's "
                 f"{best_s * 1e3:.3f} ms at {fastest}, its work there projected from what "
                 "it measured at your blocks)",
        got=f"{got_s * 1e3:.3f} ms, MFU {line.mfu:.0%}, VMEM "
            f"{line.vmem_bytes / MiB:.1f} MiB of {line.vmem_limit_bytes / MiB:.0f}",
        diagnosis=f"{blocks} is {step_model.ratio_text(got_s, best_s)} than {fastest} on "
                  f"your kernel's measured work, projected: {_intensity_note(blocks)}")
