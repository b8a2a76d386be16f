# Contained: the kernel always multiplies float8_e4m3fn copies of its blocks (twice the
# bf16 rate on Ironwood), on data and on shapes alike, so the counts agree and every step
# still runs 2·bm·bn·bk MXU FLOPs. The sampled output of the checked small run is then
# wrong (fp8 keeps 3 mantissa bits): no time, 0/10. (Tasks 3.1/3.2 lose their points too:
# the values are wrong.)


def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None):
    @pl.when(pl.program_id(2) == 0)
    def _init():
        z_ref[...] = jnp.zeros_like(z_ref)

    z_ref[...] += jnp.dot(x_ref[...].astype("float8_e4m3fn"),
                          y_ref[...].astype("float8_e4m3fn"),
                          preferred_element_type=jnp.float32)

    if activation == "relu":
        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _finish():
            z_ref[...] = jnp.maximum(z_ref[...], 0.0)


def choose_matmul_blocks():
    return (1024, 2048, 1024)
