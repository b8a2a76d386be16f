"""Single-mistake variants of a1's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A1, Mutant, Variant

MUTANTS: list[Mutant] = [
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
]


VARIANTS: list[Variant] = []
