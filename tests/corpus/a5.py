"""Single-mistake variants of a5's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A5, Mutant, Variant

MUTANTS: list[Mutant] = [
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


VARIANTS: list[Variant] = []
