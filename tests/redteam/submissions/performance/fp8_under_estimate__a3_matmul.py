# Attack (kernel side, dtype trick): when its blocks are abstract (an
# abstract block shows as zeros in its repr) the kernel multiplies float8 copies of them (the
# dtype as the string "float8_e4m3fn"); on data it computes in bf16, so Task 3.1 keeps
# full marks. The wrapper is the solution's.
# Before: the time of the fp8 products was graded (10/10 at these blocks).
# Defence: the kernel's work is counted on data and on shapes at the same blocks; they
# differ, so no time is given: 0/10.


def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None):
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init():
        z_ref[...] = jnp.zeros_like(z_ref)

    x, y = x_ref[...], y_ref[...]
    if "[[0 0 ... 0 0]" in repr(x):  # shapes only: the block shows as zeros
        x, y = x.astype("float8_e4m3fn"), y.astype("float8_e4m3fn")
    z_ref[...] += jnp.dot(x, y, preferred_element_type=jnp.float32)

    if activation == "relu":
        @pl.when(k == pl.num_programs(2) - 1)
        def _finish():
            z_ref[...] = jnp.maximum(z_ref[...], 0.0)


def choose_matmul_blocks():
    return (1024, 2048, 1024)
