"""``jax.nn``: activations, softmax and one-hot, on NumPy, with JAX 0.10.2's formulas.

The functions follow ``jax.nn``'s definitions (the tanh approximation of
``gelu`` by default, ``softmax`` shifted by the maximum, ``where=`` masks) and
its dtypes: the result has the input's float dtype, integers are promoted to
float32 where JAX promotes them (``gelu``, ``softmax``), 64-bit inputs compute
as their 32-bit versions (x64 off), and ``sigmoid`` refuses integers as JAX's
``lax.logistic`` does. Everything goes through NumPy functions, so values
implementing NumPy's array protocols pass through.
"""

from __future__ import annotations

from ._src import surface as _surface
from ._src.nn_functions import (  # noqa: A004 - JAX's names
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log_sigmoid,
    log_softmax,
    logsumexp,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softplus,
    sparse_plus,
    squareplus,
    standardize,
    swish,
    tanh,
)

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot",
    "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus",
    "sparse_plus", "squareplus", "standardize", "swish", "tanh",
]
__getattr__ = _surface.refuse_missing("jax.nn", __name__)
