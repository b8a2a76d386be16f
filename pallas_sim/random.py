"""``jax.random``: keys and samplers, NumPy-backed and deterministic per key.

The structure is JAX 0.10.2's: ``key(seed)`` is a typed key of shape ``()``
and dtype ``key<fry>``; ``PRNGKey(seed)`` is the legacy ``uint32[2]`` key, with
the same two words as JAX's (``[0, seed mod 2**32]``); ``split`` gives a batch
of new keys (``(num,)`` typed, ``(num, 2)`` legacy), ``fold_in`` a new key;
samplers take one key and return ``shape`` values of JAX's default dtypes
(float32, int32, bool, uint32) in JAX's ranges. The numbers themselves come
from NumPy's Philox generator keyed by the key's two words, so they differ
from JAX's but are the same for the same key, every run.
"""

from __future__ import annotations

from ._src import surface as _surface
from ._src.prng import (  # noqa: A004 - JAX's names
    PRNGKey,
    bernoulli,
    bits,
    categorical,
    choice,
    clone,
    exponential,
    fold_in,
    gumbel,
    key,
    key_data,
    normal,
    permutation,
    randint,
    split,
    truncated_normal,
    uniform,
    wrap_key_data,
)

__all__ = [
    "PRNGKey", "bernoulli", "bits", "categorical", "choice", "clone", "exponential",
    "fold_in", "gumbel", "key", "key_data", "normal", "permutation", "randint", "split",
    "truncated_normal", "uniform", "wrap_key_data",
]
__getattr__ = _surface.refuse_missing("jax.random", __name__)
