"""The jnp namespace (docs/pallas-sim.md "Public names": a NumPy-backed subset of
jax.numpy; dot/matmul/einsum accepting preferred_element_type; zeros_like on refs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_helpers import SIM_SETTINGS

from pallas_sim import jax, jnp, pl
from pallas_sim._src.values import concrete

PRODUCTS = {
    "dot": lambda a, b, t: jnp.dot(a, b, preferred_element_type=t),
    "matmul": lambda a, b, t: jnp.matmul(a, b, preferred_element_type=t),
    "einsum": lambda a, b, t: jnp.einsum("ik,kj->ij", a, b, preferred_element_type=t),
}


@pytest.mark.parametrize("op", sorted(PRODUCTS))
@SIM_SETTINGS
@given(m=st.integers(1, 8), k=st.integers(1, 200), n=st.integers(1, 8), seed=st.integers(0, 99))
def test_bf16_products_accumulate_in_the_preferred_f32(op, m, k, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(jnp.bfloat16)
    b = rng.standard_normal((k, n)).astype(jnp.bfloat16)
    got = PRODUCTS[op](a, b, jnp.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = 4 * k * np.finfo(np.float32).eps * (np.abs(a.astype(np.float64))
                                                 @ np.abs(b.astype(np.float64))) + 1e-30
    assert np.dtype(got.dtype) == np.float32 and np.all(np.abs(got - exact) <= bound), (
        f"jnp.{op} of bf16 ({m},{k}) x ({k},{n}) with preferred_element_type=f32 must be f32 "
        f"and within 4*K*eps32*(|a|@|b|) of the float64 product; max error "
        f"{np.max(np.abs(got.astype(np.float64) - exact)):.3g}"
    )


@pytest.mark.parametrize("op", sorted(PRODUCTS))
def test_int8_products_accumulate_in_the_preferred_int32(op):
    a = np.full((2, 64), 100, np.int8)
    b = np.full((64, 2), 100, np.int8)
    got = PRODUCTS[op](a, b, jnp.int32)
    assert np.dtype(got.dtype) == np.int32 and np.all(got == 64 * 100 * 100), (
        f"jnp.{op}(int8, int8, preferred_element_type=int32) accumulates in int32 as in JAX: "
        f"64 x 100 x 100 = 640000; got {np.unique(got)} (int8 accumulation wraps around)"
    )


def test_zeros_ones_full_like_accept_refs():
    made = {}

    def kernel(x_ref, o_ref):
        made["zeros"] = concrete(jnp.zeros_like(x_ref))
        made["ones"] = concrete(jnp.ones_like(o_ref))
        made["full"] = concrete(jnp.full_like(x_ref, 7))
        o_ref[...] = jnp.zeros_like(o_ref)

    x = np.ones((8, 128), jnp.bfloat16)
    pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), np.int32))(x)
    assert made["zeros"].shape == (8, 128) and made["zeros"].dtype == np.dtype(jnp.bfloat16)
    assert np.all(made["zeros"] == 0), "zeros_like(x_ref): bf16 zeros of the ref's shape"
    assert made["ones"].dtype == np.int32 and np.all(made["ones"] == 1), "ones_like(o_ref)"
    assert np.all(made["full"] == 7), "full_like(x_ref, 7)"


@pytest.mark.parametrize(
    ("name", "call", "expected"),
    [
        ("exp", lambda x: jnp.exp(x), lambda x: np.exp(x)),
        ("exp2", lambda x: jnp.exp2(x), lambda x: np.exp2(x)),
        ("tanh", lambda x: jnp.tanh(x), lambda x: np.tanh(x)),
        ("maximum", lambda x: jnp.maximum(x, 0.5), lambda x: np.maximum(x, 0.5)),
        ("where", lambda x: jnp.where(x > 0, x, -x), lambda x: np.abs(x)),
        ("max", lambda x: jnp.max(x, axis=-1, keepdims=True),
         lambda x: np.max(x, axis=-1, keepdims=True)),
        ("sum", lambda x: jnp.sum(x, axis=-1), lambda x: np.sum(x, axis=-1)),
    ],
)
def test_elementwise_and_reductions_match_numpy_on_f32(name, call, expected):
    x = np.linspace(-3, 3, 8 * 128, dtype=np.float32).reshape(8, 128)
    got = call(x)
    assert np.allclose(got, expected(x), rtol=1e-6, atol=1e-6), (
        f"jnp.{name} on f32 values must equal NumPy's"
    )


def test_broadcasted_iota_indexes_along_its_dimension() -> None:
    from pallas_sim import jax
    rows = jax.lax.broadcasted_iota(np.int32, (3, 4), 0)
    cols = jax.lax.broadcasted_iota(np.int32, (3, 4), 1)
    assert rows.dtype == np.int32 and rows.shape == (3, 4)
    assert np.array_equal(rows, np.repeat(np.arange(3)[:, None], 4, axis=1)), (
        "dimension 0: every row holds its row index, as jax.lax.broadcasted_iota")
    assert np.array_equal(cols >= rows, np.triu(np.ones((3, 4), bool))), (
        "col >= row is the upper triangle: the causal mask idiom works")


def test_jit_runs_the_function_unchanged_in_both_spellings() -> None:
    import functools

    from pallas_sim import jax

    @jax.jit
    def double(x):
        return 2 * x

    @functools.partial(jax.jit, static_argnames=["k"])
    def scale(x, *, k):
        return k * x

    assert double(3) == 6 and scale(2, k=5) == 10, "jax.jit is the identity on pallas_sim"
