"""Task 3.5's trusted timing: the lecture's matmul predicted from
the grader's standard call around the student's kernel (docs/performance-model.md,
"Performance tasks").

Per candidate (bm, bn, bk): the full-size call is the lab's standard 3D-grid pallas_call
(``harness.matmul_kernel``: grid (M/bm, N/bn, K/bk), K last, the task's 32 MiB scoped
VMEM), traced here abstractly around a stand-in kernel (cached per process); the kernel's
work per step comes from a small problem at the same blocks, x [bm, n·bk] @ y [n·bk, bn]
with n = min(3, K/bk) k steps: one output block, and the first, a middle and the last k
step, the classes of step a blocked matmul kernel has (``pl.when(k == 0)`` zeroes,
``pl.when(k == last)`` finishes). Full step (i, j, k) does small step 0 when k = 0, the
last when k = K/bk − 1, else 1.
"""

from __future__ import annotations

import functools
import types

import numpy as np

import reference.a3_matmul as ref
from graders.checking import step_model
from graders.course.catalog import load_harness
from pallas_sim import VmemOOMError, jax, jnp
from pallas_sim.extend import CallTrace

(M, K), N = ref.PERFORMANCE_X_SHAPE, ref.PERFORMANCE_Y_SHAPE[1]
SIZES = ref.MATMUL_BLOCK_CANDIDATES
CHIP = ref.PERFORMANCE_CHIP
#: The standard call's name in the worker's trace (harness.matmul_kernel).
CALL_NAME = "grader_matmul"
#: Rows and columns of the small output the worker sends back (chosen here).
SAMPLE = 64
Blocks = tuple[int, int, int]


def all_candidates() -> list[Blocks]:
    """Every (bm, bn, bk) over the candidate sizes, in order."""
    return [(bm, bn, bk) for bm in SIZES for bn in SIZES for bk in SIZES]


def key(blocks: Blocks) -> str:
    """The candidate's key in the worker's request and reply, e.g. "1024,2048,1024"."""
    return ",".join(str(b) for b in blocks)


def divides(blocks: Blocks) -> bool:
    """Whether (bm, bn, bk) divides (M, N, K) = (4096, 18432, 7168)."""
    bm, bn, bk = blocks
    return M % bm == 0 and N % bn == 0 and K % bk == 0


def k_steps(blocks: Blocks) -> int:
    """k steps of the small problem: min(3, K/bk)."""
    return min(3, K // blocks[2])


def small_shapes(blocks: Blocks) -> list[list[int]]:
    """x and y shapes of the small problem at ``blocks``."""
    bm, bn, bk = blocks
    depth = bk * k_steps(blocks)
    return [[bm, depth], [depth, bn]]


def small_step_of(blocks: Blocks) -> np.ndarray:
    """For every full-size step in visiting order (k fastest), the small step whose work it
    does (int64 [full steps])."""
    bm, bn, bk = blocks
    gk, small = K // bk, k_steps(blocks)
    kk = np.tile(np.arange(gk), (M // bm) * (N // bn))
    return np.where(kk == 0, 0, np.where(kk == gk - 1, small - 1, 1)).astype(np.int64)


def multiplicity(blocks: Blocks) -> np.ndarray:
    """How many full-size steps do each small step's work (int64 [small steps])."""
    return np.bincount(small_step_of(blocks), minlength=k_steps(blocks)).astype(np.int64)


def _stand_in(x_ref, y_ref, z_ref, *, activation=None) -> None:
    """Does nothing: the full-size trace needs the call's specs, not a kernel's work."""


def _standard(blocks: Blocks, shapes: list[list[int]]) -> CallTrace | str:
    harness = load_harness("a3")
    sub = types.SimpleNamespace(matmul_kernel=_stand_in)
    structs = [jax.ShapeDtypeStruct(tuple(shape), jnp.bfloat16) for shape in shapes]
    try:
        return step_model.stand_in_trace(
            lambda x, y: harness.matmul_kernel(sub, x, y, block_shape=blocks), structs)
    except VmemOOMError as oom:
        return str(oom)


@functools.cache
def full_call(blocks: Blocks) -> CallTrace | str:
    """The standard call's full-size trace at ``blocks`` (stand-in kernel), or the
    ``VmemOOMError`` message when its blocks alone exceed the scoped VMEM. Cached per
    process: it does not depend on the student (about 5 s for 128-blocks' 258 048 steps,
    milliseconds for the fast candidates; built only for the candidates timed)."""
    return _standard(blocks, [[M, K], [K, N]])


@functools.cache
def small_call(blocks: Blocks) -> CallTrace | str:
    """The standard call's trace on the small problem at ``blocks`` (stand-in kernel), or
    the ``VmemOOMError`` message: the same blocks, buffers and scoped limit as the full
    size (its grid has at least 2 steps, K/bk being at least 7), in milliseconds."""
    return _standard(blocks, small_shapes(blocks))


#: The task's scoped VMEM limit (the standard call passes none: Mosaic's default, 32 MiB).
SCOPED_VMEM = 32 * (1 << 20)


def vmem(blocks: Blocks) -> tuple[int, int]:
    """(VMEM bytes of the standard call's double-buffered blocks, its scoped limit):
    2·(bm·bk·2 + bk·bn·2 + bm·bn·4) B (bf16 x and y, f32 z; Task 3.3's arithmetic) and
    32 MiB. tests/labs/test_performance_a3.py checks both against ``small_call``'s trace for
    every candidate."""
    bm, bn, bk = blocks
    return 2 * (bm * bk * 2 + bk * bn * 2 + bm * bn * 4), SCOPED_VMEM


def fits(blocks: Blocks) -> bool:
    """Whether the candidate divides the problem and its blocks fit the scoped VMEM."""
    used, limit = vmem(blocks)
    return divides(blocks) and used <= limit


def steps(blocks: Blocks) -> int:
    """Full-size grid steps at ``blocks``."""
    bm, bn, bk = blocks
    return (M // bm) * (N // bn) * (K // bk)


def fixed_cost_bound(blocks: Blocks) -> float:
    """A lower bound of any kernel's full-size time at ``blocks`` (seconds): every step
    pays the model's fixed step cost (``timeline.CALIBRATION.step_overhead_s``)."""
    from pallas_sim.extend import CALIBRATION

    return steps(blocks) * CALIBRATION.step_overhead_s


def seed_of(blocks: Blocks) -> int:
    """The seed of the small problem's data at ``blocks``."""
    bm, bn, bk = blocks
    return 35_000 + bm * 7 + bn * 11 + bk * 13


@functools.cache
def sample_of(blocks: Blocks) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The rows and columns of the small output the grader checks at ``blocks`` (seeded,
    sorted, at most ``SAMPLE`` each)."""
    bm, bn, _ = blocks
    rng = np.random.default_rng(seed_of(blocks) + 1)
    rows = np.sort(rng.choice(bm, size=min(SAMPLE, bm), replace=False))
    cols = np.sort(rng.choice(bn, size=min(SAMPLE, bn), replace=False))
    return tuple(int(r) for r in rows), tuple(int(c) for c in cols)


def problems() -> dict[str, dict[str, object]]:
    """The request's problems: per candidate key its config, small shapes, seed and output
    sample (rows, cols)."""
    out: dict[str, dict[str, object]] = {}
    for blocks in all_candidates():
        rows, cols = sample_of(blocks)
        out[key(blocks)] = {"config": list(blocks), "shapes": small_shapes(blocks),
                            "seed": seed_of(blocks), "rows": list(rows), "cols": list(cols)}
    return out


@functools.cache
def expected_sample(blocks: Blocks) -> tuple[np.ndarray, np.ndarray]:
    """(x @ y, |x| @ |y|) in float64 at the sampled rows and columns of the small problem's
    output (the worker's seeded data, regenerated here; cached per process, as it does not
    depend on the student)."""
    from graders.harnesses.measure import seeded_array

    (xs, ys), seed = small_shapes(blocks), seed_of(blocks)
    x = seeded_array(seed, xs, "bfloat16").astype(np.float64)
    y = seeded_array(seed + 1, ys, "bfloat16").astype(np.float64)
    rows, cols = sample_of(blocks)
    xr, yc = x[list(rows)], y[:, list(cols)]
    return xr @ yc, np.abs(xr) @ np.abs(yc)


def full_timeline(blocks: Blocks, record: step_model.StepRecord):
    """The full-size predicted timeline at ``blocks`` with ``record``'s work per step.

    Raises:
      TypeError: the blocks do not fit (``fits`` is False).
    """
    call = full_call(blocks)
    if not isinstance(call, CallTrace):
        raise TypeError(f"{blocks} does not fit")
    return step_model.full_size_timeline(call, record, small_step_of(blocks), CHIP)


def lower_bound(blocks: Blocks, record: step_model.StepRecord) -> float:
    """The full-size compute time at ``blocks`` (seconds): a lower bound of its time."""
    return step_model.compute_lower_bound(record, multiplicity(blocks), CHIP)


def _reference_kernel(x_ref, y_ref, z_ref, *, activation=None) -> None:
    """The reference's kernel in jnp ops (``ref._estimate_kernel``: the float64
    ``matmul_kernel`` needs values, which a shapes-only run has not); no activation in the
    timed problem."""
    ref._estimate_kernel(x_ref, y_ref, z_ref)


@functools.cache
def reference_record(blocks: Blocks) -> step_model.StepRecord:
    """The reference kernel's per-step work at ``blocks`` on the small problem, run here (the
    grader's process, never the worker) abstractly in the same standard call the student's
    kernel is measured in (``measure.measure`` with ``reference.a3_matmul`` as the
    submission). Cached per process: it does not depend on the student (the 96 candidates
    take about 2 s together).

    Raises:
      RuntimeError: the reference raised (it does not, at any legal candidate).
    """
    from graders.harnesses.measure import measure

    harness = load_harness("a3")
    sub = types.SimpleNamespace(matmul_kernel=_reference_kernel)
    raw = measure(lambda x, y: harness.matmul_kernel(sub, x, y, block_shape=blocks),
                  small_shapes(blocks), "bfloat16", name=CALL_NAME, seed=None)
    record = step_model.parse_record(raw, num_steps=k_steps(blocks))
    if isinstance(record, step_model.KernelRaised):
        raise RuntimeError(f"the reference kernel raised at {blocks}: {record.error}")
    return record


def projected(blocks: Blocks, chosen: Blocks, record: step_model.StepRecord
              ) -> step_model.StepRecord:
    """The student's kernel's work at ``blocks`` projected from its verified ``record`` at
    ``chosen`` (``step_model.project``; ``record`` itself when ``blocks == chosen``), each
    small step weighted by how many full-size steps it stands for."""
    if blocks == chosen:
        return record
    return step_model.project(record, reference_record(chosen), reference_record(blocks),
                              weights_c=multiplicity(chosen))
