"""The mutation corpus: single-mistake variants of working submissions (issue 12).

Each :class:`Mutant` takes a base file (a solution, or a correct variant from
``variants/<stem>/``), makes one mistake a student could make (``edits``: each
``old`` text occurs exactly once in the base), and states the task that must
lose points for it. Every other task must keep full marks, except the tasks
that declare the mistaken one as a dependency in the assignments table (a
wrapper and its kernel, mask_stats and the MaskInfo builder): one fault, one
charge. ``kept`` pins the points the task keeps where the checks are known
to split; ``says`` lists phrases its feedback must contain (a diagnosis is
shown only where it is true of the failing input).

``tests/corpus/test_corpus.py`` grades every mutant and variant through the
CLI in one batch.
"""

from __future__ import annotations

from dataclasses import dataclass

A1, A2, A3, A4, A5 = ("a1_pallas_basics", "a2_pipelining", "a3_matmul",
                      "a4_flash_attention", "a5_splash_attention")


@dataclass(frozen=True)
class Mutant:
    """One mistake: ``name`` (unique per stem), ``stem``, the ``task`` that must lose
    points, ``edits`` ((old, new) text replacements on the base), ``why`` (the mistake in
    words), ``base`` ("solution" or a variant's name), ``kept`` (exact points the task
    keeps, or None) and ``says`` (phrases the task's feedback must contain)."""

    name: str
    stem: str
    task: str
    edits: tuple[tuple[str, str], ...]
    why: str
    base: str = "solution"
    kept: float | None = None
    says: tuple[str, ...] = ()


K_LAST = """        grid=(m // bm, n // bn, k_x // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                  pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),"""
K_FIRST = """        grid=(k_x // bk, m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda k, i, j: (i, k)),
                  pl.BlockSpec((bk, bn), lambda k, i, j: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda k, i, j: (i, j)),"""
RELU_LAST = """        @pl.when(k == pl.num_programs(2) - 1)
        def _finish():
            z_ref[...] = jnp.maximum(z_ref[...], 0.0)"""
RELU_EVERY_K = """        z_ref[...] = jnp.maximum(z_ref[...], 0.0)"""

MUTANTS: list[Mutant] = [
    # -- a1 -------------------------------------------------------------------------------------
    Mutant("bias-grid-order", A1, "1.3",
           (("grid=(cols // bn, rows // bm)", "grid=(rows // bm, cols // bn)"),),
           "the column-block axis inner: the bias block is refetched at every step",
           says=("192",)),
    Mutant("no-aliasing", A1, "1.4", (("        input_output_aliases={0: 0},\n", ""),),
           "no input_output_aliases: a new array is returned and acc is unchanged", kept=13),
    Mutant("numpy-wrapper", A1, "1.2", (("    return call(x, y)\n", "    return x + y\n"),),
           "plain NumPy instead of the pallas_call", kept=0),
    Mutant("kernel-writes-y", A1, "1.1",
           (("    z_ref[...] = x_ref[...] + y_ref[...]", "    z_ref[...] = y_ref[...]"),),
           "the add kernel writes y instead of x + y", kept=0),
    # -- a2 -------------------------------------------------------------------------------------
    Mutant("no-slot-wait", A2, "2.1",
           (("slot_ready = comp_iv[k - n_buffers, 1] if k >= n_buffers else 0.0",
             "slot_ready = 0.0"),),
           "DMA k does not wait for a free slot"),
    Mutant("gantt-truncates", A2, "2.2",
           (("range(round(start * width / total), round(end * width / total))",
             "range(int(start * width / total), int(end * width / total))"),),
           "cells truncated instead of rounded", kept=5),
    Mutant("gantt-label", A2, "2.2",
           (('(("DMA     ", dma_intervals), ("compute ", compute_intervals))',
             '(("DMA    ", dma_intervals), ("compute ", compute_intervals))'),),
           "a row label one space short", kept=0),
    Mutant("idle-pipeline", A2, "2.3",
           (("    if finish == 0:\n        return 1.0",
             "    if finish == 0:\n        return 0.0"),),
           "a pipeline that takes no time reported as unused", kept=12),
    Mutant("bandwidth-whole-step", A2, "2.4",
           (("compute_time * (1.0 / utilization - 1.0)", "compute_time / utilization"),),
           "the DMA time taken as c / u (the whole step)", kept=0),
    # -- a3 -------------------------------------------------------------------------------------
    Mutant("no-zero-init", A3, "3.1",
           (("        z_ref[...] = jnp.zeros_like(z_ref)", "        pass"),),
           "z_ref is not zeroed at k == 0", kept=12, says=("not zeroed at k == 0",)),
    Mutant("relu-every-k", A3, "3.1", ((RELU_LAST, RELU_EVERY_K),),
           "ReLU applied inside the k loop", kept=18,
           says=("ReLU is applied at every k step",)),
    Mutant("bf16-partials", A3, "3.1",
           (("jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)",
             "jnp.dot(x_ref[...], y_ref[...])"),),
           "bf16 partial products (no preferred_element_type)", kept=24),
    Mutant("k-first", A3, "3.2", ((K_LAST, K_FIRST),), "K first in the grid", kept=4,
           says=("the K axis is not the last grid axis",)),
    Mutant("valueerror-unnamed", A3, "3.2",
           (('raise ValueError(f"{dim_name}={size} is not a multiple of its block size {block}")',
             'raise ValueError(f"{size} is not a multiple of {block}")'),),
           "a ValueError that does not name the dimension", kept=26),
    Mutant("single-buffered", A3, "3.3",
           (("return sum(2 * rows * cols * size", "return sum(rows * cols * size"),),
           "operands counted once (no double buffering)", kept=0),
    Mutant("intensity-bf16", A3, "3.4",
           (("    return block / dtype_bytes\n", "    return block / 2\n"),),
           "dtype_bytes ignored in the intensity", kept=12),
    Mutant("no-copy-time", A3, "3.4",
           (("return steps * max(compute_s, copy_s)", "return steps * compute_s"),),
           "the copy time forgotten", kept=12),
    # -- a4 -------------------------------------------------------------------------------------
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
    # -- a5 -------------------------------------------------------------------------------------
    Mutant("tiles-by-column", A5, "5.3",
           (("tile_rows, tile_cols = np.nonzero(kinds)  # row-major order",
             "tile_cols, tile_rows = np.nonzero(kinds.T)"),),
           "tiles listed column by column", kept=5,
           says=("active tiles are listed in row-major (q block, kv block) order",)),
    Mutant("bounds-by-column", A5, "5.3",
           (("new_row = tile_rows[1:] != tile_rows[:-1]",
             "new_row = tile_cols[1:] != tile_cols[:-1]"),),
           "bounds computed per column of tiles", kept=5,
           says=("bounds_start marks the first active tile of each q row of tiles",)),
    Mutant("blind-row-unnamed", A5, "5.3",
           (('raise ValueError(f"query row {int(blind_rows[0])} can attend to no key: every row "',
             'raise ValueError("some query row can attend to no key: every row "'),),
           "a ValueError that does not name the blind row", kept=20,
           says=("the ValueError's message does not name what is wrong",)),
    Mutant("prefetch-order", A5, "5.4",
           (("mask_info.active_rows, mask_info.active_cols, mask_info.mask_next,\n"
             "        mask_info.bounds_start, mask_info.bounds_end, mask_info.block_mask)]",
             "mask_info.active_rows, mask_info.active_cols, mask_info.block_mask,\n"
             "        mask_info.mask_next, mask_info.bounds_start, mask_info.bounds_end)]"),),
           "block_mask passed third instead of last", kept=15,
           says=("the kernel expects mask_next there",)),
    Mutant("kv-by-row", A5, "5.4",
           (("        return h, cols[g], 0\n", "        return h, rows[g], 0\n"),),
           "K and V chosen by the q row instead of the active column", kept=20,
           says=("the k block chosen by the index map differs",)),
]


@dataclass(frozen=True)
class Variant:
    """A correct alternative that must get 100: ``name``, ``stem``, ``why`` it is right
    although it differs from the solution, and either ``edits`` on the solution or, when
    there are none, the whole file ``variants/<stem>/<name>.py``."""

    name: str
    stem: str
    why: str
    edits: tuple[tuple[str, str], ...] = ()


VARIANTS: list[Variant] = [
    Variant("str_format_messages", A3,
            "its ValueError messages use str.format, which the policy once refused"),
    Variant("normalize-every-step", A4,
            "dividing acc by l at every kv step is slower but writes the same final output",
            (("        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)\n",
              "        l_scratch_ref[...] = jnp.broadcast_to(l_new, l_scratch_ref.shape)\n"
              "        o_ref[...] = acc_scratch_ref[...] / l_new\n"),)),
]
