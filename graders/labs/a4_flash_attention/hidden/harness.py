"""Harnesses for a4_flash_attention (lecture §5): the grader's pallas_call around a kernel.

Runs inside the untrusted worker; imports only numpy and pallas_sim.
"""

from __future__ import annotations

import functools
from types import ModuleType

import numpy as np

import pallas_sim
from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim.extend import sim_options

from .common import beside_kernel
from .measure import measure_candidates

#: Lanes of the m and l scratch buffers (one vector register row, docs/student-api.md 4.3).
LANES = 128


def _kernel(sub: ModuleType, name: str):
    kernel = getattr(sub, name, None)
    if not callable(kernel):
        raise NameError(f"function {name!r} is not defined in the submission")
    return kernel


def flash_attention_kernel(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
                           sm_scale: float, causal: bool, block_q: int, block_kv: int,
                           soft_cap: float | None = None,
                           max_logit_const: float | None = None,
                           use_base2_exp: bool | None = None,
                           with_max: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Run the student's ``flash_attention_kernel`` in the intended pallas_call.

    q: [H, L, d]; k: [Hkv, L, d]; v: [Hkv, L, dv] (f32 or bf16), H % Hkv == 0
    and L a multiple of both block sizes (the grader draws them so).  Grid
    (H, L/block_q, L/block_kv) with ("parallel", "parallel", "arbitrary");
    head dims squeezed; query head h reads kv head h // (H // Hkv); scratch
    m, l f32 (block_q, 128) and acc f32 (block_q, dv).  Returns f32 [H, L, dv].
    ``use_base2_exp`` is passed on only when given (a kernel written before the
    option existed still runs every other check). ``with_max``: also return the m
    scratch's first lane after the last kv block, f32 [H, L] (lecture §6.6: in base-2
    units under ``use_base2_exp``), copied out by the harness after the kernel ran.
    """
    options: dict[str, object] = {
        "sm_scale": sm_scale, "causal": causal, "block_q": block_q, "block_kv": block_kv,
        "soft_cap": soft_cap, "max_logit_const": max_logit_const}
    if use_base2_exp is not None:
        options["use_base2_exp"] = use_base2_exp
    return _standard_call(functools.partial(_kernel(sub, "flash_attention_kernel"), **options),
                          q, k, v, block_q=block_q, block_kv=block_kv, with_max=with_max,
                          name="grader_flash_attention")


def flash_attention_kernel_microtiled(sub: ModuleType, q: np.ndarray, k: np.ndarray,
                                      v: np.ndarray, *, sm_scale: float, causal: bool,
                                      block_q: int, block_kv: int, bkv_compute: int,
                                      report_largest: bool = False,
                                      abstract_dtype: str | None = None
                                      ) -> np.ndarray | tuple[np.ndarray, int] | int:
    """Run the student's ``flash_attention_kernel_microtiled`` (Task 4.7) in the call of
    Task 4.3 (same grid, BlockSpecs and scratch). Returns f32 [H, L, dv]; with
    ``report_largest`` also the call's ``largest_intermediate`` (elements of the largest
    array an op produced in the kernel; lecture §5.3), read from a trace of the call.
    With ``abstract_dtype`` (e.g. "bfloat16"), q, k and v are shapes [H, L, d],
    [Hkv, L, d], [Hkv, L, dv]: the call runs on shapes only (``pallas_sim.estimate``, so
    the lecture's sizes cost no data) and only ``largest_intermediate`` is returned.
    """
    kernel = functools.partial(
        _kernel(sub, "flash_attention_kernel_microtiled"), sm_scale=sm_scale, causal=causal,
        block_q=block_q, block_kv=block_kv, bkv_compute=bkv_compute)
    if abstract_dtype is not None:
        structs = [jax.ShapeDtypeStruct(tuple(int(n) for n in shape), jnp.dtype(abstract_dtype))
                   for shape in (q, k, v)]
        estimate = pallas_sim.estimate(
            lambda a, b, c: _standard_call(kernel, a, b, c, block_q=block_q,
                                           block_kv=block_kv, with_max=False,
                                           name="grader_flash_attention_microtiled"),
            *structs)
        return int(estimate.calls[-1].largest_intermediate)
    with pallas_sim.trace() as trace:
        out = _standard_call(kernel, q, k, v, block_q=block_q, block_kv=block_kv,
                             with_max=False, name="grader_flash_attention_microtiled")
    if report_largest:
        return out, int(trace.calls[-1].largest_intermediate)
    return out


def _standard_call(kernel, q: np.ndarray, k: np.ndarray, v: np.ndarray, *, block_q: int,
                   block_kv: int, with_max: bool, name: str):
    """The pallas_call of Task 4.3 around ``kernel`` (keywords already bound; the kv axis
    follows k's length, which is q's except in Task 4.8's small problems); with
    ``with_max`` a second output f32 [H, L, 128] receives the m scratch at the last kv
    block, returned as its first lane, f32 [H, L]."""
    heads, length, d = q.shape
    group = heads // k.shape[0]
    dv = v.shape[-1]
    out_shape = jax.ShapeDtypeStruct((heads, length, dv), jnp.float32)
    out_specs = pl.BlockSpec((None, block_q, dv), lambda h, i, j: (h, i, 0))
    if with_max:
        student = kernel

        def kernel(q_ref, k_ref, v_ref, o_ref, m_out_ref, m_ref, l_ref, acc_ref):
            student(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref)

            @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
            def _copy_max():
                m_out_ref[...] = m_ref[...]

        out_shape = (out_shape, jax.ShapeDtypeStruct((heads, length, LANES), jnp.float32))
        out_specs = [out_specs, pl.BlockSpec((None, block_q, LANES), lambda h, i, j: (h, i, 0))]
    result = pl.pallas_call(
        kernel,
        out_shape=out_shape,
        grid=(heads, length // block_q, k.shape[1] // block_kv),
        in_specs=[
            pl.BlockSpec((None, block_q, d), lambda h, i, j: (h, i, 0)),
            pl.BlockSpec((None, block_kv, d), lambda h, i, j: (h // group, j, 0)),
            pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h // group, j, 0)),
        ],
        out_specs=out_specs,
        scratch_shapes=[pltpu.VMEM((block_q, LANES), jnp.float32),
                        pltpu.VMEM((block_q, LANES), jnp.float32),
                        pltpu.VMEM((block_q, dv), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
        name=name,
    )(q, k, v)
    if with_max:
        return result[0], np.asarray(result[1])[..., 0]
    return result


def flash_attention(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                    **options: object) -> tuple:
    """The student's ``flash_attention`` beside their kernel in the intended call.

    ``options`` are the wrapper's keywords (causal, sm_scale, block_q, block_kv,
    soft_cap, max_logit_const, use_base2_exp; docs/student-api.md, Task 4.4); the kernel gets
    the same (``use_base2_exp`` only when given),
    with ``sm_scale`` defaulting to ``1/sqrt(d)``. Returns ``(wrapper_out, kernel_out,
    kernel_error)`` (``common.beside_kernel``).
    """
    out = _kernel(sub, "flash_attention")(q, k, v, **options)
    sm_scale = options.get("sm_scale")
    kernel_options = {
        "sm_scale": float(1.0 / np.sqrt(q.shape[-1]) if sm_scale is None else sm_scale),
        "causal": bool(options.get("causal", False)),
        "block_q": int(options.get("block_q", 128)), "block_kv": int(options.get("block_kv", 128)),
        "soft_cap": options.get("soft_cap"), "max_logit_const": options.get("max_logit_const")}
    if "use_base2_exp" in options:
        kernel_options["use_base2_exp"] = bool(options["use_base2_exp"])
    return beside_kernel(out, lambda: flash_attention_kernel(sub, q, k, v, **kernel_options))


def choose_flash_config(sub: ModuleType, *, q_shape: tuple[int, int, int],
                        v_shape: tuple[int, int, int], chip: str = "v7",
                        block_candidates: tuple[int, ...] = (256, 512, 1024, 2048, 4096),
                        mle_candidates: tuple[float | None, ...] = (None, 70.0),
                        problems: dict | None = None, sweep: tuple[str, ...] = (),
                        concrete: tuple[str, ...] = ()) -> dict:
    """Task 4.8: the student's ``choose_flash_config()``, then, for grading (``problems``
    given), their *kernel* measured in Task 4.3's standard call on the grader's small
    problems (``measure.measure_candidates``, non-causal, sm_scale 1/sqrt(d)): every key
    of ``sweep`` abstractly, the chosen candidate's and every key of ``concrete`` also
    concretely. Returns ``{"config": ..., "abstract": {...}, "concrete": {...}}`` (plain
    data). The student's wrapper and compiler parameters take no part.

    Without ``problems`` (the student's self-check): their own ``flash_attention``
    at that (block_q, block_kv, max_logit_const) through ``pallas_sim.estimate`` on bf16
    shapes q, k ``q_shape`` [H, L, d] and v ``v_shape`` [H, L, dv], non-causal.

    Returns plain numbers only (the worker's reply is data, never objects): ``config`` (what
    the student returned, as a list when it is (int, int, float or None), else its repr, and
    then nothing else; nothing else either when it is not in the candidate sets, so that a
    (1, 1, None) never starts a run of millions of steps), and per pallas_call of the run
    ``grid``, ``block_shapes`` (of the in and out operands), ``time_s`` (predicted seconds),
    ``mfu``, ``mxu_flops`` (the products the kernel ran), ``vmem_bytes`` (blocks and
    scratch), ``vmem_limit_bytes``,
    ``vmem_capacity_bytes`` and ``largest_intermediate`` (elements of the largest array the
    kernel computed: the [block_q, block_kv] scores, lecture §5.3). Raises what the
    student's code raises (a ``ValueError`` of their wrapper, a ``VmemOOMError``).
    """
    chosen = _kernel(sub, "choose_flash_config")()
    if not (isinstance(chosen, (tuple, list)) and len(chosen) == 3
            and all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                    for b in chosen[:2])
            and (chosen[2] is None or (isinstance(chosen[2], (int, float, np.number))
                                       and not isinstance(chosen[2], bool)))):
        return {"config": repr(chosen)[:200]}
    block_q, block_kv = int(chosen[0]), int(chosen[1])
    constant = None if chosen[2] is None else float(chosen[2])
    config = [block_q, block_kv, constant]
    if not (block_q in tuple(block_candidates) and block_kv in tuple(block_candidates)
            and constant in tuple(mle_candidates)):
        return {"config": config}
    if problems is not None:
        chosen_key = ",".join(str(v) for v in config)
        scale = float(1.0 / np.sqrt(q_shape[-1]))

        def run_at(cfg: tuple):
            return lambda q, k, v: flash_attention_kernel(
                sub, q, k, v, sm_scale=scale, causal=False, block_q=int(cfg[0]),
                block_kv=int(cfg[1]), max_logit_const=cfg[2])

        measured = measure_candidates(run_at, problems, dtype="bfloat16",
                                      name="grader_flash_attention",
                                      sweep=[*sweep, chosen_key],
                                      concrete=[*concrete, chosen_key])
        return {"config": config, **measured}
    q = jax.ShapeDtypeStruct(tuple(q_shape), jnp.bfloat16)
    v = jax.ShapeDtypeStruct(tuple(v_shape), jnp.bfloat16)
    # A TPU visits the grid in order: shuffling the parallel axes (a grading option that
    # catches order-dependent kernels) would only slow the abstract run down. The scale is
    # passed, not left to the wrapper's default: a wrong default is Task 4.4's mistake, and
    # a default of 1 (whose multiply the compiler folds away) must not buy a faster run.
    with sim_options(shuffle_parallel=False):
        estimate = pallas_sim.estimate(_kernel(sub, "flash_attention"), q, q, v,
                                       sm_scale=float(1.0 / np.sqrt(q_shape[-1])),
                                       block_q=block_q, block_kv=block_kv,
                                       max_logit_const=constant, chip=chip)
    calls = []
    for call, line in zip(estimate.calls, estimate.timelines, strict=True):
        calls.append({
            "grid": [int(g) for g in call.grid],
            "block_shapes": [[None if d is None else int(d) for d in op.block_shape]
                             for op in call.operands if op.role in ("in", "out")],
            "time_s": float(line.time_s), "mfu": float(line.mfu),
            "mxu_flops": int(line.mxu_flops),
            "vmem_bytes": int(line.vmem_bytes), "vmem_limit_bytes": int(line.vmem_limit_bytes),
            "vmem_capacity_bytes": int(line.vmem_capacity_bytes),
            "largest_intermediate": int(call.largest_intermediate),
        })
    return {"config": config, "calls": calls}
