# %% [markdown]
# # Assignment 3 — A blocked matmul on a 3D grid  (lecture §4)
#
# Matrix multiplication is where most of a model's FLOPs go, and the kernel
# you write here is the pattern behind almost every TPU kernel that reduces
# over an axis: a grid over the output blocks plus one **reduction axis**,
# with the output block used as an accumulator. You will write the kernel
# and its `pallas_call`, then answer the two questions that decide how fast
# it runs: does it fit in VMEM, and is it limited by copies or by arithmetic?
#
# Throughout: `x` is `[M, K]`, `y` is `[K, N]`, the output `z = x @ y` is
# `[M, N]` in float32; blocks are `(bm, bk)` of x, `(bk, bn)` of y and
# `(bm, bn)` of z. Hardware numbers are those of one Ironwood TensorCore:
# 1028.75e12 FLOP/s peak, 3685.5e9 B/s of HBM bandwidth.
#
# **How to work.** Fill in every `raise NotImplementedError(...)` stub. Keep
# the function names and signatures: the grader calls them by name. You may
# import only `numpy`, `math`, `functools`, `itertools`, `dataclasses`,
# `typing` and `pallas_sim`. Check your progress with
# `pallas-lab check a3_matmul.py`. The example cells run only when the file
# is executed as a script or notebook, never when the grader imports it.

# %%
import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

# %% [markdown]
# ## Three ways to grid a matmul
#
# Written as loops over blocks, a matmul is
#
# ```
# for i in range(M // bm):            # output row block
#     for j in range(N // bn):        # output column block
#         for k in range(K // bk):    # reduction
#             z[i, j] += x[i, k] @ y[k, j]
# ```
#
# and a `pallas_call` can express it in three ways:
#
# * **1D grid over K only**: every step sees a column panel `x[:, k]` and a
#   row panel `y[k, :]`, and the *whole* output stays resident in VMEM;
# * **2D grid over (M, N)**: every step reads a full row panel of x and a
#   full column panel of y (all of K at once) and writes one output block;
# * **3D grid over (M, N, K)**: every step touches one block of each.
#
# All three compute the same numbers. What differs is how much VMEM they
# need: for the lecture's (4096, 7168) @ (7168, 18432) with bf16 inputs,
# an f32 output and 1024-blocks, the 1D grid needs 664 MiB and the 2D grid
# 64 MiB, both far beyond a core's VMEM, while the 3D grid needs 16 MiB.

# %% [markdown]
# ## Task 3.1 — the kernel
#
# **Why K goes last, and why the output block stays resident.** Recall the
# rule of `pallas_call` for outputs: an output block whose index does not
# change from one step to the next stays in VMEM and is written back to HBM
# only when the index changes. The output block's index is `(i, j)`; it does
# not depend on `k`. With `k` as the **last** (fastest) grid axis, the same
# `(i, j)` is visited in `K // bk` consecutive steps, so `z_ref` is the same
# VMEM buffer throughout the reduction: it *is* the accumulator, and it goes
# to HBM exactly once, complete. Put `k` first instead and consecutive steps
# visit different output blocks; each would be written back after a single
# partial product and later revisited in a fresh, uninitialized buffer.
# (`pallas_sim` refuses such a grid with a `RevisitedOutputBlockError`.)
#
# Two consequences for the kernel body:
#
# * **Zero the accumulator at k == 0.** A fresh output buffer holds garbage,
#   not zeros. (`pallas_sim` fills it with NaN, so forgetting this shows.)
# * **Apply the activation at the last k only.** ReLU must see the complete
#   sum; applied to a partial sum it clips values that later terms would
#   have brought back above zero. Done in the kernel, on the resident block,
#   the activation costs no extra HBM traffic at all (Task 3.2).
#
# The MXU multiplies bf16 inputs and accumulates in float32; ask for that
# with `jnp.dot(a, b, preferred_element_type=jnp.float32)`.
#
# **Task.** Write `matmul_kernel(x_ref, y_ref, z_ref, *, activation=None)`
# for the grid `(i, j, k)`: zero `z_ref` at `k == 0`, add `x @ y` (in
# float32), and at the last `k` apply `activation` (`None` or `"relu"`).
# `pl.program_id(2)` is k and `pl.num_programs(2)` the number of k steps.
#
# **Try it.** The cell after the function runs the kernel on a (2, 2, 4)
# grid of 64-blocks and compares it with NumPy. (`pallas_call` passes only
# refs to a kernel; bind keyword arguments with a `lambda` or
# `functools.partial`.)


# %%
def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None) -> None:
    """Task 3.1: one (i, j, k) step of a blocked matmul.  [lecture §4.1]

    Grid: (M // bm, N // bn, K // bk), K last.
      x_ref: (bm, bk)  block (i, k) of x (f32 or bf16)
      y_ref: (bk, bn)  block (k, j) of y
      z_ref: (bm, bn)  float32 block (i, j) of the output; stays in VMEM
                       for the whole k loop, so it is the accumulator.
    activation: None or "relu", applied once after the last k step.
    """
    raise NotImplementedError("Need to implement for Task 3.1")


# %%
if __name__ == "__main__":
    _rng = np.random.default_rng(0)
    _x = _rng.standard_normal((128, 256)).astype(np.float32)
    _y = _rng.standard_normal((256, 128)).astype(np.float32)
    _z = pl.pallas_call(
        lambda xr, yr, zr: matmul_kernel(xr, yr, zr, activation="relu"),
        grid=(2, 2, 4),
        in_specs=[pl.BlockSpec((64, 64), lambda i, j, k: (i, k)),
                  pl.BlockSpec((64, 64), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((64, 64), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct((128, 128), jnp.float32),
    )(_x, _y)
    print("Task 3.1 kernel correct:", np.allclose(_z, np.maximum(_x @ _y, 0), atol=1e-4))

# %% [markdown]
# ## Task 3.2 — the wrapper, with a fused activation
#
# **Why.** The BlockSpecs follow directly from the loop nest: at grid step
# `(i, j, k)` the kernel needs block `(i, k)` of x, block `(k, j)` of y and
# block `(i, j)` of z. The M and N axes are independent of each other, so
# they are declared `"parallel"` (a chip with two TensorCores may split them
# between its cores); the K axis carries the running sum from one step to
# the next, so it is `"arbitrary"` (it must run in order, on one core):
# `pltpu.CompilerParams(dimension_semantics=("parallel", "parallel",
# "arbitrary"))`.
#
# Fusing the activation is free: applying ReLU to the output afterwards in
# a separate pass would read the whole output from HBM and write it back
# once more. In the lecture's small example (f32[256, 512] @ f32[512, 256],
# 128-blocks) the fused kernel reads 2048 KiB and writes 256 KiB; a separate
# ReLU pass would add another 256 KiB read and 256 KiB written. At full size
# (a bf16[4096, 18432] output) the pass would move 301.99 MB, about 82 µs at
# peak bandwidth, close to 8 % of the 1.05 ms matmul.
#
# **Task.** Write `matmul(x, y, *, block_shape=(128, 128, 128),
# activation=None)` for `x [M, K]` and `y [K, N]` (f32 or bf16) returning
# the float32 `[M, N]` result through **one** `pl.pallas_call` with grid
# `(M // bm, N // bn, K // bk)`, the BlockSpecs above and those dimension
# semantics. Raise `ValueError` when the K of x and y differ, or when M, N
# or K is not a multiple of its block size; the message must name the
# dimension (`"M"`, `"N"` or `"K"`) and the values.
#
# **Try it.** `pallas_sim.trace()` shows what the call did; every output
# block is written back exactly once, and the traffic is the same with and
# without the activation:
#
# ```python
# import pallas_sim
# with pallas_sim.trace() as t:
#     matmul(np.ones((256, 512), np.float32), np.ones((512, 256), np.float32),
#            activation="relu")
# call = t.calls[-1]
# print(call.grid, call.hbm_bytes_read // 1024, call.hbm_bytes_written // 1024)
# # (2, 2, 4) 2048 256
# ```


# %%
def matmul(x: np.ndarray, y: np.ndarray, *,
           block_shape: tuple[int, int, int] = (128, 128, 128),
           activation: str | None = None) -> np.ndarray:
    """Task 3.2: x @ y (then the activation) through one 3D-grid pallas_call.  [lecture §4.1, §4.3]

    x: [M, K], y: [K, N], f32 or bf16; block_shape = (bm, bn, bk) must divide
    (M, N, K). Grid (M // bm, N // bn, K // bk); semantics ("parallel",
    "parallel", "arbitrary"). Returns float32 [M, N].

    Raises:
      ValueError: the K of x and y differ, or M, N or K is not a multiple of
        its block size (the message names the dimension).
    """
    raise NotImplementedError("Need to implement for Task 3.2")


# %%
if __name__ == "__main__":
    _a = _rng.standard_normal((256, 384)).astype(jnp.bfloat16)
    _b = _rng.standard_normal((384, 128)).astype(jnp.bfloat16)
    _exact = _a.astype(np.float64) @ _b.astype(np.float64)
    print("Task 3.2 bf16 matmul correct:",
          np.allclose(matmul(_a, _b, block_shape=(128, 64, 128)), _exact, atol=1e-3))

# %% [markdown]
# ## Task 3.3 — will it fit?
#
# **Why.** Every operand of a pipelined `pallas_call` holds two buffers of
# its block (double buffering, lecture §3). The three grids of the opening
# section differ only in their block shapes, and that decides whether the
# call fits into a core's VMEM (32 MiB scoped by default, 64 MiB physical).
#
# **Task.** Write `matmul_vmem_bytes(M, N, K, *, block=1024, grid="3d",
# in_dtype="bfloat16", out_dtype="float32")`, with every operand
# double-buffered and `b = block`:
#
# | grid | x block | y block | z block |
# |---|---|---|---|
# | `"3d"` | (b, b) | (b, b) | (b, b) |
# | `"2d"` | (b, K) | (K, b) | (b, b) |
# | `"1d"` | (M, b) | (b, N) | (M, N), the whole output |
#
# Dtypes are given by name (`"bfloat16"`, `"float32"`, ...).
#
# **Try it.** For (4096, 7168) @ (7168, 18432) with 1024-blocks: 664 MiB
# (1d), 64 MiB (2d) and 16 MiB (3d).


# %%
def matmul_vmem_bytes(M: int, N: int, K: int, *, block: int = 1024, grid: str = "3d",
                      in_dtype: str = "bfloat16", out_dtype: str = "float32") -> int:
    """Task 3.3: VMEM bytes of a blocked matmul's pallas_call.  [lecture §4.1]

    x [M, K] and y [K, N] of in_dtype, z [M, N] of out_dtype (dtype names);
    grid "1d", "2d" or "3d" chooses the block shapes of the table above; every
    operand holds two buffers of its block. Returns an int number of bytes.
    """
    raise NotImplementedError("Need to implement for Task 3.3")


# %%
if __name__ == "__main__":
    for _grid in ("1d", "2d", "3d"):
        _mib = matmul_vmem_bytes(4096, 18432, 7168, block=1024, grid=_grid) / 2**20
        print(f"Task 3.3 VMEM with a {_grid} grid: {_mib:g} MiB")

# %% [markdown]
# ## Task 3.4 — block size and the roofline
#
# **Why block size matters, part 1: arithmetic intensity.** One `(b, b, b)`
# grid step does 2b³ FLOPs and copies two input blocks of b² elements each.
# (The output block stays resident across the k loop, so it hardly counts.)
# With bf16 inputs (2 bytes) that is 4b² bytes, an **intensity** of
# 2b³ / 4b² = b/2 FLOPs per byte. A step is compute-bound only when this
# exceeds the chip's **balance point**, peak FLOP/s divided by HBM bytes/s:
# 1028.75e12 / 3685.5e9 ≈ 279 for Ironwood. So b = 512 (intensity 256) is
# still limited by copies even with perfect overlap, while b = 1024
# (intensity 512) is limited by arithmetic. The smallest block that gets
# there, rounded up to a multiple of 8, is 560.
#
# **Why block size matters, part 2: per-step overhead.** Doubling b divides
# the number of grid steps by 8, and each step carries a fixed cost of
# roughly a microsecond (starting the step, issuing its copies,
# synchronizing). The lecture's measurements on the full matmul, 4.63 ms for
# 512-blocks (4032 steps) and 1.68 ms for 1024-blocks (504 steps), exceed
# the ideal times below by about 0.86 and 1.25 µs per step. Hence the rule
# of thumb: the largest block that fits in VMEM.
#
# **Task.** Write three functions:
#
# * `arithmetic_intensity(block, dtype_bytes=2)`: FLOPs per HBM byte of one
#   `(b, b, b)` step, counting the two input blocks: `b / dtype_bytes`;
# * `min_compute_bound_block(peak_flops, hbm_bandwidth, dtype_bytes=2,
#   multiple_of=8)`: the smallest multiple of `multiple_of` whose intensity
#   is strictly greater than `peak_flops / hbm_bandwidth`;
# * `ideal_matmul_time(M, N, K, block, *, peak_flops, hbm_bandwidth,
#   dtype_bytes=2)`: seconds for `(M // b)·(N // b)·(K // b)` steps of
#   `max(2b³ / peak, 2·b²·dtype_bytes / bandwidth)` each, i.e. a perfectly
#   double-buffered pipeline with no per-step overhead.
#
# **Try it.** For the full matmul (total work 2MNK ≈ 1.082e12 FLOPs):
# 512-blocks, 4032 steps, 1.147 ms; 1024-blocks, 504 steps, 1.052 ms.


# %%
def arithmetic_intensity(block: int, dtype_bytes: int = 2) -> float:
    """Task 3.4: FLOPs per HBM byte of one (b, b, b) step.  [lecture §4.2]

    block: b (elements); dtype_bytes: bytes per input element. Counts the
    2b³ FLOPs and the two input blocks (2·b²·dtype_bytes bytes): b / dtype_bytes.
    """
    raise NotImplementedError("Need to implement for Task 3.4")


def min_compute_bound_block(peak_flops: float, hbm_bandwidth: float, dtype_bytes: int = 2,
                            multiple_of: int = 8) -> int:
    """Task 3.4: smallest block multiple of multiple_of that is compute-bound.  [lecture §4.2]

    peak_flops: FLOP/s; hbm_bandwidth: bytes/s. Returns the smallest multiple
    of multiple_of whose arithmetic_intensity exceeds peak_flops / hbm_bandwidth.
    """
    raise NotImplementedError("Need to implement for Task 3.4")


def ideal_matmul_time(M: int, N: int, K: int, block: int, *, peak_flops: float,
                      hbm_bandwidth: float, dtype_bytes: int = 2) -> float:
    """Task 3.4: seconds of a perfectly pipelined (b, b, b)-blocked matmul.  [lecture §4.2]

    steps = (M // b)·(N // b)·(K // b), each taking the longer of its compute
    (2b³ / peak_flops) and its copies (2·b²·dtype_bytes / hbm_bandwidth).
    Returns seconds (float).
    """
    raise NotImplementedError("Need to implement for Task 3.4")


# %%
if __name__ == "__main__":
    _peak, _bw = 1028.75e12, 3685.5e9
    print("Task 3.4 balance point:", round(_peak / _bw, 2), "| intensity of b = 1024:",
          arithmetic_intensity(1024))
    print("Task 3.4 smallest compute-bound block:", min_compute_bound_block(_peak, _bw))
    for _block in (512, 1024):
        _t = ideal_matmul_time(4096, 18432, 7168, _block, peak_flops=_peak, hbm_bandwidth=_bw)
        print(f"Task 3.4 ideal time with {_block}-blocks: {_t * 1e3:.3f} ms")

# %% [markdown]
# ## Task 3.5 — performance: choose the blocks
#
# **Why.** You have no TPU, but `pallas_sim` can run your `matmul` on shapes
# only (no data, no arithmetic) at the full lecture size and predict its time
# on one Ironwood TensorCore from what your kernel does per grid step: the
# DMAs its BlockSpecs cause, its MXU flops and VPU work, and a fixed cost per
# step (docs/performance-model.md says how, and how wrong it can be). Task 3.4
# gave the two forces: bigger blocks mean fewer steps and more FLOPs per
# copied byte; Task 3.3 gave the limit: the double buffers of all three
# blocks must fit the 32 MiB of scoped VMEM. Square blocks are not the only
# choice: (bm, bn, bk) may differ, and the output block is f32 while the
# input blocks are bf16.
#
# **Task.** Write `choose_matmul_blocks()` returning the `block_shape`
# `(bm, bn, bk)`, in the order `matmul` takes it, for the lecture's
# `(4096, 7168) @ (7168, 18432)` in bf16 on one Ironwood TensorCore. Each of
# bm, bn and bk must be one of **128, 256, 512, 1024, 2048**; the blocks must
# divide (M, N, K) = (4096, 18432, 7168) and fit the scoped VMEM. This is a
# **performance** task, and it grades the *choice*: full points when the
# predicted time of your kernel at your blocks is within 10 % of the fastest
# legal candidate **for your own kernel** (3 of its 10 points for a legal
# choice at which your kernel runs correctly). Blocks that do not fit VMEM
# fail the way a real run does, with the compiler's out-of-memory message.
#
# **How the time is computed.** The grader times your `matmul_kernel`
# (Task 3.1) inside its own standard `pallas_call` (grid (M/bm, N/bn, K/bk),
# K last, 32 MiB scoped VMEM); your wrapper is not part of it. Your kernel
# runs on a small problem at your blocks, one output block and three k
# steps: once on data (the output is checked) and once on shapes only (the
# op counts must be the same). Each full-size step then does the work
# measured for its kind of step (first, middle, last k step), through the
# same timeline model as `pallas_sim.estimate`. Your kernel is not run at
# the other candidates: its work there is *projected* from what it did at
# your blocks, op kind by op kind, as the reference kernel's work changes
# between your blocks and that candidate (twice the reference's vector
# work at your blocks means twice it everywhere). The fastest projected
# candidate is the bar; when your kernel does what the reference does, it
# is the reference's best.
#
# **Run the same sweep yourself.** For every candidate `b`, call
# `pallas_sim.estimate(matmul, x, y, block_shape=b)` with
# `x = jax.ShapeDtypeStruct((4096, 7168), jnp.bfloat16)` and
# `y = jax.ShapeDtypeStruct((7168, 18432), jnp.bfloat16)`, skip those that
# raise (`VmemOOMError`, `ValueError`), and compare
# `est.timelines[0].time_s`: when your `matmul` makes the intended call,
# the time at your blocks is the grader's, and the best of the sweep is the
# grader's bar when your kernel's extra work (if any) grows with the blocks
# as the reference's does.
# The grader calls your chooser under a time limit of a few seconds, so
# sweep in a cell or a script of your own and return the winner as
# constants (a chooser that runs the sweep itself times out).
#
# **Try it.** The cell below predicts your matmul at 512- and 1024-blocks
# (compare §4.2's measured 4.63 and 1.68 ms) and at your choice. From a
# terminal, `pallas-lab profile a3_matmul.py` prints the same with a
# timeline of the first steps (`--png DIR` draws it). Which candidates fit,
# and why does the fastest one win?


# %%
def choose_matmul_blocks() -> tuple[int, int, int]:
    """Task 3.5 (performance): (bm, bn, bk) for the lecture's matmul.  [lecture §4.2]

    For bf16 x [4096, 7168] @ y [7168, 18432] (f32 out) on one Ironwood
    TensorCore: each of bm, bn, bk one of 128, 256, 512, 1024, 2048, dividing
    (M, N, K) = (4096, 18432, 7168), with every operand's two buffers within
    the 32 MiB scoped VMEM. Returns the block_shape tuple that ``matmul`` takes.
    """
    raise NotImplementedError("Need to implement for Task 3.5")


# %%
if __name__ == "__main__":
    import pallas_sim  # only for the estimate below

    _x = jax.ShapeDtypeStruct((4096, 7168), jnp.bfloat16)
    _y = jax.ShapeDtypeStruct((7168, 18432), jnp.bfloat16)
    for _blocks in ((512, 512, 512), (1024, 1024, 1024), choose_matmul_blocks()):
        _t = pallas_sim.estimate(matmul, _x, _y, block_shape=_blocks).timelines[0]
        print(f"Task 3.5 predicted with {_blocks}: {_t.time_s * 1e3:.3f} ms, MFU "
              f"{_t.mfu * 100:.1f} %, mostly {_t.dominant_bound}-bound, VMEM "
              f"{_t.vmem_bytes / 2**20:.0f} MiB")
