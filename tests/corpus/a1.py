"""Single-mistake variants of a1's submissions (see tests/corpus/mutants.py)."""

from __future__ import annotations

from tests.corpus.mutants import A1, Mutant, Variant

BLOCKED_TILE = "    tile = pl.BlockSpec((bm, bn), lambda i, j: (i, j))\n"
BLOCKED_GRID = "        grid=(pl.cdiv(rows, bm), pl.cdiv(cols, bn)),\n"
ACC_SPEC = "    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))\n"
VMEM_ITEMSIZE = ('        if isinstance(dtype, str) and dtype == "bfloat16":\n'
                 "            dtype = jnp.bfloat16\n"
                 "        return np.dtype(dtype).itemsize\n")
VMEM_RETURNS = ("    if block_shape is None:\n"
                "        return sum(elements(s) * itemsize(d) for s, d in zip(shapes, dtypes, "
                "strict=True))\n"
                "    per_block = elements(block_shape)\n"
                "    return sum(buffer_count * per_block * itemsize(d) for d in dtypes)\n")
VMEM_CACHED = ("    key = repr((shapes, dtypes, block_shape))\n"
               "    if key not in _LAST:\n"
               "        if block_shape is None:\n"
               "            answer = sum(elements(s) * itemsize(d)\n"
               "                         for s, d in zip(shapes, dtypes))\n"
               "        else:\n"
               "            answer = sum(buffer_count * elements(block_shape) * itemsize(d)\n"
               "                         for d in dtypes)\n"
               "        _LAST.clear()\n"
               "        _LAST[key] = answer\n"
               "    return _LAST[key]\n")
ACC_GRID = "        grid=(pl.cdiv(acc.shape[0], bm), pl.cdiv(acc.shape[1], bn)),\n"

MUTANTS: list[Mutant] = [
    Mutant("bias-grid-order", A1, "1.3",
           (("grid=(cols // bn, rows // bm)", "grid=(rows // bm, cols // bn)"),),
           "the grid's axes swapped but not the index maps' arguments: block indices run "
           "past the array", says=("BlockIndexError",)),
    Mutant("bias-column-inner", A1, "1.3",
           (("x_spec = pl.BlockSpec((bm, bn), lambda j, i: (i, j))",
             "x_spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))"),
            ("bias_spec = pl.BlockSpec((1, bn), lambda j, i: (0, j))",
             "bias_spec = pl.BlockSpec((1, bn), lambda i, j: (0, j))"),
            ("grid=(cols // bn, rows // bm)", "grid=(rows // bm, cols // bn)")),
           "the column-block axis inner: the bias block is refetched at every step", kept=10,
           says=("the column-block axis is the inner grid axis",)),
    Mutant("no-aliasing", A1, "1.4", (("        input_output_aliases={0: 0},\n", ""),),
           "no input_output_aliases: a new array is returned and acc is unchanged", kept=13),
    Mutant("numpy-wrapper", A1, "1.2", (("    return call(x, y)\n", "    return x + y\n"),),
           "plain NumPy instead of the pallas_call", kept=0),
    Mutant("kernel-writes-y", A1, "1.1",
           (("    z_ref[...] = x_ref[...] + y_ref[...]", "    z_ref[...] = y_ref[...]"),),
           "the add kernel writes y instead of x + y", kept=0),
    Mutant("kernel-rebinds-ref", A1, "1.1",
           (("    z_ref[...] = x_ref[...] + y_ref[...]", "    z_ref = x_ref[...] + y_ref[...]"),),
           "the kernel rebinds the name z_ref instead of storing into the output block, "
           "which is never written", kept=0),
    Mutant("blocked-floor-grid", A1, "1.2",
           ((BLOCKED_GRID, "        grid=(rows // bm, cols // bn),\n"),),
           "the grid rounds down (rows // bm): the ragged edge blocks are never computed"),
    Mutant("blocked-map-transposed", A1, "1.2",
           ((BLOCKED_TILE, "    tile = pl.BlockSpec((bm, bn), lambda i, j: (j, i))\n"),),
           "the index map returns (j, i): block (i, j) of the grid reads and writes the "
           "transposed block position"),
    Mutant("blocked-float32-output", A1, "1.2",
           (("        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),\n    )\n    return call",
             "        out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),\n    )\n"
             "    return call"),),
           "the output declared float32 whatever x's dtype (the docstring requires x's): "
           "storing a bf16 sum into the float32 ref fails, as on JAX",
           kept=5, says=("Invalid dtype for `swap`. Ref dtype: float32. Value dtype: bfloat16",)),
    Mutant("bias-map-row-index", A1, "1.3",
           (("bias_spec = pl.BlockSpec((1, bn), lambda j, i: (0, j))",
             "bias_spec = pl.BlockSpec((1, bn), lambda j, i: (0, i))"),),
           "the bias index map reads the row-block index (the lambda's second argument)"),
    Mutant("accumulate-reads-output", A1, "1.4",
           (("    out_ref[...] = acc_ref[...] + x_ref[...]", "    out_ref[...] += x_ref[...]"),),
           "the kernel adds into the output block, which starts empty (it is never read "
           "from HBM, even when aliased)"),
    Mutant("accumulate-aliases-x", A1, "1.4",
           (("        input_output_aliases={0: 0},\n", "        input_output_aliases={1: 0},\n"),),
           "x (input 1) is aliased to the output instead of acc: the sum is right, but on a "
           "TPU it would overwrite x's buffer", kept=13,
           says=("does not alias acc (input 0) to its output",)),
    Mutant("accumulate-returns-acc", A1, "1.4",
           (("    return pl.pallas_call(\n        _accumulate_kernel,",
             "    pl.pallas_call(\n        _accumulate_kernel,"),
            ("        input_output_aliases={0: 0},\n    )(acc, x)\n",
             "        input_output_aliases={0: 0},\n    )(acc, x)\n    return acc\n")),
           "returns acc, counting on an in-place update; JAX arrays are immutable, so acc "
           "still holds its old values", says=("returned its argument 0 itself",
                                                "JAX arrays are immutable")),
    Mutant("bias-no-valueerror", A1, "1.3",
           (("    for name, dim, block in ((\"M\", rows, bm), (\"N\", cols, bn)):\n"
             "        if dim % block:\n"
             "            raise ValueError(f\"{name}={dim} is not a multiple of its block size "
             "{block}\")\n", ""),),
           "no ValueError for shapes that are not multiples of the block (the handout's "
           "Raises): the floor grid leaves the ragged edge uncomputed", kept=23,
           says=("returned a result although",)),
    Mutant("vmem-unblocked-buffers", A1, "1.5",
           (("return sum(elements(s) * itemsize(d) for s, d",
             "return sum(buffer_count * elements(s) * itemsize(d) for s, d"),),
           "whole arrays counted with buffer_count buffers", kept=0,
           says=("whole arrays are counted buffer_count times",)),
    Mutant("vmem-buffer-count-ignored", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum(2 * per_block * itemsize(d) for d in dtypes)"),),
           "buffer_count ignored: always two buffers of a block (right at the worked "
           "answers' two buffers, wrong at any other count)", kept=6,
           says=("buffer_count is ignored",)),
    Mutant("vmem-none-as-zero", A1, "1.5",
           (("        count *= 1 if size is None else int(size)",
             "        count *= 0 if size is None else int(size)"),),
           "a None (squeezed) block entry counted as 0 elements instead of 1 (an honest "
           "student's walk: it had full marks, no check drew a None)", kept=6),
    Mutant("vmem-blocks-doubled", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum(2 * buffer_count * per_block * itemsize(d) for d in dtypes)"),),
           "every block counted twice (2 x buffer_count buffers): at one buffer this is the "
           "answer a forgotten buffer_count gives, but buffer_count is read (a TA's walk "
           "found it told \"buffer_count is ignored\")", kept=0,
           never=("buffer_count is ignored",)),
    Mutant("vmem-dtype-names-only", A1, "1.5",
           ((VMEM_ITEMSIZE,
             '        return {"float32": 4, "bfloat16": 2, "int32": 4, "int8": 1,\n'
             '                "float16": 2}[dtype]\n'),),
           "dtypes read from a table of names: a NumPy or jnp dtype (which the handout "
           "allows, and its own example passes) raises KeyError (a red team's vmem_bytes "
           "took names only and had full marks)", kept=0, says=("KeyError",)),
    Mutant("vmem-2d-blocks-only", A1, "1.5",
           (("    per_block = elements(block_shape)\n",
             "    per_block = elements(block_shape[:2])\n"),),
           "only a block's first two entries counted: a 3-D block's last entry is left out "
           "(a red team's 2-D-only vmem_bytes had full marks)", kept=6),
    Mutant("vmem-buffers-capped", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum(min(buffer_count, 4) * per_block * itemsize(d) for d in dtypes)"),),
           "buffer_count capped at 4 (a red team's vmem_bytes had full marks: no check "
           "asked for more than four buffers)", kept=6),
    Mutant("vmem-one-buffer", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum(per_block * itemsize(d) for d in dtypes)"),),
           "one buffer of each block, buffer_count never applied (an honest student's walk: "
           "no diagnosis was shown)", kept=0, says=("one buffer of each block",)),
    Mutant("vmem-blocked-whole-arrays", A1, "1.5",
           (("    per_block = elements(block_shape)\n"
             "    return sum(buffer_count * per_block * itemsize(d) for d in dtypes)\n",
             "    return sum(buffer_count * elements(s) * itemsize(d)\n"
             "               for s, d in zip(shapes, dtypes, strict=True))\n"),),
           "with a block_shape, buffer_count buffers of each whole array (an honest "
           "student's walk: no diagnosis was shown)", kept=0,
           says=("with a block_shape, whole arrays are counted buffer_count times",)),
    Mutant("vmem-bfloat16-as-4-bytes", A1, "1.5",
           (('        if isinstance(dtype, str) and dtype == "bfloat16":\n'
             "            dtype = jnp.bfloat16\n",
             '        if "bfloat16" in str(dtype):\n'
             "            return 4\n"),),
           "bfloat16 counted as 4 bytes (an honest student's walk: no diagnosis was shown)",
           kept=6, says=("bfloat16 is counted as 4 bytes",)),
    Mutant("vmem-first-dtype-only", A1, "1.5",
           (("zip(shapes, dtypes, strict=True))", "zip(shapes, [dtypes[0]] * len(dtypes)))"),
            ("per_block * itemsize(d) for d in dtypes)",
             "per_block * itemsize(d) for d in [dtypes[0]] * len(dtypes))")),
           "every operand counted with the first operand's dtype (an honest student's walk: "
           "the same answer as bfloat16 at 4 bytes on the failing input, and no diagnosis)",
           kept=6, says=("the first operand's dtype",)),
    # a red team's general-looking formulas, each wrong outside the questions once asked
    Mutant("vmem-five-dtype-table", A1, "1.5",
           (("        return np.dtype(dtype).itemsize\n",
             '        return {"float32": 4, "bfloat16": 2, "int32": 4, "int8": 1,\n'
             '                "float16": 2}[np.dtype(dtype).name]\n'),),
           "bytes per element from a table of the TPU's five dtypes: float64, int16, uint8 "
           "and bool raise KeyError", kept=6),
    Mutant("vmem-power-of-two-blocks", A1, "1.5",
           (("        count *= 1 if size is None else int(size)\n",
             "        count *= 1 if size is None else 1 << (int(size).bit_length() - 1)\n"),),
           "sizes rounded down to a power of two (right for the handout's blocks, wrong for "
           "a block of 384 or 24)", kept=6),
    Mutant("vmem-rank-3-blocks", A1, "1.5",
           (("    per_block = elements(block_shape)\n",
             "    per_block = elements(block_shape[-3:])\n"),),
           "only a block's last three entries counted", kept=6),
    Mutant("vmem-eight-buffers-at-most", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum((buffer_count if buffer_count <= 8 else 2) * per_block * itemsize(d)"
             " for d in dtypes)"),),
           "more than eight buffers counted as two", kept=6),
    Mutant("vmem-four-operands-at-most", A1, "1.5",
           (("zip(shapes, dtypes, strict=True))", "zip(shapes[:4], dtypes[:4]))"),
            ("per_block * itemsize(d) for d in dtypes)", "per_block * itemsize(d) for d in "
             "dtypes[:4])")),
           "only the first four operands counted", kept=6),
    Mutant("vmem-dims-capped", A1, "1.5",
           (("        count *= 1 if size is None else int(size)\n",
             "        count *= 1 if size is None else min(int(size), 4096)\n"),),
           "dimensions capped at 4096 (a whole 1-D array of 100000 elements counted as "
           "4096)", kept=6),
    Mutant("vmem-float-result", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return float(sum(buffer_count * per_block * itemsize(d) for d in dtypes))"),),
           "the right number of bytes as a float in blocked mode (the self-check passed it, "
           "the grader gave it nothing: it now says an int is required)", kept=0,
           says=("must be an int",)),
    Mutant("vmem-at-most-two-buffers", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum(min(buffer_count, 2) * per_block * itemsize(d) for d in dtypes)"),),
           "at most two buffers: right at one and two, wrong above (a red team was told "
           "\"buffer_count is ignored\")", kept=6, never=("buffer_count is ignored",)),
    Mutant("vmem-widest-dtype", A1, "1.5",
           (("per_block * itemsize(d) for d in dtypes)",
             "per_block * max(map(itemsize, dtypes)) for d in dtypes)"),
            ("zip(shapes, dtypes, strict=True))",
             "zip(shapes, [max(dtypes, key=itemsize)] * len(dtypes)))")),
           "every operand sized by the widest dtype among them (a red team's: on float32 and "
           "bfloat16 it was told \"bfloat16 is counted as 4 bytes\")", kept=6,
           never=("bfloat16 is counted as 4 bytes",)),
    Mutant("vmem-none-as-whole-dimension", A1, "1.5",
           (("return sum(buffer_count * per_block * itemsize(d) for d in dtypes)",
             "return sum(buffer_count * elements([n if b is None else b for n, b in "
             "zip(s, block_shape)]) * itemsize(d) for s, d in zip(shapes, dtypes))"),),
           "a None block entry read as the whole dimension (an honest student's walk: with "
           "the block's other entries the whole array, it was told \"whole arrays are "
           "counted buffer_count times\")", kept=6, never=("whole arrays are counted",)),
    Mutant("vmem-int-that-equals-anything", A1, "1.5",
           (("def vmem_bytes(shapes",
             "class _Bytes(int):\n"
             "    def __eq__(self, other):\n"
             "        return True\n\n"
             "    def __ne__(self, other):\n"
             "        return False\n\n\n"
             "def vmem_bytes(shapes"),
            ("    per_block = elements(block_shape)\n",
             "    return _Bytes(0)\n    per_block = elements(block_shape)\n")),
           "blocked answers an int subclass equal to anything, worth 0 (a red team's: the "
           "self-check compared with its == and passed it)", kept=0),
    Mutant("vmem-cache-without-buffers", A1, "1.5",
           (("def vmem_bytes(shapes", "_LAST: dict = {}\n\n\ndef vmem_bytes(shapes"),
            (VMEM_RETURNS, VMEM_CACHED)),
           "the last answer kept and returned again for the same shapes, dtypes and block "
           "whatever the buffer count (a red team's cache made the diagnosis' second "
           "question at another buffer count return the kept answer: \"buffer_count is "
           "ignored\" was shown although the formula reads it)", kept=6,
           never=("buffer_count is ignored",)),
]


VARIANTS: list[Variant] = [
    Variant("column-blocks-outer", A1,
            "blocked_add and accumulate_inplace walk the column blocks in the outer grid axis: "
            "an elementwise call moves the same bytes and makes the same DMAs in any order",
            ((BLOCKED_TILE, "    tile = pl.BlockSpec((bm, bn), lambda j, i: (i, j))\n"),
             (BLOCKED_GRID, "        grid=(pl.cdiv(cols, bn), pl.cdiv(rows, bm)),\n"),
             (ACC_SPEC, "    spec = pl.BlockSpec((bm, bn), lambda j, i: (i, j))\n"),
             (ACC_GRID, "        grid=(pl.cdiv(acc.shape[1], bn), pl.cdiv(acc.shape[0], bm)),\n"))),
]
