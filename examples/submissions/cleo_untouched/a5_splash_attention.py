# %% [markdown]
# # Assignment 5 — Splash Attention  (lecture §6)
#
# Flash Attention (assignment 4) visits every (query block, key block) pair.
# Most real attention patterns forbid large parts of the score matrix:
# a causal model never looks ahead, a sliding-window model looks only at the
# last few thousand tokens, and a packed batch of documents must never let one
# document see another. Cut the `[L, L]` mask into blocks and each block falls
# into one of three kinds:
#
# * **empty** — no query in the block may see any key of the block: skip it;
# * **full**  — every pair is allowed: compute it with no mask at all;
# * **partial** — some pairs are allowed: compute it and apply the mask.
#
# Splash Attention ("sparse flash") turns the mask into a small table of the
# non-empty blocks *once*, before the kernel runs, and gives the kernel a grid
# that walks only over those blocks. The table lives in SMEM and the index
# maps read it to decide which query, key/value and mask block to fetch.
#
# **How to work.** Fill in every `raise NotImplementedError(...)` stub and keep
# names and signatures: the grader calls them by name. Allowed imports:
# `numpy`, `math`, `functools`, `itertools`, `dataclasses`, `typing`,
# `pallas_sim`. Check your progress with
# `pallas-lab check a5_splash_attention.py`. The example cells run only when
# the file is executed as a script or notebook.

# %%
import numpy as np

from pallas_sim import jax, jnp, pl, pltpu  # noqa: F401  (needed in Task 5.4)

# %% [markdown]
# ## Task 5.1 — masks as boolean arrays
#
# **Why.** Every mask here is a bool array `[q_len, kv_len]` in which `True`
# means "this query may attend to this key". Writing each kind as its own
# function and combining them with `&` keeps each rule simple:
#
# * causal: query `q` sees key `kv` when `q + offset >= kv` (the offset lets a
#   block of new queries sit after `offset` cached keys);
# * local window `(left, right)`: `q - left <= kv <= q + right`, where `None`
#   leaves that side unbounded;
# * documents: query and key carry segment ids, and only equal ids see each
#   other.
#
# **Task.** Write `causal_mask`, `local_mask` and `segment_mask`. When
# `kv_len` (or `kv_segment_ids`) is not given it equals the query side.
#
# **Try it.** `causal_mask(4)` is the lower triangle; `local_mask(6, (1, 0))`
# keeps the diagonal and the one below it.


# %%
def causal_mask(q_len: int, kv_len: int | None = None, *, offset: int = 0) -> np.ndarray:
    """Task 5.1: the causal mask, bool [q_len, kv_len], True where q + offset >= kv.  [lecture §6.1]

    kv_len defaults to q_len. offset (any int) shifts the queries' positions.
    """
    raise NotImplementedError("Need to implement for Task 5.1")


def local_mask(q_len: int, window: tuple[int | None, int | None],
               kv_len: int | None = None) -> np.ndarray:
    """Task 5.1: sliding-window mask, bool [q_len, kv_len].  [lecture §6.1]

    window = (left, right): True where q - left <= kv <= q + right; a side that
    is None is unbounded. kv_len defaults to q_len.
    """
    raise NotImplementedError("Need to implement for Task 5.1")


def segment_mask(q_segment_ids: np.ndarray,
                 kv_segment_ids: np.ndarray | None = None) -> np.ndarray:
    """Task 5.1: document mask, bool [q_len, kv_len], True where the ids are equal.  [lecture §6.4]

    q_segment_ids: int [q_len]; kv_segment_ids: int [kv_len], default the
    query ids.
    """
    raise NotImplementedError("Need to implement for Task 5.1")


# %%
if __name__ == "__main__":
    print("Task 5.1 causal_mask(4):\n", causal_mask(4).astype(int))
    print("Task 5.1 local_mask(6, (1, 0)):\n", local_mask(6, (1, 0)).astype(int))
    _docs = np.repeat([0, 1, 2], [2, 3, 1])
    print("Task 5.1 documents 2/3/1 and causal:\n",
          (segment_mask(_docs) & causal_mask(6)).astype(int))

# %% [markdown]
# ## Task 5.2 — the block picture
#
# **Why.** The kernel works on `(block_q, block_kv)` tiles, so what matters is
# the kind of each tile: code it as `0` (empty), `1` (partial) or `2` (full).
# For a causal mask of length 8 in 2 × 2 blocks the picture is
#
# ```
# P · · ·
# F P · ·
# F F P ·
# F F F P
# ```
#
# the diagonal tiles are partial, everything below is full and everything
# above is skipped: 10 of 16 tiles are computed and only 4 need a mask.
#
# **Task.** `classify_blocks(mask, block_q, block_kv)` returns an int8 array
# `[q_len // block_q, kv_len // block_kv]` of 0/1/2.
# `render_block_mask(block_mask)` draws it: one line per query block, cells
# `"·"`, `"P"`, `"F"` separated by single spaces, lines joined by `"\n"`.


# %%
def classify_blocks(mask: np.ndarray, block_q: int, block_kv: int) -> np.ndarray:
    """Task 5.2: kind of every (q block, kv block) tile, int8 [nq, nkv].  [lecture §6.1]

    mask: bool [q_len, kv_len], both lengths multiples of their block size.
    0 = no True entry, 1 = some but not all True, 2 = all True.
    """
    raise NotImplementedError("Need to implement for Task 5.2")


def _require_divides(block_name: str, block: int, length_name: str, length: int) -> None:
    """Raise ValueError unless ``block`` is a positive divisor of ``length``."""
    if block < 1 or length % block:
        raise ValueError(f"{block_name}={block} does not divide {length_name}={length}; "
                         "the mask must split into whole blocks")


def render_block_mask(block_mask: np.ndarray) -> str:
    """Task 5.2: the block picture, one line per q block of "·" / "P" / "F".  [lecture §6.1]

    block_mask: int [nq, nkv] of 0 (empty), 1 (partial), 2 (full).
    """
    raise NotImplementedError("Need to implement for Task 5.2")


# %%
if __name__ == "__main__":
    print("Task 5.2 causal L 8, blocks 2 x 2:")
    print(render_block_mask(classify_blocks(causal_mask(8), 2, 2)))

# %% [markdown]
# ## Task 5.3 — the MaskInfo table (the heart of Splash)
#
# **Why.** The kernel's grid is `(heads, A)` where `A` is the number of
# non-empty ("active") tiles. Step `g` must know which tile it is working on,
# so the builder lists the active tiles in row-major order (query block, then
# key block) and stores, per tile:
#
# * `active_rows[g]`, `active_cols[g]` — the tile's query and key block;
# * `block_mask[g]` — 1 (partial) or 2 (full);
# * `mask_next[g]` — which stored pattern the mask block spec should fetch.
#   Partial tiles often repeat: in a causal mask with square blocks every
#   diagonal tile is the same lower triangle, so only **distinct** patterns
#   are stored, in `partial_mask_blocks` (in order of first appearance). A
#   partial tile points at its own pattern. A full tile does not need a mask,
#   so it points at the pattern of the *next* partial tile (wrapping around
#   to the first): the pattern the pipeline will need soon is already in
#   VMEM, and no extra copy happens;
# * `bounds_start[g]` / `bounds_end[g]` — is this the first / last active tile
#   of its query row of tiles? The kernel initializes its accumulators at the
#   first and normalizes and writes the output at the last.
#
# The lecture's example: causal `[4096, 4096]` with blocks `(1024, 2048)` is a
# 4 × 2 tile grid `[[P, ·], [P, ·], [F, P], [F, P]]`, giving
# `active_rows = [0, 1, 2, 2, 3, 3]`, `active_cols = [0, 0, 0, 1, 0, 1]`,
# `block_mask = [1, 1, 2, 1, 2, 1]`, `mask_next = [0, 1, 0, 0, 1, 1]` and only
# 2 patterns for 4 partial tiles: tiles (0, 0) and (2, 1) start at the same
# query-minus-key offset and look alike, and so do (1, 0) and (3, 1).
#
# **Task.** `build_mask_info(mask, block_q, block_kv)` returns the `MaskInfo`
# below (dtypes as annotated). Raise `ValueError` when a block size does not
# divide its length (name the block size) and when some query row can attend
# to no key at all (name the first such row): softmax over nothing is
# undefined.


# %%
import functools  # noqa: E402  (the standard library, for Tasks 5.3 and 5.4)
import math  # noqa: E402
from typing import NamedTuple  # noqa: E402


class MaskInfo(NamedTuple):
    """The sparse execution table of a mask, over its A active tiles in row-major order.

    active_rows: int32 [A]     query block of each active tile
    active_cols: int32 [A]     key/value block of each active tile
    block_mask: int8 [A]       1 = partial tile, 2 = full tile
    mask_next: int32 [A]       pattern id to fetch at this step
    partial_mask_blocks: bool [P, block_q, block_kv]   the distinct partial patterns
    bounds_start: bool [A]     first active tile of its query row
    bounds_end: bool [A]       last active tile of its query row
    """

    active_rows: np.ndarray
    active_cols: np.ndarray
    block_mask: np.ndarray
    mask_next: np.ndarray
    partial_mask_blocks: np.ndarray
    bounds_start: np.ndarray
    bounds_end: np.ndarray


def build_mask_info(mask: np.ndarray, block_q: int, block_kv: int) -> MaskInfo:
    """Task 5.3: the MaskInfo of a bool [q_len, kv_len] mask.  [lecture §6.2]

    Raises ValueError when block_q / block_kv does not divide its length, or
    when a query row has no True entry (naming the first such row).
    """
    raise NotImplementedError("Need to implement for Task 5.3")


# %%
if __name__ == "__main__":
    _info = build_mask_info(causal_mask(4096), 1024, 2048)
    for _name, _value in _info._asdict().items():
        _shown = _value.shape if _name == "partial_mask_blocks" else _value.astype(int).tolist()
        print(f"Task 5.3 {_name}: {_shown}")

# %% [markdown]
# ## Task 5.4 — the Splash kernel and its wrapper
#
# **Why.** The grid is `(H, A)`: head, then active tile. With
# `pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=6, ...)` the first six
# call arguments are small int32 arrays copied to SMEM before the kernel
# starts; every index map receives them after the grid indices, and the
# kernel receives them as its first six refs. Pass them in this order:
# `active_rows, active_cols, mask_next, bounds_start, bounds_end, block_mask`
# (bounds as 0/1, block_mask as 1/2). The index maps then read:
#
# * q block and output block: `(h, active_rows[g], 0)`;
# * k and v blocks: `(h, active_cols[g], 0)`;
# * mask block: `(mask_next[g], 0, 0)` of `partial_mask_blocks`.
#
# Because consecutive steps often name the same block (the same query row, or
# a full tile whose `mask_next` already points at the coming pattern),
# pallas_call's rule "same block index, no copy" does the rest: q is fetched
# once per query row, and the output is written back once per query row.
#
# The kernel body is Flash Attention's online softmax (assignment 4):
# initialize `m`, `l`, `acc` where `bounds_start` is set, update them on every
# tile, and normalize and write `o_ref` where `bounds_end` is set. Apply the
# mask only on partial tiles (`block_mask == 1`); a full tile needs none, and
# the mask block it receives belongs to another tile. Masked scores must
# contribute exactly zero.
#
# **Task.** Write `splash_attention_kernel` and `splash_attention(q, k, v,
# mask_info, *, sm_scale=None)` for q, k, v `[H, L, d]` / `[H, L, dv]`,
# returning float32 `[H, L, dv]`. Read the block sizes from
# `mask_info.partial_mask_blocks.shape`; when there is no pattern at all
# (every active tile is full) pass a single `(1, block_q, block_kv)` array of
# True instead, so the mask operand still exists. `sm_scale` defaults to
# `1 / sqrt(d)`; semantics `("parallel", "arbitrary")`.
#
# **Base-2 exponent** (`use_base2_exp=True`, lecture §6.6), as in assignment 4's
# kernel: multiply the scaled scores by `log2(e)` before masking, keep `m` in
# those units and use `jnp.exp2` for `p` and `alpha`; the output is the same
# within rounding. Both functions take the keyword (default False); the wrapper
# hands it to the kernel. Graded: the output, and the final `m` of the kernel,
# which must be the row maximum times `log2(e)`.

# %%
#: Score of a masked pair: very negative but finite, so a row with every key of a
#: tile masked gives exp(0) * 0 instead of NaN from (-inf) - (-inf).
MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)
#: log2(e): exp(x) == exp2(x * LOG2_E) (use_base2_exp).
LOG2_E = float(np.log2(np.e))


def splash_attention_kernel(active_rows_ref, active_cols_ref, mask_next_ref, bounds_start_ref,
                            bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref, mask_ref,
                            o_ref, m_scratch_ref, l_scratch_ref, acc_scratch_ref, *,
                            sm_scale: float, block_q: int, block_kv: int,
                            use_base2_exp: bool = False) -> None:
    """Task 5.4: one (head, active tile) step of Splash Attention.  [lecture §6.3]

    Grid: (H, A). Prefetch refs (SMEM, int32 [A]): active_rows, active_cols,
    mask_next, bounds_start (0/1), bounds_end (0/1), block_mask (1/2).
      q_ref:    (block_q, d)         query block active_rows[g]
      k_ref:    (block_kv, d)        key block active_cols[g]
      v_ref:    (block_kv, dv)       value block active_cols[g]
      mask_ref: (block_q, block_kv)  bool pattern partial_mask_blocks[mask_next[g]]
      o_ref:    (block_q, dv)        float32 output block, written at bounds_end
      m_scratch_ref, l_scratch_ref: f32 (block_q, 128)  running max and sum
      acc_scratch_ref:              f32 (block_q, dv)   unnormalized output
    use_base2_exp: scores and m times log2(e), exp2 instead of exp (lecture §6.6).
    """
    raise NotImplementedError("Need to implement for Task 5.4")


def splash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask_info: MaskInfo, *,
                     sm_scale: float | None = None, use_base2_exp: bool = False) -> np.ndarray:
    """Task 5.4: attention over the active tiles of mask_info, one pallas_call.  [lecture §6.3]

    q: [H, L, d]; k: [H, L, d]; v: [H, L, dv]; mask_info: a MaskInfo of an
    [L, L] mask. Grid (H, A) with six scalar-prefetch arrays. Returns float32
    [H, L, dv]. use_base2_exp is handed to the kernel.
    """
    raise NotImplementedError("Need to implement for Task 5.4")


# %%
if __name__ == "__main__":
    _rng = np.random.default_rng(0)
    _q, _k, _v = (_rng.standard_normal((2, 512, 64)).astype(np.float32) for _ in range(3))
    _mask = causal_mask(512)
    _out = splash_attention(_q, _k, _v, build_mask_info(_mask, 64, 64))
    _s = np.einsum("hqd,hkd->hqk", _q.astype(np.float64), _k) / 8.0
    _s = np.where(_mask, _s, -np.inf)
    _p = np.exp(_s - _s.max(axis=-1, keepdims=True))
    _dense = np.einsum("hqk,hkd->hqd", _p / _p.sum(axis=-1, keepdims=True), _v)
    print(f"Task 5.4 causal L 512, blocks 64: largest difference from float64 "
          f"{np.abs(_out - _dense).max():.1e}")

# %% [markdown]
# ## Task 5.5 — what the sparsity buys
#
# **Why.** Two numbers summarize a mask for a given tiling: how much compute
# it saves (`num_blocks / num_active`, the factor by which the grid shrinks)
# and how much memory the stored patterns cost (one byte per mask element per
# distinct pattern). At `L = 16384` with `1024`-blocks a causal mask needs one
# pattern (1 MiB) and saves almost 2×; adding a block-aligned window of 2048
# keys makes the band much thinner and adds a second pattern (the window's
# edge, 2 MiB in all). Document masks have boundaries anywhere, so nearly
# every partial tile is a new pattern — one reason production kernels compute
# such masks on the fly from positions and segment ids instead of storing them.
#
# **Task.** `mask_stats(mask, block_q, block_kv)` returns a dict with int
# entries `num_blocks`, `num_active`, `num_partial`, `num_full`,
# `num_patterns`, `pattern_bytes` and the float `compute_saving`.


# %%
def mask_stats(mask: np.ndarray, block_q: int, block_kv: int) -> dict[str, int | float]:
    """Task 5.5: block counts, stored-pattern bytes and the compute saving.  [lecture §6.4]

    mask: bool [q_len, kv_len]. Returns {"num_blocks", "num_active",
    "num_partial", "num_full", "num_patterns", "pattern_bytes" (ints),
    "compute_saving" (float, num_blocks / num_active)}.
    """
    raise NotImplementedError("Need to implement for Task 5.5")


# %%
if __name__ == "__main__":
    _L, _b = 64, 8
    _docs64 = np.repeat(np.arange(4), [10, 22, 17, 15])
    _kinds = {
        "causal": causal_mask(_L),
        "local window (16, 0)": local_mask(_L, (16, 0)),
        "documents 10/22/17/15": segment_mask(_docs64),
        "causal & documents": causal_mask(_L) & segment_mask(_docs64),
    }
    for _label, _m in _kinds.items():
        _stats = mask_stats(_m, _b, _b)
        print(f"Task 5.5 {_label}: saving {_stats['compute_saving']:.2f}x, "
              f"{_stats['num_patterns']} patterns")
        print(render_block_mask(classify_blocks(_m, _b, _b)))
    _big = causal_mask(16384)
    print("Task 5.5 L 16384 causal:", mask_stats(_big, 1024, 1024))
    print("Task 5.5 L 16384 causal & window 2048:",
          mask_stats(_big & local_mask(16384, (2048, None)), 1024, 1024))

# %% [markdown]
# ## Your kernel at a long sequence (not graded)
#
# `pallas_sim.estimate` runs your `splash_attention` on shapes only (q, k, v
# as shapes; the MaskInfo as the real small tables it is) and predicts its time
# on one Ironwood TensorCore (docs/performance-model.md). `pallas-lab profile
# a5_splash_attention.py` does this for a causal mask at L 8192 and draws the
# block map. Try block sizes 512, 1024 and 2048 for causal, local-window and
# document masks (§6.5): where does skipping more tiles stop paying for the
# fixed cost of each extra step?

# %%
if __name__ == "__main__":
    import pallas_sim  # only for the estimate below

    _info = build_mask_info(causal_mask(8192), 1024, 1024)
    _q = jax.ShapeDtypeStruct((16, 8192, 128), jnp.bfloat16)
    _t = pallas_sim.estimate(splash_attention, _q, _q, _q, _info).timelines[0]
    print(f"predicted causal L 8192, block 1024, 16 heads: {_t.time_s * 1e3:.3f} ms, "
          f"{_t.num_steps} steps, MFU {_t.mfu * 100:.1f} %")

# %% [markdown]
# ## Task 5.6 — masks computed inside the kernel
#
# **Why.** Task 5.4 keeps every distinct partial pattern in HBM and copies one
# `(block_q, block_kv)` pattern into VMEM for each partial tile. That is cheap
# for a causal mask (one pattern) but not for documents: at `L = 16384` with
# `1024`-blocks a causal mask stores 1 pattern (1 MiB), a causal sliding window
# of 2048 keys stores 2 (2 MiB), and a packed batch of documents stored 28
# (28 MiB) in the lecture's example, because almost every partial tile cuts
# the documents somewhere else. Yet each of these masks is a rule about two
# tokens — their positions and their segment ids — so a tile's mask can be
# rebuilt from a handful of comparisons on the vector unit. The kernel then
# needs only per-token data (`L` positions and `L` ids, not `L²` mask bits),
# and no mask ever travels from HBM.
#
# **What.** The MaskInfo table still drives the grid (empty tiles are still
# skipped, full tiles still need no mask), but `partial_mask_blocks` is left
# in HBM: read only its *shape*, for the block sizes. Prefetch five arrays,
# `active_rows, active_cols, bounds_start, bounds_end, block_mask` (int32),
# and pass four per-token int32 inputs beside q, k and v:
#
# * query positions as a column `[L, 1]`, blocks `(block_q, 1)` at `(active_rows[g], 0)`;
# * key positions as a row `[1, L]`, blocks `(1, block_kv)` at `(0, active_cols[g])`;
# * query and key segment ids, laid out the same way.
#
# Comparing a `(block_q, 1)` column with a `(1, block_kv)` row broadcasts to the
# tile. Query `i` may see key `j` when their segment ids are equal and, if
# `causal`, `q_pos[i] >= kv_pos[j]` and, for `window=(left, right)`,
# `q_pos[i] - left <= kv_pos[j] <= q_pos[i] + right` (a side that is `None` is
# unbounded). These are the masks of Task 5.1 written with positions, so
# `causal=True` with query positions shifted by `offset` is
# `causal_mask(L, offset=offset)`. Apply the computed mask only on partial
# tiles, as in Task 5.4.
#
# `splash_attention_computed_mask(q, k, v, mask_info, *, causal=False,
# window=None, q_positions=None, kv_positions=None, q_segment_ids=None,
# kv_segment_ids=None, sm_scale=None)`: positions default to `0, 1, ..., L-1`,
# query segment ids to one document, key segment ids to the query ids.
# `mask_info` must be the MaskInfo of the same mask (the grader builds it with
# Task 5.3's reference). Grading compares the output with dense attention on
# causal, local-window and document masks and their `&`, and reads the call's
# trace: an input that carries mask bits (`partial_mask_blocks` or a dense
# mask) loses the "no mask from HBM" points even when the values are right.
#
# **Try it.** The example below packs three documents with positions that
# restart in each one, builds the MaskInfo from the dense mask only to get the
# table, and compares the result with the dense computation.

# %%
def splash_computed_mask_kernel(active_rows_ref, active_cols_ref, bounds_start_ref,
                                bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref,
                                q_pos_ref, kv_pos_ref, q_ids_ref, kv_ids_ref, o_ref,
                                m_scratch_ref, l_scratch_ref, acc_scratch_ref, *,
                                sm_scale: float, block_q: int, block_kv: int, causal: bool,
                                window: tuple[int | None, int | None] | None) -> None:
    """Task 5.6: one (head, active tile) step with the tile's mask computed.  [lecture §6.6]

    Grid: (H, A). Prefetch refs (SMEM, int32 [A]): active_rows, active_cols,
    bounds_start (0/1), bounds_end (0/1), block_mask (1/2).
      q_ref:      (block_q, d)        query block active_rows[g]
      k_ref:      (block_kv, d)       key block active_cols[g]
      v_ref:      (block_kv, dv)      value block active_cols[g]
      q_pos_ref:  (block_q, 1)  int32 positions of the block's queries
      kv_pos_ref: (1, block_kv) int32 positions of the block's keys
      q_ids_ref:  (block_q, 1)  int32 segment ids of the queries
      kv_ids_ref: (1, block_kv) int32 segment ids of the keys
      o_ref:      (block_q, dv)       float32 output block, written at bounds_end
      m_scratch_ref, l_scratch_ref: f32 (block_q, 128); acc_scratch_ref: f32 (block_q, dv)
    causal, window: the static mask rule (window = (left, right), None sides unbounded).
    """
    raise NotImplementedError("Need to implement for Task 5.6")


def splash_attention_computed_mask(
        q: np.ndarray, k: np.ndarray, v: np.ndarray, mask_info: MaskInfo, *,
        causal: bool = False, window: tuple[int | None, int | None] | None = None,
        q_positions: np.ndarray | None = None, kv_positions: np.ndarray | None = None,
        q_segment_ids: np.ndarray | None = None, kv_segment_ids: np.ndarray | None = None,
        sm_scale: float | None = None) -> np.ndarray:
    """Task 5.6: Splash Attention whose partial masks are computed in the kernel.  [lecture §6.6]

    q: [H, L, d]; k: [H, L, d]; v: [H, L, dv]; mask_info: the MaskInfo of the
    same [L, L] mask (only the shape of partial_mask_blocks is read). Positions
    and segment ids: int [L] (defaults: 0..L-1; one document; kv ids = q ids).
    One pallas_call, grid (H, A), five scalar-prefetch arrays. Returns float32
    [H, L, dv].
    """
    raise NotImplementedError("Need to implement for Task 5.6")


# %%
if __name__ == "__main__":
    _rng = np.random.default_rng(1)
    _sizes = [40, 56, 32]
    _ids = np.repeat(np.arange(3), _sizes)
    _pos = np.concatenate([np.arange(n) for n in _sizes])  # positions restart per document
    _q, _k, _v = (_rng.standard_normal((2, 128, 32)).astype(np.float32) for _ in range(3))
    _mask = segment_mask(_ids) & (_pos[:, None] >= _pos[None, :])
    _info = build_mask_info(_mask, 16, 16)
    _out = splash_attention_computed_mask(_q, _k, _v, _info, causal=True, q_positions=_pos,
                                          kv_positions=_pos, q_segment_ids=_ids)
    _s = np.einsum("hqd,hkd->hqk", _q.astype(np.float64), _k) / math.sqrt(32)
    _s = np.where(_mask, _s, -np.inf)
    _p = np.exp(_s - _s.max(axis=-1, keepdims=True))
    _dense = np.einsum("hqk,hkd->hqd", _p / _p.sum(axis=-1, keepdims=True), _v)
    print(f"Task 5.6 causal documents 40/56/32, blocks 16: {len(_info.active_rows)} active "
          f"tiles, {_info.partial_mask_blocks.shape[0]} patterns left in HBM, largest "
          f"difference from float64 {np.abs(_out - _dense).max():.1e}")

    import pallas_sim  # only for the estimate below

    # Predicted time on one Ironwood TensorCore (pallas_sim.estimate, shapes only), causal
    # L 8192 in 1024 blocks with 16 heads: the stored patterns of Task 5.4 against the
    # masks computed here. Which costs more, a pattern's copy or its comparisons?
    _causal = build_mask_info(causal_mask(8192), 1024, 1024)
    _big = jax.ShapeDtypeStruct((16, 8192, 128), jnp.bfloat16)
    for _name, _call in (
            ("stored patterns (5.4)", lambda: pallas_sim.estimate(
                splash_attention, _big, _big, _big, _causal)),
            ("computed masks (5.6)", lambda: pallas_sim.estimate(
                splash_attention_computed_mask, _big, _big, _big, _causal, causal=True))):
        _line = _call().timelines[0]
        print(f"predicted {_name}: {_line.time_s * 1e3:.3f} ms, MFU {_line.mfu * 100:.1f} %")

# %% [markdown]
# ## Task 5.7 — performance: choose the block size
#
# **Why.** Lecture §6.5: the block size of Splash is a trade. Small tiles
# follow the mask closely and skip almost every masked pair, but each active
# tile is a grid step with a fixed cost (about a microsecond, §4.2) and its
# own copies, and small tiles feed the MXU poorly. Large tiles mean few steps,
# but a tile that the mask cuts is computed whole, masked pairs included. The
# best size depends on the mask. `pallas_sim.estimate` runs your own
# `splash_attention` on shapes at full size and predicts its time on one
# Ironwood TensorCore, so you can measure the trade instead of guessing.
#
# **The problem.** L = 8192; bf16 q, k `[128, 8192, 192]` and v
# `[128, 8192, 128]` (the lecture's Splash configuration, §6.6: 128 query
# heads, q/k head dim 192, v head dim 128), float32 output. Three masks
# `[8192, 8192]`, named by the string your function receives:
#
# * `"causal"`: `causal_mask(8192)`;
# * `"local"`: causal with a window of 2048 earlier keys,
#   `local_mask(8192, (2048, 0))` (the lecture's "causal ∧ window 2048");
# * `"document"`: five packed documents of 1000, 2000, 1096, 2500 and 1596
#   tokens, in that order: `segment_mask(ids)` with
#   `ids = np.repeat(np.arange(5), [1000, 2000, 1096, 2500, 1596])`
#   (document mask only, as Exercise 12).
#
# **Task.** Write `choose_splash_blocks(mask_kind)` returning
# `(block_q, block_kv)` for that mask, each one of **256, 512, 1024, 2048,
# 4096**. This is a **performance** task, and it grades the *choice*: for each
# mask your blocks must be within 10 % of the fastest legal candidate **for
# your own kernel**, so a correct kernel slower than the lecture's can still
# earn every point at the blocks that are best for it. Legal means the call
# runs within the 32 MiB scoped VMEM: the `(block_q, block_kv)` bool pattern
# is double-buffered like every other block, so a choice that does not fit
# fails with the out-of-memory error a real run gives. Points: 1 when all
# three choices run, then 3 per mask within 10 %.
#
# **How the time is computed.** The grader times your
# `splash_attention_kernel` (Task 5.4) inside its own standard Splash
# `pallas_call`: the call Task 5.4 asks your wrapper to make (grid `(H, A)`,
# the six prefetch arrays, the block specs above, semantics `("parallel",
# "arbitrary")` and the default 32 MiB scoped VMEM), over the MaskInfo it
# builds with its own builder. Your wrapper and any compiler parameters it
# passes are not part of the timed call. Your kernel runs on a small problem
# at your blocks, one head with a few tiles that include every kind of step
# the mask has there (partial and full tiles, the first and last tile of a
# query row): once on data, whose output is checked against attention, and
# once on shapes only, whose op counts must be the same (otherwise there is
# no time: "your kernel does different work when it runs on shapes only").
# Each grid step of the full problem, every skipped tile skipped, then does
# the work measured for its kind of step, through the same timeline model as
# `pallas_sim.estimate`; your code never runs at full size. Your kernel is
# not run at the other candidates either: its work there is *projected* from
# what it did at your blocks, op kind by op kind and kind of step by kind of
# step, as the reference kernel's work changes between your blocks and that
# candidate. The fastest projected legal candidate is the bar; when your
# kernel does what the reference does, it is the reference's best.
#
# **Try it.** The time at your blocks is the one `pallas_sim.estimate` gives
# your own `splash_attention` at full size when it makes the call Task 5.4
# asks for, so you can run the same sweep yourself:
# for each mask, build the MaskInfo at each candidate with your Task 5.3,
# estimate your wrapper on `jax.ShapeDtypeStruct` shapes and keep the
# fastest that fits. The cell below does it for a few candidates (the
# MaskInfo takes a second or so per tiling); add the others to see the
# trade. How many active tiles does each tiling give, and how many of the
# computed scores are masked?
#
# The grader calls your chooser under a time limit of a few seconds, so
# sweep in a cell or a script of your own and return the winner as
# constants (a chooser that runs the sweep itself times out).


# %%
def choose_splash_blocks(mask_kind: str) -> tuple[int, int]:
    """Task 5.7 (performance): (block_q, block_kv) for one mask at L 8192.  [lecture §6.5]

    mask_kind: "causal", "local" (causal, window of 2048 earlier keys) or
    "document" (documents of 1000/2000/1096/2500/1596 tokens). For bf16 q, k
    [128, 8192, 192], v [128, 8192, 128] on one Ironwood TensorCore through
    your kernel in the standard Splash call: each block one of 256, 512, 1024,
    2048, 4096, the call within the 32 MiB scoped VMEM; full points within 10 %
    of the fastest legal candidate's predicted time for your own kernel.
    """
    raise NotImplementedError("Need to implement for Task 5.7")


# %%
if __name__ == "__main__":
    import pallas_sim  # only for the estimate below

    _ids = np.repeat(np.arange(5), [1000, 2000, 1096, 2500, 1596])
    _masks = {"causal": causal_mask(8192), "local": local_mask(8192, (2048, 0)),
              "document": segment_mask(_ids)}
    _q = jax.ShapeDtypeStruct((128, 8192, 192), jnp.bfloat16)
    _v = jax.ShapeDtypeStruct((128, 8192, 128), jnp.bfloat16)
    for _kind, _m in _masks.items():
        for _blocks in ((512, 512), (1024, 1024), choose_splash_blocks(_kind)):
            _info = build_mask_info(_m, *_blocks)
            _t = pallas_sim.estimate(splash_attention, _q, _q, _v, _info).timelines[0]
            print(f"Task 5.7 {_kind} {_blocks}: {len(_info.active_rows)} active tiles, "
                  f"predicted {_t.time_s * 1e3:.3f} ms, MFU {_t.mfu * 100:.1f} %, VMEM "
                  f"{_t.vmem_bytes / 2**20:.1f} MiB")
