"""Harnesses for a5_splash_attention (lecture §6); they run inside the worker.

``fields`` is always the seven MaskInfo arrays in the handout's field order
(active_rows, active_cols, block_mask, mask_next, partial_mask_blocks,
bounds_start, bounds_end), as the trusted grader built them: a NamedTuple
crosses the worker pipe as a plain tuple, so the harness rebuilds an object
with the MaskInfo attribute names before handing it to the student. What the public
checks run too (the MaskInfo record, the prefetch orders, the recording of Task 5.6's
calls) is in ``public_harness.py`` (``a5_public``, shipped to students), imported here.
"""

from __future__ import annotations

import dataclasses
import functools
from types import ModuleType

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

from .a5_public import (  # noqa: F401 - re-exported: the grader's checks name them here
    COMPUTED_PREFETCH_ORDER,
    PREFETCH_ORDER,
    GraderMaskInfo,
    splash_attention_computed_mask,
)
from .common import beside_kernel
from .measure import measure


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


def choose_splash_blocks(sub: ModuleType, runs: list, **kwargs: object) -> list:
    """Task 5.7 (the grade): ``measured_runs`` of the student's kernel. The public
    self-check's estimate of the student's own wrapper is ``a5_public``'s."""
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
