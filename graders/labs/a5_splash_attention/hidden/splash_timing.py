"""Task 5.7's trusted side: the grader's full-size Splash call, the
small problems the student's kernel is measured on, and the full-size time of their kernel
at any candidate (lecture §6.5; docs/performance-model.md, "Performance tasks").

* ``tile_table(kind, bq, bkv)``: the active tiles of ``ref.performance_mask(kind)`` (what
  ``ref.build_mask_info`` gives, without its patterns: rows, cols, kinds, mask_next,
  bounds), computed from 256 x 256 sub-tiles once per mask (the reference walks every
  tile: 8 s for the 72 tilings; tests/labs/test_splash_timing.py checks they are equal).
* A step's *class* is (block kind 1 partial / 2 full, opens its q row, closes it): what a
  Splash kernel's work at a step depends on. ``small_problem(bq, bkv)``: one head, rows of
  tiles that hold every class any of the three masks has at these blocks, with the
  synthetic partial pattern ``small_pattern`` (the harness builds the same).
* ``standard_trace(kind, bq, bkv)``: the grader's standard call (Task 5.4's, as the harness
  makes it, with the task's compiler parameters) at full size, recorded by
  ``pallas_sim.estimate`` around an empty kernel: grid, block indices, copies and VMEM of
  the real problem, every skipped tile skipped. ``VmemOOMError`` when it does not fit.
* ``full_time``: that trace with each step's op counts taken from its class in the
  measured small run (``class_work``; ``graders.checking.step_model.full_size_timeline``,
  i.e. ``timeline.predict``): the time ``pallas_sim.estimate`` gives a correct wrapper
  around the same kernel.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

import reference.a5_splash_attention as ref
from graders.checking import step_model
from graders.harnesses.measure import seeded_array
from pallas_sim.extend import sim_options

#: The finest candidate block: every candidate tile is a union of these sub-tiles.
SUB = min(ref.SPLASH_BLOCK_CANDIDATES)
HEADS, LENGTH = ref.PERFORMANCE_HEADS, ref.PERFORMANCE_LENGTH
D, DV = ref.PERFORMANCE_HEAD_DIM, ref.PERFORMANCE_VALUE_DIM
SCALE = 1.0 / math.sqrt(D)
#: Step classes: (block kind, opens its q row, closes it).
StepClass = tuple[int, bool, bool]


@dataclasses.dataclass(frozen=True)
class TileTable:
    """The active tiles of a mask at (bq, bkv), row-major: int32 ``rows``, ``cols``,
    ``nxt`` (mask_next), int8 ``kinds`` (1 partial, 2 full), bool ``starts``, ``ends``
    (bounds); ``patterns``: distinct partial patterns (at least 1: the wrapper's all-True
    pattern when there is none)."""

    rows: np.ndarray
    cols: np.ndarray
    kinds: np.ndarray
    nxt: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    patterns: int

    @property
    def classes(self) -> list[StepClass]:
        """Each active tile's step class."""
        return [(int(k), bool(s), bool(e))
                for k, s, e in zip(self.kinds, self.starts, self.ends, strict=True)]

    def prefetch(self) -> tuple[np.ndarray, ...]:
        """The six int32 scalar-prefetch arrays in Task 5.4's order."""
        return tuple(np.asarray(a, np.int32) for a in (
            self.rows, self.cols, self.nxt, self.starts, self.ends, self.kinds))


@functools.cache
def _sub_tiles(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(True count, content id) of every SUB x SUB sub-tile of the mask (ids equal exactly
    when the sub-tiles' bits are equal)."""
    m = ref.performance_mask(kind)
    n = LENGTH // SUB
    tiles = m.reshape(n, SUB, n, SUB).swapaxes(1, 2).reshape(n * n, SUB * SUB)
    counts = tiles.sum(axis=1).reshape(n, n)
    seen: dict[bytes, int] = {}
    ids = np.array([seen.setdefault(row.tobytes(), len(seen))
                    for row in np.packbits(tiles, axis=1)], np.int64)
    return counts, ids.reshape(n, n)


@functools.cache
def tile_table(kind: str, bq: int, bkv: int) -> TileTable:
    """The active tiles of ``ref.performance_mask(kind)`` at (bq, bkv), as
    ``ref.build_mask_info`` lists them (patterns numbered in order of first appearance; a
    full tile's mask_next the pattern of the next partial tile, wrapping; 0 with none).

    Raises:
      ValueError: an unknown mask, or blocks that are not multiples of ``SUB`` dividing L.
    """
    if bq % SUB or bkv % SUB or LENGTH % bq or LENGTH % bkv:
        raise ValueError(f"blocks ({bq}, {bkv}) must be multiples of {SUB} dividing {LENGTH}")
    counts, ids = _sub_tiles(kind)
    n = counts.shape[0]
    fq, fk = bq // SUB, bkv // SUB
    nq, nk = n // fq, n // fk
    total = counts.reshape(nq, fq, nk, fk).sum(axis=(1, 3))
    rows, cols = np.nonzero(total)
    kinds = np.where(total[rows, cols] == bq * bkv, 2, 1).astype(np.int8)
    content = ids.reshape(nq, fq, nk, fk).transpose(0, 2, 1, 3).reshape(nq, nk, fq * fk)
    seen: dict[bytes, int] = {}
    own = np.full(len(rows), -1, np.int64)
    for g in np.flatnonzero(kinds == 1):
        own[g] = seen.setdefault(content[rows[g], cols[g]].tobytes(), len(seen))
    partial_at = np.flatnonzero(own >= 0)
    if len(partial_at):
        later = np.searchsorted(partial_at, np.arange(len(rows))) % len(partial_at)
        nxt = own[partial_at[later]]
    else:
        nxt = np.zeros(len(rows), np.int64)
    new_row = rows[1:] != rows[:-1]
    return TileTable(rows.astype(np.int32), cols.astype(np.int32), kinds,
                     nxt.astype(np.int32), np.r_[True, new_row], np.r_[new_row, True],
                     max(1, len(seen)))


def _empty_kernel(*refs: object, **options: object) -> None:
    """The standard call's kernel for the trusted trace: no work (the counts come from the
    student's measured steps)."""


def standard_call(heads: int, active: int, bq: int, bkv: int, d: int, dv: int, length_q: int):
    """The grader's standard Splash pallas_call (Task 5.4's grid spec, as the harness's
    ``splash_attention_kernel`` makes it, with Task 5.7's compiler parameters: semantics
    ("parallel", "arbitrary"), the chip's default scoped VMEM) around the empty kernel."""
    from pallas_sim import jax, jnp, pl, pltpu

    return pl.pallas_call(
        _empty_kernel, grid_spec=ref._splash_grid_spec(heads, active, bq, bkv, d, dv),
        out_shape=jax.ShapeDtypeStruct((heads, length_q, dv), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        name="grader_splash")


@functools.cache
def standard_trace(kind: str, bq: int, bkv: int):
    """The full-size trace (``CallTrace``, no op counts worth reading) of the standard call
    over ``tile_table(kind, bq, bkv)``, or the ``VmemOOMError`` it raised (kept: a tiling
    that does not fit is illegal for every kernel)."""
    import pallas_sim
    from pallas_sim import jax, jnp

    table = tile_table(kind, bq, bkv)
    q = jax.ShapeDtypeStruct((HEADS, LENGTH, D), jnp.bfloat16)
    v = jax.ShapeDtypeStruct((HEADS, LENGTH, DV), jnp.bfloat16)
    patterns = jax.ShapeDtypeStruct((table.patterns, bq, bkv), jnp.bool_)
    call = standard_call(HEADS, len(table.rows), bq, bkv, D, DV, LENGTH)
    try:
        with sim_options(shuffle_parallel=False):
            return pallas_sim.estimate(call, *table.prefetch(), q, q, v, patterns,
                                       chip=ref.PERFORMANCE_CHIP).calls[0]
    except pallas_sim.VmemOOMError as exc:
        return exc


# --- the small problem ------------------------------------------------------------------


def small_pattern(bq: int, bkv: int) -> np.ndarray:
    """The small problems' partial pattern: query i sees key j when j * bq <= i * bkv
    (every query sees key 0; the last key of query 0 is masked). The harness builds the
    same (``harness.small_pattern``)."""
    i = np.arange(bq)[:, None]
    j = np.arange(bkv)[None, :]
    return j * bq <= i * bkv


def layout(classes: set[StepClass]) -> list[list[int]]:
    """Rows of tile kinds (each row's tiles at columns 0, 1, ...) whose steps have exactly
    the step classes ``classes``: a one-tile row per class that opens and closes its row,
    then rows of first, (middle tiles,) last."""
    singles = sorted(k for k, s, e in classes if s and e)
    firsts = sorted(k for k, s, e in classes if s and not e)
    lasts = sorted(k for k, s, e in classes if e and not s)
    middles = sorted(k for k, s, e in classes if not s and not e)
    rows = [[k] for k in singles]
    if firsts or lasts or middles:
        if not firsts or not lasts:
            raise ValueError(f"step classes {sorted(classes)} are not a mask's")
        for i in range(max(len(firsts), len(lasts))):
            rows.append([firsts[i % len(firsts)], *(middles if i == 0 else []),
                         lasts[i % len(lasts)]])
    return rows


@dataclasses.dataclass(frozen=True)
class SmallProblem:
    """One head at (bq, bkv): ``table`` its tiles (``TileTable``, one pattern:
    ``small_pattern``), ``length_q`` x ``length_kv`` tokens, ``kinds`` the tile layout."""

    bq: int
    bkv: int
    kinds: tuple[tuple[int, ...], ...]
    table: TileTable

    @property
    def length_q(self) -> int:
        """Query tokens."""
        return len(self.kinds) * self.bq

    @property
    def length_kv(self) -> int:
        """Key tokens."""
        return max(len(r) for r in self.kinds) * self.bkv

    def mask_rows(self, rows: np.ndarray) -> np.ndarray:
        """The dense mask's rows ``rows`` (bool [len(rows), length_kv])."""
        pattern = small_pattern(self.bq, self.bkv)
        out = np.zeros((len(rows), self.length_kv), bool)
        for n, r in enumerate(rows):
            tiles = self.kinds[int(r) // self.bq]
            for c, kind in enumerate(tiles):
                cut = slice(c * self.bkv, (c + 1) * self.bkv)
                out[n, cut] = True if kind == 2 else pattern[int(r) % self.bq]
        return out

    def request(self) -> dict:
        """What the harness needs to build it: blocks, lengths, the six prefetch arrays."""
        return {"blocks": [self.bq, self.bkv], "lengths": [self.length_q, self.length_kv],
                "tables": list(self.table.prefetch())}


def classes_at(bq: int, bkv: int, masks: tuple[str, ...] = ref.PERFORMANCE_MASKS
               ) -> set[StepClass]:
    """Every step class the ``masks`` have at (bq, bkv)."""
    return {c for kind in masks for c in tile_table(kind, bq, bkv).classes}


@functools.cache
def small_problem(bq: int, bkv: int, masks: tuple[str, ...] = ref.PERFORMANCE_MASKS
                  ) -> SmallProblem:
    """The small problem of candidate (bq, bkv): every step class of the ``masks`` (all
    three for the sweep; a concrete run holds those of the masks it is verified for)."""
    kinds = tuple(tuple(r) for r in layout(classes_at(bq, bkv, masks)))
    rows, cols, ks = [], [], []
    for r, tiles in enumerate(kinds):
        for c, k in enumerate(tiles):
            rows.append(r)
            cols.append(c)
            ks.append(k)
    rows_a = np.array(rows, np.int32)
    new_row = rows_a[1:] != rows_a[:-1]
    table = TileTable(rows_a, np.array(cols, np.int32), np.array(ks, np.int8),
                      np.zeros(len(rows), np.int32), np.r_[True, new_row],
                      np.r_[new_row, True], 1)
    return SmallProblem(bq, bkv, kinds, table)


def small_inputs(problem: SmallProblem, seed: int) -> tuple[np.ndarray, ...]:
    """bf16 q [1, Lq, D], k [1, Lkv, D], v [1, Lkv, DV]: ``measure.seeded_array(seed + i)``,
    what the worker's concrete run computes on."""
    shapes = ((1, problem.length_q, D), (1, problem.length_kv, D), (1, problem.length_kv, DV))
    return tuple(seeded_array(seed + i, shape, "bfloat16") for i, shape in enumerate(shapes))


def sample_rows(problem: SmallProblem, seed: int, per_row: int = 6) -> np.ndarray:
    """Query rows whose outputs are sent back and checked: each tile row's first and last
    query and ``per_row`` drawn from ``seed``, sorted."""
    rng = np.random.default_rng(seed + 1)
    picked: set[int] = set()
    for r in range(len(problem.kinds)):
        base = r * problem.bq
        picked |= {base, base + problem.bq - 1}
        picked |= {base + int(x) for x in rng.integers(0, problem.bq, per_row)}
    return np.array(sorted(picked), np.int64)


def expected_rows(problem: SmallProblem, seed: int, rows: np.ndarray) -> np.ndarray:
    """Dense masked attention (float64, from the bf16 inputs) at query ``rows``: f64
    [len(rows), DV]."""
    q, k, v = (np.asarray(x[0], np.float64) for x in small_inputs(problem, seed))
    scores = q[rows] @ k.T * SCALE
    scores = np.where(problem.mask_rows(rows), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ v


# --- full-size time ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClassWork:
    """A kernel's work per step class: ``record`` has one step per class of ``labels``
    (per count, the largest among the small run's steps of that class: an honest kernel's
    steps of one class count the same, a kernel whose steps differ is charged its most
    expensive one)."""

    labels: tuple[StepClass, ...]
    record: step_model.StepRecord


def class_work(problem: SmallProblem, record: step_model.StepRecord) -> ClassWork:
    """The measured small run ``record`` of ``problem``, reduced to its step classes."""
    classes = problem.table.classes
    labels = tuple(sorted(set(classes)))
    steps = [[g for g, c in enumerate(classes) if c == label] for label in labels]
    ops = {key: np.array([int(values[i].max()) for i in steps], np.int64)
           for key, values in record.ops.items()}
    return ClassWork(labels, dataclasses.replace(record, ops=ops, num_steps=len(labels),
                                                 sample=None))


def small_steps(kind: str, bq: int, bkv: int, work: ClassWork) -> np.ndarray:
    """Per full-size step (head by head, each head's active tiles in order), the index of
    its class in ``work.labels``.

    Raises:
      ValueError: a class of the full problem that was not measured.
    """
    per_tile = np.array([work.labels.index(c) for c in tile_table(kind, bq, bkv).classes],
                        np.int64)
    return np.tile(per_tile, HEADS)


def time_floor(kind: str, bq: int, bkv: int, work: ClassWork) -> float:
    """A lower bound of ``full_time`` (seconds): every step's compute in turn."""
    multiplicity = np.bincount(small_steps(kind, bq, bkv, work), minlength=len(work.labels))
    return step_model.compute_lower_bound(work.record, multiplicity, ref.PERFORMANCE_CHIP)


def full_time(kind: str, bq: int, bkv: int, work: ClassWork):
    """The predicted ``Timeline`` of the kernel whose steps do ``work`` over
    ``ref.performance_mask(kind)`` at (bq, bkv), full size.

    Raises:
      VmemOOMError: the standard call does not fit the scoped VMEM at these blocks.
    """
    trace = standard_trace(kind, bq, bkv)
    if isinstance(trace, Exception):
        raise trace
    return step_model.full_size_timeline(trace, work.record, small_steps(kind, bq, bkv, work),
                                         ref.PERFORMANCE_CHIP)


def _reference_kernel(*refs, sm_scale: float, block_q: int, block_kv: int) -> None:
    """The reference's Splash kernel in jnp ops (``ref._estimate_splash_kernel``: the
    float64 ``splash_attention_kernel`` needs values, which a shapes-only run has not), with
    the standard call's keyword arguments."""
    ref._estimate_splash_kernel(*refs, sm_scale=sm_scale)


@functools.cache
def reference_work(bq: int, bkv: int, masks: tuple[str, ...] = ref.PERFORMANCE_MASKS
                   ) -> ClassWork:
    """The reference kernel's work per step class on ``small_problem(bq, bkv, masks)``, run
    here (the grader's process, never the worker) on shapes in the same standard call the
    student's kernel is measured in (``harness.measured_runs`` with the reference's kernel
    as the submission's). Cached per process: it does not depend on the student.

    Raises:
      RuntimeError: the reference raised.
    """
    import types

    from graders.course.catalog import load_harness

    harness = load_harness("a5")
    sub = types.SimpleNamespace(splash_attention_kernel=_reference_kernel)
    problem = small_problem(bq, bkv, masks)
    raw = harness.measured_runs(sub, [problem.request()], head_dim=D, value_dim=DV,
                                sm_scale=SCALE)[0]
    record = step_model.parse_record(raw, num_steps=len(problem.table.rows))
    if isinstance(record, step_model.KernelRaised):
        raise RuntimeError(f"the reference kernel raised at {(bq, bkv)}: {record.error}")
    return class_work(problem, record)


def projected_work(kind: str, blocks: tuple[int, int], chosen: tuple[int, int],
                   masks: tuple[str, ...], work: ClassWork) -> ClassWork:
    """The student's kernel's work per class at ``blocks`` for ``kind``, projected from its
    verified ``work`` at ``chosen`` (measured on ``small_problem(*chosen, masks)``) and the
    reference's work at both (``step_model.project``, each class weighted by its full-size
    steps for ``kind`` at ``chosen``); ``work`` itself when ``blocks == chosen``."""
    if blocks == chosen:
        return work
    at_c, at_b = reference_work(*chosen, masks), reference_work(*blocks)
    if at_c.labels != work.labels:
        raise ValueError(f"the reference's classes at {chosen} are not the measured ones")
    weights = np.bincount(small_steps(kind, *chosen, work), minlength=len(work.labels))
    return ClassWork(at_b.labels, step_model.project(work.record, at_c.record, at_b.record,
                                                     weights_c=weights))
