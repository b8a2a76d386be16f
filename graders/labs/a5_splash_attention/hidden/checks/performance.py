"""Task 5.7 choose_splash_blocks (performance)."""

from __future__ import annotations

import dataclasses
import functools
import weakref

import numpy as np

import pallas_sim
import reference.a5_splash_attention as ref
from graders.checking import measures, performance, step_model
from graders.checking.compare import fmt_array
from graders.checking.framework import CheckFailure, Session, check
from graders.labs.a5_splash_attention.hidden import splash_timing

from .common import A
from .computed import worked

# --- Task 5.7 choose_splash_blocks (performance) -------------------------------------------

#: Full points for a mask within this fraction above its fastest legal candidate's time.
PERFORMANCE_RTOL = worked.PERFORMANCE_RTOL
#: Seconds the worker may take for one mask's abstract run: the slowest candidate, (256, 256)
#: causal, 67 584 grid steps, takes about 0.6 s in-process on this 2-core machine.
PERFORMANCE_TIMEOUT = 30.0
MiB = 1 << 20
_PERF_SHAPE = dict(length=ref.PERFORMANCE_LENGTH, heads=ref.PERFORMANCE_HEADS,
                   head_dim=ref.PERFORMANCE_HEAD_DIM, value_dim=ref.PERFORMANCE_VALUE_DIM)
#: How each mask is named in feedback (the problem as worked.py states it).
_PERF_MASK_TEXT = {
    "causal": "causal",
    "local": f"causal with a window of {ref.PERFORMANCE_WINDOW} earlier keys",
    "document": "documents of " + "/".join(map(str, ref.PERFORMANCE_DOCUMENTS)) + " tokens",
}
#: Per session: Task 5.7's measured runs (``_Measured``), so its four checks share them.
_MEASURED: weakref.WeakKeyDictionary[Session, _Measured] = weakref.WeakKeyDictionary()
#: The concrete small runs' inputs are drawn from this seed (the problem is the grader's;
#: nothing about it is secret, the values are checked against the reference).
SMALL_SEED = 5_7
#: A small run's output rows must be within this of dense float64 attention (bf16 inputs;
#: a kernel that rounds p to bf16 before p·v stays within 0.3 % here, one that skips the
#: softmax is off by about its values' size).
SMALL_ATOL, SMALL_RTOL = 2e-2, 2e-2
#: Bytes of the concrete runs' replies beyond the request's own budget (their output rows).
_ROWS_REPLY_BYTES = 1 << 20


def _perf_label(kind: str) -> str:
    h, length = ref.PERFORMANCE_HEADS, ref.PERFORMANCE_LENGTH
    d, dv = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
    return (f"choose_splash_blocks({kind!r}): mask {_PERF_MASK_TEXT[kind]}, L {length}; bf16 "
            f"q, k [{h}, {length}, {d}], v [{h}, {length}, {dv}] on one Ironwood TensorCore "
            "(lecture §6.5)")


@functools.cache
def _kept_elements(kind: str) -> int:
    """How many (query, key) pairs the mask keeps."""
    return int(np.count_nonzero(ref.performance_mask(kind)))


def _tiling_note(kind: str, blocks: tuple[int, int], best: tuple[int, int]) -> str:
    """What a tiling costs per lecture §6.5: grid steps (each with about a microsecond's fixed
    cost and its copies) against score elements computed for masked pairs, next to the
    ``best`` candidate's."""
    def cost(tiling: tuple[int, int]) -> tuple[int, float]:
        active = len(splash_timing.tile_table(kind, *tiling).rows)
        return active, active * tiling[0] * tiling[1] / _kept_elements(kind) - 1

    heads = ref.PERFORMANCE_HEADS
    active, waste = cost(blocks)
    best_active, best_waste = cost(best)
    return (f"your blocks {blocks} give {active} active tiles per head, {heads * active} grid "
            f"steps in all, each paying a fixed cost of about a microsecond plus its copies, "
            f"and compute {waste:.0%} more scores than the mask keeps; the fastest "
            f"{best} gives {best_active} tiles per head ({heads * best_active} steps) and "
            f"computes {best_waste:.0%} more (lecture §6.5: small blocks skip more but pay "
            "per step; large blocks compute masked pairs)")


def _vmem_note(blocks: tuple[int, int]) -> str:
    bq, bkv = blocks
    d, dv = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
    need = 2 * (bq * d * 2 + bkv * d * 2 + bkv * dv * 2 + bq * bkv + bq * dv * 4) \
        + bq * (128 + 128 + dv) * 4
    return (f"double buffers of the q, k, v blocks (bf16), the ({bq}, {bkv}) bool pattern and "
            f"the f32 output block, plus the m, l, acc scratch: {need / MiB:.1f} MiB, more "
            "than the 32 MiB scoped VMEM")


@dataclasses.dataclass
class _Measured:
    """One session's Task 5.7 runs: per mask the chosen blocks (or why there are none);
    the legal candidates (the grader's call fits); per (blocks, masks) verified concretely
    on the small problem of those masks, the counts or the failure."""

    chosen: dict[str, tuple[int, int] | CheckFailure]
    legal: list[tuple[int, int]]
    verified: dict[tuple[tuple[int, int], tuple[str, ...]],
                   splash_timing.ClassWork | CheckFailure]


@functools.cache
def _fits(blocks: tuple[int, int]) -> str | None:
    """None when the standard call fits the scoped VMEM at ``blocks``, else the
    ``VmemOOMError`` message (VMEM depends on the blocks only: one small grid suffices)."""
    from pallas_sim import jax, jnp

    problem = splash_timing.small_problem(*blocks)
    bq, bkv = blocks
    d, dv = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
    call = splash_timing.standard_call(1, len(problem.table.rows), bq, bkv, d, dv,
                                       problem.length_q)
    try:
        pallas_sim.estimate(call, *problem.table.prefetch(),
                            jax.ShapeDtypeStruct((1, problem.length_q, d), jnp.bfloat16),
                            jax.ShapeDtypeStruct((1, problem.length_kv, d), jnp.bfloat16),
                            jax.ShapeDtypeStruct((1, problem.length_kv, dv), jnp.bfloat16),
                            jax.ShapeDtypeStruct((1, bq, bkv), jnp.bool_),
                            chip=ref.PERFORMANCE_CHIP)
    except pallas_sim.VmemOOMError as exc:
        return str(exc)
    return None


def _legal_candidates() -> list[tuple[int, int]]:
    return [b for b in ref.splash_block_candidates() if _fits(b) is None]


def _choose(s: Session, kind: str) -> tuple[int, int]:
    """The student's blocks for ``kind``, when two candidate ints at which the standard
    call fits the scoped VMEM. Raises ``CheckFailure``."""
    label = _perf_label(kind)
    try:
        chosen = s.invoke("choose_splash_blocks", (kind,)).value
    except CheckFailure as failure:
        raise failure.copy(input=label) from None
    candidates = ref.SPLASH_BLOCK_CANDIDATES
    if not (isinstance(chosen, tuple | list) and len(chosen) == 2
            and all(isinstance(b, int | np.integer) and not isinstance(b, bool | np.bool_)
                    for b in chosen)):  # numpy ints are ints, as in Tasks 3.5 and 4.8
        raise CheckFailure("choose_splash_blocks(mask_kind) must return a tuple of two ints "
                           "(block_q, block_kv)", input=label, expected="e.g. (512, 512)",
                           got=repr(chosen)[:200])
    blocks = (int(chosen[0]), int(chosen[1]))
    if not all(b in candidates for b in blocks):
        raise CheckFailure("choose_splash_blocks returned a block size outside the candidate "
                           "set", input=label,
                           expected=f"each of block_q, block_kv one of {list(candidates)}",
                           got=str(blocks))
    oom = _fits(blocks)
    if oom is not None:
        raise CheckFailure(f"VmemOOMError: {oom}", input=label,
                           expected="blocks whose standard Splash call fits the 32 MiB "
                                    "scoped VMEM", got=str(blocks),
                           diagnosis=_vmem_note(blocks))
    return blocks


def _runs_reply(s: Session, runs: list[dict], *, reply_bytes: int = 0) -> list:
    """The harness's reply for ``runs`` (a list of one dict per run), or raises the
    invoke's ``CheckFailure``; a reply of another shape is refused (status error)."""
    kwargs = {"head_dim": ref.PERFORMANCE_HEAD_DIM, "value_dim": ref.PERFORMANCE_VALUE_DIM,
              "sm_scale": splash_timing.SCALE}
    reply = s.invoke("choose_splash_blocks", (runs,), kwargs, harness="a5",
                     timeout=PERFORMANCE_TIMEOUT, reply_bytes=reply_bytes).value
    if not isinstance(reply, list) or len(reply) != len(runs) or not all(
            isinstance(r, dict) for r in reply):
        raise CheckFailure("the measured runs' reply is not one record per run",
                           got=repr(reply)[:120], status="error")
    return reply


def _parsed(problem: splash_timing.SmallProblem, raw: object, *, rows: int | None = None
            ) -> step_model.StepRecord | str:
    """One run's record (``step_model.parse_record``), or the error text of the kernel that
    raised. Raises ``CheckFailure`` (status error) for a reply that is not a record."""
    shape = None if rows is None else (rows, ref.PERFORMANCE_VALUE_DIM)
    record = step_model.parse_record(raw, num_steps=len(problem.table.rows),
                                     sample_shape=shape)
    if isinstance(record, step_model.KernelRaised):
        return record.error
    return record


def _measure(s: Session) -> _Measured:
    """Ask for every choice and run each distinct choice concretely and on shapes (one round
    trip each); no other candidate is run."""
    chosen: dict[str, tuple[int, int] | CheckFailure] = {}
    for kind in ref.PERFORMANCE_MASKS:
        try:
            chosen[kind] = _choose(s, kind)
        except CheckFailure as failure:
            chosen[kind] = failure
    legal = _legal_candidates()
    m = _Measured(chosen, legal, {})
    for blocks in dict.fromkeys(b for b in chosen.values() if isinstance(b, tuple)):
        _verify(s, m, blocks, tuple(k for k in ref.PERFORMANCE_MASKS if chosen[k] == blocks))
    return m


def _verify(s: Session, m: _Measured, blocks: tuple[int, int], masks: tuple[str, ...]
            ) -> splash_timing.ClassWork | CheckFailure:
    """Run the student's kernel concretely at ``blocks`` on the small problem of ``masks``
    and on shapes: values checked against dense attention at sampled rows, op counts equal.
    Records and returns the ``ClassWork`` or the ``CheckFailure``."""
    try:
        outcome: splash_timing.ClassWork | CheckFailure = _verified_work(s, blocks, masks)
    except CheckFailure as failure:
        outcome = failure
    m.verified[blocks, masks] = outcome
    return outcome


def _verified_work(s: Session, blocks: tuple[int, int], masks: tuple[str, ...]
                   ) -> splash_timing.ClassWork:
    problem = splash_timing.small_problem(*blocks, masks)
    rows = splash_timing.sample_rows(problem, SMALL_SEED)
    label = (f"your splash_attention_kernel in the grader's standard Splash call at blocks "
             f"{blocks}: one head, {len(problem.table.rows)} tiles with every kind of step "
             f"the {'/'.join(masks)} mask has at these blocks (partial and full tiles, first "
             f"and last of a q row); bf16 q [1, {problem.length_q}, "
             f"{ref.PERFORMANCE_HEAD_DIM}], k, v [1, {problem.length_kv}, "
             f"{ref.PERFORMANCE_HEAD_DIM}|{ref.PERFORMANCE_VALUE_DIM}]")
    run = {**problem.request(), "seed": SMALL_SEED, "rows": rows}
    try:
        real_raw, shapes_raw = _runs_reply(s, [run, problem.request()],
                                           reply_bytes=_ROWS_REPLY_BYTES)
        real = _parsed(problem, real_raw, rows=len(rows))
        shapes = _parsed(problem, shapes_raw)
    except CheckFailure as failure:
        raise failure.copy(input=label) from None
    if isinstance(real, str):
        raise CheckFailure(f"your splash_attention_kernel raised at blocks {blocks}",
                           input=label, got=real)
    got = real.sample
    want = splash_timing.expected_rows(problem, SMALL_SEED, rows)
    assert got is not None
    close = np.isfinite(got) & (np.abs(got - want) <= SMALL_ATOL + SMALL_RTOL * np.abs(want))
    if not close.all():
        bad = int(np.argmin(close.all(axis=1)))
        raise CheckFailure(
            f"your splash_attention_kernel's output at blocks {blocks} is not masked "
            "attention, so no time is predicted for it", input=label,
            expected=f"query row {int(rows[bad])}: {fmt_array(want[bad, :4])} ...",
            got=f"{fmt_array(got[bad, :4])} ...",
            hint="Task 5.4's kernel, run at the chosen blocks (tolerance "
                 f"{SMALL_ATOL:g} + {SMALL_RTOL:g}·|expected|)")
    if isinstance(shapes, str):
        raise CheckFailure(
            f"your kernel does different work when it runs on shapes only than when it runs "
            f"on data (blocks {blocks}): it raised on shapes only", input=label,
            expected="the same op counts per grid step in both runs", got=shapes,
            hint="a kernel's work must not depend on whether its blocks hold values "
                 "(pallas_sim.estimate runs the same kernel on shapes only)")
    step_model.require_same_work(real, shapes, where=f"blocks {blocks}", input=label)
    return splash_timing.class_work(problem, real)


def _measured(s: Session) -> _Measured:
    kept = _MEASURED.get(s)
    if kept is None:
        kept = _MEASURED[s] = _measure(s)
    return kept


def _chosen_work(m: _Measured, kind: str
                 ) -> tuple[tuple[int, int], splash_timing.ClassWork]:
    """The chosen blocks for ``kind`` and their verified work per class. Raises the
    ``CheckFailure`` that stopped them."""
    blocks = m.chosen[kind]
    if isinstance(blocks, CheckFailure):
        raise blocks.copy()
    masks = tuple(k for k in ref.PERFORMANCE_MASKS if m.chosen[k] == blocks)
    outcome = m.verified[blocks, masks]
    if isinstance(outcome, CheckFailure):
        raise outcome.copy()
    return blocks, outcome


def _own_best(m: _Measured, kind: str) -> tuple[tuple[int, int], float, str]:
    """The fastest legal candidate for the student's own kernel on ``kind``: (blocks,
    seconds, whose time). The kernel's work is its verified run's at the chosen blocks and,
    at every other legal candidate (the grader's call fits), that work projected from the
    reference kernel's (``splash_timing.projected_work``); candidates whose lower bound
    cannot beat the best so far are not timed."""
    blocks, work = _chosen_work(m, kind)
    masks = tuple(k for k in ref.PERFORMANCE_MASKS if m.chosen[k] == blocks)
    legal = list(m.legal) if blocks in m.legal else [*m.legal, blocks]
    works = {b: splash_timing.projected_work(kind, b, blocks, masks, work) for b in legal}
    found = step_model.fastest(
        list(works), lambda b: splash_timing.time_floor(kind, *b, works[b]),
        lambda b: splash_timing.full_time(kind, *b, works[b]).time_s)
    assert found is not None
    return found[0], found[1], "your kernel's measured work, projected"


@check(A, "5.7", 1, "performance: choose_splash_blocks(mask_kind) returns candidate blocks "
                    "(block_q, block_kv) for the causal, local and document masks at L 8192 "
                    "at which your splash_attention_kernel runs in the standard Splash call "
                    "within the 32 MiB scoped VMEM, computing attention, as it does on shapes "
                    "only")
def splash_blocks_fit(s: Session) -> None:
    """Task 5.7: performance: choose_splash_blocks(mask_kind) returns candidate blocks
    (block_q, block_kv) for the causal, local and document masks at L 8192 at which your
    splash_attention_kernel runs in the standard Splash call within the 32 MiB scoped VMEM,
    computing attention, as it does on shapes only.

    Records the predicted time of the three choices, summed, as the task's predicted ms.
    """
    m = _measured(s)
    total_s = 0.0
    for kind in ref.PERFORMANCE_MASKS:
        blocks, per_class = _chosen_work(m, kind)
        total_s += splash_timing.full_time(kind, *blocks, per_class).time_s
    measures.record(s, measures.PREDICTED_MS, total_s * 1e3)


def _within_best(s: Session, kind: str) -> None:
    m = _measured(s)
    blocks, per_class = _chosen_work(m, kind)
    line = splash_timing.full_time(kind, *blocks, per_class)
    best, best_s, source = _own_best(m, kind)
    got_s = float(line.time_s)
    if got_s > best_s * (1 + PERFORMANCE_RTOL):  # the notes are worked out only when shown
        performance.require_within(
            got_s, best_s, PERFORMANCE_RTOL, subject=f"your blocks {blocks} for the {kind} "
            "mask are", input=_perf_label(kind),
            got=f"{got_s * 1e3:.3f} ms, MFU {line.mfu:.0%}, VMEM "
                f"{line.vmem_bytes / MiB:.1f} MiB of {line.vmem_limit_bytes / MiB:.0f}",
            diagnosis=f"the fastest candidate on {source} is {best} at "
                      f"{best_s * 1e3:.3f} ms; " + _tiling_note(kind, blocks, best))


@check(A, "5.7", 3, "performance: causal mask: the predicted time of your kernel at your "
                    "blocks is within 10 % of its fastest legal candidate's (lecture §6.5)")
def splash_blocks_fast_causal(s: Session) -> None:
    """Task 5.7: performance: causal mask: the predicted time of your kernel at your blocks
    is within 10 % of its fastest legal candidate's (lecture §6.5).
    """
    _within_best(s, "causal")


@check(A, "5.7", 3, "performance: local mask (causal, window 2048): the predicted time of "
                    "your kernel at your blocks is within 10 % of its fastest legal "
                    "candidate's (lecture §6.5)")
def splash_blocks_fast_local(s: Session) -> None:
    """Task 5.7: performance: local mask (causal, window 2048): the predicted time of your
    kernel at your blocks is within 10 % of its fastest legal candidate's (lecture §6.5).
    """
    _within_best(s, "local")


@check(A, "5.7", 3, "performance: document mask (documents 1000/2000/1096/2500/1596): the "
                    "predicted time of your kernel at your blocks is within 10 % of its "
                    "fastest legal candidate's (lecture §6.5)")
def splash_blocks_fast_document(s: Session) -> None:
    """Task 5.7: performance: document mask (documents 1000/2000/1096/2500/1596): the
    predicted time of your kernel at your blocks is within 10 % of its fastest legal
    candidate's (lecture §6.5).
    """
    _within_best(s, "document")
