"""``jax.nn``'s functions on NumPy: the activations, ``softmax``, ``log_softmax``,
``logsumexp``, ``standardize`` and ``one_hot``, with JAX 0.10.2's formulas and dtypes,
lifted to take kernel values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dtypes import as_dtype, is_floating
from .exports import publish
from .lax_common import canonical_dtype
from .lax_elementwise import erf, logistic
from .values import lift as _lift

_F32 = np.dtype(np.float32)


def _array(x: object) -> Any:
    """``x`` as an array in the dtype JAX computes in (Python scalars and lists become
    arrays; float64 -> float32, int64 -> int32)."""
    if isinstance(x, bool | int | float | complex | list | tuple):
        x = np.asarray(x)
    dtype = canonical_dtype(x.dtype)  # type: ignore[attr-defined]
    return x if x.dtype == dtype else x.astype(dtype)  # type: ignore[attr-defined]


def _inexact(x: object) -> Any:
    """:func:`_array`, with integers and bools promoted to float32 (as ``jnp`` does)."""
    x = _array(x)
    return x if is_floating(x.dtype) or x.dtype.kind == "c" else x.astype(_F32)


def _same(result: Any, like: Any) -> Any:
    return result if result.dtype == like.dtype else result.astype(like.dtype)


def relu(x: object) -> Any:
    """``jax.nn.relu``: ``max(x, 0)``, in ``x``'s dtype (integers stay integers)."""
    x = _array(x)
    return _same(np.maximum(x, 0), x)


def relu6(x: object) -> Any:
    """``jax.nn.relu6``: ``min(max(x, 0), 6)`` (integers promoted to float32, as JAX)."""
    x = _inexact(x)
    return _same(np.minimum(np.maximum(x, 0), 6), x)


def sigmoid(x: object) -> Any:
    """``jax.nn.sigmoid``: ``1 / (1 + exp(-x))`` (``lax.logistic``).

    Raises:
      TypeError: an integer or bool ``x`` (as JAX).
    """
    return logistic(_array(x))


def log_sigmoid(x: object) -> Any:
    """``jax.nn.log_sigmoid``: ``-softplus(-x)``."""
    x = _inexact(x)
    return _same(np.negative(np.logaddexp(np.negative(x), 0)), x)


def softplus(x: object) -> Any:
    """``jax.nn.softplus``: ``log(1 + exp(x))``, computed without overflow."""
    x = _inexact(x)
    return _same(np.logaddexp(x, 0), x)


def soft_sign(x: object) -> Any:
    """``jax.nn.soft_sign``: ``x / (|x| + 1)``."""
    x = _inexact(x)
    return _same(x / (np.abs(x) + 1), x)


def silu(x: object) -> Any:
    """``jax.nn.silu`` (also ``swish``): ``x * sigmoid(x)``.

    Raises:
      TypeError: an integer or bool ``x`` (as JAX).
    """
    x = _array(x)
    return _same(x * logistic(x), x)


swish = silu


def gelu(x: object, approximate: bool = True) -> Any:
    """``jax.nn.gelu``: ``x * Phi(x)``, Phi the standard normal CDF.

    ``approximate=True`` (JAX's default) uses
    ``0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))``;
    ``approximate=False`` the exact ``0.5 * (1 + erf(x / sqrt(2)))``. Integers are
    promoted to float32.
    """
    x = _inexact(x)
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))
        return _same(x * (0.5 * (1 + np.tanh(inner))), x)
    return _same(x * (0.5 * (1 + erf(x * (1 / math.sqrt(2))))), x)


def elu(x: object, alpha: object = 1.0) -> Any:
    """``jax.nn.elu``: ``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    x = _inexact(x)
    positive = x > 0
    return _same(np.where(positive, x, alpha * np.expm1(np.where(positive, 0, x))), x)


def celu(x: object, alpha: object = 1.0) -> Any:
    """``jax.nn.celu``: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = _inexact(x)
    return _same(np.maximum(x, 0) + alpha * np.expm1(np.minimum(x, 0) / alpha), x)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: object) -> Any:
    """``jax.nn.selu``: ``scale * elu(x, alpha)`` with the self-normalizing constants."""
    x = _inexact(x)
    return _same(_SELU_SCALE * elu(x, _SELU_ALPHA), x)


def leaky_relu(x: object, negative_slope: object = 0.01) -> Any:
    """``jax.nn.leaky_relu``: ``x`` where ``x >= 0``, else ``negative_slope * x``."""
    x = _inexact(x)
    return _same(np.where(x >= 0, x, negative_slope * x), x)


def hard_tanh(x: object) -> Any:
    """``jax.nn.hard_tanh``: ``x`` clipped to ``[-1, 1]``."""
    x = _array(x)
    return _same(np.where(x > 1, 1, np.where(x < -1, -1, x)), x)


def hard_sigmoid(x: object) -> Any:
    """``jax.nn.hard_sigmoid``: ``relu6(x + 3) / 6``."""
    x = _inexact(x)
    return _same(relu6(x + 3.0) / 6.0, x)


def hard_silu(x: object) -> Any:
    """``jax.nn.hard_silu`` (also ``hard_swish``): ``x * hard_sigmoid(x)``."""
    x = _inexact(x)
    return _same(x * hard_sigmoid(x), x)


hard_swish = hard_silu


def mish(x: object) -> Any:
    """``jax.nn.mish``: ``x * tanh(softplus(x))``."""
    x = _inexact(x)
    return _same(x * np.tanh(softplus(x)), x)


def squareplus(x: object, b: object = 4) -> Any:
    """``jax.nn.squareplus``: ``(x + sqrt(x ** 2 + b)) / 2``."""
    x = _inexact(x)
    return _same((x + np.sqrt(x * x + b)) / 2, x)


def sparse_plus(x: object) -> Any:
    """``jax.nn.sparse_plus``: 0 below -1, ``x`` above 1, ``(x + 1) ** 2 / 4`` between."""
    x = _inexact(x)
    return _same(np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) * (x + 1) / 4)), x)


def tanh(x: object, /) -> Any:
    """``jax.nn.tanh``: the hyperbolic tangent (integers promoted to float32)."""
    x = _inexact(x)
    return _same(np.tanh(x), x)


def identity(x: object) -> Any:
    """``jax.nn.identity``: ``x`` as an array."""
    return _array(x)


def glu(x: object, axis: int = -1) -> Any:
    """``jax.nn.glu``: the two halves ``a, b`` of ``x`` along ``axis``, ``a * sigmoid(b)``.

    Raises:
      ValueError: ``axis`` has an odd size.
    """
    x = _array(x)
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"axis size must be divisible by 2, got {size}")
    a, b = np.split(x, 2, axis=axis)
    return _same(a * logistic(b), x)


def _axes(axis: int | tuple[int, ...] | None) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def softmax(x: object, axis: int | tuple[int, ...] | None = -1, where: object = None) -> Any:
    """``jax.nn.softmax``: ``exp(x - max) / sum(exp(x - max))`` over ``axis``.

    ``where`` masks elements out: they count as absent and come out 0. A slice whose
    elements are all -inf gives NaN, as in JAX. Integers are promoted to float32.
    """
    x = _inexact(x)
    axis = _axes(axis)
    if where is None:
        shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return _same(shifted / np.sum(shifted, axis=axis, keepdims=True), x)
    peak = np.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf)
    unnormalized = np.where(where, np.exp(x - peak), 0)
    return _same(unnormalized / np.sum(unnormalized, axis=axis, keepdims=True, where=where),
                 x)


def log_softmax(x: object, axis: int | tuple[int, ...] | None = -1,
                where: object = None) -> Any:
    """``jax.nn.log_softmax``: ``x - max - log(sum(exp(x - max)))`` over ``axis``; masked
    elements (``where`` False) come out -inf."""
    x = _inexact(x)
    axis = _axes(axis)
    if where is None:
        shifted = x - np.max(x, axis=axis, keepdims=True)
        return _same(shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True)), x)
    shifted = x - np.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True, where=where)
    return _same(np.where(where, shifted - np.log(total), -np.inf), x)


def logsumexp(a: object, axis: int | tuple[int, ...] | None = None, b: object = None,
              keepdims: bool = False, return_sign: bool = False, where: object = None) -> Any:
    """``jax.nn.logsumexp``: ``log(sum(b * exp(a)))`` over ``axis``, computed stably.

    With ``return_sign`` returns ``(log|sum|, sign(sum))``; without it a negative sum
    gives NaN, as in JAX.
    """
    a = _inexact(a)
    axis = _axes(axis)
    kwargs: dict[str, Any] = {} if where is None else {"where": where}
    peak = np.max(a, axis=axis, keepdims=True, initial=-np.inf, **kwargs)
    peak = np.where(np.isfinite(peak), peak, 0)
    terms = np.exp(a - peak)
    if b is not None:
        terms = terms * b
    total = np.sum(terms, axis=axis, keepdims=True, **kwargs)
    sign = np.sign(total)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.abs(total) if return_sign else total) + peak
    if not keepdims:
        out, sign = np.squeeze(out, axis=axis), np.squeeze(sign, axis=axis)
    if return_sign:
        return _same(out, a), _same(sign, a)
    return _same(out, a)


def standardize(x: object, axis: int | tuple[int, ...] | None = -1, mean: object = None,
                variance: object = None, epsilon: object = 1e-5, where: object = None, *,
                algorithm: str = "fast") -> Any:
    """``jax.nn.standardize``: ``(x - mean) / sqrt(variance + epsilon)`` over ``axis``
    (mean and variance computed when not given; ``algorithm`` as JAX's "fast" /
    "stable")."""
    x = _inexact(x)
    axis = _axes(axis)
    kwargs: dict[str, Any] = {} if where is None else {"where": where}
    if mean is None:
        mean = np.mean(x, axis=axis, keepdims=True, **kwargs)
    if variance is None:
        if algorithm == "stable":
            variance = np.mean(np.square(x - mean), axis=axis, keepdims=True, **kwargs)
        else:
            variance = np.maximum(
                0, np.mean(np.square(x), axis=axis, keepdims=True, **kwargs) - np.square(mean))
    return _same((x - mean) * np.reciprocal(np.sqrt(variance + epsilon)), x)


def one_hot(x: object, num_classes: int, *, dtype: object = None, axis: int = -1) -> Any:
    """``jax.nn.one_hot``: 1 where the new ``axis`` index equals ``x``, else 0, in ``dtype``
    (float32 by default). Values outside ``[0, num_classes)`` give all zeros.

    Raises:
      ValueError: ``axis`` is not a position of the result.
    """
    x = _array(x)
    num_classes = int(num_classes)  # static in JAX too
    ndim = x.ndim
    position = axis + ndim + 1 if axis < 0 else axis
    if not 0 <= position <= ndim:
        raise ValueError(f"axis {axis} is out of bounds for the one-hot result of rank "
                         f"{ndim + 1}")
    shape = [1] * ndim
    shape.insert(position, num_classes)
    classes = np.reshape(np.arange(num_classes), shape).astype(x.dtype)
    target = _F32 if dtype is None else canonical_dtype(as_dtype(dtype))
    return np.equal(np.expand_dims(x, position), classes).astype(target)


__all__ = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
           "hard_tanh", "identity", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp",
           "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign",
           "softmax", "softplus", "sparse_plus", "squareplus", "standardize", "swish", "tanh"]
publish("pallas_sim.nn", globals(), __all__)
# Every function takes kernel values as JAX's take tracers (pallas_sim._src.values.lift).
for _name in __all__:
    globals()[_name] = _lift(globals()[_name])
del _name
