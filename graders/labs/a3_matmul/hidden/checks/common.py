"""Shared by the a3 hidden checks: constants, drawn inputs and the comparison of products."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from graders.checking.compare import as_array
from graders.checking.framework import CheckFailure, Session
from graders.checking.strategies import BF16, F32, Case, make_array, seeds
from graders.labs.a3_matmul.hidden.diagnose import diagnose_values, error_bound, exact_product
from graders.labs.a3_matmul.public import worked

A = "a3"
MiB, KiB = 1 << 20, 1 << 10
PEAK_FLOPS, HBM_BANDWIDTH = worked.PEAK_FLOPS, worked.HBM_BANDWIDTH  # one Ironwood TensorCore
WORKED_RTOL = 5e-3
#: Error bound as a fraction of (|x| @ |y|): float32 accumulation of exact bf16/f32
#: products stays far below 1e-5; one bf16 rounding per k step stays below 2^-8.
F32_ACCUMULATION, BF16_RESULT = 1e-5, 4e-3


# --- drawn inputs --------------------------------------------------------------------------

@st.composite
def matmul_cases(draw, *, dtypes=(F32, BF16), activations=(None, "relu"),
                 min_k_steps: int = 2) -> Case:
    """x [M, K], y [K, N] with (M, N, K) multiples of a drawn (bm, bn, bk); at least
    ``min_k_steps`` k steps and at least two output blocks."""
    bm, bn, bk = (draw(st.sampled_from([8, 16, 32, 64])) for _ in range(3))
    blocks_m, blocks_n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if blocks_m * blocks_n < 2:
        blocks_n = 2
    blocks_k = draw(st.integers(min_k_steps, 4))
    dtype = draw(st.sampled_from(list(dtypes)))
    x = make_array((bm * blocks_m, bk * blocks_k), dtype, draw(seeds))
    y = make_array((bk * blocks_k, bn * blocks_n), dtype, draw(seeds))
    kwargs: dict = {"block_shape": (bm, bn, bk)}
    activation = draw(st.sampled_from(list(activations)))
    if activation is not None or draw(st.booleans()):
        kwargs["activation"] = activation
    return Case((x, y), kwargs, ("x", "y"))


def _assert_matmul(got: object, case: Case, rel: float, what: str,
                   expected: np.ndarray | None = None, memory: str | None = None) -> None:
    """``got`` equals the activated float64 product (or ``expected``, e.g. what the
    student's own kernel computes) within ``rel`` of |x| @ |y|. ``memory``: what fresh
    output buffers held when the kernel ran ("poison" or "zero"); with it, a failure is
    diagnosed by the known mistakes that compute ``got`` (``value_models``)."""
    x, y = case.args
    own_kernel = expected is not None
    if expected is None:
        expected = exact_product(x, y, case.kwargs.get("activation"))
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise CheckFailure(f"{what} has the wrong shape", expected=f"shape {expected.shape}",
                           got=f"shape {arr.shape}")
    g = arr.astype(np.float64)
    bound = error_bound(x, y, rel)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(g - expected) <= bound)
        if own_kernel:  # NaN where the kernel itself gives NaN is the kernel's, not charged here
            bad &= ~(np.isnan(g) & np.isnan(expected))
    if not bad.any():
        return
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    raise CheckFailure(
        f"{what} is wrong in {int(bad.sum())} of {bad.size} elements",
        expected=f"x @ y{' then ReLU' if case.kwargs.get('activation') else ''} in float64; "
                 f"at index {first}: {expected[first]:.6g}",
        got=f"{arr.dtype.name}{list(arr.shape)}; at index {first}: {g[first]:.6g} (allowed "
            f"error {bound[first]:.3g} = {rel:g}·(|x| @ |y|))",
        diagnosis=None if memory is None else diagnose_values(g, case, rel, memory))


def _product_bytes(case: Case) -> int:
    """Bytes of x @ y in float64: what a correct reply may need beyond its inputs (the
    product [M, N] outgrows x [M, K] and y [K, N] when K is small)."""
    x, y = case.args
    return 8 * x.shape[0] * y.shape[1]


def _kernel_run(s: Session, case: Case, memory: str) -> object:
    kwargs = {"block_shape": case.kwargs["block_shape"],
              "activation": case.kwargs.get("activation"), "memory": memory}
    return s.invoke("matmul_kernel", case.args, kwargs, harness="a3",
                    reply_bytes=_product_bytes(case)).value
