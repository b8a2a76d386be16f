"""Dtype helpers: names, bfloat16 and the poison values of uninitialized memory."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .refused_dtypes import REFUSED_NAMES

__all__ = ["REFUSED", "REFUSED_NAMES", "as_dtype", "bfloat16", "convert", "fill_value",
           "is_floating", "refuse"]

bfloat16 = ml_dtypes.bfloat16

_NAMED = {"bfloat16": np.dtype(bfloat16), "bf16": np.dtype(bfloat16)}

#: The dtypes pallas_sim refuses by name (:data:`REFUSED_NAMES`, from
#: :mod:`pallas_sim._src.refused_dtypes`), by every spelling (:func:`refuse`).
REFUSED: frozenset[np.dtype] = frozenset(
    np.dtype(getattr(ml_dtypes, n, None) or n) for n in REFUSED_NAMES)


def refuse(dt: np.dtype) -> np.dtype:
    """``dt`` itself when pallas_sim models it.

    Raises:
      UnsupportedJaxAPIError: ``dt`` is one of :data:`REFUSED`, with the message that
        ``jnp.<its name>`` gets (pallas_sim/_src/surface.py).
    """
    if dt in REFUSED:
        from .errors import UnsupportedJaxAPIError
        from .surface import message

        raise UnsupportedJaxAPIError(message("jax.numpy", dt.name))
    return dt


def as_dtype(dtype: object) -> np.dtype:
    """Turn a dtype-like (numpy dtype or type, ``jnp.bfloat16``, a name) into ``np.dtype``.

    Raises:
      TypeError: ``dtype`` names no dtype.
      UnsupportedJaxAPIError: a dtype pallas_sim refuses by name (:data:`REFUSED`).
    """
    if isinstance(dtype, str) and dtype in _NAMED:
        return _NAMED[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{dtype!r} is not a dtype") from exc
    return refuse(dt) if dt in REFUSED else dt


def is_floating(dtype: np.dtype) -> bool:
    """True for float16/32/64 and the ml_dtypes floats (bfloat16, float8...)."""
    return np.issubdtype(dtype, np.floating) or dtype.type.__module__.startswith("ml_dtypes")


_FILL: dict[tuple[np.dtype, str], object] = {}


def fill_value(dtype: np.dtype, mode: str) -> object:
    """The value fresh buffers hold: poison (as TPU interpret mode) or zero.

    Poison is what TPU interpret mode (JAX 0.10.x, ``uninitialized_memory="nan"``)
    fills fresh buffers with: NaN for floating dtypes, the maximum for integers
    (2147483647 for int32, 127 for int8, 255 for uint8), True for bool. (JAX's
    ``interpret=True`` uses the minimum and False instead; pallas_sim follows the
    TPU mode, as everywhere.) Memoized per (dtype, mode): every call's setup asks.
    """
    key = (dtype, mode)
    value = _FILL.get(key)
    if value is None:
        value = _FILL[key] = _fill_value(np.dtype(dtype), mode)
    return value


def _fill_value(dtype: np.dtype, mode: str) -> object:
    if mode == "zero":
        return 0
    if dtype == np.bool_:
        return True
    if is_floating(dtype):
        return np.nan
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).max
    return 0


def convert(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` converted to ``dtype`` as XLA (and so JAX) converts: a float (or complex:
    its real part) to an integer rounds toward zero and saturates at the integer's
    range, NaN becomes 0 (``[127.5, 300, -200]`` to int8 is ``[127, 127, -128]``;
    NumPy's ``astype`` would wrap to ``[127, 44, 56]``); every other conversion is
    NumPy's (integers to narrower integers wrap, as in JAX)."""
    target = np.dtype(dtype)
    if target.kind not in "iu" or not isinstance(a, np.ndarray | np.generic) or (
            a.dtype.kind not in "fc" and not is_floating(a.dtype)):  # shapes-only: no data
        return a.astype(target)
    info = np.iinfo(target)
    real = (np.real(a) if a.dtype.kind == "c" else a).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(real), 0, np.clip(np.trunc(real), info.min, info.max)
                        ).astype(target)
