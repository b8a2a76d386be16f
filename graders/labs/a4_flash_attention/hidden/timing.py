"""Task 4.8's trusted timing: the lecture's attention predicted
from the grader's standard call around the student's kernel (docs/performance-model.md,
"Performance tasks"; the shared pieces are graders/checking/step_model.py).

Per candidate (block_q, block_kv, max_logit_const): the full-size call is Task 4.3's
standard pallas_call (``harness._standard_call``: grid (H, L/block_q, L/block_kv), the kv
axis last, head dims squeezed, m, l and acc scratch), traced here abstractly around a
stand-in kernel (cached per process). The kernel's work per step comes from a small
problem at the same configuration: one head, one q block of block_q queries, n·block_kv
keys with n = min(3, L/block_kv) kv steps, so that the first, a middle and the last kv step occur
(the classes of step a non-causal Flash kernel has: initialise at the first, finish at
the last). Full step (h, i, j) does small step (0, 0, class of j).
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np

import reference.a4_flash_attention as ref
from graders.checking import step_model
from graders.course.catalog import load_harness
from pallas_sim import VmemOOMError, jax, jnp
from pallas_sim.extend import CallTrace

H, L, D = ref.PERFORMANCE_Q_SHAPE
DV = ref.PERFORMANCE_V_SHAPE[2]
CHIP = ref.PERFORMANCE_CHIP
SIZES = ref.FLASH_BLOCK_CANDIDATES
CONSTANTS = ref.FLASH_MLE_CANDIDATES
#: The standard call's name in the worker's trace (harness.flash_attention_kernel).
CALL_NAME = "grader_flash_attention"
#: Rows (queries) and value columns of the small output the worker sends back.
SAMPLE_ROWS, SAMPLE_COLS = 64, 64
#: Lanes of the m and l scratch (harness.LANES).
LANES = 128
SCOPED_VMEM = 32 * (1 << 20)
SM_SCALE = 1.0 / math.sqrt(D)
#: Standard deviations of the small problem's q, k, v: q of 4 gives scores of about 4, so
#: each row's maximum moves between kv blocks and a state that is not rescaled shows.
SCALES = (4.0, 1.0, 1.0)
Config = tuple[int, int, float | None]


def all_candidates() -> list[Config]:
    """Every (block_q, block_kv, max_logit_const) over the candidate sets, in order."""
    return [(bq, bkv, c) for bq in SIZES for bkv in SIZES for c in CONSTANTS]


def key(config: Config) -> str:
    """The candidate's key in the worker's request and reply, e.g. "2048,2048,70.0"."""
    return ",".join(str(v) for v in config)


def kv_steps(config: Config) -> int:
    """kv steps of the small problem: min(3, L/block_kv)."""
    return min(3, L // config[1])


def small_length(config: Config) -> int:
    """The small problem's kv length: kv_steps·block_kv (its q length is block_q)."""
    return kv_steps(config) * config[1]


def small_shapes(config: Config) -> list[list[int]]:
    """q, k, v shapes of the small problem: one q block, kv_steps kv blocks."""
    length = small_length(config)
    return [[1, config[0], D], [1, length, D], [1, length, DV]]


def small_steps(config: Config) -> int:
    """Grid steps of the small problem (one q block)."""
    return kv_steps(config)


def small_step_of(config: Config) -> np.ndarray:
    """For every full-size step in visiting order, the small step whose work it does
    (small step (0, 0, j') = index j': first, 1 or last kv step)."""
    bq, bkv, _ = config
    gkv, small = L // bkv, kv_steps(config)
    jj = np.tile(np.arange(gkv), H * (L // bq))
    return np.where(jj == 0, 0, np.where(jj == gkv - 1, small - 1, 1)).astype(np.int64)


def multiplicity(config: Config) -> np.ndarray:
    """How many full-size steps do each small step's work (int64 [small steps])."""
    return np.bincount(small_step_of(config), minlength=small_steps(config)).astype(np.int64)


def _stand_in(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, **options) -> None:
    """Does nothing: the full-size trace needs the call's specs, not a kernel's work."""


def _standard(config: Config, shapes: list[list[int]]) -> CallTrace | str:
    harness = load_harness("a4")
    bq, bkv, _ = config
    structs = [jax.ShapeDtypeStruct(tuple(s), jnp.bfloat16) for s in shapes]
    try:
        return step_model.stand_in_trace(
            lambda q, k, v: harness._standard_call(_stand_in, q, k, v, block_q=bq,
                                                   block_kv=bkv, with_max=False,
                                                   name=CALL_NAME), structs)
    except VmemOOMError as oom:
        return str(oom)


@functools.cache
def full_call(config: Config) -> CallTrace | str:
    """The standard call's full-size trace at ``config``'s blocks (stand-in kernel; MLE
    changes only the kernel), or the ``VmemOOMError`` message. Cached per process."""
    if config[2] is not None:
        return full_call((config[0], config[1], None))
    return _standard(config, [[H, L, D], [H, L, D], [H, L, DV]])


def vmem(config: Config) -> tuple[int, int]:
    """(VMEM bytes of the standard call's double-buffered blocks and its scratch, its
    scoped limit): 2·(bq·d·2 + bkv·d·2 + bkv·dv·2 + bq·dv·4) + 2·bq·128·4 + bq·dv·4 B and
    32 MiB. tests/labs/test_performance_a4.py checks them against the call's trace."""
    bq, bkv, _ = config
    blocks = 2 * (bq * D * 2 + bkv * D * 2 + bkv * DV * 2 + bq * DV * 4)
    return blocks + 2 * bq * LANES * 4 + bq * DV * 4, SCOPED_VMEM


def fits(config: Config) -> bool:
    """Whether the standard call's blocks and scratch fit its scoped VMEM."""
    used, limit = vmem(config)
    return used <= limit


def seed_of(config: Config) -> int:
    """The seed of the small problem's data at ``config``."""
    bq, bkv, c = config
    return 48_000 + bq * 7 + bkv * 11 + (0 if c is None else 5)


@functools.cache
def sample_of(config: Config) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The query rows and value columns of the small output the grader checks."""
    rng = np.random.default_rng(seed_of(config) + 3)
    rows = np.sort(rng.choice(config[0], size=min(SAMPLE_ROWS, config[0]), replace=False))
    cols = np.sort(rng.choice(DV, size=min(SAMPLE_COLS, DV), replace=False))
    return tuple(int(r) for r in rows), tuple(int(c) for c in cols)


def problems() -> dict[str, dict[str, object]]:
    """The request's problems: per candidate key its config, shapes, seed and sample."""
    out: dict[str, dict[str, object]] = {}
    for config in all_candidates():
        rows, cols = sample_of(config)
        out[key(config)] = {"config": list(config), "shapes": small_shapes(config),
                            "seed": seed_of(config), "rows": list(rows), "cols": list(cols),
                            "scales": list(SCALES)}
    return out


#: A value of the small output may be off by this fraction of its magnitude, Σ p·|v| / l
#: (float32 accumulation of bf16 products, p rounded to bf16 once: about 2⁻⁹ of it; a
#: state that is not rescaled or a missing normalisation is off by the value itself).
VALUE_RTOL = 2e-2


@functools.cache
def expected_sample(config: Config) -> tuple[np.ndarray, np.ndarray]:
    """(dense float64 softmax(q kᵀ · scale) v, its magnitude softmax(q kᵀ · scale) |v|) at
    the sampled rows and columns of the small problem (the worker's seeded data,
    regenerated here; cached per process)."""
    from graders.harnesses.measure import seeded_array

    (qs, ks, vs), seed = small_shapes(config), seed_of(config)
    q = seeded_array(seed, qs, "bfloat16", SCALES[0]).astype(np.float64)[0]
    k = seeded_array(seed + 1, ks, "bfloat16", SCALES[1]).astype(np.float64)[0]
    v = seeded_array(seed + 2, vs, "bfloat16", SCALES[2]).astype(np.float64)[0]
    rows, cols = sample_of(config)
    scores = q[list(rows)] @ k.T * SM_SCALE
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p @ v[:, list(cols)], p @ np.abs(v[:, list(cols)])


def full_timeline(config: Config, record: step_model.StepRecord):
    """The full-size predicted timeline at ``config`` with ``record``'s work per step.

    Raises:
      TypeError: the blocks do not fit the scoped VMEM.
    """
    call = full_call(config)
    if not isinstance(call, CallTrace):
        raise TypeError(f"{config} does not fit")
    return step_model.full_size_timeline(call, record, small_step_of(config), CHIP)


def lower_bound(config: Config, record: step_model.StepRecord) -> float:
    """The full-size compute time at ``config`` (seconds): a lower bound of its time."""
    return step_model.compute_lower_bound(record, multiplicity(config), CHIP)


def stand_in_module() -> types.SimpleNamespace:
    """A module-like object whose ``flash_attention_kernel`` is the stand-in (tests)."""
    return types.SimpleNamespace(flash_attention_kernel=_stand_in)


@functools.cache
def reference_record(config: Config) -> step_model.StepRecord:
    """The reference kernel's per-step work at ``config`` on the small problem, run here (the
    grader's process, never the worker) abstractly in the same standard call and with the
    same options as the student's kernel (``measure.measure`` with
    ``reference.a4_flash_attention`` as the submission). Cached per process: it does not
    depend on the student.

    Raises:
      RuntimeError: the reference raised.
    """
    from graders.harnesses.measure import measure

    harness = load_harness("a4")
    bq, bkv, constant = config
    raw = measure(lambda q, k, v: harness.flash_attention_kernel(
        ref, q, k, v, sm_scale=SM_SCALE, causal=False, block_q=bq, block_kv=bkv,
        max_logit_const=constant), small_shapes(config), "bfloat16", name=CALL_NAME,
        seed=None)
    record = step_model.parse_record(raw, num_steps=small_steps(config))
    if isinstance(record, step_model.KernelRaised):
        raise RuntimeError(f"the reference kernel raised at {config}: {record.error}")
    return record


def projected(config: Config, chosen: Config, record: step_model.StepRecord
              ) -> step_model.StepRecord:
    """The student's kernel's work at ``config`` projected from its verified ``record`` at
    ``chosen`` (``step_model.project``; ``record`` itself when ``config == chosen``), each
    small step weighted by how many full-size steps it stands for."""
    if config == chosen:
        return record
    return step_model.project(record, reference_record(chosen), reference_record(config),
                              weights_c=multiplicity(chosen))
