"""What a4's public checks run around a student's kernels (shipped in the student bundle).

Runs in the student's own process (``pallas-lab check``) or in the worker (Gradescope's
visible tests); imports only numpy and pallas_sim. It holds no answer: the handout shows
no call of Task 4.3's kernel, and the grader's standard call (``harness.py``) is Task 4.4's
answer, so here the kernels run through the student's own ``flash_attention``. The
student's wrapper is called with the grid-shaping arguments only (block sizes, causal,
sm_scale); the kernel it calls is replaced for the duration by a *spy* that calls the
student's kernel with exactly the options the check asks for (so a wrapper that forwards
an option wrongly cannot change what the kernel is checked on) and copies out the
kernel's output block (and the m scratch) at each (head, q block)'s last kv step. The
trace of the wrapper's call is then held to what Task 4.4 requires (one call, grid
(H, L/block_q, L/block_kv), q, k, v and output blocks at (h, i), (h // (H/Hkv), j),
(h // (H/Hkv), j), (h, i), a float32 output): when it differs, the reply says so and the
check reports it as Task 4.4's fault instead of judging the kernel.

``flash_attention`` here asks the other way round, for Task 4.4 itself: which options the
student's wrapper hands its kernel (the spy records them at the first step and stops the
call; the student's kernel does not run, so a kernel mistake cannot show there).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

import pallas_sim
from pallas_sim import jax, jnp, pl
from pallas_sim.extend import concrete, sim_options

#: The name of Task 4.3's kernel, which the student's ``flash_attention`` calls.
KERNEL = "flash_attention_kernel"


def _function(sub: ModuleType, name: str) -> Callable[..., Any]:
    fn = getattr(sub, name, None)
    if not callable(fn):
        raise NameError(f"function {name!r} is not defined in the submission")
    return fn


class _KernelRaised(BaseException):
    """The student's kernel raised ``error`` inside their wrapper (re-raised as it was; its
    stub's NotImplementedError makes the kernel's task "not started"). A BaseException, so
    that a wrapper's ``except Exception`` does not swallow it."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _WrapperProblem(BaseException):
    """The refs the wrapper's call hands the kernel are not Task 4.4's (the message)."""


def _refs_problem(refs: tuple, q: np.ndarray, v: np.ndarray, block_q: int,
                  block_kv: int) -> str | None:
    """What in the refs of one kernel step differs from Task 4.4's call, or None: q (block_q,
    d), k (block_kv, d), v (block_kv, dv), a float32 output (block_q, dv) and float32
    scratch of block_q rows."""
    d, dv = q.shape[-1], v.shape[-1]
    want = ((block_q, d), (block_kv, d), (block_kv, dv), (block_q, dv))
    names = ("q_ref", "k_ref", "v_ref", "o_ref")
    for ref, shape, name in zip(refs[:4], want, names, strict=True):
        if tuple(ref.shape) != shape:
            return f"the kernel gets {name} of shape {tuple(ref.shape)}, not {shape}"
    for ref, name in zip(refs[3:], ("o_ref", "m_scratch_ref", "l_scratch_ref",
                                    "acc_scratch_ref"), strict=True):
        if np.dtype(ref.dtype) != np.float32:
            return f"the kernel gets {name} of dtype {np.dtype(ref.dtype).name}, not float32"
        if ref.shape[0] != block_q:
            return f"the kernel gets {name} with {ref.shape[0]} rows, not block_q = {block_q}"
    return None


def _wrapper_problem(calls: list, q: np.ndarray, k: np.ndarray, block_q: int,
                     block_kv: int) -> str | None:
    """What in the wrapper's trace differs from Task 4.4's call, or None."""
    if len(calls) != 1:
        return f"your flash_attention made {len(calls)} pallas_calls, not one"
    call = calls[0]
    heads, length, _ = q.shape
    group = heads // k.shape[0]
    grid = (heads, length // block_q, length // block_kv)
    if tuple(call.grid) != grid:
        return (f"its pallas_call has grid {tuple(call.grid)}, not (H, L/block_q, L/block_kv) "
                f"= {grid}")
    ins = [op for op in call.operands if op.role == "in"]
    outs = [op for op in call.operands if op.role == "out"]
    if len(ins) != 3 or len(outs) != 1:
        return (f"its pallas_call has {len(ins)} inputs and {len(outs)} outputs, not q, k, v "
                "and one output")
    if outs[0].dtype != "float32":
        return f"its output is {outs[0].dtype}, not float32"
    qi, ki, vi, oi = (np.asarray(op.block_indices) for op in (*ins, *outs))
    if not (np.array_equal(oi, qi) and np.array_equal(ki, vi) and not qi[:, 2].any()
            and not ki[:, 2].any() and np.array_equal(ki[:, 0], qi[:, 0] // group)):
        return ("its BlockSpecs do not give query head h and q block i with kv head "
                "h // (H / Hkv) and kv block j (the output block at (h, i))")
    visited = {(int(h), int(i), int(j)) for h, i, j in zip(qi[:, 0], qi[:, 1], ki[:, 1],
                                                             strict=True)}
    if len(visited) != call.num_steps or len(visited) != int(np.prod(grid)):
        return "its grid steps do not visit every (head, q block, kv block) once"
    return None


def _through_wrapper(sub: ModuleType, kernel: Callable[..., Any], options: dict,
                     q: np.ndarray, k: np.ndarray, v: np.ndarray, *, sm_scale: float,
                     causal: bool, block_q: int, block_kv: int,
                     capture: bool) -> dict:
    """Run the student's ``flash_attention`` with ``flash_attention_kernel`` replaced by a
    spy calling ``kernel`` with ``options``. A ``NotImplementedError`` of the wrapper or of
    the kernel propagates with its own message (naming its task).

    Returns ``{"out", "m", "problem", "largest", "masked_reads", "visible_skips"}``:
    ``out`` the wrapper's result, or with
    ``capture`` the kernel's own output blocks, f32 [H, L, dv]; ``m`` (with ``capture``)
    the m scratch's first lane after each row's last kv step, f32 [H, L]; ``problem`` what
    in the wrapper's call differs from Task 4.4's, or None; ``largest`` the call's largest
    intermediate (elements); ``masked_reads`` and ``visible_skips`` (None with a
    ``problem``) as :func:`_masked_reads` and :func:`_visible_skips`.
    """
    wrapper = _function(sub, "flash_attention")
    heads, length, _ = q.shape
    dv = v.shape[-1]
    out = np.full((heads, length, dv), np.nan, np.float32)
    m = np.full((heads, length), np.nan, np.float32)

    def spy(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, **_ignored):
        problem = _refs_problem((q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref), q, v,
                                block_q, block_kv)
        if problem is not None:
            raise _WrapperProblem(problem)
        try:
            kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, **options)
        except Exception as exc:  # noqa: BLE001 - the kernel's own error (its stub's too),
            raise _KernelRaised(exc) from None  # re-raised as is after the wrapper's call
        step = [int(concrete(pl.program_id(axis))) for axis in range(3)]
        if capture and step[2] == int(concrete(pl.num_programs(2))) - 1:
            rows = slice(step[1] * block_q, (step[1] + 1) * block_q)
            out[step[0], rows] = np.asarray(concrete(o_ref[...]), np.float32)
            m[step[0], rows] = np.asarray(concrete(m_ref[...]), np.float32)[:, 0]

    original = getattr(sub, KERNEL, None)
    setattr(sub, KERNEL, spy)
    try:
        with pallas_sim.trace() as recorded:
            result = wrapper(q, k, v, causal=causal, sm_scale=sm_scale, block_q=block_q,
                             block_kv=block_kv)
    except _KernelRaised as raised:
        raise raised.error from None  # the kernel's own error (a stub's: not started)
    except _WrapperProblem as problem:
        return {"out": None, "m": None, "largest": 0, "masked_reads": None,
                "visible_skips": None, "problem": str(problem)}
    except NotImplementedError:
        raise  # the wrapper's stub (its message names Task 4.4)
    except Exception as exc:  # noqa: BLE001 - raised outside the kernel: the wrapper's call
        return {"out": None, "m": None, "largest": 0, "masked_reads": None,
                "visible_skips": None,
                "problem": f"it raised {type(exc).__name__}: {str(exc)[:300]}"}
    finally:
        setattr(sub, KERNEL, original)
    calls = list(recorded.calls)
    problem = _wrapper_problem(calls, q, k, block_q, block_kv)
    largest = int(calls[-1].largest_intermediate) if calls else 0
    return {"out": out if capture else result, "m": m if capture else None,
            "problem": problem, "largest": largest,
            "masked_reads": None if problem else _masked_reads(calls[0], block_q, block_kv),
            "visible_skips": None if problem else _visible_skips(calls[0], block_q, block_kv)}


def _step_reads(call: Any, block_q: int, block_kv: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(q block, kv block, fully masked, k_ref or v_ref read) per step, int64 / bool [steps],
    of a call whose BlockSpecs are Task 4.4's (a tile is fully masked under the causal mask
    when its first key comes after its last query: j·block_kv > (i + 1)·block_q - 1)."""
    q_op, k_op, v_op = (op for op in call.operands if op.role == "in")
    q_block = np.asarray(q_op.block_indices, np.int64)[:, 1]
    kv_block = np.asarray(k_op.block_indices, np.int64)[:, 1]
    masked = kv_block * block_kv > (q_block + 1) * block_q - 1
    read = (np.asarray(k_op.kernel_reads) > 0) | (np.asarray(v_op.kernel_reads) > 0)
    return q_block, kv_block, masked, read


def _masked_reads(call: Any, block_q: int, block_kv: int) -> list[int]:
    """``[fully masked steps, steps of them at which the kernel read k_ref or v_ref]`` of a
    call whose BlockSpecs are Task 4.4's (:func:`_step_reads`)."""
    _, _, masked, read = _step_reads(call, block_q, block_kv)
    return [int(masked.sum()), int((masked & read).sum())]


def _visible_skips(call: Any, block_q: int, block_kv: int) -> list[list[int]]:
    """``[q block, kv block]`` of the tiles that hold a key visible under the causal mask (not
    fully masked: :func:`_step_reads`) at whose steps the kernel read neither k_ref nor
    v_ref, each tile once, in order (for any head): a kernel that skips them cannot see
    those keys."""
    q_block, kv_block, masked, read = _step_reads(call, block_q, block_kv)
    skipped = ~masked & ~read
    return [list(pair) for pair in sorted({(int(i), int(j)) for i, j in
                                           zip(q_block[skipped], kv_block[skipped],
                                               strict=True)})]


def flash_attention_kernel(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
                           sm_scale: float, causal: bool, block_q: int, block_kv: int,
                           soft_cap: float | None = None,
                           max_logit_const: float | None = None,
                           use_base2_exp: bool | None = None) -> dict:
    """The student's ``flash_attention_kernel`` with these options, run through their own
    ``flash_attention`` (module docstring).

    q: [H, L, d]; k: [Hkv, L, d]; v: [Hkv, L, dv], L a multiple of both blocks. Returns
    ``{"out": f32 [H, L, dv] (the kernel's output blocks), "m": f32 [H, L] (the m scratch's
    first lane after the last kv step), "problem": None or what in the wrapper's call
    differs from Task 4.4's, "largest": int}``. ``use_base2_exp`` goes to the kernel only
    when given. Raises what the student's code raises.
    """
    options: dict[str, object] = {
        "sm_scale": sm_scale, "causal": causal, "block_q": block_q, "block_kv": block_kv,
        "soft_cap": soft_cap, "max_logit_const": max_logit_const}
    if use_base2_exp is not None:
        options["use_base2_exp"] = use_base2_exp
    return _through_wrapper(sub, _function(sub, KERNEL), options, q, k, v, sm_scale=sm_scale,
                            causal=causal, block_q=block_q, block_kv=block_kv, capture=True)


class _Seen(BaseException):
    """The spy saw the options of the first kernel step (stops the wrapper's call)."""


def flash_attention(sub: ModuleType, q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
                    causal: bool, block_q: int, block_kv: int,
                    use_base2_exp: bool) -> dict:
    """Which ``use_base2_exp`` the student's ``flash_attention`` hands its kernel (Task 4.4):
    the wrapper runs with these arguments and ``flash_attention_kernel`` replaced by a spy
    that records the keyword arguments of the first step and stops the call there (the
    student's kernel never runs).

    Returns ``{"reached": bool (the spy was called), "given": bool (the kernel got a
    use_base2_exp keyword), "value": bool (its truth value; False when not given)}``.
    Raises what the wrapper raises before its first kernel step (a ``NotImplementedError``
    of its stub names Task 4.4).
    """
    wrapper = _function(sub, "flash_attention")
    _function(sub, KERNEL)
    seen: dict[str, bool] = {}

    def spy(*_refs, **options):
        seen.update(given="use_base2_exp" in options,
                    value=bool(options.get("use_base2_exp", False)))
        raise _Seen()

    original = getattr(sub, KERNEL)
    setattr(sub, KERNEL, spy)
    try:
        wrapper(q, k, v, causal=causal, block_q=block_q, block_kv=block_kv,
                use_base2_exp=use_base2_exp)
    except _Seen:
        pass
    finally:
        setattr(sub, KERNEL, original)
    return {"reached": bool(seen), "given": seen.get("given", False),
            "value": seen.get("value", False)}


def flash_attention_kernel_microtiled(sub: ModuleType, q: np.ndarray, k: np.ndarray,
                                      v: np.ndarray, *, sm_scale: float, causal: bool,
                                      block_q: int, block_kv: int, bkv_compute: int) -> dict:
    """The student's ``flash_attention_kernel_microtiled`` (Task 4.7) in the place of their
    Task 4.3 kernel, run through their own ``flash_attention`` (module docstring).

    Returns ``{"out": f32 [H, L, dv], "m", "problem", "largest"}`` as
    :func:`flash_attention_kernel` (``largest``: elements of the largest array an op
    produced in the kernel, lecture §5.3). Raises what the student's code raises.
    """
    options = {"sm_scale": sm_scale, "causal": causal, "block_q": block_q,
               "block_kv": block_kv, "bkv_compute": bkv_compute}
    return _through_wrapper(sub, _function(sub, "flash_attention_kernel_microtiled"), options,
                            q, k, v, sm_scale=sm_scale, causal=causal, block_q=block_q,
                            block_kv=block_kv, capture=False)


def choose_flash_config(sub: ModuleType, *, q_shape: tuple[int, int, int],
                        v_shape: tuple[int, int, int], chip: str = "v7",
                        block_candidates: tuple[int, ...] = (256, 512, 1024, 2048, 4096),
                        mle_candidates: tuple[float | None, ...] = (None, 70.0),
                        at: tuple[int, int, float | None] | None = None,
                        estimate: bool = True) -> dict:
    """Task 4.8 for the self-check: the student's ``choose_flash_config()`` (or the
    configuration ``at``, when given: their choice or the lecture's best, to time the
    student's own flash_attention there), then, unless ``estimate`` is False (the choice
    alone, so that what the chooser raises is told from what the wrapper raises), their own
    ``flash_attention`` at that (block_q, block_kv, max_logit_const) through
    ``pallas_sim.estimate`` on bf16 shapes q, k ``q_shape`` [H, L, d], v ``v_shape``
    [H, L, dv], non-causal, sm_scale 1/sqrt(d).

    Returns plain numbers: ``config`` (a list when it is (int, int, float or None), else its
    repr, and then nothing else; nothing else either outside the candidate sets), and per
    pallas_call ``grid``, ``block_shapes``, ``time_s``, ``mfu``, ``mxu_flops``,
    ``vmem_bytes``, ``vmem_limit_bytes``, ``vmem_capacity_bytes`` and
    ``largest_intermediate``. Raises what the student's code raises. The grade times the
    choice its own way (``harness.py``).
    """
    chosen = _function(sub, "choose_flash_config")() if at is None else tuple(at)
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
            and constant in tuple(mle_candidates)) or not estimate:
        return {"config": config}
    q = jax.ShapeDtypeStruct(tuple(q_shape), jnp.bfloat16)
    v = jax.ShapeDtypeStruct(tuple(v_shape), jnp.bfloat16)
    with sim_options(shuffle_parallel=False):  # a TPU visits the grid in order
        estimate = pallas_sim.estimate(_function(sub, "flash_attention"), q, q, v,
                                       sm_scale=float(1.0 / np.sqrt(q_shape[-1])),
                                       block_q=block_q, block_kv=block_kv,
                                       max_logit_const=constant, chip=chip)
    calls = [{
        "grid": [int(g) for g in call.grid],
        "block_shapes": [[None if d is None else int(d) for d in op.block_shape]
                         for op in call.operands if op.role in ("in", "out")],
        "time_s": float(line.time_s), "mfu": float(line.mfu),
        "mxu_flops": int(line.mxu_flops),
        "vmem_bytes": int(line.vmem_bytes), "vmem_limit_bytes": int(line.vmem_limit_bytes),
        "vmem_capacity_bytes": int(line.vmem_capacity_bytes),
        "largest_intermediate": int(call.largest_intermediate),
    } for call, line in zip(estimate.calls, estimate.timelines, strict=True)]
    return {"config": config, "calls": calls}
