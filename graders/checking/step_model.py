"""Trusted side of the performance tasks (3.5, 4.8, 5.7): a full-size predicted time that
no code in a submission can steer (docs/performance-model.md,
"Performance tasks").

The worker measures the student's kernel, in the lab's standard pallas_call, on small
problems at the candidate block sizes (``graders/harnesses/measure.py``): per grid step
its op counts, abstractly for every candidate and also concretely (values checked here)
for the chosen candidate and the reference's best. This module

1. reads those records as hostile data (``parse_record``: known keys, one non-negative
   int per step, bounded);
2. refuses a kernel whose counts differ between its concrete and abstract run at the same
   blocks (``require_same_work``: code that detects it is being measured);
3. predicts the full-size time (``full_size_timeline``) from a call the grader builds
   itself (grid, block specs, index maps, buffers, compiler parameters: the lab's standard
   call, traced abstractly with a stand-in kernel, ``stand_in_trace``) with each step's op
   counts taken from its class in the small run, through the same timeline model as
   ``pallas_sim.estimate`` (``pallas_sim/_src/timeline.py``). For an honest kernel (counts
   that depend only on the step's class) the result equals ``pallas_sim.estimate`` of a
   correct wrapper at full size;
4. finds the best candidate for the student's own kernel (``fastest``), pruned exactly by
   a lower bound (the steps' compute alone, ``compute_lower_bound``).

Nothing here runs student code.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from graders.checking.registry import CheckFailure
from pallas_sim.extend import CallTrace, Chip, OpCounts, get_chip, timeline

#: Per-step keys the op accounting counts (pallas_sim/_src/op_accounting.py) other than
#: ``mxu_flops_<dtype>``; a record with any other key is not a record of this simulator.
STEP_KEYS = frozenset({"vpu_ops", "eup_ops", "xlane_elements", "cast_elements", "vector_ops",
                       "scalar_ops", "manual_dma_bytes", "manual_dma_exposed_bytes",
                       "manual_dma_exposed_count", "manual_dma_strided_bytes",
                       "manual_dma_exposed_strided_bytes"})
_MXU_KEY = re.compile(r"mxu_flops_[a-z0-9]{1,12}")
#: Largest count accepted per step (far above any real step: 2**62 FLOPs).
_MAX_COUNT = 1 << 62
_MAX_KEYS = 32


@dataclasses.dataclass(frozen=True)
class StepRecord:
    """One small run of the standard call, read from the worker's reply.

    Attributes:
      ops: key -> int64 [steps] op counts per grid step, in visiting order.
      num_steps: grid steps of the small run.
      largest_intermediate: elements of the largest array the kernel computed.
      scoped_vmem_bytes: VMEM bytes the kernel allocated itself (``pl.run_scoped``).
      sample: for a concrete run, the float32 output sample; else None.
    """

    ops: dict[str, np.ndarray]
    num_steps: int
    largest_intermediate: int
    scoped_vmem_bytes: int
    sample: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class KernelRaised:
    """The student's kernel raised in a small run: ``error`` (type and message, at most
    500 characters) and ``error_type`` (the exception's class name)."""

    error: str
    error_type: str


def _int(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value < _MAX_COUNT:
        raise CheckFailure(f"the worker's reply is not a measurement: {what}",
                           got=repr(value)[:80], status="error")
    return value


def parse_record(raw: object, *, num_steps: int, sample_shape: tuple[int, int] | None = None
                 ) -> StepRecord | KernelRaised:
    """``raw`` (a ``measure`` record from the worker: hostile) as a ``StepRecord`` of a
    run with ``num_steps`` grid steps, or the ``KernelRaised`` it reports. With
    ``sample_shape`` the record must carry a finite-or-NaN float32 sample of that shape.

    Raises:
      CheckFailure (status "error"): not a record of that run (wrong types, unknown keys,
        counts that are not non-negative ints, another number of steps, a sample of another
        shape).
    """
    if isinstance(raw, dict) and set(raw) == {"error", "error_type"}:
        error, kind = raw["error"], raw["error_type"]
        if isinstance(error, str) and isinstance(kind, str):
            return KernelRaised(error[:500], kind[:80])
    if not isinstance(raw, dict) or not isinstance(raw.get("ops"), dict):
        raise CheckFailure("the worker's reply is not a measurement", got=repr(raw)[:120],
                           status="error")
    if _int(raw.get("num_steps"), "num_steps") != num_steps:
        raise CheckFailure("the worker's reply is not a measurement of the asked run",
                           expected=f"{num_steps} grid steps", got=str(raw.get("num_steps")),
                           status="error")
    counts = raw["ops"]
    if len(counts) > _MAX_KEYS:
        raise CheckFailure("the worker's reply is not a measurement: too many keys",
                           status="error")
    ops: dict[str, np.ndarray] = {}
    for key, values in counts.items():
        if not isinstance(key, str) or not (key in STEP_KEYS or _MXU_KEY.fullmatch(key)):
            raise CheckFailure("the worker's reply is not a measurement: unknown count",
                               got=repr(key)[:80], status="error")
        if not isinstance(values, list) or len(values) != num_steps:
            raise CheckFailure("the worker's reply is not a measurement: counts per step",
                               expected=f"{num_steps} ints", got=repr(values)[:80],
                               status="error")
        ops[key] = np.array([_int(v, key) for v in values], np.int64)
    sample = raw.get("sample")
    if sample_shape is not None:
        if not (isinstance(sample, np.ndarray) and sample.dtype == np.float32
                and sample.shape == tuple(sample_shape)):
            raise CheckFailure("the worker's reply is not a measurement: output sample",
                               expected=f"float32 {list(sample_shape)}",
                               got=repr(getattr(sample, "shape", sample))[:80],
                               status="error")
    else:
        sample = None
    return StepRecord(ops=ops, num_steps=num_steps,
                      largest_intermediate=_int(raw.get("largest_intermediate"),
                                                "largest_intermediate"),
                      scoped_vmem_bytes=_int(raw.get("scoped_vmem_bytes"),
                                             "scoped_vmem_bytes"),
                      sample=sample)


def work_differences(concrete: StepRecord, abstract: StepRecord) -> list[str]:
    """What differs between two runs' per-step counts (empty when they did the same work):
    one line per key, e.g. "eup_ops: step 1 8388608 concrete, 0 abstract"."""
    found = []
    for key in sorted(set(concrete.ops) | set(abstract.ops)):
        a = concrete.ops.get(key, np.zeros(concrete.num_steps, np.int64))
        b = abstract.ops.get(key, np.zeros(abstract.num_steps, np.int64))
        if len(a) != len(b):
            found.append(f"{key}: {len(a)} steps concrete, {len(b)} abstract")
        elif not np.array_equal(a, b):
            s = int(np.flatnonzero(a != b)[0])
            found.append(f"{key}: step {s} {int(a[s]):,} concrete, {int(b[s]):,} abstract")
    if concrete.largest_intermediate != abstract.largest_intermediate:
        found.append(f"largest intermediate: {concrete.largest_intermediate:,} elements "
                     f"concrete, {abstract.largest_intermediate:,} abstract")
    if concrete.scoped_vmem_bytes != abstract.scoped_vmem_bytes:
        found.append(f"run_scoped VMEM: {concrete.scoped_vmem_bytes:,} B concrete, "
                     f"{abstract.scoped_vmem_bytes:,} B abstract")
    return found


def require_same_work(concrete: StepRecord, abstract: StepRecord, *, where: str,
                      input: str) -> None:
    """Pass when both small runs at the same blocks counted the same work per step.

    Raises:
      CheckFailure (status "failed"): "your kernel does different work when it runs on
        shapes only", with the counts that differ (``where`` names the blocks).
    """
    found = work_differences(concrete, abstract)
    if found:
        raise CheckFailure(
            f"your kernel does different work when it runs on shapes only than when it runs "
            f"on data ({where}): its time cannot be predicted, so none is given",
            input=input, expected="the same op counts per grid step in both runs",
            got="; ".join(found[:4]),
            hint="a kernel's work must not depend on whether its blocks hold values "
                 "(pallas_sim.estimate runs the same kernel on shapes only)")


def require_step_flops(record: StepRecord, flops: int, *, message: str, input: str) -> None:
    """Pass when every step of ``record`` ran at least ``flops`` MXU FLOPs (a step's share
    of the problem's products; a kernel may do more, never less).

    Raises:
      CheckFailure(message): a step with fewer.
    """
    total = np.zeros(record.num_steps, np.int64)
    for key, values in record.ops.items():
        if key.startswith("mxu_flops_"):
            total = total + values
    if record.num_steps and int(total.min()) < flops:
        s = int(np.argmin(total))
        raise CheckFailure(message, input=input,
                           expected=f"at least {flops:,} MXU FLOPs per grid step",
                           got=f"{int(total[s]):,} at step {s}",
                           hint="the kernel must compute the block products of its step")


def _bare_call(record: StepRecord) -> CallTrace:
    """A call with no operands (no copies) and ``record``'s op counts."""
    return CallTrace(name="steps", grid=(record.num_steps,), dimension_semantics=("arbitrary",),
                     num_steps=record.num_steps, vmem_bytes=0, smem_bytes=0,
                     vmem_limit_bytes=0, operands=(),
                     ops=OpCounts(dict(record.ops), record.num_steps))


def step_seconds(record: StepRecord, chip: str | Chip = "v7") -> np.ndarray:
    """Seconds of compute of each small step of ``record`` (``timeline.step_work``: fixed
    cost, per-op cost, MXU, VPU, EUP, exposed manual copies), float64 [steps]."""
    the_chip = get_chip(chip)
    cal = timeline.CALIBRATION.for_chip(the_chip)
    f = timeline.features(_bare_call(record), the_chip)
    return timeline.step_work(f, the_chip, cal)[0]


def compute_lower_bound(record: StepRecord, multiplicity: np.ndarray,
                        chip: str | Chip = "v7") -> float:
    """A lower bound of the full-size time (seconds, one TensorCore): each small step's
    compute times the full-size steps of its class (``multiplicity``, int [steps]); the
    steps of a call compute one after another, so no schedule is faster."""
    return float(np.dot(step_seconds(record, chip), np.asarray(multiplicity, np.float64)))


def full_size_timeline(call: CallTrace, record: StepRecord, small_step: np.ndarray,
                       chip: str | Chip = "v7") -> timeline.Timeline:
    """The predicted timeline of the grader's full-size ``call`` (a trace of the standard
    call, e.g. ``stand_in_trace``) when full step ``s`` does the work of small step
    ``small_step[s]`` of ``record`` (int [full steps], the step's class).

    The call's VMEM becomes its blocks' and scratch's plus the kernel's own
    ``run_scoped`` bytes; its manual-DMA bytes, those the kernel's steps moved.
    """
    the_chip = get_chip(chip)
    index = np.asarray(small_step, np.int64)
    counts = {key: values[index] for key, values in record.ops.items()}
    ops = OpCounts(counts, call.num_steps, largest_intermediate=record.largest_intermediate)
    manual = int(counts["manual_dma_bytes"].sum()) if "manual_dma_bytes" in counts else 0
    full = dataclasses.replace(call, ops=ops, manual_dma_bytes=manual,
                               vmem_bytes=call.vmem_bytes + record.scoped_vmem_bytes,
                               scoped_vmem_bytes=record.scoped_vmem_bytes)
    return timeline.predict(full, the_chip)


def stand_in_trace(run: Callable[[Any], Any], structs: Iterable[Any]) -> CallTrace:
    """The trace of the grader's standard call at full size, run abstractly by ``run``
    around a stand-in kernel that does nothing (the grader's own code: grid, block specs,
    index maps, buffers, VMEM and compiler parameters are the standard call's).

    Raises:
      VmemOOMError: the blocks alone do not fit the call's scoped VMEM.
    """
    import pallas_sim

    return pallas_sim.estimate(run, *structs).calls[-1]


def fastest(candidates: Iterable[Any], lower_bound: Callable[[Any], float],
            exact: Callable[[Any], float]) -> tuple[Any, float] | None:
    """The candidate with the least ``exact`` time (seconds), and that time; ``exact`` runs
    only for candidates whose ``lower_bound`` (never above their exact time) is below the
    best time found so far, in the order of their bounds. None without candidates.
    Ties go to the candidate with the lower bound first, then the order given."""
    bounds = sorted(((lower_bound(c), i, c) for i, c in enumerate(candidates)),
                    key=lambda t: (t[0], t[1]))
    best: tuple[Any, float] | None = None
    for bound, _, candidate in bounds:
        if best is not None and bound >= best[1]:
            break
        time_s = exact(candidate)
        if best is None or time_s < best[1]:
            best = (candidate, time_s)
    return best


def sweep_times(records: Mapping[Any, StepRecord], lower_bound: Callable[[Any], float],
                exact: Callable[[Any], float]) -> tuple[tuple[Any, float] | None,
                                                        dict[Any, float]]:
    """``fastest`` over the keys of ``records``, and the exact times it computed (by key):
    what a diagnosis may quote."""
    seen: dict[Any, float] = {}

    def timed(key: Any) -> float:
        seen[key] = exact(key)
        return seen[key]

    return fastest(list(records), lower_bound, timed), seen


def ratio_text(slower_s: float, faster_s: float) -> str:
    """"2.1x slower" for ratios of 2 and more, "21 % slower" below (both seconds)."""
    ratio = slower_s / faster_s
    if ratio >= 2:
        return f"{ratio:.1f}x slower"
    return f"{(ratio - 1) * 100:.0f} % slower"


def finite(value: float) -> bool:
    """Whether ``value`` is a finite float."""
    return isinstance(value, float) and math.isfinite(value)


def _mxu_per_step(record: StepRecord) -> np.ndarray:
    total = np.zeros(record.num_steps, np.float64)
    for key, values in record.ops.items():
        if key.startswith("mxu_flops_"):
            total = total + values
    return total


def project(student_c: StepRecord, reference_c: StepRecord, reference_b: StepRecord, *,
            weights_c: np.ndarray | None = None) -> StepRecord:
    """The student's kernel's work at another candidate b, projected from its verified
    record at the chosen candidate c (``student_c``) and the reference kernel's records at
    c and b (``reference_c``, ``reference_b``: the grader's own small runs, same standard
    call, same small problems). Never runs student code.

    Per op key (all int64 [steps] counts):

    * the reference counts the key at c: ``rho = S_c / R_c`` (the student's and the
      reference's totals at c over the small steps, each step weighted by ``weights_c``,
      float [steps of c], e.g. how many full-size steps it stands for; ones when None),
      and ``projected[key][s] = round(reference_b[key][s] * rho)``;
    * otherwise (a category only the student has at c, e.g. float32 products where the
      reference has bf16): the student's amount at c per reference MXU FLOP at c, spread
      over b's steps in proportion to the reference's MXU FLOPs at each step of b (a step
      the reference computes nothing at stays empty).

    Assumption (docs/performance-model.md, "Performance tasks"): in every op category the
    student's work grows with the blocks as the reference's does (an honest kernel's
    extra pass over a tile is as large as the tile). For a kernel that counts what the
    reference counts at c the projection is the reference's record at b.

    Returns a ``StepRecord`` with ``reference_b``'s steps, ``largest_intermediate`` and
    ``scoped_vmem_bytes`` (the legality of b is the grader's call's and the reference's
    needs: what the student's kernel allocates elsewhere is not asked) and no sample.
    """
    weights = (np.ones(student_c.num_steps, np.float64) if weights_c is None
               else np.asarray(weights_c, np.float64))
    ref_mxu_c = float(np.dot(_mxu_per_step(reference_c), weights))
    ref_mxu_b = _mxu_per_step(reference_b)
    ops: dict[str, np.ndarray] = {}
    for key in sorted(set(student_c.ops) | set(reference_c.ops)):
        mine = student_c.ops.get(key)
        s_total = 0.0 if mine is None else float(np.dot(mine.astype(np.float64), weights))
        theirs = reference_c.ops.get(key)
        r_total = 0.0 if theirs is None else float(np.dot(theirs.astype(np.float64), weights))
        if r_total > 0:
            base = reference_b.ops.get(key, np.zeros(reference_b.num_steps, np.int64))
            values = base.astype(np.float64) * (s_total / r_total)
        elif s_total > 0:
            per_flop = s_total / ref_mxu_c if ref_mxu_c > 0 else 0.0
            values = ref_mxu_b * per_flop
        else:
            continue
        ops[key] = np.minimum(np.rint(values), _MAX_COUNT - 1).astype(np.int64)
    return StepRecord(ops=ops, num_steps=reference_b.num_steps,
                      largest_intermediate=reference_b.largest_intermediate,
                      scoped_vmem_bytes=reference_b.scoped_vmem_bytes, sample=None)
