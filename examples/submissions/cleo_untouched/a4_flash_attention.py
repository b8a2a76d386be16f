# %% [markdown]
# # Assignment 4 — Flash Attention  (lecture §5)
#
# Plain attention computes the scores `S = Q Kᵀ` for a whole sequence, a
# matrix of L × L entries per head, writes it to HBM, reads it back for the
# softmax, writes the probabilities, and reads them again to multiply by V.
# At L = 4096 that traffic, not the arithmetic, decides the run time. Flash
# Attention never lets the score matrix leave VMEM: it walks over the keys
# block by block and keeps, per query row, a small **softmax state**
#
# * `m`   — the largest score seen so far,
# * `l`   — the sum of `exp(s - m)` over the scores seen so far,
# * `acc` — the unnormalized output `Σ exp(s - m) · v` over the same keys,
#
# which is enough to finish the softmax exactly once all keys have been
# visited. Shapes used throughout: `m`, `l` are `[..., rows]`, `acc` is
# `[..., rows, dv]`.
#
# **How to work.** Fill in every `raise NotImplementedError(...)` stub and
# keep names and signatures. Allowed imports: `numpy`, `math`, `functools`,
# `itertools`, `dataclasses`, `typing`, `pallas_sim`. Check your progress with
# `pallas-lab check a4_flash_attention.py`.

# %%
import numpy as np

from pallas_sim import jax, jnp, pl, pltpu

#: log2(e) ≈ 1.4427: exp(x) == exp2(x * LOG2_E) (Task 4.3's use_base2_exp).
LOG2_E = float(np.log2(np.e))

# %% [markdown]
# ## Task 4.1 — online softmax
#
# **Why.** `softmax(x)_i = exp(x_i - M) / Σ_j exp(x_j - M)` needs the row
# maximum `M` (subtracting it keeps `exp` from overflowing) and the sum over
# the whole row, yet Flash Attention sees a row one block at a time. The
# trick is to keep the pair `(m, l)` for the part already seen and repair it
# whenever a block raises the maximum:
#
# ```
# m_new = max(m, max(block))
# l     = l · exp(m - m_new) + Σ exp(block - m_new)
# ```
#
# The factor `exp(m - m_new)` re-expresses the old sum relative to the new
# maximum; it is 1 when the maximum did not move. After the last block `m` is
# the row maximum and `l` the row's sum, so `exp(x - m) / l` is exactly the
# softmax. Nothing is approximated; only the order of the work changes.
#
# **Task.** Write `online_softmax(x, block_size)` for `x` of shape `[n]` or
# `[rows, n]` (any `n ≥ 1`; the last block may be shorter). Start from
# `m = -inf`, `l = 0`, visit `block_size` columns at a time, record `(m, l)`
# after every block, and return `(probs, trace)`.
#
# **Masked entries.** In attention a masked key has the score `-inf`, so `x`
# may hold `-inf` (never `+inf` or NaN). The contract for them:
#
# * a `-inf` entry gets probability exactly 0, and the other entries of its
#   row share the whole probability as if it were not there
#   (`[-inf, -inf, 1, 2]` gives `[0, 0, 0.2689, 0.7311]`);
# * while every entry seen so far in a row is `-inf`, the row's state is the
#   *empty* one, `m = -inf` and `l = 0` (the same empty state as in Task 4.2),
#   and that is what the trace records;
# * a row whose entries are all `-inf` has no softmax: its probabilities are
#   all 0.
#
# The straightforward update breaks here: when `m` and `max(block)` are both
# `-inf`, `exp(m - m_new)` and `exp(block - m_new)` are `exp(-inf - (-inf))`,
# which is NaN. Subtract 0 instead of `m_new` while `m_new` is `-inf` (every
# term is then `exp(-inf) = 0`), and do not divide by a zero `l`.
#
# **Try it.** `x = (1, 3, 2, 5, 0, 4)` in blocks of 2 gives the trace
# `(3, 1.1353), (5, 1.2034), (5, 1.5781)`: the second block raises the
# maximum from 3 to 5, so the first sum is scaled by `e⁻²` before the new
# terms are added.


# %%
def online_softmax(x: np.ndarray, block_size: int
                   ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Task 4.1: softmax over the last axis, block_size columns at a time.  [lecture §5.1]

    x: [n] or [rows, n], n >= 1, finite or -inf (a masked entry); block_size >= 1
    need not divide n.
    Returns (probs, trace): probs has x's shape, 0 at -inf entries and 0 in a row
    that is all -inf; trace holds one (m, l) pair per block, each an array of
    shape x.shape[:-1] (m: running maximum, l: running sum of exp(x - m); the
    empty state m = -inf, l = 0 while a row has shown only -inf).
    """
    raise NotImplementedError("Need to implement for Task 4.1")


# %%
if __name__ == "__main__":
    _probs, _trace = online_softmax(np.array([1.0, 3, 2, 5, 0, 4]), 2)
    print("Task 4.1 trace:", [(float(m), round(float(s), 4)) for m, s in _trace])
    _probs, _trace = online_softmax(np.array([2.0, 0, 4, 1]), 2)
    print("Task 4.1 exercise 7:", [(float(m), round(float(s), 4)) for m, s in _trace],
          np.round(_probs, 4))
    _probs, _trace = online_softmax(np.array([[-np.inf, -np.inf, 1, 2],
                                              [-np.inf, -np.inf, -np.inf, -np.inf]]), 2)
    print("Task 4.1 masked rows:", np.round(_probs, 4).tolist(),
          [(m.tolist(), s.tolist()) for m, s in _trace])

# %% [markdown]
# ## Task 4.2 — merging two partial states, and finishing one
#
# **Why.** Suppose the keys of a row are split into two disjoint groups and
# each group has been summarized into its own state `(m₁, l₁, acc₁)` and
# `(m₂, l₂, acc₂)`. Both can be rewritten relative to the common maximum
# `m = max(m₁, m₂)`: multiply `l₁` and `acc₁` by `exp(m₁ - m)` and the second
# state by `exp(m₂ - m)`, then add. The result is the state of the union,
# exactly as if all keys had been seen together. Because the recipe treats
# the two sides alike, merging is commutative and associative: the keys can
# be processed left to right (Flash Attention), or handed to different chips
# and combined afterwards (split-KV decoding, Ring Attention).
#
# The division by `l` is postponed to the very end (`acc / l`): inside the
# loop only multiplications and additions happen.
#
# **Task.** Write `merge_attention_states(state_a, state_b)` returning the
# merged `(m, l, acc)`, and `finalize_attention_state(state)` returning
# `acc / l[..., None]`. A state with `m = -inf`, `l = 0` and `acc = 0` stands
# for "no keys yet" (a row whose keys are all masked). Merging two of those
# gives the same empty state, without NaN (`exp(m₁ - m)` is
# `exp(-inf - (-inf))` there: use 0 in place of a `-inf` maximum, as in
# Task 4.1), and merging an empty state with any state `S` gives `S`.
# Finishing an empty state (`0 / 0`) is not defined.
#
# **Try it.** The cell below splits one row of six keys into a left and a
# right part, summarizes each, merges them both ways round, and compares the
# finished result with ordinary softmax attention.


# %%
def merge_attention_states(
    state_a: tuple[np.ndarray, np.ndarray, np.ndarray],
    state_b: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Task 4.2: the state of the union of two disjoint key sets.  [lecture §5.1]

    Each state is (m, l, acc): m, l [..., rows]; acc [..., rows, dv].
    Returns (m, l, acc) of the same shapes, with m = max(m_a, m_b) and both
    sides rescaled to it. Commutative and associative.
    """
    raise NotImplementedError("Need to implement for Task 4.2")


def finalize_attention_state(
    state: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Task 4.2: the attention output acc / l of a finished state.  [lecture §5.2]

    state: (m, l, acc) with m, l [..., rows] and acc [..., rows, dv].
    Returns [..., rows, dv].
    """
    raise NotImplementedError("Need to implement for Task 4.2")


# %%
if __name__ == "__main__":
    _scores = np.array([[1.0, 3, 2, 5, 0, 4]])
    _values = np.arange(12.0).reshape(6, 2)

    def _summary(s, v):
        top = s.max(axis=-1)
        w = np.exp(s - top[..., None])
        return top, w.sum(axis=-1), w @ v

    _left = _summary(_scores[:, :2], _values[:2])
    _right = _summary(_scores[:, 2:], _values[2:])
    _lr = merge_attention_states(_left, _right)
    _rl = merge_attention_states(_right, _left)
    _p = np.exp(_scores - _scores.max()) / np.exp(_scores - _scores.max()).sum()
    print("Task 4.2 merge == whole row:", np.allclose(finalize_attention_state(_lr), _p @ _values))
    print("Task 4.2 commutative:", all(np.array_equal(a, b) for a, b in zip(_lr, _rl, strict=True)))

# %% [markdown]
# ## Task 4.3 — the Flash Attention kernel
#
# **Why.** One grid step sees one head, one block of `block_q` queries and
# one block of `block_kv` keys and values. The grid is
# `(heads, L / block_q, L / block_kv)` with the KV axis **last**: for a fixed
# (head, q block) the KV blocks arrive in consecutive steps, so the output
# block and three scratch accumulators stay in VMEM for the whole sweep.
#
# | scratch | shape | holds |
# |---|---|---|
# | `m_scratch_ref` | f32 (block_q, 128) | running row maximum `m` |
# | `l_scratch_ref` | f32 (block_q, 128) | running `Σ exp(s - m)` |
# | `acc_scratch_ref` | f32 (block_q, dv) | running `Σ exp(s - m) · v`, not yet divided |
#
# `m` and `l` hold one number per query row, but a TPU vector register is
# 8 × 128, so the row value is kept repeated across 128 lanes; read it back
# as a column with `ref[:, :1]`.
#
# One step does, for its (block_q, block_kv) tile of scores:
#
# 1. `s = (q @ kᵀ) · sm_scale` in f32 (bf16 inputs, f32 accumulation:
#    `preferred_element_type=jnp.float32`); with `soft_cap`, `s = cap·tanh(s/cap)`;
#    with `causal`, `s = -inf` where the key's position exceeds the query's.
#    The order matters: the cap comes *before* the mask. Capping a masked
#    score would turn `-inf` into `-cap`, a finite score, and the masked key
#    would get a weight (large when the cap is small).
# 2. `m_new = max(m_prev, rowmax(s))` and the **rescale**
#    `alpha = exp(m_prev - m_new)`: the old `l` and `acc` were expressed
#    relative to `m_prev`; multiplying by `alpha` re-expresses them relative to
#    `m_new` (the same repair as in Task 4.1, now applied to `acc` too).
# 3. `p = exp(s - m_new)`, `l = alpha·l + rowsum(p)`, `acc = alpha·acc + p @ v`.
#
# Scratch memory starts as garbage (the simulator fills it with NaN), so the
# first KV block must **initialize** `m = -inf`, `l = 0`, `acc = 0`
# (`pl.when(pl.program_id(2) == 0)`). Why `-inf` and not 0: scores can be
# very negative. When every score of a row lies below about -87, a maximum
# stuck at 0 gives `exp(s - 0)` that underflows float32 to 0 for every key,
# so `l = 0` and the row comes out as `0 / 0`. The division by `l` is
# **deferred** to the last KV block: the loop itself only multiplies and adds,
# and the one division per row happens once.
#
# **Causal attention** masks key position `j` > query position `i`. Positions
# are global: `i = q_block · block_q + row`, `j = kv_block · block_kv + col`,
# with the block indices from `pl.program_id(1)` and `pl.program_id(2)`. A
# whole tile is masked when its first key comes after its last query,
# `kv_block · block_kv > (q_block + 1) · block_q - 1`. Such a step must do
# **no work at all** — wrap the update in `pl.when(...)` — which saves almost
# half of the FLOPs for long sequences. The finishing division must stay
# outside that `pl.when`: for early query blocks the last KV block is one of
# the skipped ones.
#
# **Max Logit Estimate** (`max_logit_const = c`, Task 4.5): use the constant
# `c` as `m` throughout. Then `alpha` is always 1: no row maximum, no rescale,
# just `p = exp(s - c)`. It is exact as long as `c` lies in the safe range of
# Task 4.5. Outside that range it is not, and the grader uses this to see
# that your kernel really subtracts `c`: given a constant far above every
# score, `exp(s - c)` is 0 for every key, `l = 0`, and no row can come out as
# the softmax (a kernel that quietly keeps the running maximum would).
# Deferring the division matters here too: inside the safe range a single KV
# block can still be far below `c` for some row (`l` is 0 after it), so a
# kernel that divides by `l` at every step gets `0 / 0` there.
#
# **Base-2 exponent** (`use_base2_exp=True`, lecture §6.6). The EUP computes
# `2ˣ` natively; `eˣ` is `2^(x·log2 e)`, one extra multiply per element. A
# kernel can fold that multiply into the scores once: after scaling (and
# capping), multiply `s` by `log2(e) ≈ 1.4427`, keep `m` in those base-2 units
# (a constant `c` becomes `c·log2 e` too), and use `jnp.exp2` wherever the
# update used `jnp.exp`, both for `p` and for `alpha`. Since
# `2^(s·log2 e - m·log2 e) = e^(s - m)`, `l`, `acc` and the output are the
# same numbers, within rounding. The option is off by default; the grader
# checks the output and that the final `m` is the row maximum in base-2 units
# (`log2(e) · max s`).
#
# The grader runs your kernel inside its own `pallas_call` (grid, BlockSpecs
# and scratch as above), so this task is graded on its own, before the
# wrapper. It also reads the trace: at a fully masked causal step your kernel
# must not read `k_ref` or `v_ref` (the trace records, per grid step, how
# often the kernel read each input ref).
#
# **Try it.** The cell after Task 4.4 compares `flash_attention` with dense
# attention, causal and not.


# %%
def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale: float, causal: bool, block_q: int,
                           block_kv: int, soft_cap: float | None = None,
                           max_logit_const: float | None = None,
                           use_base2_exp: bool = False) -> None:
    """Task 4.3: one (head, q block, kv block) step of Flash Attention.  [lecture §5.2]

    Grid: (H, L // block_q, L // block_kv), kv block last.
      q_ref:   (block_q, d)     query block (f32 or bf16)
      k_ref:   (block_kv, d)    key block
      v_ref:   (block_kv, dv)   value block
      o_ref:   (block_q, dv)    f32 output block, written at the last kv block
      m_scratch_ref, l_scratch_ref: f32 (block_q, 128)  running max and sum,
                                    each row's value repeated over 128 lanes
      acc_scratch_ref:              f32 (block_q, dv)   unnormalized output
    sm_scale multiplies the scores; causal masks key position > query
    position; soft_cap (or None) caps scaled scores at cap·tanh(s / cap);
    max_logit_const (or None) replaces the running max by a constant;
    use_base2_exp keeps scores and m in base-2 units (times log2 e) and uses
    exp2 (lecture §6.6).
    """
    raise NotImplementedError("Need to implement for Task 4.3")


# %% [markdown]
# ## Task 4.4 — the Flash Attention wrapper
#
# **Why.** The wrapper turns the kernel into attention over whole arrays. It
# chooses
#
# * the grid `(H, L // block_q, L // block_kv)`, marked
#   `("parallel", "parallel", "arbitrary")`: heads and query blocks are
#   independent of each other (a TPU may split them across cores), the KV axis
#   is a reduction into the scratch accumulators and must run in order;
# * the BlockSpecs. Arrays are 3-D (`[heads, L, features]`) but the kernel
#   wants 2-D tiles, so the head dimension is given as `None`: it is squeezed
#   out of the ref while the index map still chooses it. Q and O use block
#   `(None, block_q, d|dv)` at `(h, i, 0)`; K and V use `(None, block_kv, d|dv)`
#   at `(kv_head, j, 0)`;
# * **grouped-query attention**: with `Hkv` kv heads shared by `H` query heads,
#   each group of `H // Hkv` consecutive query heads reads the same K and V,
#   `kv_head = h // (H // Hkv)`. Only the index map knows; the kernel is
#   unchanged, and HBM holds `H / Hkv` times less K and V;
# * the scratch buffers `pltpu.VMEM((block_q, 128), jnp.float32)` twice and
#   `pltpu.VMEM((block_q, dv), jnp.float32)`, and the f32 output
#   `[H, L, dv]`.
#
# `sm_scale` defaults to `1/sqrt(d)`; `soft_cap`, `max_logit_const` and
# `use_base2_exp` go to the kernel unchanged. `pl.pallas_call` passes a kernel only
# refs, so fix the keyword arguments first (a small inner function, a `lambda`
# or `functools.partial`).
#
# **One length.** This is self-attention: q, k and v share the sequence
# length `L`, and the causal mask compares query position `i` with key
# position `j` of the same sequence. Keys of another length (a KV cache
# longer than the queries, say) would need a decision about how the two
# sequences line up, which this kernel does not make; so when `k` or `v`
# does not have q's length, `flash_attention` raises `ValueError` with a
# message naming both lengths, before any pallas_call (graded). Without that
# check the grid would follow q's length and quietly ignore the extra keys,
# or read past the end of shorter ones.
#
# The result is **float32** `[H, L, dv]` whatever the input dtype (graded):
# the accumulation is f32 and the output block is f32.
#
# The grader compares your call's trace with the intended one: grid and
# semantics, block shapes, the block index of every operand at every step
# (this is where a wrong kv head shows), one output write-back per
# (head, q block), VMEM bytes and scratch shapes.


# %%
def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = False,
                    sm_scale: float | None = None, block_q: int = 128, block_kv: int = 128,
                    soft_cap: float | None = None, max_logit_const: float | None = None,
                    use_base2_exp: bool = False) -> np.ndarray:
    """Task 4.4: Flash Attention through one pallas_call.  [lecture §5.2]

    q: [H, L, d]; k: [Hkv, L, d]; v: [Hkv, L, dv], H % Hkv == 0 (query head h
    reads kv head h // (H // Hkv)). Grid (H, L // block_q, L // block_kv).
    sm_scale defaults to 1/sqrt(d); soft_cap, max_logit_const and use_base2_exp
    are the kernel's (Task 4.3). Returns float32 [H, L, dv].
    Raises ValueError when k or v does not have q's length L (the message
    names both lengths), when H is not a multiple of Hkv, or when a block
    size does not divide L.
    """
    raise NotImplementedError("Need to implement for Task 4.4")


# %%
if __name__ == "__main__":
    import pallas_sim  # only for the trace printed below

    def _dense(q, k, v, masked):
        group = q.shape[0] // k.shape[0]
        kk, vv = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
        s = np.einsum("hid,hjd->hij", q, kk) * q.shape[-1] ** -0.5
        future = np.triu(np.ones(s.shape[-2:], bool), 1) & masked
        s = np.where(future, -np.inf, s)
        w = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("hij,hjd->hid", w / w.sum(-1, keepdims=True), vv)

    _rng = np.random.default_rng(0)
    _q = _rng.standard_normal((4, 64, 16)).astype(np.float32)
    _k = _rng.standard_normal((2, 64, 16)).astype(np.float32)   # GQA: groups of 2 heads
    _v = _rng.standard_normal((2, 64, 8)).astype(np.float32)
    for _causal in (False, True):
        with pallas_sim.trace() as _t:
            _out = flash_attention(_q, _k, _v, causal=_causal, block_q=16, block_kv=16)
        _reads = _t.last.role("in")[1].kernel_reads
        print(f"Task 4.4 causal={_causal}: max error "
              f"{np.abs(_out - _dense(_q, _k, _v, _causal)).max():.1e}, K read at "
              f"{int((_reads > 0).sum())} of {_reads.size} steps")
    _base2 = flash_attention(_q, _k, _v, causal=True, block_q=16, block_kv=16,
                             use_base2_exp=True)
    _error = np.abs(_base2 - _dense(_q, _k, _v, True)).max()
    print(f"Task 4.3 use_base2_exp: max error {_error:.1e}")


# %% [markdown]
# ## Task 4.5 — when is a constant as good as the maximum?
#
# **Why.** Finding the running maximum costs a reduction per block and a
# rescale of `acc` whenever it grows. Max Logit Estimate replaces `m` by a
# constant `c` chosen in advance. The softmax does not care which constant is
# subtracted (it cancels between numerator and denominator); only float32
# does. Two things can go wrong:
#
# * `exp(s - c)` **overflows** when `s - c` exceeds `ln(float32 max) ≈ 88.72`,
#   so we need `max_logit - c < 88.72`;
# * a row whose scores are all far below `c` ends up in **subnormals** (and
#   then zero): `exp(s - c)` for the row's maximum must stay at or above the
#   smallest normal number, `ln(tiny) ≈ -87.34`, so we need
#   `c - min_row_max < 87.34`.
#
# A soft cap `cap · tanh(s / cap)` bounds every score by `cap`, which makes
# `c = cap` safe from overflow by construction.
#
# **Task.** Write `mle_safe_range(max_logit, min_row_max)` returning the open
# interval `(low, high)` of safe constants as two floats.
#
# **Try it.** Scores between −30 and 40: about `(-48.7, 57.3)`.


# %%
def mle_safe_range(max_logit: float, min_row_max: float) -> tuple[float, float]:
    """Task 4.5: open interval of safe Max-Logit-Estimate constants.  [lecture §5.4]

    max_logit: the largest score anywhere; min_row_max: the smallest of the
    row maxima. Returns (low, high) with low = max_logit - ln(f32 max) and
    high = min_row_max - ln(f32 smallest normal).
    """
    raise NotImplementedError("Need to implement for Task 4.5")


# %%
if __name__ == "__main__":
    print("Task 4.5 scores in [-30, 40]:", tuple(round(c, 1) for c in mle_safe_range(40, -30)))

# %% [markdown]
# ## Task 4.6 — traffic and work: why Flash Attention is compute-bound
#
# **Why.** Count the bytes that cross HBM and compare with the arithmetic.
# Take the lecture's layer: H = 128 heads, L = 4096, d = 192 for queries and
# keys, dv = 128 for values; Q, K, V in bf16 (2 bytes), output and scores in
# f32 (4 bytes). On one Ironwood core (3685.5 GB/s of HBM bandwidth,
# 1028.75 TFLOP/s peak):
#
# * **XLA-style attention** materializes the f32 scores `[H, L, L]` (8 GiB):
#   written once, read twice (softmax, then the product with V), on top of
#   reading Q, K, V and writing O once: 24.75 GiB, at least 7.21 ms.
# * **Flash Attention** reads Q once, but K and V once **per query block**
#   (every Q block sweeps all keys), and writes O once. With
#   `block_q = 1024` that is 1728 MiB (1.69 GiB, about 0.49 ms); doubling
#   `block_q` to 2048 halves the K/V re-reads: 1088 MiB.
# * **Work**: `2·H·L²·(d + dv)` FLOPs for the two matrix products, 1.3744e12,
#   about 1.34 ms at peak.
#
# Put the two side by side with the machine's balance point,
# 1028.75e12 / 3685.5e9 ≈ 279 FLOP per byte (lecture §4.2):
#
# | | HBM bytes | time for the bytes | FLOP per byte | bound by |
# |---|---|---|---|---|
# | XLA-style | 24.75 GiB | 7.21 ms | ≈ 52 | memory (7.21 ms ≫ 1.34 ms) |
# | Flash, block_q 1024 | 1728 MiB | 0.49 ms | ≈ 759 | compute (1.34 ms > 0.49 ms) |
#
# The FLOPs are the same in both; Flash Attention only removed the bytes —
# the 8 GiB score matrix never leaves VMEM — and that moves it from the
# memory-bound side of the roofline to the compute-bound side. A larger
# `block_q` re-reads K and V fewer times and pushes the intensity further.
#
# **Task.** Write the three counting functions. Return Python ints. When
# `block_q` does not divide `L`, the last, shorter query block still reads
# all of K and V.


# %%
def flash_attention_hbm_bytes(H: int, L: int, d: int, dv: int, block_q: int, *,
                              in_bytes: int = 2, out_bytes: int = 4) -> int:
    """Task 4.6: HBM bytes moved by Flash Attention.  [lecture §5.2]

    Q [H, L, d] read once; K [H, L, d] and V [H, L, dv] read once per query
    block (cdiv(L, block_q) times); O [H, L, dv] written once.
    """
    raise NotImplementedError("Need to implement for Task 4.6")


def xla_attention_hbm_bytes(H: int, L: int, d: int, dv: int, *, in_bytes: int = 2,
                            score_bytes: int = 4, out_bytes: int = 4) -> int:
    """Task 4.6: HBM bytes moved by unfused attention.  [lecture §5.2]

    Scores [H, L, L] written once and read twice; Q, K [H, L, d] and
    V [H, L, dv] read once; O [H, L, dv] written once.
    """
    raise NotImplementedError("Need to implement for Task 4.6")


def attention_flops(H: int, L: int, d: int, dv: int) -> int:
    """Task 4.6: FLOPs of non-causal attention, 2·H·L²·(d + dv).  [lecture §5.2]

    Q Kᵀ costs 2·H·L²·d, the product with V 2·H·L²·dv.
    """
    raise NotImplementedError("Need to implement for Task 4.6")


# %%
if __name__ == "__main__":
    _mib, _gib, _bw, _peak = 2**20, 2**30, 3685.5e9, 1028.75e12
    _flash = flash_attention_hbm_bytes(128, 4096, 192, 128, 1024)
    _xla = xla_attention_hbm_bytes(128, 4096, 192, 128)
    _flops = attention_flops(128, 4096, 192, 128)
    print(f"Task 4.6 flash {_flash / _mib:.0f} MiB ({_flash / _bw * 1e3:.3f} ms), "
          f"block_q 2048: {flash_attention_hbm_bytes(128, 4096, 192, 128, 2048) / _mib:.0f} MiB")
    print(f"Task 4.6 xla {_xla / _gib:.2f} GiB ({_xla / _bw * 1e3:.3f} ms), "
          f"{_flops:.4e} FLOP ({_flops / _peak * 1e3:.3f} ms at peak)")

# %% [markdown]
# ## Task 4.7 — micro-tiling the KV block (`bkv_compute`)
#
# **Why.** The kernel of Task 4.3 builds the whole `(block_q, block_kv)`
# tile of scores, then its `exp`, before it touches `v`. Large blocks are
# what make the kernel fast (fewer grid steps, more reuse of each Q block),
# but those tiles are float32 and live in vector registers while the softmax
# runs: two `[2048, 2048]` f32 arrays are 32 MiB, far more than a
# TensorCore's register file, so the compiler spills them to VMEM and the
# matrix unit waits for the vector unit. Micro-tiling keeps the DMA block
# large and the *computation* narrow: K and V still arrive `block_kv` rows
# at a time, but inside one grid step the kernel walks over the block
# `bkv_compute` keys at a time and folds each slice into the softmax state
# before it looks at the next. The scores never exist as more than a
# `(block_q, bkv_compute)` tile. (Lecture §5.3: at 4096 × 4096 blocks the two
# score arrays shrink from 128 MiB to 32 MiB with `bkv_compute = 1024`; the
# slides' exercise runs `block_q = block_kv = 2048` with `bkv_compute = 512`.)
#
# Nothing about the mathematics is new: each slice is one more block of the
# online softmax of Task 4.1, so the update of Task 4.3 — new maximum,
# rescale `alpha`, `p = exp(s - m_new)`, `l` and `acc` — is simply applied
# `block_kv // bkv_compute` times per grid step, with `m`, `l` and `acc` in
# the same scratch buffers (or carried through the loop and stored at the
# end).
#
# **Task.** Write `flash_attention_kernel_microtiled`: the refs, the grid and
# `sm_scale`, `causal`, `block_q`, `block_kv` exactly as in Task 4.3, plus
# `bkv_compute`, a divisor of `block_kv`. Slice K and V inside the kernel,
# `k_ref[pl.ds(start, bkv_compute), :]` (a Python `for` over the static
# slice starts, or `jax.lax.fori_loop`), and compute scores, mask and update
# for one slice at a time. With `causal`, a key's position now also counts
# the slice's offset inside the block: `kv_block · block_kv + start + col`.
# Skipping fully masked KV blocks works as in Task 4.3 (not graded here).
#
# **How it is graded.** Values as in Task 4.3 (dense attention, same
# tolerances, causal and not). Then the trace: the simulator records, per
# `pallas_call`, the elements of the largest array that an operation inside
# the kernel produced (`call.largest_intermediate`: results of arithmetic,
# `exp`, casts and products; loading a ref, `broadcast_to` and other layout
# changes do not count). With head dims no larger than `bkv_compute` — as in
# the lecture, where `bkv_compute` is 512 or 1024 and d is 192 — that number
# must be `block_q × bkv_compute`. A kernel that ignores `bkv_compute` gets
# the right values and `block_q × block_kv` there; keep per-row values such
# as `m` and `l` as `(block_q, 1)` columns, as in Task 4.3.
#
# **Try it.** `pallas-lab check a4_flash_attention.py --task 4.7` runs your
# kernel in the grader's `pallas_call` (Task 4.3's grid, BlockSpecs and
# scratch), compares it with dense attention and reports its largest
# intermediate next to `block_q × bkv_compute`.


# %%
def flash_attention_kernel_microtiled(q_ref, k_ref, v_ref, o_ref, m_scratch_ref,
                                      l_scratch_ref, acc_scratch_ref, *, sm_scale: float,
                                      causal: bool, block_q: int, block_kv: int,
                                      bkv_compute: int) -> None:
    """Task 4.7: one Flash Attention step scoring bkv_compute keys at a time.  [lecture §5.3]

    Grid, refs and scratch as in Task 4.3: q_ref (block_q, d), k_ref (block_kv, d),
    v_ref (block_kv, dv), o_ref f32 (block_q, dv), m/l scratch f32 (block_q, 128),
    acc scratch f32 (block_q, dv). bkv_compute divides block_kv; the largest array
    computed in the kernel is then (block_q, bkv_compute) (when d, dv <= bkv_compute).
    """
    raise NotImplementedError("Need to implement for Task 4.7")


# %% [markdown]
# ## Your kernel at the lecture's size (not graded)
#
# `pallas_sim.estimate` runs your `flash_attention` on shapes only at the
# lecture's DeepSeek-V3 size (128 heads, L 4096, d 192, dv 128, bf16) and
# predicts its time on one Ironwood TensorCore from the work your kernel does
# per step (docs/performance-model.md). `pallas-lab profile
# a4_flash_attention.py` prints the lecture's three configurations with a
# timeline of the first steps. The slides measured 2048 × 2048 blocks at
# 3.36 ms, 2.64 ms with Max Logit Estimate, and 1024-row query blocks 19 %
# slower: does your kernel show the same ordering, and which part of a step
# (MXU, vector work, copies, fixed cost) does MLE remove?

# %%
if __name__ == "__main__":
    import pallas_sim  # only for the estimate below

    _q = jax.ShapeDtypeStruct((128, 4096, 192), jnp.bfloat16)
    _v = jax.ShapeDtypeStruct((128, 4096, 128), jnp.bfloat16)
    for _bq, _bkv, _c in ((1024, 2048, None), (2048, 2048, None), (2048, 2048, 70.0)):
        _t = pallas_sim.estimate(flash_attention, _q, _q, _v, block_q=_bq, block_kv=_bkv,
                                 max_logit_const=_c).timelines[0]
        print(f"predicted bq {_bq}, bkv {_bkv}{' + MLE' if _c else ''}: "
              f"{_t.time_s * 1e3:.3f} ms, MFU {_t.mfu * 100:.1f} %")


# %% [markdown]
# ## Task 4.8 — performance: choose the blocks and MLE
#
# **Why.** The cell above predicts your `flash_attention` at the slides'
# three settings. Two forces decide the speed. Taller query blocks mean K
# and V are streamed from HBM fewer times (Task 4.6) and the grid has fewer
# steps, each with its fixed cost; wider kv blocks halve the steps too. But
# every step holds its scores and their exp, two f32 [block_q, block_kv]
# arrays, in VMEM (Task 4.7): 32 MiB at 2048 × 2048, 128 MiB at 4096 × 4096,
# and one Ironwood TensorCore has 64 MiB. Max Logit Estimate removes the row
# maximum and the rescale of l and acc from every step (Task 4.5 says when
# its constant is safe).
#
# **Task.** Write `choose_flash_config()` returning `(block_q, block_kv,
# max_logit_const)` for the lecture's layer: bf16 q, k [128, 4096, 192],
# v [128, 4096, 128], non-causal, on one Ironwood TensorCore. block_q and
# block_kv must each be one of **256, 512, 1024, 2048, 4096** (all divide
# L = 4096); max_logit_const is **None** (MLE off) or **70.0** (MLE on, the
# slides' constant). A choice is legal when your kernel's blocks
# (double-buffered), its scratch and two f32 tiles of the largest array it
# computes fit in **64 MiB** of VMEM. This is a **performance** task, and it
# grades the *choice*: full points when the predicted time of your kernel at
# your choice is within **10 %** of the fastest legal candidate **for your
# own kernel** (3 of its 10 points for a legal choice at which your kernel
# runs correctly).
#
# **How the time is computed.** The grader times your
# `flash_attention_kernel` (Task 4.3) inside its own standard `pallas_call`
# (grid (H, L/block_q, L/block_kv), the kv axis last, m, l, acc scratch);
# your wrapper is not part of it. Your kernel runs on a small problem at
# your choice, one head, one q block and three kv blocks: once on data (the
# output is checked) and once on shapes only (the op counts must be the
# same). Each full-size step does the work measured for its kind of step,
# through the same timeline model as `pallas_sim.estimate`. Your kernel is
# not run at the other candidates: its work there is *projected* from what
# it did at your choice, op kind by op kind, as the reference kernel's work
# changes between your choice and that candidate. The fastest projected
# candidate is the bar; when your kernel does what the reference does, it
# is the reference's best.
#
# **Run the same sweep yourself.** For every candidate `c`, call
# `pallas_sim.estimate(flash_attention, q, q, v, sm_scale=192 ** -0.5,
# block_q=c[0], block_kv=c[1], max_logit_const=c[2])` on
# `jax.ShapeDtypeStruct`s of bf16 [128, 4096, 192] (q, k) and
# [128, 4096, 128] (v); keep the candidates whose
# `est.calls[0].vmem_bytes + 8 * est.calls[0].largest_intermediate` is at
# most 64 MiB and compare `est.timelines[0].time_s`: when your
# `flash_attention` makes the intended call, the time at your choice is the
# grader's, and the best of the sweep is the grader's bar when your kernel's
# extra work (if any) grows with the blocks as the reference's does.
# The grader calls your chooser under a time limit of a few seconds, so
# sweep in a cell or a script of your own and return the winner as
# constants (a chooser that runs the sweep itself times out).
#
# **Try it.** The cell below predicts your choice and the slides' three
# settings; `pallas-lab profile a4_flash_attention.py` shows a timeline.
# Which part of a step does MLE remove, and which tiles are too big?


# %%
def choose_flash_config() -> tuple[int, int, float | None]:
    """Task 4.8 (performance): (block_q, block_kv, max_logit_const).  [lecture §5.3, §5.4]

    For bf16 q, k [128, 4096, 192], v [128, 4096, 128], non-causal, on one
    Ironwood TensorCore: block_q and block_kv each one of 256, 512, 1024,
    2048, 4096; max_logit_const None (MLE off) or 70.0 (MLE on). Legal when
    the double-buffered blocks, the scratch and two f32 [block_q, block_kv]
    score tiles fit 64 MiB of VMEM. Full points within 10 % of the fastest
    legal candidate's predicted time. Returns the three values that
    ``flash_attention`` takes as block_q, block_kv and max_logit_const.
    """
    raise NotImplementedError("Need to implement for Task 4.8")


# %%
if __name__ == "__main__":
    import pallas_sim  # only for the estimate below

    _q = jax.ShapeDtypeStruct((128, 4096, 192), jnp.bfloat16)
    _v = jax.ShapeDtypeStruct((128, 4096, 128), jnp.bfloat16)
    for _config in ((1024, 2048, None), (2048, 2048, None), (2048, 2048, 70.0),
                    choose_flash_config()):
        _est = pallas_sim.estimate(flash_attention, _q, _q, _v, block_q=_config[0],
                                   block_kv=_config[1], max_logit_const=_config[2])
        _t, _tile = _est.timelines[0], 8 * _est.calls[0].largest_intermediate
        print(f"Task 4.8 predicted with {_config}: {_t.time_s * 1e3:.3f} ms, MFU "
              f"{_t.mfu * 100:.1f} %, VMEM {(_t.vmem_bytes + _tile) / 2**20:.0f} MiB "
              "with the score tiles")
