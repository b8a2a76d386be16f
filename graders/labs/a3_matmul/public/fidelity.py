"""Fidelity cases of a3_matmul (the blocked matmul and the lecture's §4 numbers): ``CASES``
for ``graders.fidelity.cases.cases_for``, which says what a case is."""

from __future__ import annotations

import ml_dtypes
from hypothesis import strategies as st

from graders.fidelity.cases import F32, FidelityCase, array, just
from graders.labs.a3_matmul.public import worked as a3_worked


@st.composite
def _matmul(draw):
    bm, bn, bk = (draw(st.sampled_from([8, 16])), 128, draw(st.sampled_from([128, 256])))
    m, n, k = bm * draw(st.integers(1, 2)), bn * draw(st.integers(1, 2)), bk * draw(
        st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    dtype = draw(st.sampled_from(["float32", "bfloat16"]))
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else F32
    activation = draw(st.sampled_from([None, "relu"]))
    return ((array((m, k), seed, dt), array((k, n), seed + 1, dt)),
            {"block_shape": (bm, bn, bk), "activation": activation})


_IRONWOOD = (a3_worked.PEAK_FLOPS, a3_worked.HBM_BANDWIDTH)


#: The functions of this lab that use ``pl``/``pltpu``/``jnp``/``jax`` (as ``func`` or in
#: ``covers``) and the inputs they are compared on.
CASES: tuple[FidelityCase, ...] = (
    FidelityCase("matmul", _matmul(), covers=("matmul_kernel",)),
    FidelityCase("matmul_vmem_bytes", just(
        (a3_worked.SHAPE, {"block": a3_worked.VMEM_BLOCK, "grid": g})
        for g in a3_worked.VMEM_MIB)),
    FidelityCase("arithmetic_intensity", just([((512,), {}), ((1024,), {"dtype_bytes": 4})])),
    FidelityCase("min_compute_bound_block", just([(_IRONWOOD, {})])),
    FidelityCase("ideal_matmul_time", just(
        ((*a3_worked.SHAPE, b), {"peak_flops": a3_worked.PEAK_FLOPS,
                                 "hbm_bandwidth": a3_worked.HBM_BANDWIDTH})
        for b in a3_worked.IDEAL_MS)),
)
