# %% [markdown]
# # Assignment 2 — Pipelining  (lecture §3)
#
# A kernel step can only start once its input blocks have arrived in VMEM,
# and copying a block from HBM takes time. If every step waited for its own
# copy, the compute units would sit idle during every DMA. `pallas_call`
# therefore **pipelines**: while step k computes, the copy for step k + 1 is
# already running. In this assignment you build a small timing model of that
# pipeline, draw it, and use it to read real measurements.
#
# The model has one DMA engine that copies the blocks one after another, in
# order, and `n_buffers` VMEM slots per operand. A slot holds one block from
# the moment its copy starts until the compute step that uses it finishes.
# All durations are plain numbers in any time unit; Tasks 2.1–2.4 run no
# kernel, and Task 2.5 builds the same pipeline by hand, with its own DMAs.
#
# **How to work.** Fill in every `raise NotImplementedError(...)` stub. Keep
# the function names and signatures: the grader calls them by name. You may
# import only `numpy`, `math`, `functools`, `itertools`, `dataclasses`,
# `typing` and `pallas_sim`. Check your progress with
# `pallas-lab check a2_pipelining.py`. The example cells run only when the
# file is executed as a script or notebook, never when the grader imports it.

# %%
import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

# %% [markdown]
# ## Task 2.1 — the schedule of an N-buffer pipeline
#
# **Why.** With a single buffer, the copy of block k + 1 has nowhere to go
# until block k has been consumed, so copies and computation alternate and
# every block costs `d + c`. A second buffer lets the engine fetch block
# k + 1 while block k is being computed: the two overlap, and once the
# pipeline is full each block costs about `max(d, c)`. Overlap only *hides*
# the shorter of the two activities; it never makes the longer one shorter.
# More buffers help when durations vary: the engine can run several blocks
# ahead during a stretch of fast copies and use that lead to absorb a slow
# one later.
#
# Two rules decide every start time (block k, with `B = n_buffers`):
#
# * **DMA k** starts when the engine is free (DMA k−1 has finished) *and* a
#   slot is free (compute k−B has finished; blocks with k < B find an empty
#   slot at time 0);
# * **compute k** starts when its data is there (DMA k has finished) *and*
#   the compute unit is free (compute k−1 has finished).
#
# Everything starts as early as these rules allow.
#
# **Task.** Write `pipeline_schedule(dma_times, compute_times, n_buffers)`.
# The two inputs are 1-D sequences of the same length n ≥ 1 (non-negative
# durations); return `(dma_intervals, compute_intervals)`, two float64 arrays
# of shape `[n, 2]` whose rows are `(start, end)`.
#
# **Try it.** Six blocks, each copied in 1 and computed in 2: with one buffer
# the last compute ends at 18 = 6 × (1 + 2); with two buffers at 13 = 1 + 6 × 2
# (only the very first copy is exposed). Exercise 3 of the lecture: d = 3,
# c = 1, n = 100 gives 400 with one buffer and 301 with two. There the
# copies are the bottleneck, and double buffering hides the *computation*.


# %%
def pipeline_schedule(dma_times, compute_times, n_buffers: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Task 2.1: start and end of every DMA and compute step.  [lecture §3.1]

    dma_times, compute_times: 1-D sequences of n >= 1 non-negative durations.
    n_buffers: VMEM slots, >= 1. One DMA engine copies the blocks in order.
    Returns (dma_intervals, compute_intervals): float64 [n, 2] rows (start, end).
    """
    raise NotImplementedError("Need to implement for Task 2.1")


# %%
if __name__ == "__main__":
    for _buffers in (1, 2):
        _, _compute = pipeline_schedule([1] * 6, [2] * 6, _buffers)
        print(f"Task 2.1 six blocks, {_buffers} buffer(s): total", _compute[-1, 1])
    print("Task 2.1 exercise 3 (d = 3, c = 1, n = 100):",
          [float(pipeline_schedule([3] * 100, [1] * 100, b)[1][-1, 1]) for b in (1, 2)])

# %% [markdown]
# ## Task 2.2 — drawing the schedule
#
# **Why.** A timeline makes the idle time visible at a glance: gaps in the
# compute row are time the MXU waits for data, gaps in the DMA row are time
# the engine waits for a free slot. The same picture is what you look for in
# a real profiler trace.
#
# **Task.** Write `render_gantt(dma_intervals, compute_intervals, *,
# width=54)`. It returns two lines joined by `"\n"`:
# `"DMA     |" + row + "|"` and `"compute |" + row + "|"`. Each row has
# exactly `width` cells. With T the end of the last compute step, block k
# fills the cells from `round(start * width / T)` up to but excluding
# `round(end * width / T)` (Python's `round`) with the digit `k % 10`; all
# other cells are spaces.
#
# **Try it.** The six-block schedules of Task 2.1 should print as
#
# ```
# DMA     |000      111      222      333      444      555      |
# compute |   000000   111111   222222   333333   444444   555555|
# ```
#
# with one buffer, and with two:
#
# ```
# DMA     |00001111    22222    3333    4444    55555            |
# compute |    00000000111111111222222223333333344444444455555555|
# ```


# %%
def render_gantt(dma_intervals, compute_intervals, *, width: int = 54) -> str:
    """Task 2.2: a two-row ASCII Gantt chart of a schedule.  [lecture §3.1]

    dma_intervals, compute_intervals: [n, 2] (start, end) rows, as returned by
    pipeline_schedule; T = end of the last compute step (> 0). Returns
    "DMA     |...|" and "compute |...|" joined by "\\n", width cells per row.
    """
    raise NotImplementedError("Need to implement for Task 2.2")


# %%
if __name__ == "__main__":
    for _buffers in (1, 2):
        print(f"Task 2.2 six blocks, {_buffers} buffer(s):")
        print(render_gantt(*pipeline_schedule([1] * 6, [2] * 6, _buffers)))

# %% [markdown]
# ## Task 2.3 — utilization
#
# **Why.** The fraction of the time the compute unit is busy — for a matmul,
# the MXU utilization — is the number a profiler reports and the one to
# compare with the ideal. Take one step of the lecture's bf16 matmul with
# (1024, 1024, 1024) blocks on Ironwood (one TensorCore: 1028.75 TFLOP/s,
# 3685.5 GB/s of HBM bandwidth). Per step only the two input blocks move,
# 2 × 2 MiB = 4 MiB, which takes about 1.138 µs at peak bandwidth, while the
# 2 · 1024³ FLOPs take about 2.087 µs. Over the 504 steps of the full matmul,
# a single buffer reaches only 2.087 / (1.138 + 2.087) ≈ 64.7 %, and double
# buffering 99.9 %: the step is compute-bound, so the copies hide entirely
# behind the computation.
#
# **Task.** Write `pipeline_utilization(dma_times, compute_times, n_buffers)`:
# the sum of the compute durations divided by the total time (the end of
# the last compute step; the pipeline starts at 0). When the total time is
# 0, return 1.0.
#
# **Try it.** The cell below reproduces the two ideal numbers, then draws
# copy times at random (mean 0.8, standard deviation 1.0, never negative)
# for a compute time of 1.0: with 2, 3 and 4 buffers the utilization climbs
# to roughly 76 %, 87 % and 92 %.


# %%
def pipeline_utilization(dma_times, compute_times, n_buffers: int) -> float:
    """Task 2.3: fraction of the total time the compute unit is busy.  [lecture §3.3]

    Same inputs as pipeline_schedule. Returns sum(compute_times) / (end of the
    last compute step), a float in [0, 1]; 1.0 when that end is 0.
    """
    raise NotImplementedError("Need to implement for Task 2.3")


# %%
if __name__ == "__main__":
    _dma_step = 4 * 2**20 / 3685.5e9         # seconds to copy two bf16[1024, 1024] blocks
    _compute_step = 2 * 1024**3 / 1028.75e12  # seconds for 2·1024³ FLOPs
    for _buffers in (1, 2):
        _u = pipeline_utilization([_dma_step] * 504, [_compute_step] * 504, _buffers)
        print(f"Task 2.3 ideal utilization, {_buffers} buffer(s): {_u:.2%}")
    _rng = np.random.default_rng(0)
    _jittery = np.maximum(0.0, _rng.normal(0.8, 1.0, size=10_000))
    for _buffers in (2, 3, 4):
        _u = pipeline_utilization(_jittery, np.ones(10_000), _buffers)
        print(f"Task 2.3 random copy times, {_buffers} buffers: {_u:.1%}")

# %% [markdown]
# ## Task 2.4 — what bandwidth did we really get?
#
# **Why.** The ideal model above predicts 99.9 %, yet a kernel from the
# lecture's slides that starts each copy and immediately waits for it (no
# overlap at all, so effectively one buffer) measured an MXU utilization of
# only 23.4 %. Turning the measurement around tells us how long the copies
# really took. With a single buffer every step costs `c + d`, so
# `u = c / (c + d)` and therefore `d = c · (1/u − 1)`. For u = 0.234 and
# c = 2.087 µs that is d ≈ 6.83 µs per 4 MiB, an effective bandwidth of about
# 614 GB/s, a sixth of the peak. Each real copy pays start-up and
# synchronization costs that the ideal model ignores. With copies that slow
# even double buffering would top out near c / d ≈ 30.5 %: now the copies
# are the longer activity and overlap can only hide the computation.
#
# **Task.** Write `effective_bandwidth(bytes_per_step, compute_time,
# utilization)`: solve the single-buffer relation for the DMA time and return
# `bytes_per_step / dma_time` (bytes per time unit of `compute_time`).
# Inputs satisfy `0 < utilization < 1` and `compute_time > 0`.
#
# **Try it.** `effective_bandwidth(4 * 2**20, 2.087e-6, 0.234)` is about
# 6.14e11 bytes per second.


# %%
def effective_bandwidth(bytes_per_step: float, compute_time: float,
                        utilization: float) -> float:
    """Task 2.4: bandwidth back-solved from a measured single-buffer utilization.  [lecture §3.2]

    bytes_per_step: bytes copied per step (B); compute_time: compute time per
    step (any unit, > 0); utilization: measured u, 0 < u < 1. Returns
    bytes_per_step / d in bytes per that time unit, where u = c / (c + d).
    """
    raise NotImplementedError("Need to implement for Task 2.4")


# %%
if __name__ == "__main__":
    _bw = effective_bandwidth(4 * 2**20, 2.087e-6, 0.234)
    print(f"Task 2.4 effective bandwidth: {_bw / 1e9:.0f} GB/s "
          f"({_bw / 3685.5e9:.1%} of the peak)")

# %% [markdown]
# ## Task 2.5 — double buffering by hand
#
# **Why.** `pallas_call` hides the copies of Tasks 2.1–2.4: for every
# blocked operand it keeps two VMEM slots and fetches block k + 1 while
# block k is computed. When you want to decide that yourself — start a copy
# earlier, keep three slots instead of two, or hold a block in VMEM for
# longer — you leave the operand in HBM (`memory_space=pl.ANY`) and move the
# data with DMAs the kernel starts and waits (lecture §3.2). Three pieces
# are needed: the VMEM slots (`scratch_shapes`), one DMA semaphore per slot
# (`pltpu.SemaphoreType.DMA((2,))`), on which a copy is started and later
# waited, and a small SMEM scratch that remembers, from one grid step to
# the next, which slot holds the current block.
#
# The order of the calls is the whole point. `copy.start()` only hands the
# copy to the DMA engine; `copy.wait()` blocks until the data has landed.
# If a kernel waits right after starting (`start()` then at once `wait()`),
# nothing runs while the data moves: the values come out right, but this is
# the single-buffered schedule of Task 2.1 — the slides' anti-pattern, which
# measured 23.4 % MXU utilization. Instead, start the copy of the *next*
# block first, then wait for the current one, then compute: the next copy
# is in flight while this block is being worked on.
#
# **Task.** Write `double_buffered_scale(x, scale, *, block_rows=8)`:
# `x * scale` for a 2-D `x` (float32 or bfloat16, `M` a multiple of
# `block_rows`), in the dtype of `x`, through one `pl.pallas_call` over a
# grid of `M // block_rows` steps with semantics `("arbitrary",)` (the slot
# carries from one step to the next, so the steps must run in order), and
# its kernel `double_buffer_kernel`. Both `x` and the output stay in HBM
# (`pl.BlockSpec(memory_space=pl.ANY)`); the scratch is, in this order:
#
# * `in_buf_ref`, `out_buf_ref`: VMEM `(2, block_rows, N)` in the dtype of
#   `x` — two slots for the incoming blocks, two for the results;
# * `in_sem_ref`, `out_sem_ref`: `pltpu.SemaphoreType.DMA((2,))`, one
#   semaphore per slot;
# * `slot_ref`: SMEM `(1,)` int32, the slot of the current block.
#
# At step k (with `slot` read from `slot_ref` and `other = 1 - slot`):
# at k == 0 set the slot to 0 and start the copy of block 0 (scratch starts
# uninitialized); if there is a block k + 1, start its copy into `other`;
# wait for block k; compute `out_buf_ref[slot]`; start its write-back to
# rows `k·block_rows ...` of the output; wait for the previous write-back
# (block k − 1, slot `other`), which had this step's compute to hide
# behind; at the last step also wait for your own write-back — a copy not
# waited when the kernel ends never lands; finally flip the slot. Index
# HBM rows with `ref.at[pl.ds(start, size)]` and slots with `ref.at[slot]`.
# The grader checks the values, and in the trace that every copy but the
# first fetch and the last write-back had computation between its start and
# its wait, that every DMA was waited, and that VMEM holds four blocks.
#
# **Try it.** The cell below scales a (32, 128) array by 2 in four blocks
# and prints the trace: 8 manual DMAs, no automatic ones, and per step the
# copies that had nothing to overlap with — 1, 0, 0, 1.


# %%
import functools  # noqa: E402  (the standard library, for Task 2.5)


def double_buffer_kernel(x_hbm_ref, o_hbm_ref, in_buf_ref, out_buf_ref, in_sem_ref,
                         out_sem_ref, slot_ref, *, scale: float, block_rows: int) -> None:
    """Task 2.5: one grid step of a manually double-buffered copy-and-scale.  [lecture §3.2]

    Grid: (M // block_rows,), "arbitrary"; step k handles rows k·block_rows ...
      x_hbm_ref:   (M, N) x in HBM (pl.ANY); read only through DMAs
      o_hbm_ref:   (M, N) the output in HBM (pl.ANY); written only through DMAs
      in_buf_ref:  (2, block_rows, N) VMEM, x's dtype: the two input slots
      out_buf_ref: (2, block_rows, N) VMEM, x's dtype: the two result slots
      in_sem_ref, out_sem_ref: DMA semaphores (2,), one per slot
      slot_ref:    (1,) int32 SMEM: the slot holding block k (set at k == 0)
    """
    raise NotImplementedError("Need to implement for Task 2.5")


def double_buffered_scale(x, scale: float, *, block_rows: int = 8):
    """Task 2.5: x * scale, block by block, with DMAs the kernel starts itself.  [lecture §3.2]

    x: (M, N) float32 or bfloat16, M a multiple of block_rows; scale: a Python float.
    Returns an (M, N) array of x's dtype from one pallas_call with grid
    (M // block_rows,), x and the output in HBM (pl.ANY), and the scratch of
    double_buffer_kernel.
    """
    raise NotImplementedError("Need to implement for Task 2.5")


# %%
if __name__ == "__main__":
    import pallas_sim

    _x = np.arange(32 * 128, dtype=np.float32).reshape(32, 128)
    with pallas_sim.trace() as _t:
        _y = double_buffered_scale(_x, 2.0, block_rows=8)
    print("Task 2.5 values right:", bool(np.allclose(_y, 2 * _x)))
    print(_t.calls[-1])
    print("Task 2.5 copies with nothing to overlap, per step:",
          _t.calls[-1].ops["manual_dma_exposed_count"].tolist())

    # Predicted time on one Ironwood TensorCore (pallas_sim.estimate, shapes only) at the
    # size of the lecture's matmul input x, (4096, 7168) bf16 in 512-row blocks, against
    # the same scale pipelined by BlockSpecs (lecture §3.1). Try a start() followed at
    # once by its wait() and see what the overlap was worth.
    def _auto_scale(x, scale, *, block_rows):
        def _kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * scale

        spec = pl.BlockSpec((block_rows, x.shape[1]), lambda i: (i, 0))
        return pl.pallas_call(_kernel, grid=(x.shape[0] // block_rows,), in_specs=[spec],
                              out_specs=spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    _big = jax.ShapeDtypeStruct((4096, 7168), jnp.bfloat16)
    for _name, _fn in (("double_buffered_scale", double_buffered_scale),
                       ("BlockSpec pipeline", _auto_scale)):
        _line = pallas_sim.estimate(_fn, _big, 2.0, block_rows=512).timelines[0]
        print(f"predicted {_name}: {_line.time_s * 1e6:.1f} µs, HBM bandwidth used "
              f"{_line.hbm_utilisation * 100:.0f} %")
