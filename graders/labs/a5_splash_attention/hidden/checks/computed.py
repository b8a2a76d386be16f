"""Task 5.6 masks computed in the kernel."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import strategies as st

import reference.a5_splash_attention as ref
from graders.checking.compare import assert_close, fmt_array
from graders.checking.framework import CheckFailure, Session, check, run_property
from graders.checking.strategies import make_array, seeds
from graders.labs.a5_splash_attention.hidden.diagnose import SPLASH_ATOL, SPLASH_RTOL, explains
from graders.labs.a5_splash_attention.public import worked
from graders.labs.a5_splash_attention.public.public_checks.common import window_side
from reference.dense_attention import masked_dense_attention

from .common import A, _documents
from .mask_info import _count

# --- Task 5.6 masks computed in the kernel ---------------------------------------------------

#: The mask families of Task 5.6 (lecture §6.1, §6.4): each rule alone and their ``&``.
COMPUTED_KINDS = ("causal", "local", "documents", "causal & local", "causal & documents",
                  "local & documents", "causal & local & documents")


@dataclasses.dataclass(frozen=True)
class ComputedCase:
    """q, k, v f32 [H, L, d|dv], the keyword arguments of the Task 5.6 call, the dense
    mask they describe and its tiling; ``recipe`` prints the rule."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    kwargs: dict
    mask: np.ndarray
    block_q: int
    block_kv: int
    recipe: str
    seeds: tuple[int, int, int] = (0, 0, 0)

    @property
    def info(self) -> ref.MaskInfo:
        return ref.build_mask_info(self.mask, self.block_q, self.block_kv)

    def __repr__(self) -> str:
        arrays = ", ".join(
            f"{name} = f32{list(a.shape)} uniform in [-2, 2) (seed {seed})"
            for name, a, seed in zip("qkv", (self.q, self.k, self.v), self.seeds, strict=True))
        shown = ", ".join(f"{key}={fmt_array(value) if isinstance(value, np.ndarray) else value!r}"
                          for key, value in self.kwargs.items())
        return (f"{arrays}, mask = {self.recipe}, mask_info = the MaskInfo of that mask with "
                f"block_q = {self.block_q}, block_kv = {self.block_kv}; call keywords: {shown}")


@st.composite
def computed_cases(draw: st.DrawFn, *, kinds: tuple[str, ...] = COMPUTED_KINDS,
                   offsets: bool = False) -> ComputedCase:
    """A Task 5.6 call: L <= 32, blocks 2/4/8 per axis, H 1-2, d 4/8/16, dv 4/8.

    ``offsets``: the queries sit ``offset`` >= 2 positions after the keys (explicit
    ``q_positions``; kinds with "causal" only, so every query keeps a visible key), else
    positions are 0..L-1, passed explicitly or left to their default.
    """
    bq, bkv = draw(st.sampled_from((2, 4, 8))), draw(st.sampled_from((2, 4, 8)))
    kind = draw(st.sampled_from(kinds))
    unit = math.lcm(bq, bkv)
    length = unit * draw(st.integers(1, max(1, 32 // unit)))
    every = np.arange(length, dtype=np.int32)
    kwargs: dict = {}
    recipe: list[str] = []
    # Offsets from 2: with offset 1 a strict causal comparison (q > kv) gives exactly the
    # mask of positions 0..L-1, and the two mistakes could not be told apart.
    offset = draw(st.integers(2, length + 1)) if offsets else 0
    q_pos = every + offset
    if offsets:
        kwargs["q_positions"] = q_pos
        recipe.append(f"queries at positions {offset}..{offset + length - 1}, keys at "
                      f"0..{length - 1}")
    elif draw(st.booleans()):
        kwargs["q_positions"], kwargs["kv_positions"] = every, every.copy()
    causal = "causal" in kind
    if causal:
        kwargs["causal"] = True
        recipe.append("causal")
    window = None
    if "local" in kind:
        left = window_side(draw, length, bkv)
        right = None if causal else window_side(draw, length, bkv)
        if offsets and left is not None:
            left = max(left, offset)  # the last query keeps the last key in its window
        window = (left, right)
        kwargs["window"] = window
        recipe.append(f"window {window}")
    ids = np.zeros(length, np.int32)
    if "documents" in kind:
        ids, text = _documents(draw, length)
        ids = ids.astype(np.int32)
        kwargs["q_segment_ids"] = ids
        if draw(st.booleans()):
            kwargs["kv_segment_ids"] = ids.copy()
        recipe.append(text.removeprefix("segment_mask(").removesuffix(")"))
    sm_scale = draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))
    if sm_scale is not None:
        kwargs["sm_scale"] = sm_scale
    mask = ref._rule_mask(q_pos, every, ids, ids, causal, window)
    heads = draw(st.integers(1, 2))
    d, dv = draw(st.sampled_from([4, 8, 16])), draw(st.sampled_from([4, 8]))
    drawn = (draw(seeds), draw(seeds), draw(seeds))
    q, k, v = (make_array((heads, length, n), np.dtype(np.float32), seed, low=-2, high=2)
               for n, seed in zip((d, d, dv), drawn, strict=True))
    return ComputedCase(q, k, v, kwargs, mask, bq, bkv, " & ".join(recipe), drawn)


def _computed_reply(s: Session, c: ComputedCase):
    """(reply, the wrapper's output, per pallas_call the recorded arguments)."""
    reply = s.invoke("splash_attention_computed_mask",
                     (c.q, c.k, c.v, tuple(c.info), dict(c.kwargs)), harness="a5")
    value = reply.value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise CheckFailure("internal grader error: the a5 harness replied oddly",
                           status="error", internal=True)
    return reply, value[0], value[1]


def _computed_expected(c: ComputedCase) -> np.ndarray:
    scale = c.kwargs.get("sm_scale")
    return masked_dense_attention(c.q, c.k, c.v, c.mask, sm_scale=scale)


def _check_computed_output(reply, out: object, c: ComputedCase) -> None:
    assert_close(out, _computed_expected(c), SPLASH_RTOL, SPLASH_ATOL,
                 what="splash_attention_computed_mask's output")
    reply.own_call(0)  # its own pallas_call computed it
    if np.asarray(out).dtype != np.float32:
        raise CheckFailure("splash_attention_computed_mask's output has the wrong dtype",
                           expected="float32", got=np.asarray(out).dtype.name)


@check(A, "5.6", 4, "splash_attention_computed_mask equals dense float64 masked attention for "
                    "causal, local-window and document masks and their & (drawn tilings, "
                    "heads, head sizes, sm_scale or its default)")
def computed_values(s: Session) -> None:
    """Task 5.6: splash_attention_computed_mask equals dense float64 masked attention for
    causal, local-window and document masks and their & (drawn tilings, heads, head sizes,
    sm_scale or its default).
    """
    def body(c: ComputedCase) -> None:
        reply, out, _ = _computed_reply(s, c)
        _check_computed_output(reply, out, c)
    run_property(computed_cases(), body, max_examples=12)


@check(A, "5.6", 2, "the mask is computed from the positions the call is given: queries "
                    "placed after the keys (q_positions = offset + 0..L-1, offset >= 2) with "
                    "causal, causal & window and causal & documents masks")
def computed_positions(s: Session) -> None:
    """Task 5.6: the mask is computed from the positions the call is given: queries placed
    after the keys (q_positions = offset + 0..L-1, offset >= 2) with causal, causal & window
    and causal & documents masks.
    """
    def body(c: ComputedCase) -> None:
        reply, out, calls = _computed_reply(s, c)
        try:
            _check_computed_output(reply, out, c)
        except CheckFailure as failure:
            length = c.q.shape[1]
            every = np.arange(length)
            ids = np.asarray(c.kwargs.get("q_segment_ids", np.zeros(length, np.int32)))
            ignored = ref._rule_mask(every, every, ids, ids, bool(c.kwargs.get("causal")),
                                     c.kwargs.get("window"))
            # What such a kernel computes over the given table: full tiles unmasked, partial
            # tiles under the rule at positions 0..L-1, empty tiles skipped.
            kinds = np.kron(ref.classify_blocks(c.mask, c.block_q, c.block_kv),
                            np.ones((c.block_q, c.block_kv), np.int8))
            seen = (kinds == 2) | ((kinds == 1) & ignored)
            if seen.any(axis=1).all():
                model = masked_dense_attention(c.q, c.k, c.v, seen,
                                               sm_scale=c.kwargs.get("sm_scale"))
                if explains(out, _computed_expected(c), model, strict_nan=True):
                    failure.diagnosis = _positions_diagnosis(calls, c)
            raise
    run_property(computed_cases(kinds=("causal", "causal & local", "causal & documents"),
                                offsets=True), body, max_examples=8)


#: The output is attention with queries and keys at the same positions: which of two
#: mistakes gives it is read from the arguments the wrapper handed its pallas_call.
POSITIONS_FROM_GRID = (
    "the output is attention with queries at positions 0..L-1: the kernel computes positions "
    "from the grid (program_id x block size) instead of reading the q_positions / "
    "kv_positions its call is given (they are there: one argument holds q_positions, one "
    "0..L-1); the mask rule compares the positions the call is given (lecture §6.3, §6.6)")
KV_POSITIONS_FROM_Q = (
    "kv_positions defaults to q_positions: with q_positions given and kv_positions left out, "
    "the call is handed the queries' positions twice (no argument holds the keys' default "
    "0..L-1), so every key sits at its query's position and the queries are not after the "
    "keys; the default of kv_positions is 0..L-1 whatever q_positions is (the handout) "
    "(lecture §6.6)")


def _positions_diagnosis(calls: object, c: ComputedCase) -> str | None:
    """Which mistake gives attention at positions 0..L-1 here (the caller verified the output):
    read from the per-token arguments the wrapper handed its pallas_call(s) (``calls``, the
    harness's record: shape, dtype, values of every integer argument). q_positions handed in
    twice and no 0..L-1: the keys were given the queries' positions (``KV_POSITIONS_FROM_Q``);
    q_positions once and 0..L-1 beside it: the kernel ignores what it was given
    (``POSITIONS_FROM_GRID``). Anything else: no diagnosis."""
    length = c.q.shape[1]
    q_pos = np.asarray(c.kwargs.get("q_positions", np.arange(length)))
    every = np.arange(length)
    tokens = []
    for call in calls if isinstance(calls, (list, tuple)) else ():
        for arg in call if isinstance(call, (list, tuple)) else ():
            if isinstance(arg, (list, tuple)) and len(arg) == 3 and arg[2] is not None:
                values = np.asarray(arg[2])
                if values.size == length:
                    tokens.append(values.ravel())
    as_queries = sum(np.array_equal(t, q_pos) for t in tokens)
    as_default = any(np.array_equal(t, every) for t in tokens)
    if "kv_positions" not in c.kwargs and as_queries >= 2 and not as_default:
        return KV_POSITIONS_FROM_Q
    if as_queries == 1 and as_default:
        return POSITIONS_FROM_GRID
    return None


def _mask_operand(values: np.ndarray | None, shape: tuple, dtype: str, info: ref.MaskInfo,
                  mask: np.ndarray) -> str | None:
    """What mask data an argument of the call holds, in words, else None: the stored
    patterns (``partial_mask_blocks``, in any integer or bool dtype), the dense mask, or
    some other bool array; per-token arrays and the tables are not masks. Float arguments
    are not inspected (q, k and v may have the patterns' shape)."""
    patterns = np.asarray(info.partial_mask_blocks, bool)
    if values is not None:
        squeezed = np.squeeze(values)
        if squeezed.ndim >= 2 and values.size == patterns.size and patterns.size and \
                np.array_equal(values.reshape(patterns.shape).astype(bool), patterns):
            return "partial_mask_blocks"
        if squeezed.ndim >= 2 and values.size == mask.size and \
                np.array_equal(values.reshape(mask.shape).astype(bool), mask):
            return "the dense [L, L] mask"
    if dtype == "bool":
        return "a bool array"
    return None


def _moved_masks(traces: list, calls: list, c: ComputedCase, info: ref.MaskInfo
                 ) -> list[tuple[int, int, str, str, int, int]]:
    """(call, argument, what, how shown, DMAs, bytes) of every argument that holds mask
    data and reaches the kernel from HBM: a blocked or prefetched input, or one left in
    HBM (``pl.ANY``) in a call whose kernel copies data itself (those bytes are shown)."""
    found = []
    for n, (trace, args) in enumerate(zip(traces, calls, strict=False)):
        moving = [op for op in trace.operands if op.role in ("prefetch", "in")]
        for a, (op, arg) in enumerate(zip(moving, args, strict=False)):
            shape, dtype, values = arg
            what = _mask_operand(None if values is None else np.asarray(values), tuple(shape),
                                 str(dtype), info, c.mask)
            if what is None:
                continue
            moved = op.hbm_bytes if op.role == "in" else int(np.prod(op.shape)) * np.dtype(
                op.dtype).itemsize
            if op.memory_space == "any":  # left in HBM: moved only by the kernel's own copies
                moved = trace.manual_dma_bytes
            if moved:
                shown = f"{op.name} {op.dtype}{list(op.shape)} ({op.role}, {op.memory_space})"
                found.append((n, a, what, shown, op.dma_count, moved))
    return found


@check(A, "5.6", 4, "no mask moves from HBM: the call's inputs are q, k, v and per-token "
                    "positions and segment ids, never partial_mask_blocks or a dense mask "
                    "(drawn masks and the lecture's causal / window counts scaled by 1/8)")
def computed_no_mask_from_hbm(s: Session) -> None:
    """Task 5.6: no mask moves from HBM: the call's inputs are q, k, v and per-token positions
    and segment ids, never partial_mask_blocks or a dense mask (drawn masks and the lecture's
    causal / window counts scaled by 1/8).
    """
    def body(c: ComputedCase) -> None:
        reply, _, calls = _computed_reply(s, c)
        reply.own_call(0)  # the call that computed the result is one of those inspected
        info = c.info
        if not isinstance(calls, (list, tuple)) or len(calls) != len(reply.traces):
            raise CheckFailure("internal grader error: the recorded calls do not match the "
                               "traces", status="error", internal=True)
        moved = _moved_masks(reply.traces, calls, c, info)
        if not moved:
            return
        n, a, what, shown, dmas, nbytes = moved[0]
        stored = info.partial_mask_blocks.shape[0]
        failure = CheckFailure(
            "a mask moves from HBM into the kernel: compute each partial tile's mask from "
            "positions and segment ids instead",
            expected="inputs q, k, v and per-token int32 arrays only; 0 mask bytes from HBM "
                     f"(this mask's {_count(stored, 'stored pattern')} stay unused)",
            got=f"argument {a} of pallas_call {n}, {shown}: {what}, {dmas} DMAs, "
                f"{nbytes} B moved")
        if what == "partial_mask_blocks":
            failure.diagnosis = (
                "the kernel still reads partial_mask_blocks (the Task 5.4 pattern blocks, "
                "chosen by mask_next): the values are right, but every partial tile copies "
                f"its stored pattern from HBM; at L {worked.LENGTH} with {worked.BLOCK}-tiles "
                "that is " + ", ".join(f"{p.mask} {p.saved_mib:g} MiB" for p in worked.SAVED)
                + " of patterns the computed mask never stores (lecture §6.6)")
        raise failure

    for length_mask, label in _worked_computed_cases():
        try:
            body(length_mask)
        except CheckFailure as failure:
            failure.input = failure.input or label
            raise
    run_property(computed_cases(), body, max_examples=8)


def _worked_computed_cases() -> list[tuple[ComputedCase, str]]:
    """The lecture's §6.6 count scaled by 1/worked.SCALE: causal and causal & window, one
    head, d = dv = 8 (the stored patterns: 1 and 2, of (BLOCK / SCALE)² bytes each)."""
    length, block = worked.LENGTH // worked.SCALE, worked.BLOCK // worked.SCALE
    window = worked.WINDOW // worked.SCALE
    every = np.arange(length)
    zeros = np.zeros(length, np.int32)
    out = []
    for saved, rule in zip(worked.SAVED[:2], ({"causal": True},
                                              {"causal": True, "window": (window, None)}),
                           strict=True):
        mask = ref._rule_mask(every, every, zeros, zeros, True, rule.get("window"))
        q, k, v = (make_array((1, length, 8), np.dtype(np.float32), seed, low=-2, high=2)
                   for seed in (1, 2, 3))
        case = ComputedCase(q, k, v, dict(rule), mask, block, block,
                            f"{saved.mask} at L {length}, blocks {block}", (1, 2, 3))
        out.append((case, f"{saved.mask}, L {worked.LENGTH} / {worked.BLOCK} scaled by "
                          f"1/{worked.SCALE}: L {length}, blocks {block} "
                          f"({_count(saved.patterns, 'stored pattern')} the call must not "
                          "read)"))
    return out
