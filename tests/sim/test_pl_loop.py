"""``pl.loop(lower, upper, *, init_carry=None, step=1, unroll=None)``,
JAX 0.10.x's signature and iteration count ``cdiv(upper - lower, step)``."""

from __future__ import annotations

import numpy as np
import pytest

from pallas_sim import TracerConversionError, jax, jnp, pl
from pallas_sim._src.values import is_traced

X = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
F32 = jax.ShapeDtypeStruct((16, 128), jnp.float32)


def rows_visited(lower, upper, **kwargs):
    """The indices a pl.loop visits inside a kernel, and the kinds of value they are."""
    seen = []

    def kernel(x, o):
        o[...] = x[...]

        @pl.loop(lower, upper, **kwargs)
        def _(i):
            seen.append(i)

    pl.pallas_call(kernel, out_shape=F32)(X)
    return seen


@pytest.mark.parametrize(("lower", "upper", "step", "expected"), [
    (0, 4, 1, [0, 1, 2, 3]),
    (1, 16, 3, [1, 4, 7, 10, 13]),
    (5, 2, 1, []),
    # JAX's pl.cdiv on Python ints is (a + b - 1) // b: cdiv(-16, -2) = 9 iterations
    (15, -1, -2, [15, 13, 11, 9, 7, 5, 3, 1, -1]),
])
def test_the_indices_are_lower_plus_k_times_step_for_jaxs_count(lower, upper, step, expected):
    seen = rows_visited(lower, upper, step=step)
    assert [int(i._a) for i in seen] == expected
    assert all(is_traced(i) and i.dtype == np.int32 for i in seen), (
        "inside a kernel the index is a traced int32 value (JAX: a fori_loop tracer)")


def test_the_index_refuses_python_control_flow():
    def kernel(x, o):
        @pl.loop(0, 2)
        def _(i):
            if i == 0:
                o[...] = x[...]

    with pytest.raises(TracerConversionError):
        pl.pallas_call(kernel, out_shape=F32)(X)


def test_a_carry_threads_through_and_is_returned():
    def kernel(x, o):
        @pl.loop(0, 16, init_carry=jnp.zeros((1, 128), jnp.float32), unroll=4)
        def total(i, acc):
            return acc + x[pl.ds(i, 1), :]
        o[...] = jnp.broadcast_to(total, o.shape)

    out = pl.pallas_call(kernel, out_shape=F32)(X)
    np.testing.assert_array_equal(out, np.broadcast_to(X.sum(0, keepdims=True), X.shape))


def test_traced_bounds_run_their_value():
    def kernel(x, o):
        o[...] = jnp.zeros_like(o)

        @pl.loop(0, pl.program_id(0) + 3)
        def _(i):
            o[pl.ds(i, 1), :] = x[pl.ds(i, 1), :]

    out = pl.pallas_call(kernel, out_shape=F32, grid=(2,),
                         out_specs=pl.BlockSpec((16, 128), lambda i: (0, 0)))(X)
    np.testing.assert_array_equal(out[:4], X[:4])
    assert not out[4:].any(), "the last step runs rows 0..3 (bound 1 + 3)"


def test_refusals_match_jax():
    with pytest.raises(ZeroDivisionError):
        pl.loop(0, 4, step=0)
    with pytest.raises(TypeError, match="lax.div requires arguments to have the same dtypes"):
        def kernel(x, o):
            pl.loop(0.0, 4.0)(lambda i: None)
        pl.pallas_call(kernel, out_shape=F32)(X)
    with pytest.raises(TypeError, match="carry"):  # a body without a carry returns a value
        pl.pallas_call(lambda x, o: pl.loop(0, 2)(lambda i: 1), out_shape=F32)(X)


def test_outside_a_kernel_the_loop_runs_with_concrete_indices():
    assert pl.loop(0, 4, init_carry=0)(lambda i, c: c + i) == 6
