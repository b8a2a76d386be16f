"""``jax.numpy``'s dtype names and constants (``jnp.bfloat16``, ``jnp.int4``, ``jnp.finfo``,
``jnp.inf``, ``jnp.newaxis``, ...): NumPy's and ml_dtypes' own objects, under JAX's names."""

from __future__ import annotations

import ml_dtypes
import numpy as np

bfloat16 = ml_dtypes.bfloat16
bool = np.bool_  # noqa: A001 - jax.numpy's name
int4, uint4 = ml_dtypes.int4, ml_dtypes.uint4
float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32 = np.uint8, np.uint16, np.uint32
bool_ = np.bool_
dtype = np.dtype
iinfo = np.iinfo
finfo = ml_dtypes.finfo
inf, nan, pi, e = np.inf, np.nan, np.pi, np.e
newaxis = None
