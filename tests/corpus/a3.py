"""Single-mistake variants of a3's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A3, Mutant, Variant

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
]


VARIANTS: list[Variant] = [
    Variant("str_format_messages", A3,
            "its ValueError messages use str.format, which the policy once refused"),
]
