"""Harnesses for a5_splash_attention (lecture §6); they run inside the worker.

``fields`` is always the seven MaskInfo arrays in the handout's field order
(active_rows, active_cols, block_mask, mask_next, partial_mask_blocks,
bounds_start, bounds_end), as the trusted grader built them: a NamedTuple
crosses the worker pipe as a plain tuple, so the harness rebuilds an object
with the MaskInfo attribute names before handing it to the student.
"""

from __future__ import annotations

import dataclasses
import functools
from types import ModuleType
from typing import NamedTuple

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

from .common import beside_kernel
from .measure import measure

#: The order of the six scalar-prefetch arrays (student-api.md, Task 5.4).
PREFETCH_ORDER = ("active_rows", "active_cols", "mask_next", "bounds_start", "bounds_end",
                  "block_mask")


class GraderMaskInfo(NamedTuple):
    """MaskInfo as the handout defines it (same field names and order)."""

    active_rows: np.ndarray
    active_cols: np.ndarray
    block_mask: np.ndarray
    mask_next: np.ndarray
    partial_mask_blocks: np.ndarray
    bounds_start: np.ndarray
    bounds_end: np.ndarray


def _function(sub: ModuleType, name: str):
    fn = getattr(sub, name, None)
    if not callable(fn):
        raise NameError(f"function {name!r} is not defined in the submission")
    return fn


def splash_attention_kernel(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                            fields: tuple, sm_scale: float, *,
                            use_base2_exp: bool | None = None,
                            with_max: bool = False) -> np.ndarray | tuple:
    """Run the student's kernel in the grader's standard Splash pallas_call.

    q, k: f32 [H, L, d]; v: f32 [H, L, dv]; ``partial_mask_blocks`` must hold
    at least one pattern. Grid (H, A), six int32 prefetch arrays in the
    specified order, BlockSpecs chosen through them. Returns f32 [H, L, dv].
    ``use_base2_exp`` is passed on only when given (lecture §6.6); ``with_max`` also
    returns the m scratch's first lane where each q row ends (bounds_end), f32 [H, L].
    """
    info = GraderMaskInfo(*fields)
    heads, length, d = q.shape
    dv = v.shape[2]
    _, bq, bkv = info.partial_mask_blocks.shape
    prefetch = [np.asarray(getattr(info, name), np.int32) for name in PREFETCH_ORDER]

    def row_map(h, g, rows, cols, nxt, starts, ends, kinds):
        return h, rows[g], 0

    def col_map(h, g, rows, cols, nxt, starts, ends, kinds):
        return h, cols[g], 0

    def mask_map(h, g, rows, cols, nxt, starts, ends, kinds):
        return nxt[g], 0, 0

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(heads, len(prefetch[0])),
        in_specs=[pl.BlockSpec((None, bq, d), row_map), pl.BlockSpec((None, bkv, d), col_map),
                  pl.BlockSpec((None, bkv, dv), col_map),
                  pl.BlockSpec((None, bq, bkv), mask_map)],
        out_specs=pl.BlockSpec((None, bq, dv), row_map),
        scratch_shapes=[pltpu.VMEM((bq, 128), jnp.float32), pltpu.VMEM((bq, 128), jnp.float32),
                        pltpu.VMEM((bq, dv), jnp.float32)])
    options: dict[str, object] = {"sm_scale": float(sm_scale), "block_q": bq, "block_kv": bkv}
    if use_base2_exp is not None:
        options["use_base2_exp"] = bool(use_base2_exp)
    kernel = functools.partial(_function(sub, "splash_attention_kernel"), **options)
    out_shape = jax.ShapeDtypeStruct((heads, length, dv), jnp.float32)
    if with_max:
        kernel, grid_spec, out_shape = _with_max(kernel, grid_spec, out_shape, bq, row_map)
    out = pl.pallas_call(
        kernel, grid_spec=grid_spec, out_shape=out_shape,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="grader_splash")(*prefetch, q, k, v, np.asarray(info.partial_mask_blocks, bool))
    if with_max:
        return out[0], np.asarray(out[1])[..., 0]
    return out


def _with_max(student, grid_spec, out_shape, bq: int, row_map):
    """The kernel, grid spec and out_shape of a call that also copies the m scratch out at
    bounds_end (an extra (bq, 128) f32 output block per q row, at the q row's index)."""
    def kernel(*refs):
        *prefetch_and_ins, o_ref, m_out_ref, m_ref, l_ref, acc_ref = refs
        student(*prefetch_and_ins, o_ref, m_ref, l_ref, acc_ref)
        ends = prefetch_and_ins[4]

        @pl.when(ends[pl.program_id(1)] == 1)
        def _copy_max():
            m_out_ref[...] = m_ref[...]

    grid_spec = dataclasses.replace(
        grid_spec, out_specs=[grid_spec.out_specs, pl.BlockSpec((None, bq, 128), row_map)])
    heads, length, _ = out_shape.shape
    return kernel, grid_spec, (out_shape,
                               jax.ShapeDtypeStruct((heads, length, 128), jnp.float32))


class _Recorded(BaseException):
    """Stops the student's wrapper right after its pallas_call received its arguments.

    A BaseException, so a student's ``except Exception`` does not swallow it.
    """


def splash_attention(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                     fields: tuple, sm_scale: float | None, record_only: bool = False,
                     kernel_fields: tuple | None = None, *,
                     use_base2_exp: bool | None = None) -> tuple:
    """Call the student's wrapper with a MaskInfo object and record what it prefetches.

    Returns ``(output, prefetch, kernel_out, kernel_error)``: the wrapper's result;
    per pallas_call it made, the list of its scalar-prefetch arrays as passed
    (empty when the call declared none); and, when ``kernel_fields`` (the same
    MaskInfo with at least one stored pattern) is given, the student's kernel's
    output in the grader's standard call (``common.beside_kernel``: the wrapper
    answers to its own kernel). With ``record_only`` the first pallas_call is
    not run: the wrapper stops as soon as the call receives its arguments and
    the output is None, so a wrong table is reported as such even when running
    it would fail. ``pl.pallas_call`` is wrapped only for the duration of the
    call and restored afterwards. ``use_base2_exp`` goes to the wrapper and the
    kernel only when given.
    """
    wrapper = _function(sub, "splash_attention")
    info = GraderMaskInfo(*fields)
    original = pl.pallas_call
    recorded: list[list[np.ndarray]] = []

    def recording_pallas_call(*args, **kwargs):
        call = original(*args, **kwargs)
        spec = kwargs.get("grid_spec")
        count = int(getattr(spec, "num_scalar_prefetch", 0) or 0)

        @functools.wraps(call)
        def run(*operands):
            recorded.append([np.array(a) for a in operands[:count]])
            if record_only:
                raise _Recorded()
            return call(*operands)
        return run

    pl.pallas_call = recording_pallas_call
    out = None
    options: dict[str, object] = {} if sm_scale is None else {"sm_scale": sm_scale}
    if use_base2_exp is not None:
        options["use_base2_exp"] = bool(use_base2_exp)
    try:
        out = wrapper(q, k, v, info, **options)
    except _Recorded:
        pass
    finally:
        pl.pallas_call = original
    if kernel_fields is None or record_only:
        return out, recorded, None, None
    scale = float(1.0 / np.sqrt(q.shape[-1]) if sm_scale is None else sm_scale)
    _, kernel_out, kernel_error = beside_kernel(
        out, lambda: splash_attention_kernel(sub, q, k, v, kernel_fields, scale,
                                             use_base2_exp=use_base2_exp))
    return out, recorded, kernel_out, kernel_error


#: Task 5.6: the five scalar-prefetch arrays of the computed-mask call, in order (no
#: mask_next: no stored pattern is chosen).
COMPUTED_PREFETCH_ORDER = ("active_rows", "active_cols", "bounds_start", "bounds_end",
                           "block_mask")


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


def small_pattern(bq: int, bkv: int) -> np.ndarray:
    """Task 5.7's small problems' partial pattern: query i sees key j when j * bq <= i * bkv
    (the trusted side's ``splash_timing.small_pattern``)."""
    i = np.arange(bq)[:, None]
    j = np.arange(bkv)[None, :]
    return j * bq <= i * bkv


def _measured_call(sub: ModuleType, run: dict, d: int, dv: int, sm_scale: float):
    """The standard Splash call (``splash_attention_kernel``'s grid spec) around the
    student's kernel over one small problem, and its operands (q, k, v as shapes)."""
    bq, bkv = (int(b) for b in run["blocks"])
    length_q, length_kv = (int(n) for n in run["lengths"])
    prefetch = [np.asarray(t, np.int32) for t in run["tables"]]

    def row_map(h, g, rows, cols, nxt, starts, ends, kinds):
        return h, rows[g], 0

    def col_map(h, g, rows, cols, nxt, starts, ends, kinds):
        return h, cols[g], 0

    def mask_map(h, g, rows, cols, nxt, starts, ends, kinds):
        return nxt[g], 0, 0

    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=6, grid=(1, len(prefetch[0])),
        in_specs=[pl.BlockSpec((None, bq, d), row_map), pl.BlockSpec((None, bkv, d), col_map),
                  pl.BlockSpec((None, bkv, dv), col_map),
                  pl.BlockSpec((None, bq, bkv), mask_map)],
        out_specs=pl.BlockSpec((None, bq, dv), row_map),
        scratch_shapes=[pltpu.VMEM((bq, 128), jnp.float32), pltpu.VMEM((bq, 128), jnp.float32),
                        pltpu.VMEM((bq, dv), jnp.float32)])
    kernel = functools.partial(_function(sub, "splash_attention_kernel"),
                               sm_scale=float(sm_scale), block_q=bq, block_kv=bkv)
    call = pl.pallas_call(
        kernel, grid_spec=grid_spec,
        out_shape=jax.ShapeDtypeStruct((1, length_q, dv), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="grader_splash")
    patterns = small_pattern(bq, bkv)[None]
    return call, prefetch, patterns, (length_q, length_kv)


def choose_splash_blocks(sub: ModuleType, runs: list | str, *args: object,
                         **kwargs: object) -> list | dict:
    """Task 5.7: with a list of runs, ``measured_runs`` (the grade); with a mask name, the
    public self-check's ``wrapper_estimate`` of the student's own wrapper."""
    if isinstance(runs, str):
        return wrapper_estimate(sub, runs, *args, **kwargs)  # type: ignore[arg-type]
    return measured_runs(sub, runs, **kwargs)  # type: ignore[arg-type]


def measured_runs(sub: ModuleType, runs: list, *, head_dim: int, value_dim: int,
                  sm_scale: float) -> list:
    """Task 5.7: the student's ``splash_attention_kernel`` in the grader's standard Splash
    call over small problems (one head, bf16 q, k [1, Lq|Lkv, head_dim], v [1, Lkv,
    value_dim], f32 out; the task's compiler parameters), one per entry of ``runs``
    (``measure.measure``: shapes only, or concretely on seeded data).

    Each run: ``blocks`` (bq, bkv), ``lengths`` (Lq, Lkv), ``tables`` (the six prefetch
    arrays, Task 5.4's order; one pattern, ``small_pattern``) and optionally ``seed`` and
    ``rows``: then the run is concrete on ``measure.seeded_array(seed + i, ...)`` for q, k,
    v and the output's rows ``rows`` (all value columns) come back as its sample. The
    student's wrapper and compiler parameters are not used. Returns one
    ``measure.measure`` record per run (plain data; ``error`` when the kernel raised).
    """
    out = []
    for run in runs:
        try:
            call, prefetch, patterns, (length_q, length_kv) = _measured_call(
                sub, run, head_dim, value_dim, sm_scale)
        except Exception as exc:  # noqa: BLE001 - the student's kernel is missing; reported
            out.append({"error": f"{type(exc).__name__}: {exc}"[:500],
                        "error_type": type(exc).__name__})
            continue

        def standard(q, k, v, call=call, prefetch=prefetch, patterns=patterns):
            return call(*prefetch, q, k, v, patterns)

        shapes = [[1, length_q, head_dim], [1, length_kv, head_dim],
                  [1, length_kv, value_dim]]
        seed = run.get("seed")
        sample = None if seed is None else {"rows": list(run["rows"]),
                                            "cols": list(range(value_dim))}
        out.append(measure(standard, shapes, "bfloat16", name="grader_splash",
                           seed=None if seed is None else int(seed), sample=sample))
    return out


def wrapper_estimate(sub: ModuleType, mask_kind: str, fields: tuple, *, length: int,
                     heads: int, head_dim: int, value_dim: int, chip: str = "v7",
                     candidates: tuple[int, ...] = (256, 512, 1024, 2048, 4096),
                     at: tuple | list | None = None) -> dict:
    """Task 5.7's public self-check (not the grade): the student's
    ``choose_splash_blocks(mask_kind)``, then their own
    ``splash_attention`` over the grader's MaskInfo ``fields`` through ``pallas_sim.estimate``
    on bf16 shapes q, k [heads, length, head_dim], v [heads, length, value_dim].

    ``fields``: the seven MaskInfo arrays (handout order) that the trusted grader built with
    the reference for the mask and the blocks this chooser returned on its first call. The
    chooser is called again here and its answer must be those blocks (the shape of
    ``partial_mask_blocks``), so the run is of the stated problem at the student's choice.

    Returns plain numbers only (the worker's reply is data): ``blocks`` (what the chooser
    returned, as a list when it is two ints, else its repr, and then nothing else; nothing
    else either when a block is not one of ``candidates`` or differs from the MaskInfo's,
    which is then ``info_blocks``; ``at`` given: those blocks instead of the chooser's), and
    per pallas_call of the run ``grid``,
    ``block_shapes`` (of the in and out operands, without squeezed dims), ``time_s``
    (predicted seconds), ``mfu``, ``mxu_flops`` (the products the kernel ran),
    ``vmem_bytes`` and ``vmem_limit_bytes``. Raises what the
    student's code raises, e.g. ``VmemOOMError`` with a real run's message.
    """
    import pallas_sim
    from pallas_sim._src.config import _override as sim_options

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
    # A TPU visits the grid in order: shuffling parallel axes would only slow the run. The
    # scale is passed: a wrong default is Task 5.4's mistake, and a default of 1 (whose
    # multiply the compiler folds away) must not buy a faster run.
    with sim_options(shuffle_parallel=False):
        estimate = pallas_sim.estimate(_function(sub, "splash_attention"), q, q, v, info,
                                       sm_scale=float(1.0 / np.sqrt(head_dim)), chip=chip)
    calls = []
    for call, line in zip(estimate.calls, estimate.timelines, strict=True):
        calls.append({
            "grid": [int(g) for g in call.grid],
            "block_shapes": [[int(d) for d in op.block_shape if d is not None]
                             for op in call.operands if op.role in ("in", "out")],
            "time_s": float(line.time_s), "mfu": float(line.mfu),
            "mxu_flops": int(line.mxu_flops),
            "vmem_bytes": int(line.vmem_bytes), "vmem_limit_bytes": int(line.vmem_limit_bytes),
        })
    return {"blocks": blocks, "calls": calls}
