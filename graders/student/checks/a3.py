"""Public checks of a3_matmul (lecture §4): ``x @ y`` oracles and the worked answers."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.student.public import Api, Mismatch, arrays, assert_close, number, public_check, seeds

A = "a3"
MiB = 1 << 20
PEAK, BW = 1028.75e12, 3685.5e9  # Ironwood, one TensorCore


@st.composite
def matmuls(draw) -> dict:
    """Strategy: (x, y) matmul operands with drawn M, N, K for the public self-check."""
    bm, bn, bk = (draw(st.sampled_from([8, 16])) for _ in range(3))
    m, n, k = (bm * draw(st.integers(1, 3)), bn * draw(st.integers(1, 3)),
               bk * draw(st.integers(1, 3)))
    return {"x": arrays((m, k), draw(seeds)), "y": arrays((k, n), draw(seeds)),
            "block_shape": (bm, bn, bk), "activation": draw(st.sampled_from([None, "relu"]))}


def _expected(case: dict) -> np.ndarray:
    z = case["x"].astype(np.float64) @ case["y"].astype(np.float64)
    return np.maximum(z, 0) if case["activation"] == "relu" else z


@public_check(A, "3.1", "matmul_kernel in the standard 3D-grid pallas_call gives x @ y "
                        "(and relu(x @ y))")
def kernel_values(api: Api) -> None:
    """Task 3.1: matmul_kernel in the standard 3D-grid pallas_call gives x @ y (and relu(x @ y))."""
    def body(case: dict) -> None:
        got = api.kernel("a3", "matmul_kernel", case["x"], case["y"],
                         block_shape=case["block_shape"], activation=case["activation"])
        assert_close(got, _expected(case), rtol=1e-4, atol=1e-4, what="z")
    api.run_property(matmuls(), body)


@public_check(A, "3.2", "matmul(x, y, block_shape=..., activation=...) equals x @ y")
def matmul_values(api: Api) -> None:
    """Task 3.2: matmul(x, y, block_shape=..., activation=...) equals x @ y."""
    def body(case: dict) -> None:
        got = api.call("matmul", case["x"], case["y"], block_shape=case["block_shape"],
                       activation=case["activation"])
        assert_close(got.value, _expected(case), rtol=1e-4, atol=1e-4, what="matmul's result")
    api.run_property(matmuls(), body)


@public_check(A, "3.3", "worked answers: (4096, 7168) @ (7168, 18432), block 1024: 1d 664 MiB, "
                        "2d 64 MiB, 3d 16 MiB (lecture §4.2)")
def vmem_worked(api: Api) -> None:
    """Task 3.3: worked answers: (4096, 7168) @ (7168, 18432), block 1024: 1d 664 MiB, 2d 64 MiB,
    3d 16 MiB (lecture §4.2).
    """
    for grid, mib in (("1d", 664), ("2d", 64), ("3d", 16)):
        got = api.call("matmul_vmem_bytes", 4096, 18432, 7168, block=1024, grid=grid).value
        if got != mib * MiB:
            raise Mismatch("the VMEM estimate differs from the lecture's", input=f"grid={grid!r}",
                           expected=f"{mib * MiB} ({mib} MiB)", got=repr(got))


@public_check(A, "3.4", "worked answers: intensity b/2; smallest compute-bound block 560; "
                        "ideal time 1.147 ms (block 512) and 1.052 ms (block 1024) (lecture §4.3)")
def roofline_worked(api: Api) -> None:
    """Task 3.4: worked answers: intensity b/2; smallest compute-bound block 560; ideal time
    1.147 ms (block 512) and 1.052 ms (block 1024) (lecture §4.3).
    """
    got = api.call("arithmetic_intensity", 1024).value
    if not np.isclose(number(got, "arithmetic_intensity(1024)"), 512.0):
        raise Mismatch("arithmetic_intensity(1024) differs", expected="512.0", got=repr(got))
    got = api.call("min_compute_bound_block", PEAK, BW).value
    if got != 560:
        raise Mismatch("min_compute_bound_block for Ironwood differs", expected="560",
                       got=repr(got))
    for block, ms in ((512, 1.147), (1024, 1.052)):
        got = api.call("ideal_matmul_time", 4096, 18432, 7168, block, peak_flops=PEAK,
                       hbm_bandwidth=BW).value
        if not np.isclose(number(got, "ideal_matmul_time's result"), ms * 1e-3, rtol=5e-3):
            raise Mismatch("ideal_matmul_time differs from the lecture's",
                           input=f"block = {block}", expected=f"{ms} ms", got=repr(got))
