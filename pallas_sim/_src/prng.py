"""``jax.random``'s keys and samplers: typed and legacy keys, ``split`` and ``fold_in``, and
the samplers (``uniform``, ``normal``, ``randint``, ...), drawn from NumPy's Philox
generator keyed by the key's words, deterministic per key.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .arrays import Array
from .dtypes import as_dtype, is_floating
from .errors import UnsupportedJaxUsageError
from .exports import publish
from .lax_common import canonical_dtype
from .lax_control_flow import _decide

_U32 = np.dtype(np.uint32)
#: Philox counter words that keep the streams of one key apart.
_SAMPLE, _SPLIT, _FOLD = 0, 1, 2


class PRNGKeyDType:
    """The dtype of typed keys, printed as JAX prints it: ``key<fry>``."""

    __slots__ = ()
    name = "key<fry>"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PRNGKeyDType)

    def __hash__(self) -> int:
        return hash(self.name)


KEY_DTYPE = PRNGKeyDType()


class KeyArray(Array):
    """A typed key array (``jax.random.key``): ``shape`` is the batch of keys, ``dtype``
    is ``key<fry>``; each key is two uint32 words (``key_data``).

    Indexing, ``len`` and iteration act on the batch, as in JAX.
    """

    __slots__ = ("_data",)

    def __init__(self, data: np.ndarray) -> None:
        data = np.array(data, dtype=_U32)
        data.flags.writeable = False
        self._data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape[:-1]

    @property
    def dtype(self) -> PRNGKeyDType:
        return KEY_DTYPE

    @property
    def ndim(self) -> int:
        return self._data.ndim - 1

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __getitem__(self, index: Any) -> KeyArray:
        positions = np.arange(self.size).reshape(self.shape)[index]
        return KeyArray(self._data.reshape(-1, 2)[positions])

    def __iter__(self) -> Iterator[KeyArray]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> Any:
        if not isinstance(other, KeyArray):
            return NotImplemented
        return np.all(self._data == other._data, axis=-1)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{self._data}"


def _seed_words(seed: Any, name: str) -> np.ndarray:
    if isinstance(seed, KeyArray) or isinstance(seed, float | complex) or (
            hasattr(seed, "dtype") and np.dtype(seed.dtype).kind not in "iu"):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    shape = np.shape(seed)
    if shape:
        raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                        f"{shape} != (). Use jax.vmap for batching")
    value = int(_decide(seed))
    return np.array([0, value & 0xFFFFFFFF], dtype=_U32)


def _check_impl(impl: object) -> None:
    if impl not in (None, "threefry2x32", "threefry"):
        raise UnsupportedJaxUsageError(f"pallas_sim's keys behave as JAX's default "
                                       f"'threefry2x32' keys; impl={impl!r} is not modelled")


def key(seed: Any, *, impl: object = None, dtype: object = None) -> KeyArray:
    """``jax.random.key``: a typed key of shape ``()`` from an integer seed.

    Raises:
      TypeError: a seed that is not an integer scalar (JAX's messages).
      UnsupportedJaxUsageError: an ``impl`` other than JAX's default threefry.
    """
    _check_impl(impl)
    return KeyArray(_seed_words(seed, "key"))


def PRNGKey(seed: Any, *, impl: object = None) -> np.ndarray:  # noqa: N802 - JAX's name
    """``jax.random.PRNGKey``: the legacy key, ``uint32[2]`` holding ``[0, seed mod 2**32]``
    (JAX's words for a 32-bit seed).

    Raises:
      TypeError: a seed that is not an integer scalar.
    """
    _check_impl(impl)
    return _seed_words(seed, "PRNGKey")


def _words(keys: Any, name: str) -> tuple[np.ndarray, bool]:
    """``(uint32[..., 2] words, typed?)`` of a key or key batch."""
    if isinstance(keys, KeyArray):
        return keys._data, True
    dtype, shape = getattr(keys, "dtype", None), np.shape(keys)
    if dtype != _U32 or not shape or shape[-1] != 2:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                        f"with (2,) and dtype uint32; got shape={shape} dtype={dtype} in {name}")
    return np.asarray(keys), False


def _single(keys: Any, name: str) -> np.ndarray:
    words, _ = _words(keys, name)
    if words.shape != (2,):
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{words.shape[:-1]} != (). Use jax.vmap for batching.")
    return words


def _generator(words: np.ndarray, stream: int, extra: int = 0) -> np.random.Generator:
    seed = (int(words[0]) << 32) | int(words[1])
    return np.random.Generator(np.random.Philox(key=seed, counter=[extra, 0, 0, stream]))


def _wrap(words: np.ndarray, typed: bool) -> Any:
    return KeyArray(words) if typed else words


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``jax.random.split``: ``num`` new keys (an int, or a shape), typed if ``key`` is.

    Raises:
      ValueError: ``key`` is a batch of keys (JAX's message).
    """
    words = _single(key, "split")
    shape = _shape(num)
    new = _generator(words, _SPLIT).integers(0, 2**32, size=(*shape, 2), dtype=_U32)
    return _wrap(new, isinstance(key, KeyArray))


def fold_in(key: Any, data: Any) -> Any:
    """``jax.random.fold_in``: a new key determined by ``key`` and the integer ``data``."""
    words = _single(key, "fold_in")
    value = int(_decide(data)) & 0xFFFFFFFF
    new = _generator(words, _FOLD, value).integers(0, 2**32, size=2, dtype=_U32)
    return _wrap(new, isinstance(key, KeyArray))


def key_data(keys: Any) -> np.ndarray:
    """``jax.random.key_data``: the uint32 words of typed keys (``shape + (2,)``); legacy
    keys are returned as they are."""
    return np.array(_words(keys, "key_data")[0])


def wrap_key_data(key_bits_array: Any, *, impl: object = None, dtype: object = None
                  ) -> KeyArray:
    """``jax.random.wrap_key_data``: typed keys from uint32 words of shape ``(..., 2)``.

    Raises:
      TypeError: not uint32, or the last dimension is not 2.
    """
    _check_impl(impl)
    return KeyArray(_words(key_bits_array, "wrap_key_data")[0])


def clone(key: Any) -> Any:
    """``jax.random.clone``: ``key`` itself (keys are immutable here)."""
    return key


def _float_dtype(dtype: object, name: str) -> np.dtype:
    target = np.dtype(np.float32) if dtype is None else canonical_dtype(as_dtype(dtype))
    if not is_floating(target):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {target}")
    return target


def _unit(gen: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Uniform in ``[0, 1)``, exactly representable in ``dtype`` (so never rounds to 1)."""
    bits = np.finfo(dtype).nmant + 1
    return (gen.integers(0, 2**bits, size=shape) / 2.0**bits).astype(dtype)


def _broadcast(name: str, value: Any, shape: tuple[int, ...]) -> None:
    try:
        if np.broadcast_shapes(np.shape(value), shape) != shape:
            raise ValueError
    except ValueError:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {shape}, "
                        f"{np.shape(value)}.") from None


def uniform(key: Any, shape: Sequence[int] = (), dtype: object = None, minval: Any = 0.0,
            maxval: Any = 1.0, *, out_sharding: object = None) -> np.ndarray:
    """``jax.random.uniform``: ``shape`` values in ``[minval, maxval)`` (float32 by default).

    Raises:
      ValueError: a non-float ``dtype``, or a batch of keys.
      TypeError: ``minval``/``maxval`` that do not broadcast to ``shape``.
    """
    words, shape, target = _single(key, "uniform"), _shape(shape), _float_dtype(dtype, "uniform")
    _broadcast("mul", minval, shape)
    _broadcast("mul", maxval, shape)
    lo = np.asarray(minval).astype(target)
    hi = np.asarray(maxval).astype(target)
    u = _unit(_generator(words, _SAMPLE), shape, target)
    return np.maximum(lo, (u * (hi - lo) + lo).astype(target)).astype(target)


def normal(key: Any, shape: Sequence[int] = (), dtype: object = None, *,
           out_sharding: object = None) -> np.ndarray:
    """``jax.random.normal``: ``shape`` standard normal values (float32 by default).

    Raises:
      ValueError: a non-float ``dtype``, or a batch of keys.
    """
    words, shape, target = _single(key, "normal"), _shape(shape), _float_dtype(dtype, "normal")
    return _generator(words, _SAMPLE).standard_normal(shape).astype(target)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: object = None, *, out_sharding: object = None) -> np.ndarray:
    """``jax.random.truncated_normal``: standard normal values conditioned on the open
    interval ``(lower, upper)``; the shape defaults to that of ``lower`` and ``upper``
    broadcast together."""
    words = _single(key, "truncated_normal")
    target = _float_dtype(dtype, "truncated_normal")
    out_shape = (np.broadcast_shapes(np.shape(lower), np.shape(upper)) if shape is None
                 else _shape(shape))
    lo = np.broadcast_to(np.asarray(lower, np.float64), out_shape)
    hi = np.broadcast_to(np.asarray(upper, np.float64), out_shape)
    gen = _generator(words, _SAMPLE)
    out = gen.standard_normal(out_shape)
    for _ in range(32):  # rejection; far tails fall back to uniform below
        bad = (out <= lo) | (out >= hi)
        if not bad.any():
            break
        out = np.where(bad, gen.standard_normal(out_shape), out)
    bad = (out <= lo) | (out >= hi)
    out = np.where(bad, lo + (hi - lo) * gen.random(out_shape), out)
    out = out.astype(target)
    low = np.nextafter(lo.astype(target), np.array(np.inf, target))
    high = np.nextafter(hi.astype(target), np.array(-np.inf, target))
    return np.clip(out, low, high).astype(target)


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None, mode: str = "low",
              *, out_sharding: object = None) -> np.ndarray:
    """``jax.random.bernoulli``: bools that are True with probability ``p``; the shape
    defaults to ``p``'s.

    Raises:
      TypeError: ``p`` does not broadcast to ``shape``.
    """
    words = _single(key, "bernoulli")
    out_shape = np.shape(p) if shape is None else _shape(shape)
    _broadcast("lt", p, out_shape)
    u = _unit(_generator(words, _SAMPLE), out_shape, np.dtype(np.float32))
    return np.less(u, np.asarray(p, np.float32))


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: object = None, *,
            out_sharding: object = None) -> np.ndarray:
    """``jax.random.randint``: integers in ``[minval, maxval)`` (int32 by default), bounds
    clipped to the dtype's range; where ``maxval <= minval`` the value is ``minval``.

    Raises:
      TypeError: a non-integer ``dtype``.
      OverflowError: a Python int bound outside int32 (as JAX, x64 off).
    """
    words, shape = _single(key, "randint"), _shape(shape)
    target = np.dtype(np.int32) if dtype is None else canonical_dtype(as_dtype(dtype))
    if target.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {target}")
    for bound in (minval, maxval):
        if isinstance(bound, int) and not -2**31 <= bound < 2**31:
            raise OverflowError(f"An overflow was encountered while parsing an argument to "
                                f"randint: {bound} does not fit in int32")
    info = np.iinfo(target)
    lo = np.clip(np.asarray(minval, np.int64), info.min, info.max)
    hi_inclusive = np.where(np.asarray(maxval, np.int64) > info.max, info.max,
                            np.asarray(maxval, np.int64) - 1)
    hi_inclusive = np.clip(hi_inclusive, info.min, info.max)
    empty = hi_inclusive < lo
    draw = _generator(words, _SAMPLE).integers(np.broadcast_to(lo, shape),
                                               np.broadcast_to(np.maximum(hi_inclusive, lo),
                                                               shape), endpoint=True)
    return np.where(empty, lo, draw).astype(target)


def bits(key: Any, shape: Sequence[int] = (), dtype: object = None, *,
         out_sharding: object = None) -> np.ndarray:
    """``jax.random.bits``: uniformly random unsigned integers (uint32 by default).

    Raises:
      TypeError: a dtype that is not an unsigned integer.
    """
    words, shape = _single(key, "bits"), _shape(shape)
    target = _U32 if dtype is None else canonical_dtype(as_dtype(dtype))
    if target.kind != "u":
        raise TypeError(f"dtype argument to `bits` must be an unsigned int dtype, got {target}")
    return _generator(words, _SAMPLE).integers(0, 2**(8 * target.itemsize), size=shape,
                                               dtype=target)


def gumbel(key: Any, shape: Sequence[int] = (), dtype: object = None, mode: str | None = None,
           *, out_sharding: object = None) -> np.ndarray:
    """``jax.random.gumbel``: standard Gumbel values ``-log(-log(u))`` (float32)."""
    words, shape, target = _single(key, "gumbel"), _shape(shape), _float_dtype(dtype, "gumbel")
    u = _unit(_generator(words, _SAMPLE), shape, np.dtype(np.float64))
    u = np.maximum(u, np.finfo(np.float32).tiny)
    return (-np.log(-np.log(u))).astype(target)


def exponential(key: Any, shape: Sequence[int] = (), dtype: object = None, *,
                out_sharding: object = None) -> np.ndarray:
    """``jax.random.exponential``: standard exponential values ``-log(1 - u)`` (float32)."""
    words = _single(key, "exponential")
    shape, target = _shape(shape), _float_dtype(dtype, "exponential")
    u = _unit(_generator(words, _SAMPLE), shape, np.dtype(np.float64))
    return (-np.log1p(-u)).astype(target)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True, mode: str | None = None, *,
                out_sharding: object = None) -> np.ndarray:
    """``jax.random.categorical``: int32 indices along ``axis`` drawn with probabilities
    ``softmax(logits)`` (the Gumbel-max trick, as JAX). The shape defaults to
    ``logits``' shape without ``axis``; a given ``shape`` must end with that shape.

    Raises:
      ValueError: a ``shape`` that does not broadcast with the batch shape.
      UnsupportedJaxUsageError: ``replace=False``.
    """
    if not replace:
        raise UnsupportedJaxUsageError("pallas_sim's categorical samples with replacement "
                                       "only; use jax.random.choice(..., replace=False)")
    words = _single(key, "categorical")
    moved = np.moveaxis(np.asarray(logits, np.float32), axis, -1)
    batch = moved.shape[:-1]
    out_shape = batch if shape is None else _shape(shape)
    try:
        if np.broadcast_shapes(out_shape, batch) != out_shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={[out_shape, batch]}"
                         ) from None
    noise = gumbel(KeyArray(words), (*out_shape, moved.shape[-1]), np.float32)
    return np.argmax(moved + noise, axis=-1).astype(np.int32)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> np.ndarray:
    """``jax.random.choice``: ``shape`` draws from ``arange(a)`` (an int) or from ``a``
    along ``axis``, with probabilities ``p``, with or without replacement.

    Raises:
      ValueError: more draws than elements without replacement (NumPy's message).
    """
    words, shape = _single(key, "choice"), _shape(shape)
    gen = _generator(words, _SAMPLE)
    weights = None if p is None else np.asarray(p, np.float64) / np.sum(p)
    if isinstance(a, int | np.integer):
        return gen.choice(int(a), size=shape, replace=replace, p=weights).astype(np.int32)
    values = np.asarray(a)
    picks = gen.choice(values.shape[axis], size=shape, replace=replace, p=weights)
    return np.take(values, picks, axis=axis).astype(canonical_dtype(values.dtype))


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False, *,
                out_sharding: object = None) -> np.ndarray:
    """``jax.random.permutation``: a shuffled ``arange(x)`` (int32) for an int ``x``, else
    ``x`` shuffled along ``axis`` (each slice independently when ``independent``)."""
    gen = _generator(_single(key, "permutation"), _SAMPLE)
    if isinstance(x, int | np.integer):
        return gen.permutation(int(x)).astype(np.int32)
    values = np.asarray(x)
    out = gen.permuted(values, axis=axis) if independent else gen.permutation(values, axis=axis)
    return out.astype(canonical_dtype(values.dtype))


__all__ = ["PRNGKey", "bernoulli", "bits", "categorical", "choice", "clone", "exponential",
           "fold_in", "gumbel", "key", "key_data", "normal", "permutation", "randint", "split",
           "truncated_normal", "uniform", "wrap_key_data"]
publish("pallas_sim.random", globals(), __all__)
