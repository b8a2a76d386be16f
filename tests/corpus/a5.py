"""Single-mistake variants of a5's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A5, Mutant, Variant

BEST = '    best = {"causal": (2048, 2048), "local": (2048, 2048), "document": (4096, 2048)}\n'

MUTANTS: list[Mutant] = [
    # Task 5.7 (performance): plausible wrong block choices. 1 point when all three choices
    # run within the scoped VMEM, 3 per mask within 10 % of the fastest legal candidate for
    # the submission's own kernel (the solution's, as the reference's: (2048, 2048) causal
    # 9.62 ms, (2048, 2048) local 6.74 ms, (4096, 2048) document 6.75 ms).
    Mutant("splash-blocks-small", A5, "5.7",
           ((BEST, '    best = dict.fromkeys(("causal", "local", "document"), (512, 512))\n'),),
           "512-tiles follow the masks closely but pay per step: causal 37.76 ms (+293 %), "
           "local 19.50 ms (+189 %), document 21.16 ms (+214 %)", kept=1,
           says=("slower than the fastest legal candidate", "grid steps in all")),
    Mutant("splash-blocks-lecture-square", A5, "5.7",
           ((BEST, '    best = dict.fromkeys(("causal", "local", "document"), (1024, 1024))\n'),),
           "Exercise 11's 1024-tiles: four times the steps of 2048-tiles, each with its copies, "
           "ops and fixed cost: causal +56 %, local +30 %, document +48 %", kept=1,
           says=("for the causal mask", "56% slower")),
    Mutant("splash-blocks-table-tiles", A5, "5.7",
           ((BEST, '    best = dict.fromkeys(("causal", "local", "document"), (1024, 2048))\n'),),
           "the lecture's §6.2 table tiles (1024, 2048): twice the steps of the fastest, about "
           "25 % slower for every mask", kept=1, says=("25% slower",)),
    Mutant("splash-blocks-large-window", A5, "5.7",
           ((BEST, '    best = {"causal": (2048, 2048), "local": (4096, 2048), '
                   '"document": (4096, 2048)}\n'),),
           "4096-row tiles for the window: 5 active tiles per head but 8.43 ms (+25 %): the "
           "band is 2048 keys wide, so most of each tile is masked", kept=7,
           says=("for the local mask", "more scores than the mask keeps")),
    Mutant("splash-blocks-over-vmem", A5, "5.7",
           ((BEST, '    best = dict.fromkeys(("causal", "local", "document"), (4096, 4096))\n'),),
           "the whole sequence in 2 x 2 tiles: the double-buffered 16 MiB pattern block alone "
           "fills the 32 MiB scoped VMEM (50 MiB needed)", kept=0,
           says=("VmemOOMError", "limit 32.00M")),
    # A mistake for the Task 5.1 check no other mutant fails (every check can fail).
    Mutant("local-right-edge-excluded", A5, "5.1",
           (("        allowed &= kv_pos <= q_pos + right\n",
             "        allowed &= kv_pos < q_pos + right\n"),),
           "the window's right edge q + right is left out"),
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
           "block_mask passed third instead of last", kept=14,
           says=("the kernel expects mask_next there",)),
    Mutant("kv-by-row", A5, "5.4",
           (("        return h, cols[g], 0\n", "        return h, rows[g], 0\n"),),
           "K and V chosen by the q row instead of the active column", kept=17,
           says=("the k block chosen by the index map differs",)),
    Mutant("neg-inf-unzeroed-p", A5, "5.4",
           (("    scores = jnp.where(visible, scores, MASK_VALUE)",
             "    scores = jnp.where(visible, scores, -jnp.inf)"),
            ("    probs = jnp.where(visible, exp(scores - m_next), 0.0)",
             "    probs = exp(scores - m_next)")),
           "masked scores set to -inf and p not zeroed: exp(-inf - (-inf)) is NaN for a row "
           "whose keys in its first tile are all masked (the full-tile mask check's own "
           "draws have no such row: it is charged on the kernel's values and base-2 checks)",
           kept=20,
           says=("exp(-inf - (-inf))",)),
    Mutant("init-only-at-g0", A5, "5.4",
           (("    @pl.when(bounds_start_ref[g] == 1)", "    @pl.when(g == 0)"),),
           "m, l and acc initialised at the first active tile of a head only, not of each q row",
           kept=16, says=("only at the first grid step",)),
    Mutant("mask-every-tile", A5, "5.4",
           (("    visible = jnp.logical_or(block_mask_ref[g] == 2, mask_ref[...])",
             "    visible = mask_ref[...]"),),
           "mask_ref applied on full tiles too", kept=16,
           says=("the mask is applied on full tiles too",)),
    Mutant("prefetch-not-int32", A5, "5.4",
           (("    table = [np.asarray(field, dtype=np.int32) for field in (",
             "    table = [np.asarray(field) for field in ("),),
           "the prefetch arrays keep their MaskInfo dtypes (bool, int8), so they also take "
           "fewer SMEM bytes than six int32 arrays", kept=22,
           says=(".astype(np.int32)",)),
    Mutant("default-scale-one", A5, "5.4",
           (("    scale = 1.0 / math.sqrt(head_dim) if sm_scale is None else sm_scale",
             "    scale = 1.0 if sm_scale is None else sm_scale"),),
           "sm_scale defaults to 1 instead of 1/sqrt(d)", kept=22),
    Mutant("base2-ignored", A5, "5.4",
           (("    exp = jnp.exp2 if use_base2_exp else jnp.exp\n", "    exp = jnp.exp\n"),
            ("    if use_base2_exp:\n        scores = scores * LOG2_E",
             "    if False:\n        scores = scores * LOG2_E")),
           "use_base2_exp is accepted and ignored: natural units and exp, right values",
           kept=28, says=("use_base2_exp is ignored", "lecture §6.6")),
    Mutant("base2-still-exp", A5, "5.4",
           (("    exp = jnp.exp2 if use_base2_exp else jnp.exp\n", "    exp = jnp.exp\n"),),
           "under use_base2_exp the scores are scaled by log2(e) but exp, not exp2, is taken",
           kept=28),
    Mutant("wrapper-base2-not-forwarded", A5, "5.4",
           (("                          block_kv=block_kv, use_base2_exp=use_base2_exp),",
             "                          block_kv=block_kv),"),),
           "the wrapper accepts use_base2_exp but does not pass it on to its kernel (the "
           "values are the same, the kernel never runs in base 2)", kept=28,
           says=("does not reach the kernel",)),
    Mutant("init-every-tile", A5, "5.4",
           (("    @pl.when(bounds_start_ref[g] == 1)", "    @pl.when(True)"),),
           "m, l and acc re-initialised at every active tile: each row of output is the "
           "attention over its last tile only", kept=16,
           says=("initialised at every grid step",),
           never=("the mask is applied on full tiles too",)),
    Mutant("wrapper-without-base2", A5, "5.4",
           (("                     sm_scale: float | None = None, use_base2_exp: bool = False) "
             "-> np.ndarray:",
             "                     sm_scale: float | None = None) -> np.ndarray:"),
            ("                          block_kv=block_kv, use_base2_exp=use_base2_exp),",
             "                          block_kv=block_kv),")),
           "the wrapper has no use_base2_exp keyword (the kernel has it)", kept=28,
           says=("use_base2_exp",)),
    Mutant("mask-next-previous", A5, "5.3",
           (("    for g in range(len(tile_rows) - 1, -1, -1):",
             "    for g in range(len(tile_rows)):"),),
           "a full tile's mask_next is the pattern of the previous partial tile, not the next",
           kept=5,
           says=("mask_next of a full tile is the pattern of the next partial tile",)),
    Mutant("bounds-end-copied", A5, "5.3",
           (("        bounds_end=np.concatenate([new_row, [True]]),",
             "        bounds_end=np.concatenate([[True], new_row]),"),),
           "bounds_end computed like bounds_start", kept=5,
           says=("bounds_end marks the last active tile of each q row of tiles",)),
    Mutant("classify-axes-swapped", A5, "5.2",
           (("    tiles = mask.reshape(q_len // block_q, block_q, kv_len // block_kv, block_kv)",
             "    tiles = mask.reshape(q_len // block_q, block_kv, kv_len // block_kv, block_q)"),),
           "the tile reshape swaps block_q and block_kv (right only for square tiles)"),
    Mutant("classify-full-as-partial", A5, "5.2",
           (("kinds = np.where(allowed == block_q * block_kv, 2, np.where(allowed > 0, 1, 0))",
             "kinds = np.where(allowed > 0, 1, np.where(allowed == block_q * block_kv, 2, 0))"),),
           "the partial test comes first, so a full tile is classified partial"),
    Mutant("render-without-spaces", A5, "5.2",
           (('    lines = [" ".join(glyph[int(kind)] for kind in row)',
             '    lines = ["".join(glyph[int(kind)] for kind in row)'),),
           "cells not separated by spaces", kept=5),
    Mutant("causal-offset-sign", A5, "5.1",
           (("    query_pos = np.arange(q_len)[:, None] + offset",
             "    query_pos = np.arange(q_len)[:, None] - offset"),),
           "the offset subtracted from the query positions", kept=6),
    Mutant("segment-ignores-kv-ids", A5, "5.1",
           (("    kv_ids = q_ids if kv_segment_ids is None else np.asarray(kv_segment_ids)",
             "    kv_ids = q_ids"),),
           "kv_segment_ids ignored: the query ids are used for the keys too", kept=7),
    Mutant("saving-inverted", A5, "5.5",
           (('"compute_saving": total / active}', '"compute_saving": active / total}'),),
           "compute_saving as num_active / num_blocks", kept=0),
]


CLASSIFY_CALL = "    kinds = classify_blocks(mask, block_q, block_kv)\n"
OWN_CLASSIFY = """    nq, nkv = mask.shape[0] // block_q, mask.shape[1] // block_kv
    kinds = np.zeros((nq, nkv), dtype=np.int8)
    for r in range(nq):
        for c in range(nkv):
            tile = mask[r * block_q:(r + 1) * block_q, c * block_kv:(c + 1) * block_kv]
            kinds[r, c] = 2 if tile.all() else (1 if tile.any() else 0)
"""

#: Task 5.7: a correct kernel that walks its query block in chunks of 512
#: rows (one (512, block_kv) scores tile at a time). Every chunk repeats the softmax's vector
#: ops, so a step costs more fixed work than the solution's: 30-55 % slower than the reference
#: kernel at any blocks, and its own fastest blocks differ from the reference's. Its choice is
#: its own sweep's best: causal (2048, 4096) 12.50 ms (13.43 ms at the reference's (2048,
#: 2048)), local (2048, 2048) 9.42 ms, document (2048, 4096) 8.35 ms (10.31 ms at (4096,
#: 2048)). Graded against the reference kernel's best it scored 1 of 10 on Task 5.7.
#: The whole file: variants/a5_splash_attention/row_chunked_kernel.py.
VARIANTS: list[Variant] = [
    Variant("dot_general", A5,
            "every product is jax.lax.dot_general, the lecture's §5.2 spelling "
            "(q @ kᵀ contracts d of both, no .T; p @ v); "
            "it counts the FLOPs jnp.dot counts, so Task 5.7 is "
            "graded at the lecture's size as the solution is"),
    Variant("numpy-int-blocks", A5,
            "choose_splash_blocks returns the fastest blocks as numpy ints (np.int64, as a "
            "chooser that computes its choice with numpy gives them): they are ints to "
            "build_mask_info, to the student's splash_attention and to JAX's block shapes, "
            "and Tasks 3.5 and 4.8 accept numpy ints (an honest-student pass: Task 5.7 gave "
            "0/10, 'must return a tuple of two ints')",
            edits=((BEST, '    best = {kind: (np.int64(bq), np.int64(bkv)) for kind, (bq, bkv) '
                          'in {"causal": (2048, 2048), "local": (2048, 2048), '
                          '"document": (4096, 2048)}.items()}\n'),)),
    Variant("builder-classifies-itself", A5,
            "build_mask_info classifies the tiles with its own loop instead of calling "
            "classify_blocks",
            ((CLASSIFY_CALL, OWN_CLASSIFY),)),
    Variant("neg-inf-guarded", A5,
            "masked scores are -inf; p is zeroed where masked and the running maximum is "
            "replaced by 0 while it is still -inf, so no exp(-inf - (-inf)) is ever taken",
            (("    scores = jnp.where(visible, scores, MASK_VALUE)",
              "    scores = jnp.where(visible, scores, -jnp.inf)"),
             ("    probs = jnp.where(visible, exp(scores - m_next), 0.0)\n"
              "    alpha = exp(m_prev - m_next)",
              "    m_safe = jnp.where(m_next == -jnp.inf, 0.0, m_next)\n"
              "    probs = jnp.where(visible, exp(scores - m_safe), 0.0)\n"
              "    alpha = exp(m_prev - m_safe)"))),
    Variant("row_chunked_kernel", A5,
            "the kernel computes its tile in chunks of 512 query rows (each chunk's online "
            "softmax updates its rows of m, l and acc); correct, slower than the reference "
            "kernel, and it chooses the blocks that are fastest for it, which differ from "
            "the reference's for the causal and document masks (Task 5.7 grades the choice "
            "against the student's own kernel)"),
]


# Task 5.6 (masks computed in the kernel): each mistake costs points on 5.6 only.
_READ_PATTERNS = (
    ("    num_scalar_prefetch=5,", "    num_scalar_prefetch=6,"),
    ("        mask_info.bounds_end, mask_info.block_mask)]\n\n    def q_index(h, g, rows, cols, "
     "starts, ends, kinds):",
     "        mask_info.bounds_end, mask_info.block_mask, mask_info.mask_next)]\n\n"
     "    def q_index(h, g, rows, cols, starts, ends, kinds, nxt):"),
    ("    def kv_index(h, g, rows, cols, starts, ends, kinds):",
     "    def kv_index(h, g, rows, cols, starts, ends, kinds, nxt):"),
    ("    def column_index(h, g, rows, cols, starts, ends, kinds):",
     "    def column_index(h, g, rows, cols, starts, ends, kinds, nxt):"),
    ("    def row_index(h, g, rows, cols, starts, ends, kinds):\n        return 0, cols[g]\n",
     "    def row_index(h, g, rows, cols, starts, ends, kinds, nxt):\n        return 0, cols[g]\n"
     "\n    def pattern_index(h, g, rows, cols, starts, ends, kinds, nxt):\n"
     "        return nxt[g], 0, 0\n"),
    ("                  pl.BlockSpec((1, block_kv), row_index)],",
     "                  pl.BlockSpec((1, block_kv), row_index),\n"
     "                  pl.BlockSpec((None, block_q, block_kv), pattern_index)],"),
    ("                  q_ids.reshape(seq_len, 1), kv_ids.reshape(1, seq_len))",
     "                  q_ids.reshape(seq_len, 1), kv_ids.reshape(1, seq_len),\n"
     "                  np.asarray(mask_info.partial_mask_blocks, bool)\n"
     "                  if len(mask_info.partial_mask_blocks)\n"
     "                  else np.ones((1, block_q, block_kv), bool))"),
    ("                                bounds_end_ref, block_mask_ref, q_ref, k_ref, v_ref,\n"
     "                                q_pos_ref, kv_pos_ref, q_ids_ref, kv_ids_ref, o_ref,",
     "                                bounds_end_ref, block_mask_ref, mask_next_ref, q_ref,\n"
     "                                k_ref, v_ref, q_pos_ref, kv_pos_ref, q_ids_ref,\n"
     "                                kv_ids_ref, mask_ref, o_ref,"),
    ("    keep = jnp.logical_or(block_mask_ref[step] == 2, allowed)  # full tiles need no mask",
     "    keep = jnp.logical_or(block_mask_ref[step] == 2, mask_ref[...])"),
)

MUTANTS += [
    Mutant("computed-mask-reads-patterns", A5, "5.6", _READ_PATTERNS,
           "the Task 5.4 way kept: mask_next prefetched and partial_mask_blocks handed to the "
           "call, so each partial tile's stored pattern is copied from HBM (right values)",
           kept=6, says=("the kernel still reads partial_mask_blocks",
                         "a mask moves from HBM into the kernel")),
    Mutant("computed-mask-positions-from-grid", A5, "5.6",
           (("    q_pos, kv_pos = q_pos_ref[...], kv_pos_ref[...]",
             "    q_pos = active_rows_ref[step] * block_q + jax.lax.broadcasted_iota(\n"
             "        jnp.int32, (block_q, 1), 0)\n"
             "    kv_pos = active_cols_ref[step] * block_kv + jax.lax.broadcasted_iota(\n"
             "        jnp.int32, (1, block_kv), 1)"),),
           "token positions computed from the tile's grid position instead of read from "
           "q_positions / kv_positions (right only when positions are 0..L-1)",
           kept=8, says=("computes positions from the grid",)),
    Mutant("computed-mask-window-edge-excluded", A5, "5.6",
           (("            allowed = jnp.logical_and(allowed, kv_pos >= q_pos - left)",
             "            allowed = jnp.logical_and(allowed, kv_pos > q_pos - left)"),),
           "the window's left edge excluded: q_pos - left < kv_pos"),
    Mutant("computed-mask-segments-ignored", A5, "5.6",
           (("    allowed = q_ids_ref[...] == kv_ids_ref[...]  # (block_q, 1) == (1, block_kv): "
             "the tile",
             "    allowed = jnp.full((block_q, block_kv), True)"),),
           "segment ids never compared: documents see each other"),
    Mutant("computed-mask-causal-strict", A5, "5.6",
           (("        allowed = jnp.logical_and(allowed, q_pos >= kv_pos)",
             "        allowed = jnp.logical_and(allowed, q_pos > kv_pos)"),),
           "causal comparison strict: a query does not see its own key"),
    Mutant("computed-mask-kv-positions-default-q", A5, "5.6",
           (("    kv_pos = every if kv_positions is None else",
             "    kv_pos = q_pos if kv_positions is None else"),),
           "kv_positions defaults to q_positions instead of 0..L-1 (the kernel reads the "
           "positions it is given)", kept=8, says=("kv_positions defaults to q_positions",),
           never=("computes positions from the grid",)),
    Mutant("computed-mask-kv-ids-default-zero", A5, "5.6",
           (("    kv_ids = q_ids if kv_segment_ids is None else np.asarray(kv_segment_ids, "
             "np.int32)",
             "    kv_ids = (np.zeros(seq_len, np.int32) if kv_segment_ids is None\n"
             "              else np.asarray(kv_segment_ids, np.int32))"),),
           "key segment ids default to one document instead of the query ids"),
]
