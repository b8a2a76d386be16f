"""``jax.nn`` and ``jax.random`` on pallas_sim and on real JAX 0.10.2.

nn: same values, shapes and dtypes. random: the numbers differ by design (NumPy's
generator, not threefry), so the tests compare shapes, dtypes, ranges, the key
structure, and determinism per key."""

from __future__ import annotations

import numpy as np
import pytest
from surface_helpers import JAX, SIM, compare

X = np.linspace(-4, 4, 32, dtype=np.float32).reshape(4, 8)
BF = X.astype("bfloat16")
I = np.arange(-8, 8, dtype=np.int32).reshape(2, 8)
MASK = (np.arange(32) % 3 != 1).reshape(4, 8)

ACTIVATIONS = ("relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "silu",
               "swish", "gelu", "elu", "celu", "selu", "leaky_relu", "hard_tanh",
               "hard_sigmoid", "hard_silu", "hard_swish", "mish", "squareplus", "sparse_plus",
               "tanh", "identity")

NN = {
    **{f"{name}_f32": (lambda ns, n=name: getattr(ns.nn, n)(X)) for name in ACTIVATIONS},
    **{f"{name}_bf16": (lambda ns, n=name: getattr(ns.nn, n)(BF)) for name in ACTIVATIONS},
    **{f"{name}_int": (lambda ns, n=name: getattr(ns.nn, n)(I)) for name in ACTIVATIONS},
    "relu_python_float": lambda ns: ns.nn.relu(-1.5),
    "gelu_exact": lambda ns: ns.nn.gelu(X, approximate=False),
    "gelu_exact_bf16": lambda ns: ns.nn.gelu(BF, approximate=False),
    "softmax": lambda ns: ns.nn.softmax(X),
    "softmax_axis0": lambda ns: ns.nn.softmax(X, axis=0),
    "softmax_axes": lambda ns: ns.nn.softmax(X, axis=(0, 1)),
    "softmax_where": lambda ns: ns.nn.softmax(X, where=MASK),
    "softmax_int": lambda ns: ns.nn.softmax(I),
    "softmax_bf16": lambda ns: ns.nn.softmax(BF),
    "softmax_all_minus_inf": lambda ns: ns.nn.softmax(np.full((2, 3), -np.inf, np.float32)),
    "log_softmax": lambda ns: ns.nn.log_softmax(X),
    "log_softmax_where": lambda ns: ns.nn.log_softmax(X, where=MASK),
    "logsumexp": lambda ns: ns.nn.logsumexp(X, axis=1),
    "logsumexp_all": lambda ns: ns.nn.logsumexp(X),
    "logsumexp_keepdims_b": lambda ns: ns.nn.logsumexp(X, axis=0, b=np.float32(0.5),
                                                       keepdims=True),
    "logsumexp_sign": lambda ns: ns.nn.logsumexp(X, axis=1, b=-np.ones_like(X),
                                                 return_sign=True),
    "logsumexp_minus_inf": lambda ns: ns.nn.logsumexp(np.full(3, -np.inf, np.float32)),
    "standardize": lambda ns: ns.nn.standardize(X),
    "standardize_stable": lambda ns: ns.nn.standardize(X, axis=0, algorithm="stable"),
    "glu": lambda ns: ns.nn.glu(X),
    "leaky_relu_slope": lambda ns: ns.nn.leaky_relu(X, negative_slope=0.2),
    "elu_alpha": lambda ns: ns.nn.elu(X, alpha=0.5),
    "one_hot": lambda ns: ns.nn.one_hot(np.array([0, 2, 5, -1], np.int32), 3),
    "one_hot_axis0": lambda ns: ns.nn.one_hot(np.array([[0, 1], [2, 0]], np.int32), 3, axis=0),
    "one_hot_float_input": lambda ns: ns.nn.one_hot(np.array([0.0, 2.0], np.float32), 3),
    "one_hot_dtype": lambda ns: ns.nn.one_hot(np.array([1], np.int32), 4, dtype=np.int32),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_functions_agree_with_jax(name):
    exact_erf = "gelu_exact" in name or name.startswith(("gelu", "celu", "selu", "elu"))
    compare(NN[name], rtol=2e-5 if exact_erf and "bf16" not in name else None)


def test_glu_of_an_odd_axis_raises_in_both():
    import pallas_sim

    with pytest.raises(ValueError, match="divisible by 2"):
        pallas_sim.nn.glu(X[:, :5])
    with pytest.raises(AssertionError, match="divisible by 2"):  # JAX asserts
        JAX.nn.glu(X[:, :5])


def test_every_nn_name_of_pallas_sim_exists_in_jax():
    import jax

    from pallas_sim import nn

    missing = [name for name in nn.__all__ if not hasattr(jax.nn, name)]
    assert not missing, f"pallas_sim.nn offers names real jax.nn lacks: {missing}"


# -- random -------------------------------------------------------------------------------------

RANDOM_SHAPES = {
    "key": lambda ns: ns.random.key(0),
    "key_data": lambda ns: ns.random.key_data(ns.random.key(42)),
    "PRNGKey": lambda ns: ns.random.PRNGKey(42),
    "PRNGKey_large_seed": lambda ns: ns.random.PRNGKey(2**40 + 5),
    "PRNGKey_negative_seed": lambda ns: ns.random.PRNGKey(-1),
    "split_typed": lambda ns: ns.random.key_data(ns.random.split(ns.random.key(0))),
    "split_typed_3": lambda ns: ns.random.key_data(ns.random.split(ns.random.key(0), 3)),
    "split_typed_shape": lambda ns: ns.random.key_data(ns.random.split(ns.random.key(0), (2, 3))),
    "split_legacy": lambda ns: ns.random.split(ns.random.PRNGKey(0), 4),
    "split_refuses_batch": lambda ns: ns.random.split(ns.random.split(ns.random.key(0), 4)),
    "fold_in": lambda ns: ns.random.key_data(ns.random.fold_in(ns.random.key(0), 3)),
    "fold_in_legacy": lambda ns: ns.random.fold_in(ns.random.PRNGKey(0), 7),
    "normal": lambda ns: ns.random.normal(ns.random.key(1), (3, 5)),
    "normal_int_shape": lambda ns: ns.random.normal(ns.random.key(1), 4),
    "normal_legacy_key": lambda ns: ns.random.normal(ns.random.PRNGKey(1), (2,)),
    "normal_bf16": lambda ns: ns.random.normal(ns.random.key(1), (2,), "bfloat16"),
    "normal_refuses_int_dtype": lambda ns: ns.random.normal(ns.random.key(1), (2,), np.int32),
    "normal_refuses_key_batch": lambda ns: ns.random.normal(ns.random.split(ns.random.key(1)),
                                                            (2,)),
    "uniform": lambda ns: ns.random.uniform(ns.random.key(2), (4, 4)),
    "uniform_bounds": lambda ns: ns.random.uniform(ns.random.key(2), (2,), minval=-3.0,
                                                   maxval=np.array([0.0, 5.0], np.float32)),
    "uniform_refuses_bounds_shape": lambda ns: ns.random.uniform(
        ns.random.key(2), (2,), minval=np.zeros(3, np.float32)),
    "bernoulli": lambda ns: ns.random.bernoulli(ns.random.key(3), 0.3, (5,)),
    "bernoulli_shape_of_p": lambda ns: ns.random.bernoulli(ns.random.key(3),
                                                           np.array([0.1, 0.9], np.float32)),
    "randint": lambda ns: ns.random.randint(ns.random.key(4), (6,), 0, 10),
    "randint_int8": lambda ns: ns.random.randint(ns.random.key(4), (6,), 0, 1000, np.int8),
    "randint_refuses_float": lambda ns: ns.random.randint(ns.random.key(4), (2,), 0, 9,
                                                          np.float32),
    "randint_refuses_overflow": lambda ns: ns.random.randint(ns.random.key(4), (2,), 0, 2**40),
    "truncated_normal": lambda ns: ns.random.truncated_normal(ns.random.key(5), -1.0, 1.0, (8,)),
    "truncated_normal_shape_of_bounds": lambda ns: ns.random.truncated_normal(
        ns.random.key(5), np.array([-1.0, 0.0], np.float32), 1.0),
    "categorical": lambda ns: ns.random.categorical(ns.random.key(6), np.zeros((3, 5),
                                                                               np.float32)),
    "categorical_axis0": lambda ns: ns.random.categorical(ns.random.key(6),
                                                          np.zeros((3, 5), np.float32), axis=0),
    "categorical_shape": lambda ns: ns.random.categorical(
        ns.random.key(6), np.zeros((3, 5), np.float32), shape=(2, 3)),
    "categorical_refuses_shape": lambda ns: ns.random.categorical(
        ns.random.key(6), np.zeros((3, 5), np.float32), shape=(2,)),
    "choice": lambda ns: ns.random.choice(ns.random.key(7), 5, (3,), replace=False),
    "choice_array": lambda ns: ns.random.choice(ns.random.key(7), np.arange(4.0, dtype=np.float32),
                                                (2, 2)),
    "permutation": lambda ns: ns.random.permutation(ns.random.key(8), 6),
    "permutation_rows": lambda ns: ns.random.permutation(ns.random.key(8),
                                                         np.arange(6).reshape(3, 2)),
    "bits": lambda ns: ns.random.bits(ns.random.key(9), (3,)),
    "bits_uint8": lambda ns: ns.random.bits(ns.random.key(9), (3,), np.uint8),
    "gumbel": lambda ns: ns.random.gumbel(ns.random.key(10), (3,)),
    "exponential": lambda ns: ns.random.exponential(ns.random.key(11), (3,)),
    "key_refuses_float_seed": lambda ns: ns.random.key(3.0),
    "key_refuses_array_seed": lambda ns: ns.random.key(np.arange(2)),
}

#: Cases whose values are the same on both backends (key words, permutations' contents).
EXACT = {"key_data", "PRNGKey", "PRNGKey_large_seed", "PRNGKey_negative_seed"}


@pytest.mark.parametrize("name", sorted(RANDOM_SHAPES))
def test_random_shapes_dtypes_and_refusals_agree_with_jax(name):
    compare(RANDOM_SHAPES[name], check_values=name in EXACT)


def _sample_ranges(ns):
    k = ns.random.key(123)
    return {
        "uniform": ns.random.uniform(k, (4096,), minval=-2.0, maxval=3.0),
        "uniform_bf16": ns.random.uniform(k, (4096,), "bfloat16"),
        "randint": ns.random.randint(k, (4096,), -3, 7),
        "randint_int8_wide": ns.random.randint(k, (4096,), -1000, 1000, np.int8),
        "truncated": ns.random.truncated_normal(k, -0.5, 1.5, (4096,)),
        "categorical": ns.random.categorical(k, np.log(np.array([0.2, 0.8], np.float32)),
                                             shape=(4096,)),
        "bernoulli": ns.random.bernoulli(k, 0.25, (4096,)),
        "normal": ns.random.normal(k, (4096,)),
    }


def test_samples_stay_in_jaxs_ranges_with_jaxs_statistics():
    sim, real = _sample_ranges(SIM), _sample_ranges(JAX)
    for name, got in sim.items():
        want = np.asarray(real[name])
        assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, JAX {want.dtype}"
        g = got.astype(np.float64)
        if name.startswith("uniform"):
            lo, hi = (-2.0, 3.0) if name == "uniform" else (0.0, 1.0)
            assert g.min() >= lo and g.max() < hi, f"{name}: values must lie in [{lo}, {hi})"
        if name == "randint":
            assert set(np.unique(got)) == set(range(-3, 7)), "randint draws every value of [-3, 7)"
        if name == "randint_int8_wide":
            assert got.min() >= -128 and got.max() <= 127 and got.max() > 100, (
                "bounds beyond int8 are clipped to its range, as JAX")
        if name == "truncated":
            assert g.min() > -0.5 and g.max() < 1.5, "truncated_normal: the open interval"
        # Statistics on 4096 draws: the two backends agree within 5 standard errors.
        se = 5 * max(np.std(g), 1e-3) / np.sqrt(g.size)
        w = want.astype(np.float64)
        assert abs(g.mean() - w.mean()) < 2 * se, (
            f"{name}: mean {g.mean():.4f} vs JAX's {w.mean():.4f} (5-sigma bound {2 * se:.4f})")


def test_the_same_key_gives_the_same_numbers_and_split_keys_differ():
    random = SIM.random
    key = random.key(2026)
    a, b = random.split(key)
    assert np.array_equal(random.normal(key, (16,)), random.normal(random.key(2026), (16,))), (
        "sampling is deterministic per key")
    assert not np.array_equal(random.normal(a, (16,)), random.normal(b, (16,))), (
        "the two halves of a split draw different numbers")
    assert not np.array_equal(random.key_data(random.fold_in(key, 1)),
                              random.key_data(random.fold_in(key, 2))), "fold_in(k, 1) != (k, 2)"
    assert np.array_equal(random.key_data(random.split(key)),
                          random.key_data(random.split(random.key(2026)))), "split is a function"
    x, y = random.split(key)
    assert x.shape == () and y.shape == () and str(x.dtype) == "key<fry>", (
        "unpacking a split gives typed keys of shape (), dtype key<fry>, as JAX")


def test_every_random_name_of_pallas_sim_exists_in_jax():
    import jax

    from pallas_sim import random

    missing = [name for name in random.__all__ if not hasattr(jax.random, name)]
    assert not missing, f"pallas_sim.random offers names real jax.random lacks: {missing}"
