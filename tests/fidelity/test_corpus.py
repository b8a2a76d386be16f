"""The fidelity corpus: the public Pallas material's kernels, in the project's own words,
give the same results on pallas_sim as on real JAX in both of its interpreters.

``tests/fidelity/corpus/`` holds one module per public source (the quickstarts, the TPU
matmul, pipelining and block-sparse guides, the reference flash-attention kernel, Splash
attention's usage, the puzzle notebooks); docs/fidelity.md ("The fidelity corpus") has
the table. Every case runs on pallas_sim and on JAX with ``interpret=True`` and in TPU
interpret mode; outputs must have the same structure, shapes and dtypes, and values
within the tolerance the case states (integers exactly).

Then two lists: tutorial idioms JAX refuses, which pallas_sim must refuse too (the rules
test_traced_values.py and test_error_parity.py already pin are not repeated), and
results whose numbers or dtypes follow JAX's rules rather than NumPy's. Last, the JAX
0.10.2 limitations the corpus works around, pinned so that a JAX upgrade that lifts
them says so.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from corpus_cases import (
    BF16,
    EXACT,
    F32,
    JAX,
    Case,
    assert_agree,
    load_corpus,
    outcome,
    run_jax,
    run_sim,
    short_name,
)

from pallas_sim.backends import real_jax

MODULES = load_corpus()
SOURCES = {"quickstart", "matmul_guide", "pipelining_guide", "block_sparse", "flash_reference",
           "splash_usage", "puzzles"}


@pytest.mark.parametrize(("case", "mode"), [
    pytest.param(case, mode, id=f"{short_name(module)}.{case.name}-{mode}")
    for module in MODULES for case in module.CASES for mode in real_jax.MODES])
def test_corpus_case_agrees_with_jax(case: Case, mode: real_jax.Mode):
    expected = run_jax(case.build, mode)
    got = run_sim(case.build)
    assert_agree(got, expected, case.tolerance, f"{case.name} on JAX {mode} mode")


def test_the_corpus_has_a_module_per_public_source():
    assert {short_name(m) for m in MODULES} == SOURCES
    for module in MODULES:
        doc = module.__doc__ or ""
        assert re.search(r"https://\S+", doc), f"{short_name(module)} names no public source"
        assert "project's own version" in doc, (
            f"{short_name(module)}'s header must say the code is the project's own version")
        assert module.CASES, f"{short_name(module)} has no cases"


@pytest.mark.parametrize("case", [c for m in MODULES for c in m.CASES],
                         ids=lambda c: c.name)
def test_a_corpus_case_gives_the_same_result_twice_on_pallas_sim(case: Case):
    """Inputs are drawn afresh inside each build, so both backends see the same ones."""
    assert_agree(run_sim(case.build), run_sim(case.build), EXACT, f"{case.name} rerun")


# -- fails on JAX => fails here ----------------------------------------------------------------

X = (np.arange(16 * 128, dtype=np.float32).reshape(16, 128) - 900) / 7


@dataclasses.dataclass(frozen=True)
class Refused:
    """A tutorial idiom JAX refuses.

    Attributes:
      build: the idiom, written against ``ns``.
      sim_error, jax_error: the exception class each backend raises (pallas_sim's may be
        a subclass naming the rule).
      message: a fragment both messages contain (JAX's words), or None where the
        messages differ.
      hlo_runs: True where ``interpret=True`` checks nothing and runs the idiom (TPU
        interpret mode, which pallas_sim follows, refuses it).
    """

    build: Callable[[Any], Any]
    sim_error: type[BaseException]
    jax_error: type[BaseException]
    message: str | None
    hlo_runs: bool = False


def _copy_call(ns, kernel, *, in_specs=None, out_specs=None, grid=(), args=(X,), **kwargs):
    pl, jax = ns.pl, ns.jax
    specs = {k: v for k, v in (("in_specs", in_specs), ("out_specs", out_specs))
             if v is not None}
    return pl.pallas_call(kernel, grid=grid, out_shape=jax.ShapeDtypeStruct(X.shape, X.dtype),
                          **specs, **kwargs)(*args)


def any_ref_read_directly(ns):
    """A puzzle notebook's default: every input in pl.ANY (HBM), then ``x_ref[...]``."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 10.0
    return _copy_call(ns, kernel, in_specs=[ns.pl.BlockSpec(memory_space=ns.pl.ANY)])


def any_ref_written_directly(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 10.0
    return _copy_call(ns, kernel, out_specs=ns.pl.BlockSpec(memory_space=ns.pl.ANY))


def any_sub_ref_read_directly(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref.at[0:16][...] * 2.0
    return _copy_call(ns, kernel, in_specs=[ns.pl.BlockSpec(memory_space=ns.pl.ANY)])


def store_broadcasts_a_row(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[0:1, :]  # NumPy would broadcast the row over the block
    return _copy_call(ns, kernel)


def store_of_a_python_scalar(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = 0.0  # zero the block: JAX wants jnp.zeros_like(o_ref)
    return _copy_call(ns, kernel)


def store_of_a_scalar_into_a_slice(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        o_ref[0, :] = ns.jnp.float32(1.0)
    return _copy_call(ns, kernel)


def python_int_too_large_for_int32(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 2**31
    pl, jax, jnp = ns.pl, ns.jax, ns.jnp
    x = np.arange(8 * 128, dtype=np.int32).reshape(8, 128)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, jnp.int32))(x)


def kernel_returns_its_result(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        return o_ref[...]
    return _copy_call(ns, kernel)


def index_map_returns_too_few_indices(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    spec = ns.pl.BlockSpec((8, 128), lambda i: (i,))
    return _copy_call(ns, kernel, grid=(2,), in_specs=[spec],
                      out_specs=ns.pl.BlockSpec((8, 128), lambda i: (i, 0)))


def program_id_of_an_axis_the_grid_lacks(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + ns.pl.program_id(1)
    spec = ns.pl.BlockSpec((8, 128), lambda i: (i, 0))
    return _copy_call(ns, kernel, grid=(2,), in_specs=[spec], out_specs=spec)


def dynamic_smem_read_past_the_end(ns):
    """The block-sparse guide's neighbour lookup, off by one: ``min(b + 1, n)``."""
    pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

    def kernel(rows_ref, x_ref, o_ref):
        b = pl.program_id(0)
        o_ref[...] = x_ref[...] * rows_ref[jnp.minimum(b + 1, 2)]

    spec = pl.BlockSpec((8, 128), lambda b, rows: (b, 0))
    grid_spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(2,),
                                             in_specs=[spec], out_specs=spec)
    return pl.pallas_call(kernel, grid_spec=grid_spec,
                          out_shape=jax.ShapeDtypeStruct(X.shape, X.dtype))(
        jnp.asarray(np.array([3, 5], np.int32)), X)


def none_as_the_blockspec_of_an_array(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    return _copy_call(ns, kernel, grid=(1,), in_specs=[None],
                      out_specs=ns.pl.BlockSpec((16, 128), lambda i: (0, 0)))


def a_single_blockspec_as_in_specs(ns):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    spec = ns.pl.BlockSpec((8, 128), lambda i: (i, 0))
    return _copy_call(ns, kernel, grid=(2,), in_specs=spec, out_specs=spec)


ANY_MESSAGE = "Buffers with a memory space of HBM or ANY cannot be referenced directly"
REFUSED = {
    "pl.ANY ref read directly": Refused(any_ref_read_directly, ValueError, ValueError,
                                        ANY_MESSAGE, hlo_runs=True),
    "pl.ANY ref written directly": Refused(any_ref_written_directly, ValueError, ValueError,
                                           ANY_MESSAGE, hlo_runs=True),
    "pl.ANY sub-ref (.at) read directly": Refused(any_sub_ref_read_directly, ValueError,
                                                  ValueError, ANY_MESSAGE, hlo_runs=True),
    "store broadcasting a row over a block": Refused(store_broadcasts_a_row, ValueError,
                                                     ValueError, "Invalid shape for `swap`"),
    "store of a Python scalar into a block": Refused(store_of_a_python_scalar, ValueError,
                                                     ValueError, "Invalid shape for `swap`"),
    "store of a scalar into a row": Refused(store_of_a_scalar_into_a_slice, ValueError,
                                            ValueError, "Invalid shape for `swap`"),
    "Python int past int32 in a kernel": Refused(python_int_too_large_for_int32,
                                                 OverflowError, OverflowError, None),
    "kernel returning a value": Refused(kernel_returns_its_result, TypeError, ValueError, None),
    "index map returning too few indices": Refused(index_map_returns_too_few_indices,
                                                   TypeError, ValueError, None),
    "program_id of a missing grid axis": Refused(program_id_of_an_axis_the_grid_lacks,
                                                 ValueError, ValueError, None),
    "SMEM read past the end (block-sparse guide's min(b + 1, n))": Refused(
        dynamic_smem_read_past_the_end, IndexError, Exception, None, hlo_runs=True),
    "None as the BlockSpec of an array input": Refused(
        none_as_the_blockspec_of_an_array, ValueError, ValueError,
        "Pytree for `in_specs` and `inputs` do not match"),
    "a single BlockSpec as in_specs": Refused(a_single_blockspec_as_in_specs, ValueError,
                                              ValueError, "`in_specs` must be a tuple or a list"),
}


@pytest.mark.parametrize("idiom", list(REFUSED), ids=lambda s: re.sub(r"\W+", "_", s).strip("_"))
def test_a_tutorial_idiom_jax_refuses_pallas_sim_refuses(idiom: str):
    rule = REFUSED[idiom]
    _, sim_error = outcome(rule.build, None)
    assert isinstance(sim_error, rule.sim_error), (
        f"{idiom}: pallas_sim should raise {rule.sim_error.__name__}, got {sim_error!r}")
    modes = ("tpu",) if rule.hlo_runs else real_jax.MODES
    for mode in modes:
        _, jax_error = outcome(rule.build, mode)
        assert isinstance(jax_error, rule.jax_error), f"{idiom}: JAX {mode} mode: {jax_error!r}"
        if rule.message is not None:
            assert rule.message in str(jax_error), (mode, str(jax_error))
    if rule.message is not None:
        assert rule.message in str(sim_error), str(sim_error)
    if rule.hlo_runs:
        _, hlo_error = outcome(rule.build, "hlo")
        assert hlo_error is None, (
            f"{idiom}: interpret=True used to run this; it now raises {hlo_error!r} - "
            "update docs/fidelity.md")


# -- the same numbers as JAX -------------------------------------------------------------------

I8 = ((np.arange(16 * 128) % 251) - 125).astype(np.int8).reshape(16, 128)
B16 = ((np.arange(16 * 128, dtype=np.float32).reshape(16, 128) % 97) / 13).astype(
    ml_dtypes.bfloat16)


def _whole(ns, kernel, out, *args):
    return ns.pl.pallas_call(kernel, out_shape=out)(*args)


def int8_products_in_a_kernel(ns):
    """i8 @ i8: an int8 result that wraps, and int32 with preferred_element_type."""
    jax, jnp = ns.jax, ns.jnp

    def kernel(a_ref, b_ref, wrapped_ref, wide_ref):
        wrapped_ref[...] = jnp.dot(a_ref[...], b_ref[...])
        wide_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.int32)

    return _whole(ns, kernel, (jax.ShapeDtypeStruct((16, 16), jnp.int8),
                               jax.ShapeDtypeStruct((16, 16), jnp.int32)), I8, I8.T.copy())


def bf16_products_in_a_kernel(ns):
    """bf16 @ bf16 without preferred_element_type: a bf16 result (f32 accumulation)."""
    jax, jnp = ns.jax, ns.jnp

    def kernel(a_ref, b_ref, o_ref):
        product = a_ref[...] @ b_ref[...]
        o_ref[...] = product  # a dtype mismatch here would raise: the product is bf16

    return _whole(ns, kernel, jax.ShapeDtypeStruct((16, 16), jnp.bfloat16), B16, B16.T.copy())


def python_and_numpy_scalars_with_bf16(ns):
    """A Python float keeps bf16 (weak type); a NumPy float32 scalar promotes to f32."""
    jax, jnp = ns.jax, ns.jnp

    def kernel(x_ref, weak_ref, strong_ref):
        weak_ref[...] = x_ref[...] * 0.3
        strong_ref[...] = x_ref[...] * np.float32(0.3)

    return _whole(ns, kernel, (jax.ShapeDtypeStruct(B16.shape, jnp.bfloat16),
                               jax.ShapeDtypeStruct(B16.shape, jnp.float32)), B16)


def integer_division_and_means(ns):
    """int32 / int32 is float32; // and % floor toward -inf; mean of int32 is float32."""
    jax, jnp = ns.jax, ns.jnp
    ints = (np.arange(8 * 128, dtype=np.int32).reshape(8, 128) % 23) - 11

    def kernel(x_ref, div_ref, floor_ref, mod_ref, mean_ref):
        x = x_ref[...]
        div_ref[...] = x / 3
        floor_ref[...] = x // -4
        mod_ref[...] = x % -4
        mean_ref[...] = jnp.broadcast_to(jnp.mean(x, axis=1, keepdims=True), x.shape)

    f32, i32 = jax.ShapeDtypeStruct(ints.shape, jnp.float32), jax.ShapeDtypeStruct(
        ints.shape, jnp.int32)
    return _whole(ns, kernel, (f32, i32, i32, f32), ints)


def arange_and_iota_in_a_kernel(ns):
    """jnp.arange's default dtype is int32, as is the iota's."""
    jax, jnp = ns.jax, ns.jnp

    def kernel(o_ref):
        o_ref[...] = (jnp.arange(128)[None, :]
                      + jax.lax.broadcasted_iota(jnp.int32, (8, 128), 0) * 1000)

    return _whole(ns, kernel, jax.ShapeDtypeStruct((8, 128), jnp.int32))


def float64_and_int64_inputs(ns):
    """NumPy's float64/int64 inputs reach the kernel as float32/int32 refs."""
    jax, jnp = ns.jax, ns.jnp
    wide = (np.arange(8 * 128, dtype=np.float64).reshape(8, 128) - 500) / 3
    counts = np.arange(8 * 128, dtype=np.int64).reshape(8, 128)

    def kernel(x_ref, n_ref, o_ref, dtypes_ref):
        o_ref[...] = x_ref[...] * np.float32(1 / 3) + n_ref[...].astype(jnp.float32)
        both_32_bit = (x_ref.dtype == jnp.float32) & (n_ref.dtype == jnp.int32)
        dtypes_ref[...] = jnp.full(dtypes_ref.shape, both_32_bit, jnp.int32)

    return _whole(ns, kernel, (jax.ShapeDtypeStruct(wide.shape, jnp.float32),
                               jax.ShapeDtypeStruct(wide.shape, jnp.int32)), wide, counts)


@dataclasses.dataclass(frozen=True)
class SameNumbers:
    """A result whose dtype or numbers follow JAX's rules, with what to check."""

    build: Callable[[Any], Any]
    tolerance: float
    check: Callable[[Any], None]


def _dtypes(*names: str) -> Callable[[Any], None]:
    def check(out: Any) -> None:
        leaves = out if isinstance(out, list) else [out]
        assert [str(leaf.dtype) for leaf in leaves] == list(names), [leaf.dtype for leaf in leaves]
    return check


def _int8_wraps(out: Any) -> None:
    _dtypes("int8", "int32")(out)
    np.testing.assert_array_equal(out[0], out[1].astype(np.int8))  # wraps modulo 256


def _floored(out: Any) -> None:
    _dtypes("float32", "int32", "int32", "float32")(out)
    assert out[1].min() < 0 and (out[2] <= 0).all(), "floor division and a remainder of -4's sign"


def _ones(out: Any) -> None:
    _dtypes("float32", "int32")(out)
    assert (out[1] == 1).all(), "the refs are float32 and int32, as JAX makes them"


SAME_NUMBERS = {
    "int8 products in a kernel": SameNumbers(int8_products_in_a_kernel, EXACT, _int8_wraps),
    "bf16 @ bf16 in a kernel": SameNumbers(bf16_products_in_a_kernel, BF16, _dtypes("bfloat16")),
    "Python vs NumPy scalars with bf16": SameNumbers(python_and_numpy_scalars_with_bf16, BF16,
                                                     _dtypes("bfloat16", "float32")),
    "integer division, floor, remainder, mean": SameNumbers(integer_division_and_means, F32,
                                                            _floored),
    "jnp.arange and iota in a kernel": SameNumbers(arange_and_iota_in_a_kernel, EXACT,
                                                   _dtypes("int32")),
    "float64/int64 inputs become float32/int32 refs": SameNumbers(float64_and_int64_inputs, F32,
                                                                  _ones),
}


@pytest.mark.parametrize("rule", list(SAME_NUMBERS), ids=lambda s: re.sub(r"\W+", "_", s))
def test_a_result_has_jaxs_dtype_and_numbers_in_both(rule: str):
    entry = SAME_NUMBERS[rule]
    sim = run_sim(entry.build)
    entry.check(sim)
    for mode in real_jax.MODES:
        assert_agree(sim, run_jax(entry.build, mode), entry.tolerance, f"{rule} ({mode})")


# -- JAX 0.10.2 limitations the corpus works around -------------------------------------------


def _vmapped_call_with_semantics(ns):
    pl, pltpu, jax = ns.pl, ns.pltpu, ns.jax

    def double(x):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] * 2.0
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(kernel, grid=(2,), in_specs=[spec], out_specs=spec,
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              compiler_params=pltpu.CompilerParams(
                                  dimension_semantics=("parallel",)))(x)

    return jax.vmap(double)(np.stack([X, -X]))


def _program_id_in_a_loop_body(ns):
    pl, jax = ns.pl, ns.jax

    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) >= 0)
        def _():
            def body(i, acc):
                return acc + pl.program_id(0)
            o_ref[...] = x_ref[...] + jax.lax.fori_loop(0, 2, body, 0.0)

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return _copy_call(ns, kernel, grid=(2,), in_specs=[spec], out_specs=spec)


def test_jax_tpu_interpret_mode_cannot_vmap_a_call_with_dimension_semantics():
    """splash_usage.causal_mha_vmapped_over_batch leaves out its dimension_semantics for
    this; when this test fails, JAX fixed it: put them back."""
    expected = run_sim(_vmapped_call_with_semantics)
    np.testing.assert_array_equal(expected, np.stack([X, -X]) * 2)
    assert_agree(expected, run_jax(_vmapped_call_with_semantics, "hlo"), F32, "hlo")
    _, error = outcome(_vmapped_call_with_semantics, "tpu")
    assert error is not None and "safe_zip" in str(error), error


def test_jax_interpret_true_cannot_lower_program_id_inside_a_loop_body():
    """flash_reference reads program_id before its inner loop for this; when this test
    fails, JAX fixed it."""
    expected = run_sim(_program_id_in_a_loop_body)
    assert_agree(expected, run_jax(_program_id_in_a_loop_body, "tpu"), F32, "tpu")
    _, error = outcome(_program_id_in_a_loop_body, "hlo")
    assert error is not None and "program_id" in str(error), error


def test_real_jax_runs_pl_kernel_in_the_chosen_interpreter():
    """The JAX backend forces ``interpret`` for ``pl.kernel`` as for ``pallas_call``: a
    TPU kernel file, which passes no ``interpret=``, runs on this CPU in both modes."""
    def fill(ns):
        pl, pltpu, jax, jnp = ns.pl, ns.pltpu, ns.jax, ns.jnp

        @pl.kernel(out_type=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                   mesh=pltpu.create_tensorcore_mesh("core", num_cores=1),
                   scratch_types=[pltpu.VMEM((8, 128), jnp.float32)])
        def kernel(o_hbm, buf):
            buf[...] = jnp.full_like(buf, 3.0)
            pltpu.sync_copy(buf, o_hbm)

        return kernel()

    assert JAX.pl.kernel is real_jax.kernel
    for mode in real_jax.MODES:
        np.testing.assert_array_equal(run_jax(fill, mode), np.full((8, 128), 3.0, np.float32))
