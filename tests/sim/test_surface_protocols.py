"""The JAX surface carries values that implement NumPy's array protocols.

Kernel values (docs/pallas-sim.md, rule 10: values a JAX tracer would hold)
refuse ``bool()``, ``int()``, ``float()`` and conversion to a NumPy array, and
implement ``__array_ufunc__`` / ``__array_function__``. ``Traced`` below is
such a value, backed by a NumPy array: every function here must return a
``Traced`` for ``Traced`` inputs without converting them, and compute the same
numbers as on plain arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pallas_sim import jax
from pallas_sim._src.indexing import IndexUpdateHelper

lax, nn = jax.lax, jax.nn


def _unwrap(value: Any) -> Any:
    if isinstance(value, Traced):
        return value.value
    if isinstance(value, tuple | list):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _wrap(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):
        return Traced(value)
    if isinstance(value, tuple | list):
        return type(value)(_wrap(v) for v in value)
    return value


class Traced:
    """A stand-in kernel value: refuses every conversion, follows NumPy's protocols."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    shape = property(lambda self: self.value.shape)
    dtype = property(lambda self: self.value.dtype)
    ndim = property(lambda self: self.value.ndim)
    size = property(lambda self: self.value.size)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a kernel value was converted to a concrete Python/NumPy value")

    __bool__ = __int__ = __float__ = __index__ = __array__ = _refuse

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            return NotImplemented
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def astype(self, dtype: Any, copy: bool = True) -> Traced:
        return Traced(self.value.astype(dtype))

    def __getitem__(self, index: Any) -> Traced:
        return Traced(self.value[_unwrap(index)])

    def __len__(self) -> int:
        return len(self.value)

    def __repr__(self) -> str:
        return f"Traced({self.value!r})"


def _binary(ufunc: Any) -> Any:
    return (lambda self, other: ufunc(self, other),
            lambda self, other: ufunc(other, self))


for _name, _ufunc in {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                      "truediv": np.true_divide, "floordiv": np.floor_divide, "mod": np.remainder,
                      "pow": np.power, "and": np.bitwise_and, "or": np.bitwise_or,
                      "xor": np.bitwise_xor}.items():
    _forward, _reverse = _binary(_ufunc)
    setattr(Traced, f"__{_name}__", _forward)
    setattr(Traced, f"__r{_name}__", _reverse)
for _name, _ufunc in {"lt": np.less, "le": np.less_equal, "gt": np.greater,
                      "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(Traced, f"__{_name}__", lambda self, other, u=_ufunc: u(self, other))
Traced.__neg__ = lambda self: np.negative(self)  # type: ignore[attr-defined]
Traced.__invert__ = lambda self: np.invert(self)  # type: ignore[attr-defined]
Traced.__hash__ = None  # type: ignore[assignment]

X = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
Y = np.linspace(0.5, 3, 24, dtype=np.float32).reshape(4, 6)
I = np.arange(24, dtype=np.int32).reshape(4, 6)

CALLS = {
    "lax.add": lambda x, y: lax.add(x, y),
    "lax.div": lambda x, y: lax.div(x, y),
    "lax.rem": lambda x, y: lax.rem(x, y),
    "lax.max": lambda x, y: lax.max(x, y),
    "lax.exp": lambda x, y: lax.exp(x),
    "lax.exp2": lambda x, y: lax.exp2(x),
    "lax.rsqrt": lambda x, y: lax.rsqrt(y),
    "lax.logistic": lambda x, y: lax.logistic(x),
    "lax.tanh": lambda x, y: lax.tanh(x),
    "lax.erf": lambda x, y: lax.erf(x),
    "lax.round": lambda x, y: lax.round(x),
    "lax.select": lambda x, y: lax.select(x > 0, x, y),
    "lax.clamp": lambda x, y: lax.clamp(np.float32(-1), x, np.float32(1)),
    "lax.lt": lambda x, y: lax.lt(x, y),
    "lax.dot_general": lambda x, y: lax.dot_general(x, y, (((1,), (1,)), ((), ()))),
    "lax.dot": lambda x, y: lax.dot(x, y.T if isinstance(y, np.ndarray) else np.transpose(y)),
    "lax.dot_general_batch": lambda x, y: lax.dot_general(
        np.reshape(x, (2, 2, 6)), np.reshape(y, (2, 2, 6)), (((2,), (2,)), ((0,), (0,)))),
    "lax.broadcast_in_dim": lambda x, y: lax.broadcast_in_dim(x, (3, 4, 6), (1, 2)),
    "lax.convert_element_type": lambda x, y: lax.convert_element_type(x * 10, np.int32),
    "lax.reduce_max": lambda x, y: lax.reduce_max(x, (1,)),
    "lax.reduce_sum": lambda x, y: lax.reduce_sum(x, (0, 1)),
    "lax.reshape": lambda x, y: lax.reshape(x, (6, 4)),
    "lax.transpose": lambda x, y: lax.transpose(x, (1, 0)),
    "lax.concatenate": lambda x, y: lax.concatenate([x, y], 0),
    "lax.slice": lambda x, y: lax.slice(x, (1, 0), (3, 6), (1, 2)),
    "lax.dynamic_slice": lambda x, y: lax.dynamic_slice(x, (1, 2), (2, 3)),
    "lax.cumsum": lambda x, y: lax.cumsum(x, axis=1, reverse=True),
    "nn.relu": lambda x, y: nn.relu(x),
    "nn.gelu": lambda x, y: nn.gelu(x),
    "nn.gelu_exact": lambda x, y: nn.gelu(x, approximate=False),
    "nn.softmax": lambda x, y: nn.softmax(x),
    "nn.softmax_where": lambda x, y: nn.softmax(x, where=y > 1),
    "nn.log_softmax": lambda x, y: nn.log_softmax(x, axis=0),
    "nn.logsumexp": lambda x, y: nn.logsumexp(x, axis=1),
    "nn.sigmoid": lambda x, y: nn.sigmoid(x),
    "nn.silu": lambda x, y: nn.silu(x),
    "nn.softplus": lambda x, y: nn.softplus(x),
    "nn.standardize": lambda x, y: nn.standardize(x),
    "nn.one_hot": lambda x, y: nn.one_hot(x > 0, 3),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_functions_carry_kernel_values_through_numpys_protocols(name):
    plain = CALLS[name](X, Y)
    traced = CALLS[name](Traced(X), Traced(Y))
    assert isinstance(traced, Traced), (
        f"{name} on kernel values must return a kernel value (NumPy's protocols carry it), "
        f"got {type(traced).__name__}")
    assert traced.dtype == np.asarray(plain).dtype and traced.shape == np.shape(plain)
    assert np.allclose(traced.value, plain, equal_nan=True), f"{name}: same numbers as on arrays"


def test_dynamic_slices_with_a_computed_start_stay_kernel_values():
    start = Traced(np.int32(3))  # e.g. pl.program_id(0) * 3
    got = lax.dynamic_slice(Traced(I), (start, 1), (2, 4))
    assert isinstance(got, Traced) and np.array_equal(got.value, I[2:4, 1:5]), (
        "a start of 3 with size 2 on 4 rows is clamped to 2, as in JAX: rows 2-3")
    update = Traced(np.full((2, 2), -1, np.int32))
    out = lax.dynamic_update_slice(Traced(I), update, (start, Traced(np.int32(4))))
    expected = I.copy()
    expected[2:4, 4:6] = -1
    assert isinstance(out, Traced) and np.array_equal(out.value, expected), (
        "dynamic_update_slice with computed starts: clamped to (2, 4), the update lands there")
    index = lax.dynamic_index_in_dim(Traced(I), Traced(np.int32(-1)), 1, keepdims=False)
    assert isinstance(index, Traced) and np.array_equal(index.value, I[:, -1]), (
        "a negative computed index counts from the end")


def test_indexed_updates_on_plain_arrays_follow_jax():
    x = np.arange(6, dtype=np.int32)
    at = IndexUpdateHelper(x)
    assert np.array_equal(at[np.array([1, 1, 4])].add(10), [0, 21, 2, 3, 14, 5]), (
        "every repeat of an index adds (NumPy's x[i] += v would add once)")
    assert np.array_equal(at[7].set(9), x), "an out-of-bounds update is dropped"
    assert np.array_equal(at[7].set(9, mode="clip"), [0, 1, 2, 3, 4, 9]), "clip clamps"
    assert np.array_equal(at[np.array([0, 9])].get(), [0, 5]), "reads clamp by default"
    assert at[1:3].divide(2).dtype == np.float32, "divide of integers gives float32"
    assert np.array_equal(x, np.arange(6)), "x itself never changes"
