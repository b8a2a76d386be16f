"""Traced values and dtype rules: what JAX refuses inside a kernel pallas_sim refuses,
what it accepts pallas_sim accepts, and 64-bit requests give JAX's 32-bit numbers.

Every case is one ``build(ns)`` written against a namespace ``(pl, pltpu, jax,
jnp)`` and run on pallas_sim and on real JAX in both interpreters (``interpret=True``
and TPU interpret mode). Kernels are traced to a jaxpr before either interpreter
runs them, so the refusals are the same in both.

Source: JAX's tracer errors (``TracerBoolConversionError``,
``ConcretizationTypeError``, ``TracerIntegerConversionError``,
``TracerArrayConversionError``), ``jax_enable_x64`` off, and Pallas's store rule
("Invalid dtype for `swap`").
"""

from __future__ import annotations

import types
import warnings

import ml_dtypes
import numpy as np
import pytest

import pallas_sim
from pallas_sim.backends import real_jax

SIM = types.SimpleNamespace(pl=pallas_sim.pl, pltpu=pallas_sim.pltpu, jax=pallas_sim.jax,
                            jnp=pallas_sim.jnp)
JAX = types.SimpleNamespace(pl=real_jax.pl, pltpu=real_jax.pltpu, jax=real_jax.jax,
                            jnp=real_jax.jnp)
X = (np.arange(16 * 128, dtype=np.float32).reshape(16, 128) - 1000) / 7
TRACER_ERRORS = ("TracerBoolConversionError", "ConcretizationTypeError",
                 "TracerIntegerConversionError", "TracerArrayConversionError")


def run(ns, mode, build):
    """``build(ns)`` (on real JAX in interpreter ``mode``) as a NumPy array, warnings
    collected: (result, error text or None, warning texts)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if ns is JAX:
                with real_jax.mode(mode):
                    out = np.asarray(build(ns))
            else:
                out = np.asarray(build(ns))
        except Exception as exc:  # noqa: BLE001 - the error is what we compare
            if ns is JAX:
                real_jax.reset()
            return None, f"{type(exc).__name__}: {exc}", [str(w.message) for w in caught]
    return out, None, [str(w.message) for w in caught]


def blocks(ns, kernel, *, grid=(2,), dtype=None, out_dtype=None, x=X, prefetch=None):
    """x (16, 128) → o through (8, 128) blocks with ``kernel(x_ref, o_ref)`` (or
    ``kernel(s_ref, x_ref, o_ref)`` with one scalar-prefetch table)."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp
    x = x if dtype is None else x.astype(dtype)
    out = jax.ShapeDtypeStruct((16, 128), out_dtype or x.dtype)
    if prefetch is None:
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, grid=grid, in_specs=[spec], out_specs=spec,
                              out_shape=out)(x)
    spec = pl.BlockSpec((8, 128), lambda i, s: (i, 0))
    grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=grid,
                                             in_specs=[spec], out_specs=spec)
    return pl.pallas_call(kernel, grid_spec=grid_spec, out_shape=out)(
        jnp.asarray(np.asarray(prefetch, np.int32)), x)


# -- fails on JAX ⇒ fails here ----------------------------------------------------------------


def if_on_program_id(ns):
    def kernel(x_ref, o_ref):
        if ns.pl.program_id(0) == 0:
            o_ref[...] = x_ref[...]
        else:
            o_ref[...] = -x_ref[...]
    return blocks(ns, kernel)


def if_on_a_loaded_value(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 if x_ref[0, 0] > 0 else x_ref[...]
    return blocks(ns, kernel)


def if_on_an_smem_value(ns):
    def kernel(s_ref, x_ref, o_ref):
        if s_ref[ns.pl.program_id(0)] == 1:
            o_ref[...] = x_ref[...]
        else:
            o_ref[...] = x_ref[...] + 1
    return blocks(ns, kernel, prefetch=[1, 0])


def range_over_program_id(ns):
    def kernel(x_ref, o_ref):
        acc = x_ref[...]
        for _ in range(ns.pl.program_id(0)):
            acc = acc + 1
        o_ref[...] = acc
    return blocks(ns, kernel)


def float_of_a_loaded_value(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * float(x_ref[0, 0])
    return blocks(ns, kernel)


def int_of_program_id(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + [0.0, 1.0][int(ns.pl.program_id(0))]
    return blocks(ns, kernel)


def numpy_function_on_a_loaded_value(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = np.exp(x_ref[...] / 100)
    return blocks(ns, kernel)


def numpy_asarray_of_a_loaded_value(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = np.asarray(x_ref[...]) + 1
    return blocks(ns, kernel)


def python_branch_in_an_index_map(ns):
    pl, jax = ns.pl, ns.jax

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    spec = pl.BlockSpec((8, 128), lambda i: (1 if i == 0 else 0, 0))
    return pl.pallas_call(kernel, grid=(2,), in_specs=[spec],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
                          out_shape=jax.ShapeDtypeStruct((16, 128), np.float32))(X)


def numpy_array_built_in_a_kernel(ns):
    pl = ns.pl

    def kernel(x_ref, o_ref):
        rows = np.arange(8, dtype=np.float32)[:, None]  # a captured constant in JAX
        o_ref[...] = x_ref[...] + rows * pl.program_id(0)
    return blocks(ns, kernel)


def numpy_array_stored_into_a_ref(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = np.zeros(o_ref.shape, np.float32)
    return blocks(ns, kernel)


def numpy_array_closed_over_from_the_wrapper(ns):
    jnp = ns.jnp
    table = np.linspace(0, 1, 128, dtype=np.float32)

    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.where(x_ref[...] > 0, x_ref[...], table)
    return blocks(ns, kernel)


CAPTURED = [numpy_array_built_in_a_kernel, numpy_array_stored_into_a_ref,
            numpy_array_closed_over_from_the_wrapper]


@pytest.mark.parametrize("build", CAPTURED, ids=lambda f: f.__name__)
def test_a_numpy_array_inside_a_kernel_is_a_captured_constant_in_both(build):
    with pytest.raises(pallas_sim.CapturedConstantError, match=r"captures constants \[f32\["):
        build(SIM)
    for mode in real_jax.MODES:
        _, error, _ = run(JAX, mode, build)
        assert error is not None and "captures constants" in error, (mode, error)


REFUSED = [if_on_program_id, if_on_a_loaded_value, if_on_an_smem_value, range_over_program_id,
           float_of_a_loaded_value, int_of_program_id, numpy_function_on_a_loaded_value,
           numpy_asarray_of_a_loaded_value, python_branch_in_an_index_map]


@pytest.mark.parametrize("build", REFUSED, ids=lambda f: f.__name__)
def test_what_jax_refuses_on_a_traced_value_pallas_sim_refuses(build):
    with pytest.raises(pallas_sim.TracerConversionError,
                       match="pl.when|jnp.where|fori_loop|jnp function|pl.ds"):
        build(SIM)
    for mode in real_jax.MODES:
        _, error, _ = run(JAX, mode, build)
        assert error is not None and error.startswith(TRACER_ERRORS), (mode, error)


def test_the_refusal_names_the_kernel_line():
    with pytest.raises(pallas_sim.TracerConversionError) as info:
        if_on_program_id(SIM)
    frames = [f.name for f in info.traceback]
    assert "kernel" in frames, "the traceback reaches the kernel's own `if` line"


def test_storing_another_float_dtype_into_a_ref_raises_as_in_jax():
    def build(ns):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...].astype(ns.jnp.float32)  # o is bf16
        return blocks(ns, kernel, dtype=ml_dtypes.bfloat16)

    with pytest.raises(ValueError, match=r"Invalid dtype for `swap`. Ref dtype: bfloat16. "
                                         r"Value dtype: float32"):
        build(SIM)
    for mode in real_jax.MODES:
        _, error, _ = run(JAX, mode, build)
        assert error is not None and "Invalid dtype for `swap`" in error, (mode, error)


# -- accepted by JAX ⇒ accepted here, with the same numbers -----------------------------------


def when_on_program_id(ns):
    pl = ns.pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        @pl.when(pl.program_id(0) == 1)
        def _():
            o_ref[...] = -x_ref[...]
    return blocks(ns, kernel)


def where_on_an_smem_value(ns):
    jnp, pl = ns.jnp, ns.pl

    def kernel(s_ref, x_ref, o_ref):
        o_ref[...] = jnp.where(s_ref[pl.program_id(0)] == 1, x_ref[...], x_ref[...] + 1)
    return blocks(ns, kernel, prefetch=[1, 0])


def numpy_scalars_on_the_left(ns):
    pl, jnp = ns.pl, ns.jnp

    def kernel(x_ref, o_ref):
        rows = jnp.arange(8, dtype=jnp.float32)[:, None]
        o_ref[...] = np.float32(2) * x_ref[...] + rows * pl.program_id(0) + 0.5 - np.inf * 0
    return blocks(ns, kernel)


def program_id_as_an_index(ns):
    pl = ns.pl

    def kernel(x_ref, o_ref):
        row = x_ref[pl.program_id(0)]  # a traced first index
        o_ref[...] = x_ref[...] + row[None, :]
        o_ref[pl.ds(pl.program_id(0) * 2, 2), :] = x_ref[pl.ds(0, 2), :] * 0
    return blocks(ns, kernel)


def python_if_on_static_values(ns):
    pl = ns.pl

    def kernel(x_ref, o_ref, *, scale=3.0):
        value = x_ref[...]
        if x_ref.shape[0] == 8 and scale > 1:  # shapes and arguments are Python values
            value = value * scale
        for r in range(x_ref.shape[0]):  # a static loop
            value = value + r
        o_ref[...] = value + pl.num_programs(0)
    return blocks(ns, kernel)


def float64_requested_in_a_kernel(ns):
    jnp = ns.jnp

    def kernel(x_ref, o_ref):
        wide = x_ref[...].astype(jnp.float64)  # JAX computes this in float32
        o_ref[...] = ((wide + 1e-9) - wide).astype(o_ref.dtype) * 1e9
    return blocks(ns, kernel)


def numpy_float64_scalar_times_a_value(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * np.float64(1 / 3)  # stays float32, as in JAX
    return blocks(ns, kernel)


def lax_in_a_kernel(ns):
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp

    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        rows = i * 8 + jax.lax.broadcasted_iota(jnp.int32, (8, 128), 0)
        cols = jax.lax.broadcasted_iota(jnp.int32, (8, 128), 1)
        x = jnp.where(cols <= rows, x_ref[...], -jnp.inf)
        o_ref[...] = jax.nn.softmax(x / 100, axis=-1)

        def add_row(r, acc):  # r is traced: it indexes refs through pl.ds
            return acc + x_ref[pl.ds(r, 1), :]

        total = jax.lax.fori_loop(0, i + 1, add_row, jnp.zeros((1, 128), jnp.float32))
        o_ref[pl.ds(0, 1), :] = total
        o_ref[pl.ds(1, 1), :] = jax.lax.cond(i == 0, lambda: total * 2, lambda: total)
    return blocks(ns, kernel)


def functional_updates_in_a_kernel(ns):
    pl = ns.pl

    def kernel(x_ref, o_ref):
        x = x_ref[...]
        y = x.at[0].set(7.0).at[:, 3].add(x[:, 4]).at[pl.program_id(0)].multiply(2.0)
        o_ref[...] = y + x.at[2, 5].get()
    return blocks(ns, kernel)


ACCEPTED = [lax_in_a_kernel, functional_updates_in_a_kernel, when_on_program_id,
            where_on_an_smem_value, numpy_scalars_on_the_left, program_id_as_an_index,
            python_if_on_static_values, float64_requested_in_a_kernel,
            numpy_float64_scalar_times_a_value]


@pytest.mark.parametrize("build", ACCEPTED, ids=lambda f: f.__name__)
def test_what_jax_accepts_on_a_traced_value_pallas_sim_accepts_with_the_same_numbers(build):
    sim, error, _ = run(SIM, None, build)
    assert error is None, error
    for mode in real_jax.MODES:
        got, error, _ = run(JAX, mode, build)
        assert error is None, (mode, error)
        assert got.dtype == sim.dtype, (mode, got.dtype, sim.dtype)
        np.testing.assert_allclose(sim, got, rtol=1e-6, atol=1e-6, err_msg=mode)


def test_a_float64_request_warns_and_computes_in_float32_in_both():
    sim, _, sim_warnings = run(SIM, None, float64_requested_in_a_kernel)
    got, _, jax_warnings = run(JAX, "tpu", float64_requested_in_a_kernel)
    np.testing.assert_array_equal(sim, got)
    assert np.all(sim[X != 0] == 0), "1e-9 is lost next to x in float32 (kept only at x == 0)"
    for caught in (sim_warnings, jax_warnings):
        assert any("float64" in w and "truncated to dtype float32" in w for w in caught), caught


# -- host-side jnp: JAX's dtypes ---------------------------------------------------------------


@pytest.mark.parametrize("expr", [
    lambda jnp: jnp.arange(8),
    lambda jnp: jnp.zeros((2, 3)),
    lambda jnp: jnp.ones(3, int),
    lambda jnp: jnp.exp(np.ones(3)),
    lambda jnp: jnp.dot(np.ones((4, 4), ml_dtypes.bfloat16), np.ones((4, 4), ml_dtypes.bfloat16)),
    lambda jnp: jnp.matmul(np.ones((4, 4), np.int8), np.ones((4, 4), np.int8)),
    lambda jnp: jnp.dot(np.ones((4, 4), ml_dtypes.bfloat16), np.ones((4, 4), ml_dtypes.bfloat16),
                        preferred_element_type=jnp.float32),
    lambda jnp: jnp.sum(np.arange(5)),
], ids=["arange", "zeros", "ones_int", "exp_f64", "dot_bf16", "matmul_int8", "dot_bf16_f32",
        "sum_int64"])
def test_host_jnp_results_have_jaxs_dtypes(expr):
    sim, jax_result = expr(pallas_sim.jnp), expr(real_jax.jnp)
    assert np.asarray(sim).dtype == np.asarray(jax_result).dtype
    np.testing.assert_allclose(np.asarray(sim, np.float64), np.asarray(jax_result, np.float64))


def test_an_explicit_float64_dtype_warns_and_truncates_in_both():
    for jnp in (pallas_sim.jnp, real_jax.jnp):
        with pytest.warns(UserWarning, match="float64.*truncated to dtype float32"):
            assert np.asarray(jnp.zeros(3, jnp.float64)).dtype == np.float32
