"""Reference for assignment a2, pipelining (lecture §3).

Public names are exactly those of the student API: ``pipeline_schedule``,
``render_gantt``, ``pipeline_utilization``, ``effective_bandwidth``,
``double_buffered_scale``; ``double_buffer_plan`` gives the figures the trace of a
right Task 2.5 kernel shows.

The schedule is computed as an event simulation, deliberately unlike the
index recurrence of the solution: a clock for the single DMA engine, a clock
for the compute unit, and a pool of ``n_buffers`` VMEM slots kept as a
list of the times at which each slot becomes free again (a slot is freed
when the compute step that used it ends). Every time is float64.
The Gantt chart is painted into a NumPy character array.
"""

import numpy as _np

__all__ = ["double_buffer_plan", "double_buffered_scale", "effective_bandwidth",
           "pipeline_schedule", "pipeline_utilization", "render_gantt"]


def _durations(dma_times, compute_times) -> tuple[_np.ndarray, _np.ndarray]:
    """Both duration sequences as float64 [n] arrays, checked.

    Raises:
      ValueError: not 1-D, lengths differ, n == 0, or a negative duration.
    """
    dma = _np.asarray(dma_times, dtype=_np.float64)
    compute = _np.asarray(compute_times, dtype=_np.float64)
    if dma.ndim != 1 or compute.ndim != 1:
        raise ValueError(f"dma_times and compute_times must be 1-D, got shapes {dma.shape} "
                         f"and {compute.shape}")
    if dma.shape != compute.shape:
        raise ValueError(f"dma_times has {dma.size} entries but compute_times has "
                         f"{compute.size}; give one DMA and one compute time per block")
    if dma.size == 0:
        raise ValueError("dma_times is empty; a pipeline needs at least one block")
    for name, values in (("dma_times", dma), ("compute_times", compute)):
        if _np.any(values < 0) or not _np.all(_np.isfinite(values)):
            raise ValueError(f"{name}={values.tolist()} must be finite and non-negative")
    return dma, compute


def pipeline_schedule(dma_times, compute_times, n_buffers: int):
    """Task 2.1: (dma_intervals, compute_intervals), float64 [n, 2] of (start, end).

    One DMA engine copies the blocks in order; block k's copy needs a free
    VMEM slot, and a slot frees up when the compute that used it ends
    (lecture §3.1; docs/student-api.md a2). Times in the unit of the inputs.

    Raises:
      ValueError: bad durations (see ``_durations``) or n_buffers < 1.
    """
    dma, compute = _durations(dma_times, compute_times)
    if int(n_buffers) != n_buffers or n_buffers < 1:
        raise ValueError(f"n_buffers={n_buffers!r} must be an integer >= 1")
    free_slots = [0.0] * int(n_buffers)  # when each VMEM slot frees up
    engine_free = 0.0
    compute_free = 0.0
    dma_iv = _np.empty((dma.size, 2))
    compute_iv = _np.empty((dma.size, 2))
    for block, (copy_time, work_time) in enumerate(zip(dma, compute, strict=True)):
        slot = free_slots.index(min(free_slots))  # the copy takes the earliest free slot
        slot_free = free_slots[slot]
        copy_start = max(engine_free, slot_free)
        engine_free = copy_start + copy_time
        work_start = max(engine_free, compute_free)
        compute_free = work_start + work_time
        free_slots[slot] = compute_free
        dma_iv[block] = copy_start, engine_free
        compute_iv[block] = work_start, compute_free
    return dma_iv, compute_iv


def render_gantt(dma_intervals, compute_intervals, *, width: int = 54) -> str:
    """Task 2.2: the two-row ASCII chart of a schedule, ``width`` cells per row.

    T is the last compute end; block k covers cells round(start·width/T) up to
    (excluding) round(end·width/T), drawn as the digit k % 10 (lecture §3.1's
    charts). Returns two lines of width + 10 characters joined by "\n"; for
    T = 0 (undefined by the API) both rows are blank.
    """
    rows = [_np.asarray(dma_intervals, dtype=_np.float64).reshape(-1, 2),
            _np.asarray(compute_intervals, dtype=_np.float64).reshape(-1, 2)]
    total = float(rows[1][-1, 1]) if rows[1].size else 0.0
    canvas = _np.full((2, int(width)), " ", dtype="<U1")
    if total > 0:
        for row, intervals in enumerate(rows):
            for block, (start, end) in enumerate(intervals.tolist()):
                first = round(start * width / total)
                stop = round(end * width / total)
                canvas[row, first:stop] = str(block % 10)
    labels = ("DMA     |", "compute |")
    return "\n".join(label + "".join(cells) + "|"
                     for label, cells in zip(labels, canvas, strict=True))


def pipeline_utilization(dma_times, compute_times, n_buffers: int) -> float:
    """Task 2.3: total compute time / makespan of the schedule; 1.0 for a zero makespan.

    A float in [0, 1] (lecture §3.2, §3.3: the MXU utilization of the model).
    Raises ValueError as pipeline_schedule does.
    """
    _, compute_iv = pipeline_schedule(dma_times, compute_times, n_buffers)
    busy = float(_np.sum(compute_iv[:, 1] - compute_iv[:, 0]))
    makespan = float(compute_iv[-1, 1])
    return 1.0 if makespan == 0 else busy / makespan


def effective_bandwidth(bytes_per_step: float, compute_time: float,
                        utilization: float) -> float:
    """Task 2.4: bytes per time unit of the DMA, back-solved from a single-buffered u.

    Single buffering gives u = c / (c + d), hence d = c·(1 - u)/u (lecture
    §3.2: 23.4 % measured → 6.83 µs, about 614 GB/s). Returns bytes per unit
    of ``compute_time``.

    Raises:
      ValueError: utilization outside (0, 1) (u = 1 means no DMA time), or
        compute_time <= 0.
    """
    if not 0 < utilization < 1:
        raise ValueError(f"utilization={utilization!r} must lie strictly between 0 and 1")
    if not compute_time > 0:
        raise ValueError(f"compute_time={compute_time!r} must be positive")
    dma_time = float(compute_time) * (1.0 - float(utilization)) / float(utilization)
    return float(bytes_per_step) / dma_time


def double_buffered_scale(x, scale: float, *, block_rows: int = 8) -> _np.ndarray:
    """Task 2.5's values: ``x * scale`` computed in float64, returned in x's dtype.

    x: (M, N) float32 or bfloat16 with M a multiple of block_rows (lecture §3.2).
    The schedule of the copies is judged from the trace (``double_buffer_plan``),
    not here.

    Raises:
      ValueError: x is not 2-D, or block_rows does not divide M.
    """
    arr = _np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"x must be 2-D, got shape {arr.shape}")
    if block_rows < 1 or arr.shape[0] % block_rows:
        raise ValueError(f"block_rows={block_rows} must divide M={arr.shape[0]}")
    return (arr.astype(_np.float64) * float(scale)).astype(arr.dtype)


def double_buffer_plan(shape: tuple[int, int], dtype, block_rows: int) -> dict[str, int]:
    """What the trace of a right Task 2.5 kernel shows, for x of ``shape`` and ``dtype``.

    Returns a dict of ints:
      ``steps``: grid steps, M // block_rows;
      ``copies``: manual DMAs, one fetch and one write-back per block (2·steps);
      ``dma_bytes``: bytes they move, twice the array;
      ``exposed``: copies with no computation between their start and their wait:
        only the first fetch (nothing to compute before block 0 arrives) and the last
        write-back (nothing left to compute after it) (lecture §3.2);
      ``block_bytes``: one (block_rows, N) block;
      ``vmem_bytes``: four blocks (two input slots, two result slots).

    Raises:
      ValueError: block_rows does not divide M.
    """
    rows, cols = (int(d) for d in shape)
    if block_rows < 1 or rows % block_rows:
        raise ValueError(f"block_rows={block_rows} must divide M={rows}")
    steps = rows // block_rows
    block_bytes = block_rows * cols * _np.dtype(dtype).itemsize
    return {"steps": steps, "copies": 2 * steps, "dma_bytes": 2 * rows * cols
            * _np.dtype(dtype).itemsize, "exposed": 2, "block_bytes": block_bytes,
            "vmem_bytes": 4 * block_bytes}
