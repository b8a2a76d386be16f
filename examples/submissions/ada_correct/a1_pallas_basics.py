# %% [markdown]
# # Assignment 1 — Pallas basics  (lecture §2)
#
# A Pallas kernel is written in three parts: a **grid** (the iteration space),
# one **BlockSpec** per operand (which block of the array each grid step works
# on) and the **kernel** itself (the code run at every grid step, which only
# ever sees blocks that already sit in fast on-chip memory). In this
# assignment you write the smallest useful kernels and the wrappers around
# them, and you learn to predict two numbers before running anything: how
# much VMEM a call needs and how many copies (DMAs) it makes.
#
# We use `pallas_sim`, a NumPy model of JAX Pallas for TPU with the same
# spelling (`pl.pallas_call`, `pl.BlockSpec`, ...). Everything you write here
# also runs on real `jax.experimental.pallas` once the import is swapped.
#
# **How to work.** Fill in every `raise NotImplementedError(...)` stub. Keep
# the function names and signatures: the grader calls them by name. You may
# import only `numpy`, `math`, `functools`, `itertools`, `dataclasses`,
# `typing` and `pallas_sim`. Check your progress with
# `pallas-lab check a1_pallas_basics.py`. The example cells run only when the
# file is executed as a script or notebook, never when the grader imports it.

# %%
import numpy as np

from pallas_sim import jax, jnp, pl, pltpu  # noqa: F401  (pltpu is not needed here)
import math

# %% [markdown]
# ## Where the data lives
#
# A TPU core has large but distant HBM (where every big array lives) and a
# small scratchpad right next to the vector units, VMEM (the default scoped
# limit is 32 MiB per core). A kernel never touches HBM directly: it receives
# **refs**, mutable handles to buffers in VMEM. Reading `x_ref[...]` gives the
# block's values as an array; assigning `z_ref[...] = value` stores into the
# output buffer. `pl.pallas_call` does the rest: it reserves the VMEM buffers,
# copies the inputs in from HBM, runs the kernel, and copies the outputs back.
#
# Without a grid and BlockSpecs the whole of every operand is one block. For
# two f32[2048, 2048] inputs (16 MiB each) plus the output that is 48 MiB of
# VMEM, more than the 32 MiB scoped limit, and the call fails the way the TPU
# compiler does: `Scoped allocation with size 48.00M and limit 32.00M`.
# Realistic tensors must therefore be cut into blocks.

# %% [markdown]
# ## Task 1.1 — the add kernel
#
# **Why.** The kernel is only the body of a loop: it does not know which
# block it has been handed, how big the array is, or how many grid steps
# there are. That is what lets the same four lines serve an unblocked call and
# any blocking you choose later.
#
# **Task.** Write `add_kernel(x_ref, y_ref, z_ref)`: store the elementwise sum
# of the two input blocks into the output block.
#
# **Try it.** The cell after the function calls it with no grid at all, so
# the kernel sees the whole (8, 128) arrays as a single block.


# %%
def add_kernel(x_ref, y_ref, z_ref) -> None:
    """Task 1.1: store x + y for the current block.  [lecture §2.1]

    Any grid, any block shape; all three refs have the same block shape.
      x_ref: (bm, bn)  the current block of x, in VMEM
      y_ref: (bm, bn)  the same block of y
      z_ref: (bm, bn)  the output block; pallas_call copies it back to HBM
    """
    # same as the lecture slide: load both blocks, add, store the result block
    z_ref[:, :] = x_ref[:, :] + y_ref[:, :]


# %%
if __name__ == "__main__":
    _x = np.arange(8 * 128, dtype=np.float32).reshape(8, 128)
    _z = pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(_x.shape, _x.dtype))(_x, _x)
    print("Task 1.1 unblocked add correct:", np.array_equal(_z, 2 * _x))

# %% [markdown]
# ## Task 1.2 — a blocked add
#
# **Why.** A `pallas_call` with a grid behaves like nested loops, the last
# grid axis running fastest. At grid step `(i, j)` each operand's
# `index_map(i, j)` names the **block index** (not an element offset) to work
# on: `BlockSpec((bm, bn), lambda i, j: (i, j))` gives the kernel the block
# `x[i*bm:(i+1)*bm, j*bn:(j+1)*bn]`. The pipeline copies the input blocks in,
# runs the kernel, and copies the output block back. For an elementwise
# operation each element still crosses HBM once in and once out, so blocking
# costs no extra traffic; it only shrinks what must sit in VMEM at a time.
#
# When a dimension is not a multiple of its block, round the grid up with
# `pl.cdiv(dim, block)`. The last block then hangs over the edge: its missing
# part is padded (`pallas_sim` fills it with "poison": NaN for floats, the
# smallest value for integers, so that relying on it shows) and whatever the
# kernel writes there is dropped.
#
# **Task.** Write `blocked_add(x, y, *, block_shape=(256, 256))`: `x + y` for
# 2-D arrays of the same shape through **one** `pl.pallas_call(add_kernel,
# ...)` with grid `(cdiv(M, bm), cdiv(N, bn))`, the BlockSpec above for both
# inputs and the output, and an output of `x`'s shape and dtype.
#
# **Try it.** An f32[1000, 1000] input with (256, 256) blocks needs a (4, 4)
# grid; the kernel computes 16 · 256² = 1,048,576 elements, of which 95.37 %
# are real and the rest padding.


# %%
def blocked_add(x: np.ndarray, y: np.ndarray, *,
                block_shape: tuple[int, int] = (256, 256)) -> np.ndarray:
    """Task 1.2: x + y block by block with add_kernel.  [lecture §2.2]

    x, y: [M, N], same shape; M and N need not be multiples of the block.
    Grid: (cdiv(M, bm), cdiv(N, bn)); every operand uses block (bm, bn) at
    block index (i, j). Returns an array of x's shape and dtype.
    """
    M, N = x.shape
    bm, bn = block_shape
    # round up so the last (partial) block is still covered
    grid = (pl.cdiv(M, bm), pl.cdiv(N, bn))
    block = pl.BlockSpec(block_shape=(bm, bn), index_map=lambda i, j: (i, j))
    out = pl.pallas_call(
        add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=grid,
        in_specs=[block, block],
        out_specs=block,
    )(x, y)
    return out


# %%
if __name__ == "__main__":
    _rng = np.random.default_rng(0)
    _a = _rng.standard_normal((1000, 1000)).astype(np.float32)
    _b = _rng.standard_normal((1000, 1000)).astype(np.float32)
    print("Task 1.2 ragged blocked add correct:", np.allclose(blocked_add(_a, _b), _a + _b))

# %% [markdown]
# ## Task 1.3 — bias add, and why the grid order matters
#
# **Why.** `pallas_call` follows two rules between consecutive grid steps:
#
# 1. an **input** block whose index is the same as at the previous step is
#    not copied again;
# 2. an **output** block whose index is the same stays in VMEM and is written
#    back only when its index changes (and after the last step).
#
# So the order of the grid axes decides how much data moves. Adding a row
# vector `bias[1, N]` to `x[M, N]`: the bias block depends only on the column
# block `j` (index map `(0, j)`). With the grid `(M/bm, N/bn)` the column
# axis is inner, `j` changes at every step, and the bias block is fetched at
# every step. Put the column axis **outer** — grid `(N/bn, M/bm)`, index
# maps written as `lambda j, i: ...` — and one bias block serves a whole
# column of blocks. For f32[1024, 1024] with (128, 128) blocks (an 8 × 8
# grid):
#
# | grid order | x copies | bias copies | output write-backs | DMAs |
# |---|---|---|---|---|
# | column axis inner | 64 | 64 | 64 | 192 |
# | column axis outer | 64 | 8 | 64 | 136 |
#
# **Task.** Write the kernel `_bias_add_kernel` and the wrapper
# `bias_add(x, bias, *, block_shape=(128, 128))` with the column-block axis
# outer. M and N are multiples of the block.
#
# **Try it.** `pallas_sim.trace()` records every call; in a scratch cell:
#
# ```python
# import pallas_sim
# with pallas_sim.trace() as t:
#     bias_add(np.ones((1024, 1024), np.float32), np.ones((1, 1024), np.float32))
# print(t.calls[-1].dma_count)   # 136
# ```


# %%
def _bias_add_kernel(x_ref, bias_ref, o_ref) -> None:
    """Task 1.3 (kernel): store x + bias for the current block.  [lecture §2.2]

    Grid: (N // bn, M // bm), column-block axis outer.
      x_ref:    (bm, bn)  block (i, j) of x
      bias_ref: (1, bn)   block (0, j) of the bias; broadcast over the rows
      o_ref:    (bm, bn)  block (i, j) of the output
    """
    # bias_ref is (1, bn); row 0 broadcasts against the (bm, bn) block
    o_ref[...] = x_ref[...] + bias_ref[0, :]


def bias_add(x: np.ndarray, bias: np.ndarray, *,
             block_shape: tuple[int, int] = (128, 128)) -> np.ndarray:
    """Task 1.3: x[M, N] + bias[1, N] with each bias block fetched once.  [lecture §2.2]

    Grid: (N // bn, M // bm), so j (column block) is the outer axis and i the
    inner one: x and the output use block (bm, bn) at (i, j), the bias block
    (1, bn) at (0, j). DMAs: 2·(M/bm)·(N/bn) + N/bn. Returns x's shape and dtype.

    Raises:
      ValueError: M or N is not a multiple of its block size.
    """
    M, N = x.shape
    bm, bn = block_shape
    if M % bm or N % bn:
        raise ValueError(f"x of shape {x.shape} is not made of whole {block_shape} blocks")
    n_col_blocks = N // bn
    n_row_blocks = M // bm
    # column blocks OUTSIDE, row blocks inside -> the bias block index stays the
    # same for a whole column, so it is only copied n_col_blocks times
    return pl.pallas_call(
        _bias_add_kernel,
        out_shape=jax.ShapeDtypeStruct((M, N), x.dtype),
        grid=(n_col_blocks, n_row_blocks),
        in_specs=[
            pl.BlockSpec((bm, bn), lambda c, r: (r, c)),
            pl.BlockSpec((1, bn), lambda c, r: (0, c)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda c, r: (r, c)),
    )(x, bias)


# %%
if __name__ == "__main__":
    _x = np.arange(256 * 384, dtype=np.float32).reshape(256, 384)
    _bias = np.arange(384, dtype=np.float32).reshape(1, 384)
    print("Task 1.3 bias add correct:", np.array_equal(bias_add(_x, _bias), _x + _bias))

# %% [markdown]
# ## Task 1.4 — updating an array in place
#
# **Why.** An optimizer step `w ← w + Δ` or appending tokens to a KV cache
# does not need a fresh output array: `input_output_aliases={i: o}` tells
# `pallas_call` that output `o` reuses the HBM buffer of input `i`. Nothing
# new is allocated, and the caller's array is the result. One subtlety: the
# output block in VMEM starts **empty** (it is never filled from HBM, even
# when aliased), so the kernel must read the old values through the *input*
# ref and write the new ones through the *output* ref.
#
# **Task.** Write `_accumulate_kernel` and `accumulate_inplace(acc, x, *,
# block_shape=(256, 256))`, which adds `x` into `acc` with `acc` as input 0
# aliased to output 0, and returns what `pallas_call` returns — `acc` itself.
#
# **Try it.** After `out = accumulate_inplace(acc, x)`, `out is acc` holds and
# `acc` contains the sum.


# %%
def _accumulate_kernel(acc_ref, x_ref, out_ref) -> None:
    """Task 1.4 (kernel): out = acc + x for the current block.  [lecture §2.2]

    Grid: (cdiv(M, bm), cdiv(N, bn)); all refs (bm, bn) at block (i, j).
      acc_ref: (bm, bn)  current values of acc (input 0)
      x_ref:   (bm, bn)  the increment (input 1)
      out_ref: (bm, bn)  output 0, aliased to acc in HBM; starts empty in VMEM
    """
    # careful: out_ref shares HBM with acc but its VMEM copy is not loaded,
    # so the old values have to come from acc_ref
    out_ref[...] = acc_ref[...] + x_ref[...]


def accumulate_inplace(acc: np.ndarray, x: np.ndarray, *,
                       block_shape: tuple[int, int] = (256, 256)) -> np.ndarray:
    """Task 1.4: acc + x through input_output_aliases={0: 0}.  [lecture §2.2]

    acc, x: [M, N], same shape. Grid: (cdiv(M, bm), cdiv(N, bn)), every
    operand block (bm, bn) at (i, j). Returns the pallas_call result: the
    output that reuses acc's HBM buffer on a TPU (the caller's acc array keeps
    its values, as JAX arrays are immutable).
    """
    bm, bn = block_shape
    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    kernel_call = pl.pallas_call(
        _accumulate_kernel,
        grid=(pl.cdiv(acc.shape[0], bm), pl.cdiv(acc.shape[1], bn)),
        in_specs=[spec, spec],
        out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(acc.shape, acc.dtype),
        input_output_aliases={0: 0},  # acc (input 0) is reused as output 0
    )
    result = kernel_call(acc, x)
    return result


# %%
if __name__ == "__main__":
    _acc = np.zeros((512, 512), np.float32)
    _out = accumulate_inplace(_acc, np.ones((512, 512), np.float32))
    print("Task 1.4 same array:", _out is _acc, "| updated:", bool((_acc == 1).all()))

# %% [markdown]
# ## Task 1.5 — how much VMEM will a call take?
#
# **Why.** Before launching a kernel you should know whether it fits. The
# estimate is simple arithmetic:
#
# * no BlockSpecs: every operand is resident once, whole;
# * with blocks: every operand holds `buffer_count` buffers of one block.
#   The default of 2 is double buffering: while the kernel works on one
#   block, the next one is being copied into the other buffer (lecture §3).
#
# **Task.** Write `vmem_bytes(shapes, dtypes, block_shape=None,
# buffer_count=2)`. `dtypes` holds one dtype per operand, given as a NumPy
# dtype, a name such as `"float32"` or `"bfloat16"`, or a `jnp` dtype.
# A `None` entry of `block_shape` is a squeezed dimension of size 1.
#
# **Try it.** Three f32[4096, 4096] operands: unblocked 3 × 64 MiB = 192 MiB;
# with (512, 512) blocks, double-buffered, 3 × 2 × 1 MiB = 6 MiB on an
# (8, 8) grid.


# %%
def vmem_bytes(shapes: list[tuple[int, ...]], dtypes: list,
               block_shape: tuple[int | None, ...] | None = None,
               buffer_count: int = 2) -> int:
    """Task 1.5: VMEM bytes a pallas_call allocates for these operands.  [lecture §2.1, §2.2]

    shapes: one shape per operand; dtypes: one dtype per operand (NumPy dtype,
    name, or jnp dtype). block_shape None: each whole array resident once.
    Otherwise each operand holds buffer_count buffers of one block_shape
    block (None entries count as 1). Returns an int number of bytes.
    """
    def bytes_per_elem(dt):
        if isinstance(dt, str) and dt == "bfloat16":
            return 2
        return np.dtype(dt).itemsize

    if block_shape is None:
        # nothing blocked: every array sits in VMEM once, whole
        return sum(math.prod(shape) * bytes_per_elem(dt) for shape, dt in zip(shapes, dtypes))
    # blocked: buffer_count copies of one block per operand (None dims are squeezed = 1)
    block_elems = math.prod(b for b in block_shape if b is not None)
    return buffer_count * block_elems * sum(bytes_per_elem(dt) for dt in dtypes)


# %%
if __name__ == "__main__":
    _mib = 2**20
    print("Task 1.5 unblocked 2048²:", vmem_bytes([(2048, 2048)] * 3, ["float32"] * 3) / _mib)
    print("Task 1.5 unblocked 4096²:", vmem_bytes([(4096, 4096)] * 3, [np.float32] * 3) / _mib)
    print("Task 1.5 (512, 512) blocks:",
          vmem_bytes([(4096, 4096)] * 3, [np.float32] * 3, block_shape=(512, 512)) / _mib)
