# Attack: the other candidates are measured on shapes only, and a
# candidate where the kernel raises there is silently left out of "the best candidate for
# your own kernel". The kernel raises at every candidate block shape when its blocks are
# abstract (an abstract block shows as zeros in its repr), except at its own bad choice
# (512, 512, 512) and at the reference's best (1024, 2048, 1024), which is also measured on
# data: there it does honest extra work in both runs (dead vector ops), enough to be slower
# than 512^3. On data (Tasks 3.1/3.2, and the two concrete runs) it is the solution.
# Honest outcome: 3/10. Before the fix: 10/10 at 4.614 ms.

CHOSEN = (512, 512, 512)
CAPPED = (1024, 2048, 1024)


def matmul_kernel(x_ref, y_ref, z_ref, *, activation=None):
    bm, bk = x_ref.shape
    bn = y_ref.shape[1]
    blocks = (bm, bn, bk)
    if blocks == CAPPED:
        t = x_ref[0:1, 0:1].astype(jnp.float32)
        for _ in range(600):  # 252 steps x 600 x 0.064 us = 9.7 ms
            t = t + 1.0
    elif blocks != CHOSEN and min(blocks) >= 128 and bm * bk >= 8 * 8:
        if "[[0 0 ... 0 0]" in repr(x_ref[...]) or repr(x_ref[0:1, 0:4]).endswith(
                "[[0. 0. 0. 0.]]"):
            raise ValueError("not this one")

    @pl.when(pl.program_id(2) == 0)
    def _init():
        z_ref[...] = jnp.zeros_like(z_ref)

    z_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    if activation == "relu":
        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _finish():
            z_ref[...] = jnp.maximum(z_ref[...], 0.0)


def choose_matmul_blocks():
    return CHOSEN
