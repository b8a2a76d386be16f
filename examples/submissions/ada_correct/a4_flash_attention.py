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

import functools

from pallas_sim import jax, jnp, pl, pltpu
import math

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
# **Try it.** `x = (1, 3, 2, 5, 0, 4)` in blocks of 2 gives the trace
# `(3, 1.1353), (5, 1.2034), (5, 1.5781)`: the second block raises the
# maximum from 3 to 5, so the first sum is scaled by `e⁻²` before the new
# terms are added.


# %%
def online_softmax(x: np.ndarray, block_size: int
                   ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Task 4.1: softmax over the last axis, block_size columns at a time.  [lecture §5.1]

    x: [n] or [rows, n], n >= 1; block_size >= 1 need not divide n.
    Returns (probs, trace): probs has x's shape; trace holds one (m, l) pair
    per block, each an array of shape x.shape[:-1] (m: running maximum,
    l: running sum of exp(x - m)).
    """
    x = np.asarray(x, dtype=np.float64)  # do everything in float64, simpler
    n = x.shape[-1]
    m = np.full(x.shape[:-1], -np.inf)
    l = np.zeros(x.shape[:-1])
    trace = []
    i = 0
    while i < n:
        chunk = x[..., i:i + block_size]
        m_new = np.maximum(m, np.max(chunk, axis=-1))
        # rows that saw only -inf so far stay empty (m = -inf, l = 0): use 0 as the shift
        # there, so that no exp(-inf - (-inf)) = NaN appears
        shift = np.where(np.isneginf(m_new), 0.0, m_new)
        # old sum was relative to the old max -> multiply by exp(m - m_new)
        l = l * np.exp(m - shift) + np.sum(np.exp(chunk - np.expand_dims(shift, -1)), axis=-1)
        m = m_new
        trace.append((m, l))
        i += block_size
    shift = np.where(np.isneginf(m), 0.0, m)
    top = np.exp(x - np.expand_dims(shift, -1))
    bottom = np.broadcast_to(np.expand_dims(l, -1), top.shape)
    # a row of only -inf has l = 0: no softmax there, all zeros
    probs = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), 0.0)
    return probs, trace


# %%
if __name__ == "__main__":
    _probs, _trace = online_softmax(np.array([1.0, 3, 2, 5, 0, 4]), 2)
    print("Task 4.1 trace:", [(float(m), round(float(s), 4)) for m, s in _trace])
    _probs, _trace = online_softmax(np.array([2.0, 0, 4, 1]), 2)
    print("Task 4.1 exercise 7:", [(float(m), round(float(s), 4)) for m, s in _trace],
          np.round(_probs, 4))

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
# `acc / l[..., None]`. A state with `m = -inf` and `l = 0` stands for "no
# keys yet"; merging two of those must not produce NaN.
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
    m1, l1, o1 = state_a
    m2, l2, o2 = state_b
    m = np.maximum(m1, m2)
    # two empty states: exp(-inf - (-inf)) = nan, should just be weight 0
    with np.errstate(invalid="ignore"):
        a1 = np.nan_to_num(np.exp(m1 - m))
        a2 = np.nan_to_num(np.exp(m2 - m))
    l = a1 * l1 + a2 * l2
    o = a1[..., None] * o1 + a2[..., None] * o2
    return (m, l, o)


def finalize_attention_state(
    state: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Task 4.2: the attention output acc / l of a finished state.  [lecture §5.2]

    state: (m, l, acc) with m, l [..., rows] and acc [..., rows, dv].
    Returns [..., rows, dv].
    """
    m, l, o = state
    return o / l[..., None]


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
# ## Task 4.3 — the Flash Attention kernel  (not graded in this release)
#
# **Why.** One grid step handles one head, one block of queries and one block
# of keys and values: grid `(heads, L / block_q, L / block_kv)` with the KV
# axis last, so the output block and the three accumulators stay in VMEM for
# the whole sweep over the keys. Each step computes the scores of its block,
# updates `m` and `l` as in Task 4.1, rescales `acc` by the same
# `exp(m_prev - m_new)` and adds `exp(s - m_new) @ v`. It divides by `l`
# once, at the last KV block. `m` and `l` are kept as (block_q, 128) arrays
# (the row's value repeated across the 128 lanes of a vector register).
#
# **Task.** Arrives with the next release of this assignment.


# %%
def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, m_scratch_ref, l_scratch_ref,
                           acc_scratch_ref, *, sm_scale: float, causal: bool, block_q: int,
                           block_kv: int, soft_cap: float | None = None,
                           max_logit_const: float | None = None,
                           use_base2_exp: bool = False) -> None:
    """Task 4.3: one (head, q block, kv block) step of Flash Attention.  [lecture §5.2]

    Grid: (H, L // block_q, L // block_kv), kv block last.
      q_ref:   (block_q, d)     query block
      k_ref:   (block_kv, d)    key block
      v_ref:   (block_kv, dv)   value block
      o_ref:   (block_q, dv)    output block, written at the last kv block
      m_scratch_ref, l_scratch_ref: f32 (block_q, 128)  running max and sum
      acc_scratch_ref:              f32 (block_q, dv)   unnormalized output
    """
    qi = pl.program_id(1)
    kj = pl.program_id(2)
    n_kv = pl.num_programs(2)
    # base 2: exp(x) = 2 ** (x * log2(e)), so scale the scores once and use exp2
    log2e = 1.4426950408889634 if use_base2_exp else 1.0
    expf = jnp.exp2 if use_base2_exp else jnp.exp

    @pl.when(kj == 0)
    def init():
        if max_logit_const is None:
            m_scratch_ref[:, :] = jnp.full(m_scratch_ref.shape, -jnp.inf, jnp.float32)
        else:
            m_scratch_ref[:, :] = jnp.full(m_scratch_ref.shape, max_logit_const * log2e,
                                           jnp.float32)
        l_scratch_ref[:, :] = jnp.zeros_like(l_scratch_ref)
        acc_scratch_ref[:, :] = jnp.zeros_like(acc_scratch_ref)

    # skip the tiles above the diagonal: their first key is after the block's last query
    first_key = kj * block_kv
    last_query = qi * block_q + block_q - 1
    do_work = jnp.logical_or(not causal, first_key <= last_query)

    @pl.when(do_work)
    def body():
        q = q_ref[:, :]
        k = k_ref[:, :]
        v = v_ref[:, :]
        qk = jnp.einsum("qd,kd->qk", q, k, preferred_element_type=jnp.float32) * sm_scale
        if soft_cap is not None:
            qk = jnp.tanh(qk / soft_cap) * soft_cap
        qk = qk * log2e
        if causal:
            row = qi * block_q + jnp.arange(block_q).reshape(block_q, 1)
            col = kj * block_kv + jnp.arange(block_kv).reshape(1, block_kv)
            qk = jnp.where(col <= row, qk, -jnp.inf)
        m_prev = m_scratch_ref[:, 0:1]
        l_prev = l_scratch_ref[:, 0:1]
        if max_logit_const is None:
            m_next = jnp.maximum(m_prev, jnp.max(qk, axis=-1, keepdims=True))
        else:
            m_next = m_prev
        s_curr = expf(qk - m_next)
        alpha = expf(m_prev - m_next)
        l_next = alpha * l_prev + jnp.sum(s_curr, axis=-1, keepdims=True)
        acc_scratch_ref[:, :] = alpha * acc_scratch_ref[:, :] + jnp.dot(
            s_curr.astype(v.dtype), v, preferred_element_type=jnp.float32)
        m_scratch_ref[:, :] = jnp.tile(m_next, (1, m_scratch_ref.shape[1]))
        l_scratch_ref[:, :] = jnp.tile(l_next, (1, l_scratch_ref.shape[1]))

    @pl.when(kj == n_kv - 1)
    def done():
        inv_l = 1.0 / l_scratch_ref[:, 0:1]
        o_ref[:, :] = acc_scratch_ref[:, :] * inv_l


# %% [markdown]
# ## Task 4.4 — the Flash Attention wrapper  (not graded in this release)
#
# **Why.** The wrapper chooses the grid and BlockSpecs that feed the kernel,
# declares the scratch buffers, and marks the head and query axes as
# parallel and the KV axis as a sequential reduction. With grouped-query
# attention several query heads share one head of K and V.
#
# **Task.** Arrives with the next release of this assignment.


# %%
def flash_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = False,
                    sm_scale: float | None = None, block_q: int = 128, block_kv: int = 128,
                    soft_cap: float | None = None,
                    max_logit_const: float | None = None,
                    use_base2_exp: bool = False) -> np.ndarray:
    """Task 4.4: Flash Attention through one pallas_call.  [lecture §5.2]

    q: [H, L, d]; k: [Hkv, L, d]; v: [Hkv, L, dv], H % Hkv == 0 (query head h
    reads kv head h // (H // Hkv)). Grid (H, L // block_q, L // block_kv).
    Returns float32 [H, L, dv].
    """
    H, L, d = q.shape
    Hkv = k.shape[0]
    dv = v.shape[-1]
    if k.shape[1] != L or v.shape[1] != L:
        raise ValueError(f"k and v need q's length {L}, got {k.shape[1]} and {v.shape[1]}")
    assert H % Hkv == 0 and L % block_q == 0 and L % block_kv == 0
    groups = H // Hkv
    if sm_scale is None:
        sm_scale = d ** -0.5

    def q_map(h, i, j):
        return (h, i, 0)

    def kv_map(h, i, j):
        return (h // groups, j, 0)

    kernel = functools.partial(flash_attention_kernel, sm_scale=sm_scale, causal=causal,
                               block_q=block_q, block_kv=block_kv, soft_cap=soft_cap,
                               max_logit_const=max_logit_const, use_base2_exp=use_base2_exp)
    call = pl.pallas_call(
        kernel,
        grid=(H, L // block_q, L // block_kv),
        in_specs=[pl.BlockSpec(block_shape=(None, block_q, d), index_map=q_map),
                  pl.BlockSpec(block_shape=(None, block_kv, d), index_map=kv_map),
                  pl.BlockSpec(block_shape=(None, block_kv, dv), index_map=kv_map)],
        out_specs=pl.BlockSpec(block_shape=(None, block_q, dv), index_map=q_map),
        out_shape=jax.ShapeDtypeStruct((H, L, dv), jnp.float32),
        scratch_shapes=[pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, 128), jnp.float32),
                        pltpu.VMEM((block_q, dv), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
    )
    return call(q, k, v)


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
    log_max = math.log(np.finfo(np.float32).max)    # ~ 88.72
    log_tiny = math.log(np.finfo(np.float32).tiny)  # ~ -87.34
    return (max_logit - log_max, min_row_max - log_tiny)


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
# So Flash Attention is bounded by arithmetic (1.34 ms) rather than by memory
# (0.49 ms), while the XLA version was memory-bound by a wide margin.
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
    n_q_blocks = math.ceil(L / block_q)
    q = H * L * d * in_bytes
    k = H * L * d * in_bytes * n_q_blocks   # every Q block reads all of K
    v = H * L * dv * in_bytes * n_q_blocks  # ... and all of V
    o = H * L * dv * out_bytes
    return q + k + v + o


def xla_attention_hbm_bytes(H: int, L: int, d: int, dv: int, *, in_bytes: int = 2,
                            score_bytes: int = 4, out_bytes: int = 4) -> int:
    """Task 4.6: HBM bytes moved by unfused attention.  [lecture §5.2]

    Scores [H, L, L] written once and read twice; Q, K [H, L, d] and
    V [H, L, dv] read once; O [H, L, dv] written once.
    """
    scores = H * L * L * score_bytes
    # scores: 1 write + 2 reads
    return 3 * scores + 2 * H * L * d * in_bytes + H * L * dv * in_bytes + H * L * dv * out_bytes


def attention_flops(H: int, L: int, d: int, dv: int) -> int:
    """Task 4.6: FLOPs of non-causal attention, 2·H·L²·(d + dv).  [lecture §5.2]

    Q Kᵀ costs 2·H·L²·d, the product with V 2·H·L²·dv.
    """
    return 2 * H * L**2 * (d + dv)


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


# %%
def flash_attention_kernel_microtiled(q_ref, k_ref, v_ref, o_ref, m_scratch_ref,
                                      l_scratch_ref, acc_scratch_ref, *, sm_scale: float,
                                      causal: bool, block_q: int, block_kv: int,
                                      bkv_compute: int) -> None:
    """Task 4.7: one Flash Attention step scoring bkv_compute keys at a time.  [lecture §5.3]"""
    qi = pl.program_id(1)
    kj = pl.program_id(2)

    @pl.when(kj == 0)
    def init():
        m_scratch_ref[:, :] = jnp.full(m_scratch_ref.shape, -jnp.inf, jnp.float32)
        l_scratch_ref[:, :] = jnp.zeros_like(l_scratch_ref)
        acc_scratch_ref[:, :] = jnp.zeros_like(acc_scratch_ref)

    first_key = kj * block_kv
    last_query = qi * block_q + block_q - 1

    def one_slice(c, carry):
        m_prev, l_prev, acc = carry
        start = c * bkv_compute
        k = k_ref[pl.ds(start, bkv_compute), :]
        v = v_ref[pl.ds(start, bkv_compute), :]
        qk = jnp.einsum("qd,kd->qk", q_ref[:, :], k,
                        preferred_element_type=jnp.float32) * sm_scale
        if causal:
            row = qi * block_q + jnp.arange(block_q).reshape(block_q, 1)
            col = first_key + start + jnp.arange(bkv_compute).reshape(1, bkv_compute)
            qk = jnp.where(col <= row, qk, -jnp.inf)
        m_next = jnp.maximum(m_prev, jnp.max(qk, axis=-1, keepdims=True))
        s_curr = jnp.exp(qk - m_next)
        alpha = jnp.exp(m_prev - m_next)
        l_next = alpha * l_prev + jnp.sum(s_curr, axis=-1, keepdims=True)
        acc = alpha * acc + jnp.dot(s_curr.astype(v.dtype), v,
                                    preferred_element_type=jnp.float32)
        return m_next, l_next, acc

    @pl.when(jnp.logical_or(not causal, first_key <= last_query))
    def body():
        carry = (m_scratch_ref[:, 0:1], l_scratch_ref[:, 0:1], acc_scratch_ref[:, :])
        m_next, l_next, acc = jax.lax.fori_loop(0, block_kv // bkv_compute, one_slice, carry)
        acc_scratch_ref[:, :] = acc
        m_scratch_ref[:, :] = jnp.tile(m_next, (1, m_scratch_ref.shape[1]))
        l_scratch_ref[:, :] = jnp.tile(l_next, (1, l_scratch_ref.shape[1]))

    @pl.when(kj == pl.num_programs(2) - 1)
    def done():
        o_ref[:, :] = acc_scratch_ref[:, :] * (1.0 / l_scratch_ref[:, 0:1])


def choose_flash_config():
    # 1024 x 4096 tiles: 32 MiB of f32 scores + exp, like 2048 x 2048, but K and V stream
    # through once per 1024 query rows in a single 4096-wide block; MLE on.
    return (1024, 4096, 70.0)
