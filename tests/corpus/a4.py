"""Single-mistake variants of a4's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A4, Mutant, Variant

MUTANTS: list[Mutant] = [
    Mutant("l-not-rescaled", A4, "4.1",
           (("l_run = l_run * rescale + ", "l_run = l_run + "),),
           "l is not rescaled when the running maximum grows", kept=0,
           says=("not rescaled by exp(m_old - m_new)",)),
    Mutant("no-rescale", A4, "4.3",
           (("alpha = jnp.exp(m_prev - m_new)                # rescale of the old state",
             "alpha = 1.0"),),
           "the rescale exp(m_prev - m_new) is missing", kept=0,
           says=("the rescale exp(m_prev - m_new) is missing",)),
    Mutant("no-skip", A4, "4.3",
           (("has_visible_keys = kv_block * block_kv <= (q_block + 1) * block_q - 1",
             "has_visible_keys = True"),),
           "fully masked tiles are computed instead of skipped", kept=24,
           says=("fully masked blocks are not skipped", "k_ref")),
    Mutant("mle-ignores-constant", A4, "4.3",
           (("first_m = -np.inf if max_logit_const is None else max_logit_const",
             "first_m = -np.inf if max_logit_const is None else 0.0"),),
           "the kernel subtracts 0 instead of max_logit_const", kept=22,
           says=("outside the safe range", "mle_safe_range gives")),
    Mutant("no-init", A4, "4.3",
           (("    @pl.when(kv_block == 0)\n    def _init():",
             "    @pl.when(kv_block == -1)\n    def _init():"),),
           "the scratch is never initialized", kept=0,
           says=("scratch buffers start poisoned",)),
    Mutant("causal-off-by-one", A4, "4.3",
           (("s = jnp.where(k_pos > q_pos, -jnp.inf, s)",
             "s = jnp.where(k_pos >= q_pos, -jnp.inf, s)"),),
           "the causal mask hides the diagonal", says=("causal mask off by one",)),
    Mutant("gqa-modulo", A4, "4.4",
           (("lambda h, i, j: (h // group, j, 0)),\n"
             "            pl.BlockSpec((None, block_kv, dv), lambda h, i, j: (h // group, j, 0))",
             "lambda h, i, j: (h % num_kv_heads, j, 0)),\n"
             "            pl.BlockSpec((None, block_kv, dv), "
             "lambda h, i, j: (h % num_kv_heads, j, 0))"),),
           "query head h reads kv head h % Hkv", kept=0, says=("h // (H // Hkv)",)),
    Mutant("kv-read-once", A4, "4.6",
           (("kv_read = q_blocks * H * L * (d + dv) * in_bytes",
             "kv_read = H * L * (d + dv) * in_bytes"),),
           "K and V counted once instead of once per query block",
           says=("once per query block",)),
    Mutant("mle-margin", A4, "4.5",
           (("underflow_margin = float(-np.log(f32.tiny))",
             "underflow_margin = float(np.log(f32.max))"),),
           "ln(f32 max) as the underflow margin", says=("87.34",)),
]


VARIANTS: list[Variant] = [
    Variant("normalize-every-step", A4,
            "dividing acc by l at every kv step is slower but writes the same final output",
            (("        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)\n",
              "        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)\n"
              "        o_ref[...] = acc_scratch_ref[...] / l_new\n"),)),
]
