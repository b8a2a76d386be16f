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
BEST = "    return (1024, 2048, 1024)\n"

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
    Mutant("init-on-row-axis", A3, "3.1",
           (("    @pl.when(k == 0)\n    def _init():",
             "    @pl.when(pl.program_id(0) == 0)\n    def _init():"),),
           "z_ref is zeroed when the first grid axis (M) is 0 instead of at the first k step",
           kept=0, says=("pl.program_id(0) == 0",)),
    Mutant("overwrite-partials", A3, "3.1",
           (("    z_ref[...] += jnp.dot(", "    z_ref[...] = jnp.dot("),),
           "z_ref is overwritten at every k step instead of accumulated", kept=0,
           says=("only the last k step's product is there",)),
    Mutant("activation-dropped", A3, "3.2",
           (("        matmul_kernel(x_ref, y_ref, z_ref, activation=activation)",
             "        matmul_kernel(x_ref, y_ref, z_ref)"),),
           "the wrapper does not pass activation on to its kernel", kept=20),
    Mutant("k-parallel", A3, "3.2",
           (('dimension_semantics=("parallel", "parallel", "arbitrary")),',
             'dimension_semantics=("parallel", "parallel", "parallel")),'),),
           "the K axis marked parallel: it carries the running sum"),
    Mutant("k-mismatch-unchecked", A3, "3.2",
           (("    if k_x != k_y:\n        raise ValueError(f\"K of x ({k_x}) and K of y ({k_y}) "
             "must be equal\")\n", ""),),
           "no ValueError when the K of x and y differ", kept=26),
    Mutant("vmem-1d-output-once", A3, "3.3",
           (("    return sum(2 * rows * cols * size for (rows, cols), size in zip(shapes, sizes, "
             "strict=True))",
             "    copies = [2, 2, 1 if grid == \"1d\" else 2]\n"
             "    return sum(n * rows * cols * size for n, (rows, cols), size in zip(copies, "
             "shapes, sizes, strict=True))"),),
           "the resident output of the 1d grid counted once", kept=0,
           says=("the resident output is counted once",)),
    Mutant("vmem-output-in-dtype", A3, "3.3",
           (("    sizes = [nbytes(in_dtype), nbytes(in_dtype), nbytes(out_dtype)]",
             "    sizes = [nbytes(in_dtype)] * 3"),),
           "the output counted in the input dtype", kept=0),
    Mutant("min-block-rounded-down", A3, "3.4",
           (("    candidate = multiple_of\n"
             "    while arithmetic_intensity(candidate, dtype_bytes) <= balance:\n"
             "        candidate += multiple_of\n"
             "    return candidate",
             "    return int(balance * dtype_bytes // multiple_of) * multiple_of"),),
           "the block rounded down to a multiple instead of up", kept=12,
           says=("rounded down",)),
    Mutant("min-block-at-balance", A3, "3.4",
           (("    while arithmetic_intensity(candidate, dtype_bytes) <= balance:",
             "    while arithmetic_intensity(candidate, dtype_bytes) < balance:"),),
           "an intensity equal to the balance point counted as compute-bound (>= where the "
           "handout says strictly greater): wrong only where the bound is a multiple",
           kept=16, says=("strictly greater",)),
    Mutant("min-block-any-multiple", A3, "3.4",
           (("        candidate += multiple_of", "        candidate += 1"),),
           "the search steps by 1 after its first candidate: not a multiple of multiple_of",
           kept=12, says=("not a multiple of multiple_of",)),
    # Task 3.5 (performance): plausible wrong block choices. 3 points for a legal choice the
    # student's matmul runs, 7 for a predicted time within 10 % of the fastest candidate's
    # (1024, 2048, 1024), 1.603 ms.
    Mutant("blocks-too-small", A3, "3.5", ((BEST, "    return (512, 512, 512)\n"),),
           "512-blocks: 4032 grid steps, predicted 4.74 ms (3.5x the fastest)", kept=3,
           says=("2.9x slower than (1024, 2048, 1024), the best candidate for your own "
                 "kernel", "4032 grid steps")),
    Mutant("blocks-over-vmem", A3, "3.5", ((BEST, "    return (2048, 2048, 1024)\n"),),
           "2048-blocks for the output: 48 MiB of double buffers, over the 32 MiB scoped VMEM",
           kept=0, says=("do not fit the 32 MiB scoped VMEM",
                         "Scoped allocation with size 48.00M")),
    Mutant("blocks-skinny", A3, "3.5", ((BEST, "    return (128, 2048, 1024)\n"),),
           "a 128-row block: half the MXU's rows, y re-read 32 times; predicted 3.77 ms",
           kept=3, says=("7.5x slower",)),
    Mutant("blocks-short-k", A3, "3.5", ((BEST, "    return (1024, 2048, 256)\n"),),
           "the fastest output tile with bk 256: four times the steps, each copying two short "
           "strided tiles: 2.149 ms, 34 % slower (the lecture's 1024³ is within 10 %)",
           kept=3, says=("34 % slower",)),
    Mutant("blocks-bk-not-dividing", A3, "3.5", ((BEST, "    return (1024, 1024, 2048)\n"),),
           "bk = 2048 does not divide K = 7168: the student's matmul raises its ValueError",
           kept=0, says=("does not divide K = 7168",)),
    Mutant("ideal-time-one-block", A3, "3.4",
           (("    copy_s = 2 * block**2 * dtype_bytes / hbm_bandwidth",
             "    copy_s = block**2 * dtype_bytes / hbm_bandwidth"),),
           "one input block copied per step instead of two", kept=12),
]


VARIANTS: list[Variant] = [
    Variant("str_format_messages", A3,
            "its ValueError messages use str.format, which the policy once refused"),
    Variant("dot_general", A3,
            "every product is jax.lax.dot_general, the lecture's §5.2 spelling "
            "(z += x @ y as dot_general over (((1,), (0,)), ((), ()))); "
            "it counts the FLOPs jnp.dot counts, so Task 3.5 is "
            "graded at the lecture's size as the solution is"),
    Variant("scratch_accumulator", A3,
            "the wrapper accumulates in an f32 VMEM scratch buffer and writes z once at the "
            "last k step; run with only z (the standard call) the kernel accumulates in z. "
            "Task 3.5 (performance): the scratch's bm·bn·4 B leave the fastest blocks "
            "(1024, 2048, 1024) 4 MiB over the VMEM limit; its choice, the lecture's "
            "1024-blocks, is predicted within 10 % of the fastest candidate (every step waits "
            "for its two strided tiles either way): full points"),
]
