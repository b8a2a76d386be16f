"""What a5's public checks run around a student's code (shipped in the student bundle).

Runs in the student's own process (``pallas-lab check``) or in the worker (Gradescope's
visible tests); imports only numpy and pallas_sim. It holds no answer: Task 5.4's kernel
runs through the student's own ``splash_attention`` (the same task), whose call is
recorded; the grader's standard Splash call (``harness.py``) stays with the grader.

``fields`` is always the seven MaskInfo arrays in the handout's field order
(active_rows, active_cols, block_mask, mask_next, partial_mask_blocks, bounds_start,
bounds_end): a NamedTuple crosses the worker pipe as a plain tuple, so the harness
rebuilds an object with the MaskInfo attribute names before handing it to the student.
``harness.py`` imports :class:`GraderMaskInfo`, the prefetch orders and
:func:`splash_attention_computed_mask` from here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from pallas_sim import jax, jnp, pl
from pallas_sim.extend import concrete

#: The order of the six scalar-prefetch arrays (docs/student-api.md, Task 5.4; the handout's).
PREFETCH_ORDER = ("active_rows", "active_cols", "mask_next", "bounds_start", "bounds_end",
                  "block_mask")
#: Task 5.6: the five scalar-prefetch arrays of the computed-mask call, in order (no
#: mask_next: no stored pattern is chosen).
COMPUTED_PREFETCH_ORDER = ("active_rows", "active_cols", "bounds_start", "bounds_end",
                           "block_mask")
#: The name of Task 5.4's kernel, which the student's ``splash_attention`` calls.
KERNEL = "splash_attention_kernel"


class GraderMaskInfo(NamedTuple):
    """MaskInfo as the handout defines it (same field names and order)."""

    active_rows: np.ndarray
    active_cols: np.ndarray
    block_mask: np.ndarray
    mask_next: np.ndarray
    partial_mask_blocks: np.ndarray
    bounds_start: np.ndarray
    bounds_end: np.ndarray


def _function(sub: ModuleType, name: str) -> Callable[..., Any]:
    fn = getattr(sub, name, None)
    if not callable(fn):
        raise NameError(f"function {name!r} is not defined in the submission")
    return fn


def splash_attention(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                     fields: tuple, sm_scale: float | None, *,
                     use_base2_exp: bool | None = None) -> tuple:
    """Call the student's ``splash_attention`` with a MaskInfo object, recording what each
    of its pallas_calls prefetches and the kernel's final m.

    q, k: f32 [H, L, d]; v: f32 [H, L, dv]. ``sm_scale`` and ``use_base2_exp`` go to the
    wrapper only when given. Returns ``(output, prefetch, m)``: the wrapper's result; per
    pallas_call it made, the list of its scalar-prefetch arrays as passed; and f32 [H, L]:
    the first lane of the kernel's m scratch at the step where each q row block ends
    (``bounds_end``, read from the prefetch refs the kernel got, which the wrapper is to
    pass in the order of :data:`PREFETCH_ORDER`), NaN where no step ended. While the
    wrapper runs, ``pl.pallas_call`` and the module's ``splash_attention_kernel`` are
    wrapped (a spy that calls the student's kernel unchanged); both are restored after.
    Raises what the student's code raises.
    """
    wrapper = _function(sub, "splash_attention")
    info = GraderMaskInfo(*fields)
    heads, length, _ = q.shape
    block_q = int(np.shape(info.partial_mask_blocks)[1])
    m = np.full((heads, length), np.nan, np.float32)
    kernel = getattr(sub, KERNEL, None)
    original_call = pl.pallas_call
    recorded: list[list[np.ndarray]] = []

    def spy(*refs, **kwargs):
        kernel(*refs, **kwargs)
        if len(refs) < 14:  # not the Task 5.4 layout: nothing to read the maximum from
            return
        rows_ref, ends_ref, m_ref = refs[0], refs[4], refs[-3]
        g = pl.program_id(1)
        if int(concrete(ends_ref[g])) == 1:
            row = int(concrete(rows_ref[g]))
            h = int(concrete(pl.program_id(0)))
            m[h, row * block_q:(row + 1) * block_q] = np.asarray(
                concrete(m_ref[...]), np.float32)[:, 0]

    def recording_pallas_call(*args, **kwargs):
        call = original_call(*args, **kwargs)
        spec = kwargs.get("grid_spec")
        count = int(getattr(spec, "num_scalar_prefetch", 0) or 0)

        @functools.wraps(call)
        def run(*operands):
            recorded.append([np.array(a) for a in operands[:count]])
            return call(*operands)
        return run

    options: dict[str, object] = {} if sm_scale is None else {"sm_scale": sm_scale}
    if use_base2_exp is not None:
        options["use_base2_exp"] = bool(use_base2_exp)
    pl.pallas_call = recording_pallas_call
    if callable(kernel):
        setattr(sub, KERNEL, spy)
    try:
        out = wrapper(q, k, v, info, **options)
    finally:
        pl.pallas_call = original_call
        if callable(kernel):
            setattr(sub, KERNEL, kernel)
    return out, recorded, m


def splash_attention_computed_mask(sub: ModuleType, q: np.ndarray, k: np.ndarray,
                                   v: np.ndarray, fields: tuple, kwargs: dict) -> tuple:
    """Call the student's Task 5.6 wrapper and record what each of its pallas_calls got.

    ``fields``: the seven MaskInfo arrays (handout order) of the mask, *with* its stored
    patterns, which the wrapper must not hand to its call; ``kwargs``: the keyword
    arguments of the call (causal, window, positions, segment ids, sm_scale).
    Returns ``(output, calls)``: the wrapper's result and, per pallas_call it made (in
    order), one ``(shape, dtype name, values or None)`` per argument, scalar-prefetch
    arrays first, as passed. Values are kept for integer and bool arguments (per-token
    arrays, tables, masks: what the grader inspects for mask bits), not for floats.
    ``pl.pallas_call`` is wrapped only for the duration of the call.
    """
    wrapper = _function(sub, "splash_attention_computed_mask")
    info = GraderMaskInfo(*fields)
    original = pl.pallas_call
    calls: list[list[tuple]] = []

    def recording_pallas_call(*args, **call_kwargs):
        call = original(*args, **call_kwargs)

        @functools.wraps(call)
        def run(*operands):
            seen = []
            for operand in operands:
                array = np.asarray(operand)
                keep = array.dtype.kind in "biu"
                seen.append((tuple(array.shape), str(array.dtype),
                             np.array(array) if keep else None))
            calls.append(seen)
            return call(*operands)
        return run

    pl.pallas_call = recording_pallas_call
    try:
        out = wrapper(q, k, v, info, **kwargs)
    finally:
        pl.pallas_call = original
    return out, calls


def choose_splash_blocks(sub: ModuleType, mask_kind: str, fields: tuple, *, length: int,
                         heads: int, head_dim: int, value_dim: int, chip: str = "v7",
                         candidates: tuple[int, ...] = (256, 512, 1024, 2048, 4096),
                         at: tuple[int, int] | None = None) -> dict:
    """Task 5.7 for the self-check: the student's ``choose_splash_blocks(mask_kind)`` (or
    the blocks ``at``, when given: the lecture's best, to time the student's own
    splash_attention there), then
    their own ``splash_attention`` over the MaskInfo ``fields`` (built for the blocks the
    chooser returned) through ``pallas_sim.estimate`` on bf16 shapes q, k [heads, length,
    head_dim], v [heads, length, value_dim], sm_scale 1/sqrt(head_dim).

    Returns plain numbers: ``blocks`` (a list when it is two ints, else its repr, and then
    nothing else; nothing else either when a block is not one of ``candidates`` or differs
    from the MaskInfo's, which is then ``info_blocks``), and per pallas_call ``grid``,
    ``block_shapes`` (without squeezed dims), ``time_s``, ``mfu``, ``mxu_flops``,
    ``vmem_bytes`` and ``vmem_limit_bytes``. Raises what the student's code raises. The
    grade times the choice its own way (``harness.py``).
    """
    import pallas_sim
    from pallas_sim.extend import sim_options

    chosen = _function(sub, "choose_splash_blocks")(mask_kind) if at is None else tuple(at)
    if not (isinstance(chosen, (tuple, list)) and len(chosen) == 2
            and all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                    for b in chosen)):
        return {"blocks": repr(chosen)[:200]}
    blocks = [int(b) for b in chosen]
    if not all(b in tuple(candidates) for b in blocks):
        return {"blocks": blocks}
    info = GraderMaskInfo(*fields)
    info_blocks = [int(n) for n in np.shape(info.partial_mask_blocks)[1:]]
    if info_blocks != blocks:
        return {"blocks": blocks, "info_blocks": info_blocks}
    q = jax.ShapeDtypeStruct((heads, length, head_dim), jnp.bfloat16)
    v = jax.ShapeDtypeStruct((heads, length, value_dim), jnp.bfloat16)
    with sim_options(shuffle_parallel=False):  # a TPU visits the grid in order
        estimate = pallas_sim.estimate(_function(sub, "splash_attention"), q, q, v, info,
                                       sm_scale=float(1.0 / np.sqrt(head_dim)), chip=chip)
    calls = [{
        "grid": [int(g) for g in call.grid],
        "block_shapes": [[int(d) for d in op.block_shape if d is not None]
                         for op in call.operands if op.role in ("in", "out")],
        "time_s": float(line.time_s), "mfu": float(line.mfu),
        "mxu_flops": int(line.mxu_flops),
        "vmem_bytes": int(line.vmem_bytes), "vmem_limit_bytes": int(line.vmem_limit_bytes),
    } for call, line in zip(estimate.calls, estimate.timelines, strict=True)]
    return {"blocks": blocks, "calls": calls}
