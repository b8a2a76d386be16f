"""Honest idioms a student writes: each t_* function must run under the submission policy
exactly as it runs without it (tests/redteam/test_policy.py runs them in a real worker).
The first five were refused before the red-team review of the policy found them."""

import dataclasses
import functools
import typing

import numpy as np


def t_str_format():
    return "M={} is not a multiple of {}".format(100, 32)  # noqa: UP032 - str.format on purpose


def t_frozen_post_init():
    @dataclasses.dataclass(frozen=True)
    class Spec:
        block: tuple
        area: int = 0

        def __post_init__(self):
            object.__setattr__(self, "area", self.block[0] * self.block[1])

    return Spec((8, 128)).area


def t_property_setter():
    class Counter:
        def __init__(self):
            self._n = 0

        @property
        def n(self):
            return self._n

        @n.setter
        def n(self, value):
            self._n = value

    c = Counter()
    c.n = 5
    return c.n


def t_flat_store():
    x = np.zeros((2, 2))
    x.flat[0] = 1.0
    return float(x.sum())


def t_ndindex():
    return [list(i) for i in np.ndindex(2, 2)]


def t_wraps_own_decorator():
    def logged(fn):
        @functools.wraps(fn)
        def inner(*args):
            return fn(*args)
        return inner

    @logged
    def double(x):
        return 2 * x

    return double(21), double.__name__


def t_closures_and_comprehensions():
    count = 0

    def bump():
        nonlocal count
        count += 1
    for _ in range(3):
        bump()
    return count, [i * i for i in range(4)], {k: v for k, v in zip("ab", (1, 2), strict=True)}


def t_dataclass_machinery():
    @dataclasses.dataclass(order=True)
    class Block:
        rows: int
        cols: int = dataclasses.field(default=128)

    b = dataclasses.replace(Block(8), cols=256)
    return dataclasses.asdict(b), Block(1) < Block(2)


def t_namedtuple():
    class State(typing.NamedTuple):
        m: float
        l: float

    s = State(1.0, 2.0)
    return s._replace(l=3.0)._asdict(), s.m


def t_fstrings_and_matmul():
    x = np.ones((2, 2))
    y = x @ x
    y @= x
    return f"{y.sum()=} {y.shape!r} {3.14159:.2f}"


def t_lru_cache():
    @functools.cache
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    return fib(20), fib.cache_info().hits > 0


def t_generic_protocol():
    T = typing.TypeVar("T")

    class Box(typing.Generic[T]):
        def __init__(self, item: T):
            self.item = item

    return Box(3).item


def t_random_and_testing():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(x, x)
    return float(x.sum())


def t_kernel_with_when_and_partial():
    from pallas_sim import jax, jnp, pl

    def kernel(x_ref, o_ref, *, scale):
        @pl.when(pl.program_id(0) == 0)
        def _first():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += x_ref[...] * scale

    x = np.ones((16, 128), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    out = pl.pallas_call(functools.partial(kernel, scale=2.0), grid=(2,), in_specs=[spec],
                         out_specs=spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    return float(out.sum())


def t_trace_reads():
    import pallas_sim
    from pallas_sim import jax, pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    x = np.ones((16, 128), np.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    with pallas_sim.trace() as t:
        pl.pallas_call(kernel, grid=(2,), in_specs=[spec], out_specs=spec,
                       out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    call = t.calls[-1]
    return call.dma_count, call.grid, [op.block_shape for op in call.operands]


def t_jax_surface_in_a_kernel_and_wrapper():
    from pallas_sim import jax, jnp, pl

    @functools.partial(jax.jit, static_argnames=["block"])
    def causal_row_softmax(x: jax.Array, *, block: int) -> jax.Array:
        def kernel(x_ref, o_ref):
            s = x_ref[...]
            rows = pl.program_id(0) * block + jax.lax.broadcasted_iota(jnp.int32, s.shape, 0)
            cols = jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
            s = jax.lax.select(cols <= rows, s, jnp.full(s.shape, -jnp.inf, s.dtype))
            o_ref[...] = jax.nn.softmax(s, axis=-1)

        spec = pl.BlockSpec((block, x.shape[1]), lambda i: (i, 0))
        return pl.pallas_call(kernel, grid=(x.shape[0] // block,), in_specs=[spec],
                              out_specs=spec,
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    key = jax.random.key(0)
    x = jax.random.normal(key, (16, 128))
    out = jax.vmap(functools.partial(causal_row_softmax, block=8))(jnp.stack([x, x]))
    total = jax.lax.fori_loop(0, 2, lambda i, acc: acc + out[i].sum(), 0.0)
    leaves = jax.tree.leaves({"out": out, "key": jax.random.split(key)})
    return (float(total), isinstance(out, jax.Array), len(leaves),
            hasattr(jnp, "rsqrt"), float(jax.lax.rsqrt(4.0)))
