"""JAX's own TPU kernels (``jax/experimental/pallas/ops/tpu/`` of the installed jax) run
unchanged on pallas_sim: each module is loaded from the jax package with only its import
lines rewritten (``pallas_sim/backends/jax_ops.py``), called at small sizes that still
take several grid steps (the cases: tests/fidelity/jax_kernel_cases.py), and compared
with the same module in JAX's TPU interpret mode.

Tolerance: float32 outputs within 1e-4 absolute + 1e-4 relative (the products accumulate
in another order); the backward kernels' gradients (up to ~50 in size) within 5e-4
absolute + 1e-4 relative; NaN at the same places in every case. JAX's results are
computed once per module.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.fidelity.jax_kernel_cases import CASES, run_case


@pytest.fixture(scope="module")
def jax_results() -> dict[str, list[np.ndarray]]:
    """Each case once in JAX's TPU interpret mode (the slow side)."""
    return {case: run_case(case, "jax") for case in CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jax_kernel_runs_unchanged_and_agrees(case: str,
                                              jax_results: dict[str, list[np.ndarray]]) -> None:
    got, want = run_case(case, "sim"), jax_results[case]
    atol, rtol = CASES[case][2]
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{case}: NaN places")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{case}: values differ from TPU interpret mode")
