"""A dtype pallas_sim refuses by name is refused by every spelling, with the same message
(before, ``x.astype("float8_e4m3fn")`` was accepted while ``jnp.float8_e4m3fn`` was
refused, so a kernel could make its products "fp8" only under ``pallas_sim.estimate`` and
be counted at twice the bf16 rate).

The refused dtypes are ``pallas_sim._src.dtypes.REFUSED``: those JAX 0.10.2's jax.numpy
names that pallas_sim's does not offer (fp8/fp6/fp4, int1/int2, complex).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pallas_sim
from pallas_sim import UnsupportedJaxAPIError, jax, jnp, lax, pl, pltpu
from pallas_sim._src.dtypes import REFUSED, REFUSED_NAMES
from pallas_sim._src.jax_names import NAMES

NAMES_TRIED = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "int2", "complex64")


def _by_name(name: str) -> str:
    with pytest.raises(UnsupportedJaxAPIError) as info:
        getattr(jnp, name)
    return str(info.value)


def _spellings(name: str) -> list[object]:
    kind = getattr(ml_dtypes, name, None) or getattr(np, name)
    return [name, np.dtype(name), kind]


def _in_kernel(body, x=None):
    """Run ``body(x_ref)`` in a one-step kernel on ``x`` (f32 [8, 128] ones)."""
    x = np.ones((8, 128), np.float32) if x is None else x

    def kernel(x_ref, o_ref):
        body(x_ref)
        o_ref[...] = jnp.zeros_like(o_ref)

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))(x)


F32 = np.ones((8, 128), np.float32)
BF16 = np.ones((8, 128), jnp.bfloat16)

#: Every place a dtype is given: (what, call with the dtype d).
PLACES = {
    "kernel value .astype": lambda d: _in_kernel(lambda r: r[...].astype(d)),
    "jnp.astype": lambda d: _in_kernel(lambda r: jnp.astype(r[...], d)),
    "lax.convert_element_type": lambda d: _in_kernel(
        lambda r: lax.convert_element_type(r[...], d)),
    "jnp.dot preferred_element_type": lambda d: _in_kernel(
        lambda r: jnp.dot(r[...], r[...].T, preferred_element_type=d)),
    "lax.dot_general preferred_element_type": lambda d: _in_kernel(
        lambda r: lax.dot_general(r[...], r[...], (((1,), (1,)), ((), ())),
                                  preferred_element_type=d)),
    "kernel value .view": lambda d: _in_kernel(lambda r: r[...].astype(jnp.int8).view(d)),
    "jnp.zeros in a kernel": lambda d: _in_kernel(lambda r: jnp.zeros((8, 128), d)),
    "jnp.asarray(dtype=)": lambda d: jnp.asarray(F32, dtype=d),
    "jnp.full": lambda d: jnp.full((8, 128), 1, d),
    "jax.ShapeDtypeStruct": lambda d: jax.ShapeDtypeStruct((8, 128), d),
    "pltpu.VMEM scratch": lambda d: pltpu.VMEM((8, 128), d),
    "an input array of that dtype": lambda d: _in_kernel(lambda r: r[...],
                                                         np.zeros((8, 128), d)),
}


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("name", NAMES_TRIED)
def test_a_dtype_refused_by_name_is_refused_by_every_spelling_with_its_message(place, name):
    want = _by_name(name)
    for dtype in _spellings(name):
        if place == "kernel value .view" and np.dtype(dtype).itemsize != 1:
            continue  # a view needs a dtype of the same itemsize
        with pytest.raises(UnsupportedJaxAPIError) as info:
            PLACES[place](dtype)
        assert str(info.value) == want, (place, dtype)


def test_the_refusal_says_which_dtypes_pallas_sim_models():
    text = _by_name("float8_e4m3fn")
    assert "bfloat16" in text and "float32" in text and "np.dtype('float8_e4m3fn')" in text


def test_the_fp8_trick_under_estimate_is_refused():
    """The red team's kernel: both products cast to float8 only under estimate (where the
    values are abstract), by the string spelling."""
    def kernel(q_ref, k_ref, o_ref):
        q, k = q_ref[...], k_ref[...]
        if type(q).__name__ != "ndarray":  # any detection; the cast is what matters here
            q, k = q.astype("float8_e4m3fn"), k.astype("float8_e4m3fn")
        o_ref[...] = jnp.dot(q, k.T, preferred_element_type=jnp.float32)

    def f(q, k):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((256, 256), jnp.float32))(
            q, k)

    s = jax.ShapeDtypeStruct((256, 128), jnp.bfloat16)
    with pytest.raises(UnsupportedJaxAPIError, match="float8_e4m3fn"):
        pallas_sim.estimate(f, s, s)


def test_the_refused_dtypes_are_those_jax_names_and_pallas_sim_does_not_offer():
    for name in REFUSED_NAMES:
        assert name in NAMES["jax.numpy"] and name not in jnp.__all__, name
    offered = {np.dtype(getattr(jnp, n)) for n in jnp.__all__
               if isinstance(getattr(jnp, n), type) and issubclass(getattr(jnp, n), np.generic)
               and n not in ("bool", "bool_")}
    assert not offered & REFUSED


@pytest.mark.parametrize("dtype", [jnp.bfloat16, np.float32, np.float16, np.int8, jnp.int4,
                                   np.int32, np.uint8, np.bool_, "bfloat16", "float32"])
def test_the_dtypes_pallas_sim_offers_stay_accepted_by_every_spelling(dtype):
    assert jax.ShapeDtypeStruct((8, 128), dtype).dtype == np.dtype(dtype)
    _in_kernel(lambda r: r[...].astype(dtype))
    assert jnp.asarray(F32, dtype=dtype).dtype == np.dtype(dtype)
