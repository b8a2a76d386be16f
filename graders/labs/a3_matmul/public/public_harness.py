"""What a3's public checks run around a student's code (shipped in the student bundle).

Runs in the student's own process (``pallas-lab check``) or in the worker (Gradescope's
visible tests); imports only numpy and pallas_sim. It holds no answer: Task 3.1's kernel
runs in the call the handout itself shows under Task 3.1 (64 x 64 blocks), and Task 3.5's
choice is timed on the student's own ``matmul``. The grader's standard call at any block
shape (``harness.py``) is Task 3.2's answer and stays with the grader.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from pallas_sim import jax, jnp, pl
from pallas_sim.extend import sim_options

#: The block edge of the handout's example call (Task 3.1).
BLOCK = 64


def _function(sub: ModuleType, name: str):
    fn = getattr(sub, name, None)
    if not callable(fn):
        raise NameError(f"function {name!r} is not defined in the submission")
    return fn


def matmul_kernel(sub: ModuleType, x: np.ndarray, y: np.ndarray, *,
                  activation: str | None = None, memory: str = "poison") -> np.ndarray:
    """The student's ``matmul_kernel`` in the handout's example call (Task 3.1): grid
    (M/64, N/64, K/64), x block (64, 64) at (i, k), y at (k, j), z at (i, j).

    x: [M, K], y: [K, N] (f32 or bf16), M, N, K multiples of 64. ``memory``: "poison"
    (fresh output buffers hold NaN, as uninitialized VMEM) or "zero". Returns float32
    [M, N]; raises what the kernel raises.
    """
    kernel = _function(sub, "matmul_kernel")
    (m, k), n = x.shape, y.shape[1]
    z_shape = (m, n)
    call = pl.pallas_call(
        lambda xr, yr, zr: kernel(xr, yr, zr, activation=activation),
        grid=(m // BLOCK, n // BLOCK, k // BLOCK),
        in_specs=[pl.BlockSpec((64, 64), lambda i, j, k: (i, k)),
                  pl.BlockSpec((64, 64), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((64, 64), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct(z_shape, jnp.float32),  # float32 [M, N] (handout)
    )
    with sim_options(uninitialized=memory):
        return call(x, y)


def choose_matmul_blocks(sub: ModuleType, *, x_shape: tuple[int, int],
                         y_shape: tuple[int, int], chip: str = "v7",
                         candidates: tuple[int, ...] = (128, 256, 512, 1024, 2048),
                         at: tuple[int, int, int] | None = None,
                         estimate: bool = True) -> dict:
    """Task 3.5 for the self-check: the student's ``choose_matmul_blocks()`` (or the blocks
    ``at``, when given: their choice or the lecture's best, to time the student's own
    matmul there), then, unless ``estimate`` is False (the choice alone, so that what the
    chooser raises is told from what the wrapper raises), their own ``matmul`` at those
    blocks through ``pallas_sim.estimate`` on bf16 shapes x ``x_shape`` @ y ``y_shape``.

    Returns plain numbers: ``blocks`` (a list when the choice is three ints, else its repr,
    and then nothing else; nothing else either when a block is not one of
    ``candidates``), and per pallas_call ``grid``, ``block_shapes``, ``time_s``, ``mfu``,
    ``mxu_flops``, ``vmem_bytes`` and ``vmem_limit_bytes``. Raises what the student's code
    raises (``VmemOOMError`` when the blocks do not fit). The grade times the choice its
    own way (``harness.py``).
    """
    import pallas_sim

    chosen = _function(sub, "choose_matmul_blocks")() if at is None else tuple(at)
    if not (isinstance(chosen, (tuple, list)) and len(chosen) == 3
            and all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                    for b in chosen)):
        return {"blocks": repr(chosen)[:200]}
    blocks = tuple(int(b) for b in chosen)
    if not estimate or not all(b in tuple(candidates) for b in blocks):
        return {"blocks": list(blocks)}
    x = jax.ShapeDtypeStruct(tuple(x_shape), jnp.bfloat16)
    y = jax.ShapeDtypeStruct(tuple(y_shape), jnp.bfloat16)
    with sim_options(shuffle_parallel=False):  # a TPU visits the grid in order
        estimate = pallas_sim.estimate(_function(sub, "matmul"), x, y, block_shape=blocks,
                                       chip=chip)
    calls = [{
        "grid": [int(g) for g in call.grid],
        "block_shapes": [[None if d is None else int(d) for d in op.block_shape]
                         for op in call.operands if op.role in ("in", "out")],
        "time_s": float(line.time_s), "mfu": float(line.mfu),
        "mxu_flops": int(line.mxu_flops),
        "vmem_bytes": int(line.vmem_bytes), "vmem_limit_bytes": int(line.vmem_limit_bytes),
    } for call, line in zip(estimate.calls, estimate.timelines, strict=True)]
    return {"blocks": list(blocks), "calls": calls}
