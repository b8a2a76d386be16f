"""Harnesses for a3_matmul (lecture §4): the grader's 3D-grid pallas_call around a kernel.

Runs inside the untrusted worker; imports only numpy and pallas_sim.
"""

from __future__ import annotations

import functools
from types import ModuleType

import numpy as np

from pallas_sim import jax, jnp, pl, pltpu
from pallas_sim.extend import sim_options

from .common import beside_kernel
from .measure import measure_candidates


def _kernel(sub: ModuleType, name: str):
    kernel = getattr(sub, name, None)
    if not callable(kernel):
        raise NameError(f"function {name!r} is not defined in the submission")
    return kernel


def matmul_kernel(sub: ModuleType, x: np.ndarray, y: np.ndarray, *,
                  block_shape: tuple[int, int, int], activation: str | None = None,
                  memory: str = "poison") -> np.ndarray:
    """Run the student's ``matmul_kernel`` in the standard 3D-grid pallas_call.

    x: [M, K], y: [K, N] (f32 or bf16) with (M, N, K) multiples of
    block_shape = (bm, bn, bk) (the grader draws them so). Grid
    (M/bm, N/bn, K/bk), K last; x block (bm, bk) at (i, k), y (bk, bn) at
    (k, j), z float32 (bm, bn) at (i, j); semantics ("parallel", "parallel",
    "arbitrary"); the kernel gets ``activation=`` by keyword. ``memory``:
    "poison" (fresh output buffers hold NaN, as uninitialized VMEM) or
    "zero" (they hold zeros, which isolates the activation from the
    initialization). Returns float32 [M, N].
    """
    (m, k), n = x.shape, y.shape[1]
    bm, bn, bk = block_shape
    kernel = functools.partial(_kernel(sub, "matmul_kernel"), activation=activation)
    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
        name="grader_matmul",
    )
    with sim_options(uninitialized=memory):
        return call(x, y)


def matmul(sub: ModuleType, x: np.ndarray, y: np.ndarray, *,
           block_shape: tuple[int, int, int] = (128, 128, 128),
           activation: str | None = None) -> tuple:
    """The student's ``matmul`` beside their ``matmul_kernel`` in the standard call.

    Returns ``(wrapper_out, kernel_out, kernel_error)`` (``common.beside_kernel``);
    arguments as ``matmul``'s (docs/student-api.md, Task 3.2).
    """
    wrapper = _kernel(sub, "matmul")
    out = wrapper(x, y, block_shape=block_shape, activation=activation)
    return beside_kernel(out, lambda: matmul_kernel(sub, x, y, block_shape=block_shape,
                                                    activation=activation))


def choose_matmul_blocks(sub: ModuleType, *, x_shape: tuple[int, int] = (4096, 7168),
                         y_shape: tuple[int, int] = (7168, 18432), chip: str = "v7",
                         candidates: tuple[int, ...] = (128, 256, 512, 1024, 2048),
                         problems: dict | None = None, sweep: tuple[str, ...] = (),
                         concrete: tuple[str, ...] = ()) -> dict:
    """Task 3.5: the student's ``choose_matmul_blocks()``, then, for grading
    (``problems`` given), their *kernel* measured in the standard call on the grader's
    small problems (``measure.measure_candidates``): every key of ``sweep`` abstractly,
    the chosen candidate's key and every key of ``concrete`` also concretely. Returns
    ``{"blocks": ..., "abstract": {...}, "concrete": {...}}`` (plain data). The student's
    wrapper and compiler parameters take no part.

    Without ``problems`` (the student's self-check, ``pallas-lab check``): their own
    ``matmul`` at those blocks through ``pallas_sim.estimate`` on bf16 shapes x
    ``x_shape`` @ y ``y_shape``, as described below.

    Returns plain numbers only (the worker's reply is data, never objects): ``blocks`` (what
    the student returned, as a list when it is a sequence of ints, else its repr, and then
    nothing else; nothing else either when a block is not one of ``candidates``, so that a
    (1, 1, 1) never starts a run of billions of steps), and per pallas_call of the run
    ``grid``, ``block_shapes`` (of the in and out operands), ``time_s`` (predicted
    seconds), ``mfu``, ``mxu_flops`` (the products the kernel ran), ``vmem_bytes`` and
    ``vmem_limit_bytes``. Raises what the student's
    code raises, e.g. ``VmemOOMError`` with a real run's message when the blocks do not fit.
    """
    import pallas_sim

    chosen = _kernel(sub, "choose_matmul_blocks")()
    if not (isinstance(chosen, (tuple, list)) and len(chosen) == 3
            and all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                    for b in chosen)):
        return {"blocks": repr(chosen)[:200]}
    blocks = tuple(int(b) for b in chosen)
    if not all(b in tuple(candidates) for b in blocks):
        return {"blocks": list(blocks)}
    if problems is not None:
        chosen_key = ",".join(str(b) for b in blocks)

        def run_at(config: tuple[int, ...]):
            return lambda x, y: matmul_kernel(sub, x, y, block_shape=tuple(config))

        measured = measure_candidates(run_at, problems, dtype="bfloat16", name="grader_matmul",
                                      sweep=[*sweep, chosen_key],
                                      concrete=[*concrete, chosen_key])
        return {"blocks": list(blocks), **measured}
    x = jax.ShapeDtypeStruct(tuple(x_shape), jnp.bfloat16)
    y = jax.ShapeDtypeStruct(tuple(y_shape), jnp.bfloat16)
    # A TPU visits the grid in order: the grading option that shuffles parallel axes (to
    # catch order-dependent kernels) would only make the abstract run slower (about 7x).
    with sim_options(shuffle_parallel=False):
        estimate = pallas_sim.estimate(_kernel(sub, "matmul"), x, y, block_shape=blocks,
                                       chip=chip)
    calls = []
    for call, line in zip(estimate.calls, estimate.timelines, strict=True):
        calls.append({
            "grid": [int(g) for g in call.grid],
            "block_shapes": [[None if d is None else int(d) for d in op.block_shape]
                             for op in call.operands
                             if op.role in ("in", "out")],
            "time_s": float(line.time_s), "mfu": float(line.mfu),
            "mxu_flops": int(line.mxu_flops),
            "vmem_bytes": int(line.vmem_bytes), "vmem_limit_bytes": int(line.vmem_limit_bytes),
        })
    return {"blocks": list(blocks), "calls": calls}
