"""The TPU timeline model: a pallas_call's trace (block indices, DMA bytes and op counts
per grid step) turned into predicted time on a chip (:mod:`pallas_sim._src.chips`).

The model (docs/performance-model.md has the derivation and the calibration):

1. **DMA engine.** One queue per TensorCore. An input block is copied when its block
   index changes (lecture §2.2, the trace's rule); an output block is written back when
   its index changes next, and after the last step. The copies of a step run side by
   side: together at ``dma_efficiency * hbm_bandwidth`` bytes/s, each strided one
   (:func:`strided_block`: many short runs) at most at ``strided_efficiency *
   hbm_bandwidth`` on its own (lecture §3.2: a lone copy reaches a fraction of the
   peak); each copy also costs ``dma_issue_s``.
2. **Buffering** (lecture §3.1). The copy for step ``s`` is issued once the buffer it
   lands in is free: with ``B`` buffers (``pl.Buffered(B)``, 2 by default, 1 for a
   single-step grid) after the compute of step ``s - B`` ends. With ``B >= 2`` it
   therefore overlaps the compute of the steps before it; with ``B = 1`` it cannot. A
   write-back holds the queue for its bytes at the full rate; a strided one ends a
   strided copy's time after it starts.
3. **Compute per step** = fixed cost + per-op cost x vector ops + MXU + VPU + EUP time,
   run one after another (the overlap rule: none between the units inside a step;
   lecture §5.3, the Pacchetto trace shows the softmax's vector work not hidden behind
   the MXU and the materialised q·kᵀ acting as a barrier). MXU time = Σ flops /
   peak(dtype); VPU time = (elementwise ops + cast elements + cross-lane reduction
   elements) / vpu_rate; EUP time = transcendentals / eup_rate.
4. **Manual DMAs** (lecture §3.2). Bytes of copies with compute between their
   ``start()`` and ``wait()`` go through the DMA queue at the step's start; copies with
   none (``start(); wait()``) are exposed: their issue cost and transfer time (at the
   strided rate when strided) are added to the step's compute.
5. **Prologue / epilogue.** The first step waits for its copies; the call ends when the
   last compute and the last write-back are done.
6. **TensorCores.** With ``cores > 1`` the steps are split over the cores by the leading
   grid axis when it is "parallel" or "core_parallel" (contiguous ranges, lecture §4.1
   MegaCore); each core runs its share with its own DMA queue; the call takes the
   longest.

The free constants (:class:`Calibration`) are fitted to the lecture's measurements only
(``bench/calibrate.py``); nothing here holds a prediction.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .chips import CHIPS, Chip, get_chip
from .tracing import CallTrace, OperandTrace


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The model's free constants, for the reference chip (v7, one TensorCore).

    Attributes:
      step_overhead_s: fixed cost of a grid step (seconds; lecture §4.2 reads ~1 µs of
        per-step cost in all, which the model splits between this, the per-op cost and
        the copies' issue cost).
      dma_efficiency: fraction of the HBM bandwidth the copies reach in all (contiguous
        copies alone; strided copies in parallel).
      strided_efficiency: fraction of the HBM bandwidth one strided copy reaches on its
        own (a block narrower than its array: one short run per row). Copies of a step
        run side by side, so two strided blocks move at twice this rate, up to
        ``dma_efficiency`` (lecture §3.2: slide 50's lone copies reach about 17 % of the
        peak; the auto pipeline, with several copies in flight, far more).
      dma_issue_s: time each copy costs besides its bytes (descriptor issue and
        completion; seconds). A lone ``start(); wait()`` copy pays it on the step.
      op_overhead_s: fixed cost of each vector op of a step (``vector_ops``; seconds):
        its issue and pipeline fill, whatever its size.
      vpu_rate: VPU elements per second.
      eup_rate: EUP transcendentals per second.
    """

    step_overhead_s: float = 0.5e-6
    dma_efficiency: float = 0.7
    strided_efficiency: float = 0.2
    dma_issue_s: float = 0.2e-6
    op_overhead_s: float = 0.05e-6
    vpu_rate: float = 8.0e12
    eup_rate: float = 1.0e15

    def for_chip(self, chip: Chip) -> Calibration:
        """The constants scaled to ``chip``: VPU/EUP rates by its bf16 peak relative to
        v7's (an assumption: same clock-to-MXU ratio); DMA fractions and fixed costs
        unchanged."""
        ratio = chip.peak_bf16 / CHIPS["v7"].peak_bf16
        return dataclasses.replace(self, vpu_rate=self.vpu_rate * ratio,
                                   eup_rate=self.eup_rate * ratio)


#: Fitted by ``bench/calibrate.py`` to the lecture's measured numbers (see
#: docs/performance-model.md for the fit, the leave-one-out errors and the data).
CALIBRATION = Calibration(step_overhead_s=7.708e-07, dma_efficiency=0.8226,
                          strided_efficiency=0.2045, dma_issue_s=1.62e-07,
                          op_overhead_s=6.378e-08, vpu_rate=1.4e13, eup_rate=1e15)


@dataclasses.dataclass
class Timeline:
    """A call's predicted execution.

    Per-step arrays (seconds, one entry per grid step in visiting order): ``dma_start``,
    ``dma_end`` (the step's input copies), ``compute_start``, ``compute_end``, ``mxu``,
    ``vpu``, ``eup``, ``overhead`` (fixed cost plus exposed manual DMAs),
    ``writeback_start``, ``writeback_end`` (NaN where nothing is written back), ``core``.

    Attributes:
      name: the call's name. chip: the chip's name. cores: TensorCores used.
      time_s: predicted seconds for the call.
      mxu_flops: MXU flops of the call; mfu: mxu_flops / (time_s * bf16 peak * cores).
      hbm_bytes: bytes moved between HBM and VMEM (automatic and manual DMAs);
      hbm_utilisation: hbm_bytes / (time_s * bandwidth * cores).
      arithmetic_intensity: mxu_flops / hbm_bytes (FLOP/byte; compare chip ridge point).
      bound: per step "compute", "memory" or "overhead": the largest of the step's
        compute (MXU+VPU+EUP), its copies' DMA time, and its fixed cost.
      vmem_bytes, vmem_limit_bytes, vmem_capacity_bytes: the call's VMEM peak, its
        scoped limit, and the chip's VMEM.
    """

    name: str
    chip: str
    cores: int
    time_s: float
    mxu_flops: int
    mfu: float
    hbm_bytes: int
    hbm_utilisation: float
    arithmetic_intensity: float
    ridge_point: float
    bound: np.ndarray
    vmem_bytes: int
    vmem_limit_bytes: int
    vmem_capacity_bytes: int
    dma_start: np.ndarray
    dma_end: np.ndarray
    compute_start: np.ndarray
    compute_end: np.ndarray
    mxu: np.ndarray
    vpu: np.ndarray
    eup: np.ndarray
    overhead: np.ndarray
    writeback_start: np.ndarray
    writeback_end: np.ndarray
    core: np.ndarray

    def __repr__(self) -> str:
        """A few lines instead of the sixteen per-step arrays (every field stays an
        attribute): the call, chip and predicted time; grid steps and their bound; HBM
        traffic, MFU and arithmetic intensity; the VMEM peak against its limit."""
        counts = self.bound_counts()
        bound = self.dominant_bound
        return "\n".join([
            f"Timeline({self.name!r} on {self.chip}, {self.cores} core(s): predicted "
            f"{self.time_s * 1e3:.4g} ms)",
            f"  {self.num_steps} grid steps, {bound}-bound ({counts[bound]} of "
            f"{self.num_steps}; compute {counts['compute']}, memory {counts['memory']}, "
            f"overhead {counts['overhead']})",
            f"  HBM {self.hbm_bytes / 2**20:.4g} MiB at {self.hbm_utilisation:.1%} of the "
            f"bandwidth; MFU {self.mfu:.1%}; {self.arithmetic_intensity:.4g} FLOP/B vs "
            f"ridge {self.ridge_point:.4g}",
            f"  VMEM {self.vmem_bytes / 2**20:.3g} of {self.vmem_limit_bytes / 2**20:.3g} "
            f"MiB (chip: {self.vmem_capacity_bytes / 2**20:.3g} MiB)",
        ])

    @property
    def num_steps(self) -> int:
        """Grid steps."""
        return len(self.compute_end)

    def bound_counts(self) -> dict[str, int]:
        """How many steps are compute-, memory- and overhead-bound."""
        return {k: int((self.bound == k).sum()) for k in ("compute", "memory", "overhead")}

    @property
    def dominant_bound(self) -> str:
        """The bound of most steps."""
        counts = self.bound_counts()
        return max(counts, key=lambda k: counts[k])


def _block_bytes(op: OperandTrace) -> np.ndarray:
    """Bytes of each step's block inside the array (ragged edges clipped)."""
    itemsize = np.dtype(_dtype(op.dtype)).itemsize
    idx = op.block_indices.astype(np.int64)
    n = len(idx)
    if not op.shape:
        return np.full(n, itemsize, np.int64)
    sizes = np.array([1 if b is None else int(b) for b in op.block_shape], np.int64)
    dims = np.array(op.shape, np.int64)
    if idx.shape[1] != len(dims):
        return np.full(n, int(np.prod(sizes)) * itemsize, np.int64)
    element = np.zeros(len(dims), bool)
    if op.element_dims:
        element[list(op.element_dims)] = True
    starts = np.where(element, idx, idx * sizes)
    ext = np.clip(np.minimum(starts + sizes, dims) - starts, 0, sizes)
    return ext.prod(axis=1) * itemsize


def _dtype(name: str) -> object:
    from .dtypes import as_dtype
    return as_dtype(name)


def strided_block(op: OperandTrace) -> bool:
    """Whether ``op``'s block is not one contiguous range of its array: some dimension
    holds more than one element while a later one is cut (a [1024, 1024] tile of a
    [4096, 7168] matrix: 1024 runs of 2 KiB). A Flash block ``(None, bq, d)`` of a
    [heads, L, d] array is contiguous."""
    sizes = [1 if b is None else int(b) for b in op.block_shape]
    dims = list(op.shape)
    if len(sizes) != len(dims):
        return False
    return any(sizes[d] > 1 and any(sizes[e] < dims[e] for e in range(d + 1, len(dims)))
               for d in range(len(dims)))


def _step_traffic(call: CallTrace) -> tuple[np.ndarray, ...]:
    """Per step: input bytes copied in, output bytes written back, the fewest buffers
    among the inputs copied (the pipeline depth), input copies, output copies, and the
    largest strided input and output copy."""
    n = call.num_steps
    copies_in = np.zeros(n, np.int64)
    copies_out = np.zeros(n, np.int64)
    bytes_in = np.zeros(n, np.int64)
    bytes_out = np.zeros(n, np.int64)
    strided_in = np.zeros(n, np.int64)
    strided_out = np.zeros(n, np.int64)
    depth = np.full(n, 1 << 30, np.int64)
    for op in call.operands:
        if op.role not in ("in", "out") or op.memory_space not in ("vmem", "smem"):
            continue
        idx = op.block_indices
        if len(idx) != n:
            continue
        changed = np.ones(n, bool)
        if n > 1 and idx.shape[1]:
            changed[1:] = np.any(idx[1:] != idx[:-1], axis=1)
        elif n > 1:
            changed[1:] = False
        size = _block_bytes(op)
        strided = strided_block(op)
        if op.role == "in":
            moved = np.where(changed, size, 0)
            bytes_in += moved
            copies_in += changed
            depth = np.where(changed, np.minimum(depth, op.buffers), depth)
            if strided:
                strided_in = np.maximum(strided_in, moved)
        else:
            writeback = np.ones(n, bool)
            writeback[:-1] = changed[1:]
            moved = np.where(writeback, size, 0)
            bytes_out += moved
            copies_out += writeback
            if strided:
                strided_out = np.maximum(strided_out, moved)
    depth[depth == 1 << 30] = 2 if n > 1 else 1
    return bytes_in, bytes_out, depth, copies_in, copies_out, strided_in, strided_out


def _cores_of(call: CallTrace, cores: int) -> np.ndarray:
    n = call.num_steps
    if cores <= 1 or not call.grid or not call.dimension_semantics or \
            call.dimension_semantics[0] not in ("parallel", "core_parallel"):
        return np.zeros(n, np.int64)
    lead = np.arange(n) // max(1, n // call.grid[0])  # row-major: leading axis index
    return np.minimum(lead * cores // call.grid[0], cores - 1)


@dataclasses.dataclass
class StepFeatures:
    """What the model needs of a call, per grid step (arrays in visiting order):
    MXU seconds (at the chip's peak), VPU and EUP element counts, vector ops, exposed
    manual DMA bytes (all, and strided) and count, bytes copied in (pipelined input
    blocks plus overlapped manual copies) and written back with their copy counts and
    largest strided copy, the pipeline depth, and the TensorCore of each step."""

    mxu: np.ndarray
    vpu_elements: np.ndarray
    eup_elements: np.ndarray
    vector_ops: np.ndarray
    exposed_bytes: np.ndarray
    exposed_strided_bytes: np.ndarray
    exposed_count: np.ndarray
    bytes_in: np.ndarray
    bytes_out: np.ndarray
    strided_in: np.ndarray
    strided_out: np.ndarray
    depth: np.ndarray
    core: np.ndarray
    copies_in: np.ndarray
    copies_out: np.ndarray


def features(call: CallTrace, chip: Chip, cores: int = 1) -> StepFeatures:
    """The per-step inputs of the model for ``call`` on ``chip``.

    Raises:
      ValueError: a trace without op counts.
    """
    if call.ops is None:
        raise ValueError(f"{call.name}: the trace has no op counts (record it with this "
                         "pallas_sim)")
    ops = call.ops
    mxu = np.zeros(call.num_steps)
    for key in ops.keys():
        if key.startswith("mxu_flops_"):
            mxu += ops[key] / chip.flops_rate(key[len("mxu_flops_"):])
    exposed = ops["manual_dma_exposed_bytes"]
    exposed_strided = ops["manual_dma_exposed_strided_bytes"]
    overlapped_strided = ops["manual_dma_strided_bytes"] - exposed_strided
    (bytes_in, bytes_out, depth, copies_in, copies_out, strided_in,
     strided_out) = _step_traffic(call)
    return StepFeatures(
        mxu=mxu, vpu_elements=(ops["vpu_ops"] + ops["cast_elements"]
                               + ops["xlane_elements"]).astype(float),
        eup_elements=ops["eup_ops"].astype(float),
        vector_ops=ops["vector_ops"].astype(float), exposed_bytes=exposed.astype(float),
        exposed_strided_bytes=exposed_strided.astype(float),
        exposed_count=ops["manual_dma_exposed_count"].astype(float),
        bytes_in=(bytes_in + ops["manual_dma_bytes"] - exposed).astype(float),
        bytes_out=bytes_out.astype(float),
        strided_in=np.maximum(strided_in, overlapped_strided).astype(float),
        strided_out=strided_out.astype(float), depth=depth, core=_cores_of(call, cores),
        copies_in=copies_in.astype(float), copies_out=copies_out.astype(float))


def step_work(f: StepFeatures, chip: Chip, cal: Calibration
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per step of ``f`` (seconds, arrays in visiting order): ``(work, vpu, eup,
    overhead)``, where work = overhead + MXU + VPU + EUP is the step's compute (item 3 of
    the module docstring) and overhead is the fixed cost, the per-op cost and the exposed
    manual copies (item 4). It depends on the step's op counts only, never on the
    pipelined copies: a step's compute is the same whatever its neighbours copy, so
    ``work.sum()`` bounds a call's time from below (one TensorCore)."""
    bw = chip.hbm_bandwidth * cal.dma_efficiency
    strided_bw = min(chip.hbm_bandwidth * cal.strided_efficiency, bw)
    vpu = f.vpu_elements / cal.vpu_rate
    eup = f.eup_elements / cal.eup_rate
    contiguous = f.exposed_bytes - f.exposed_strided_bytes
    overhead = (cal.step_overhead_s + f.vector_ops * cal.op_overhead_s
                + f.exposed_count * cal.dma_issue_s + contiguous / bw
                + f.exposed_strided_bytes / strided_bw)
    return overhead + f.mxu + vpu + eup, vpu, eup, overhead


def simulate(f: StepFeatures, chip: Chip, cal: Calibration) -> tuple[float, dict[str, Any]]:
    """Run the pipeline model over the steps of ``f``; returns the call's seconds and
    the per-step schedule (arrays: dma_start, dma_end, compute_start, compute_end,
    writeback_start, writeback_end, vpu, eup, overhead, dma_time)."""
    n = len(f.mxu)
    bw = chip.hbm_bandwidth * cal.dma_efficiency
    strided_bw = min(chip.hbm_bandwidth * cal.strided_efficiency, bw)
    work_arr, vpu, eup, overhead = step_work(f, chip, cal)
    work = work_arr.tolist()
    # A step's copies run side by side: all of them at the copy rate, each strided one
    # at most at the strided rate.
    t_in_arr = (np.maximum(f.bytes_in / bw, f.strided_in / strided_bw)
                + f.copies_in * cal.dma_issue_s)
    t_out_arr = (np.maximum(f.bytes_out / bw, f.strided_out / strided_bw)
                 + f.copies_out * cal.dma_issue_s)
    t_in, t_out = t_in_arr.tolist(), t_out_arr.tolist()
    # A write-back holds the queue for its share of the bandwidth only; a strided one
    # finishes later (t_out) without holding back the next copies.
    t_share = (f.bytes_out / bw + f.copies_out * cal.dma_issue_s).tolist()
    depth = f.depth.tolist()
    dma_start = [0.0] * n
    dma_end = [0.0] * n
    c_start = [0.0] * n
    c_end = [0.0] * n
    wb_start = [math.nan] * n
    wb_end = [math.nan] * n
    finish = 0.0
    core = f.core
    groups = [list(range(n))] if not n or core.max() == 0 else \
        [np.flatnonzero(core == k).tolist() for k in range(int(core.max()) + 1)]
    for steps in groups:
        engine = 0.0
        written = 0.0
        prev_end = 0.0
        count = len(steps)
        for pos, s in enumerate(steps):
            if pos == 0:
                dma_start[s] = engine
                dma_end[s] = engine = engine + t_in[s]
            c_start[s] = dma_end[s] if dma_end[s] > prev_end else prev_end
            c_end[s] = prev_end = c_start[s] + work[s]
            nxt = steps[pos + 1] if pos + 1 < count else -1
            if nxt >= 0 and depth[nxt] >= 2:
                # the copy's buffer frees once step pos + 1 - B has computed; it is queued
                # ahead of this step's write-back
                back = pos + 1 - depth[nxt]
                ready = c_end[steps[back]] if back >= 0 else 0.0
                dma_start[nxt] = engine if engine > ready else ready
                dma_end[nxt] = engine = dma_start[nxt] + t_in[nxt]
            if t_out[s]:
                wb_start[s] = engine if engine > c_end[s] else c_end[s]
                engine = wb_start[s] + t_share[s]
                wb_end[s] = wb_start[s] + t_out[s]
                if wb_end[s] > written:
                    written = wb_end[s]
            if nxt >= 0 and depth[nxt] < 2:
                dma_start[nxt] = engine if engine > c_end[s] else c_end[s]
                dma_end[nxt] = engine = dma_start[nxt] + t_in[nxt]
        if steps:
            finish = max(finish, prev_end, engine, written)
    schedule = {"dma_start": np.array(dma_start), "dma_end": np.array(dma_end),
                "compute_start": np.array(c_start), "compute_end": np.array(c_end),
                "writeback_start": np.array(wb_start), "writeback_end": np.array(wb_end),
                "vpu": vpu, "eup": eup, "overhead": overhead,
                "dma_time": t_in_arr + t_out_arr}
    return float(finish), schedule


def predict(call: CallTrace, chip: str | Chip | None = "v7", *, cores: int = 1,
            calibration: Calibration | None = None) -> Timeline:
    """The predicted timeline of one recorded call on ``chip``.

    Args:
      call: a trace from a real or abstract run (``call.ops`` must be recorded).
      chip: a chip name or :class:`~pallas_sim._src.chips.Chip`.
      cores: TensorCores the leading parallel axis is split over.
      calibration: the free constants (default :data:`CALIBRATION`, scaled to the chip).

    Raises:
      UnknownChipError: an unknown chip name.
      ValueError: a trace without op counts.
    """
    the_chip = get_chip(chip)
    cal = (calibration or CALIBRATION).for_chip(the_chip)
    f = features(call, the_chip, cores)
    time_s, sched = simulate(f, the_chip, cal)
    flops = int(call.ops.mxu_flops().sum()) if call.ops is not None else 0
    hbm = int(call.hbm_bytes_read + call.hbm_bytes_written + call.manual_dma_bytes)
    compute = f.mxu + sched["vpu"] + sched["eup"]
    dma_time, overhead = sched["dma_time"], sched["overhead"]
    bound = np.where((compute >= dma_time) & (compute >= overhead), "compute",
                     np.where(dma_time >= overhead, "memory", "overhead"))
    used = int(f.core.max()) + 1 if len(f.core) else 1
    return Timeline(
        name=call.name, chip=the_chip.name, cores=used, time_s=time_s, mxu_flops=flops,
        mfu=flops / (time_s * the_chip.peak_bf16 * used) if time_s else 0.0,
        hbm_bytes=hbm,
        hbm_utilisation=hbm / (time_s * the_chip.hbm_bandwidth * used) if time_s else 0.0,
        arithmetic_intensity=flops / hbm if hbm else math.inf,
        ridge_point=the_chip.ridge_point, bound=bound, vmem_bytes=call.vmem_bytes,
        vmem_limit_bytes=call.vmem_limit_bytes, vmem_capacity_bytes=the_chip.vmem_bytes,
        dma_start=sched["dma_start"], dma_end=sched["dma_end"],
        compute_start=sched["compute_start"], compute_end=sched["compute_end"],
        mxu=f.mxu, vpu=sched["vpu"], eup=sched["eup"], overhead=overhead,
        writeback_start=sched["writeback_start"], writeback_end=sched["writeback_end"],
        core=f.core)
