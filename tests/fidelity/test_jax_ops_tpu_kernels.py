"""JAX's own TPU kernels (``jax/experimental/pallas/ops/tpu/`` of the installed jax) run
unchanged on pallas_sim: each module is loaded from the jax package with only its import
lines rewritten (``pallas_sim/backends/jax_ops.py``), called at small sizes that still
take several grid steps, and compared with the same module in JAX's TPU interpret mode.

Tolerance: float32 outputs within 1e-4 absolute + 1e-4 relative (the products accumulate
in another order), NaN at the same places. JAX's results are computed once per module.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pallas_sim.backends import real_jax
from pallas_sim.backends.jax_ops import load_op

RNG = np.random.default_rng(26)
X = RNG.standard_normal((16, 256)).astype(np.float32)
A = RNG.standard_normal((256, 256)).astype(np.float32)
B = RNG.standard_normal((256, 256)).astype(np.float32)
Q, K, V = (RNG.standard_normal((1, 2, 256, 128)).astype(np.float32) for _ in range(3))
LHS = RNG.standard_normal((256, 128)).astype(np.float32)
RHS = RNG.standard_normal((3, 128, 128)).astype(np.float32)
GROUPS = np.array([100, 0, 156], np.int32)


def _flash(m: Any) -> Any:
    sizes = m.BlockSizes(block_q=128, block_k_major=128, block_k=128, block_b=1)
    return m.flash_attention(Q, K, V, causal=True, block_sizes=sizes)


#: name -> (kernel module, call on the loaded module)
CASES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "example_kernel.double": ("example_kernel", lambda m: m.double(X)),
    "matmul": ("matmul", lambda m: m.matmul(A, B, block_shape=(128, 128), block_k=128)),
    "flash_attention causal": ("flash_attention", _flash),
    "megablox gmm": ("megablox.gmm", lambda m: m.gmm(LHS, RHS, GROUPS, tiling=(128, 128, 128))),
}


def _leaves(value: Any) -> list[np.ndarray]:
    items = value if isinstance(value, tuple | list) else [value]
    return [np.asarray(v) for v in items]


def _run(case: str, backend: str) -> list[np.ndarray]:
    module, call = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if backend == "sim":
            return _leaves(call(load_op(module, "sim")))
        with real_jax.mode("tpu"):
            return _leaves(call(load_op(module, "jax")))


@pytest.fixture(scope="module")
def jax_results() -> dict[str, list[np.ndarray]]:
    """Each case once in JAX's TPU interpret mode (the slow side)."""
    return {case: _run(case, "jax") for case in CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jax_kernel_runs_unchanged_and_agrees(case: str,
                                              jax_results: dict[str, list[np.ndarray]]) -> None:
    got, want = _run(case, "sim"), jax_results[case]
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{case}: NaN places")
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, equal_nan=True,
                                   err_msg=f"{case}: values differ from TPU interpret mode")
