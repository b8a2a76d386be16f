"""``jax.numpy``'s dtype names and constants (``jnp.bfloat16``, ``jnp.int4``, ``jnp.finfo``,
``jnp.inf``, ``jnp.newaxis``, ...): NumPy's and ml_dtypes' own objects, under JAX's names."""

from __future__ import annotations

import ml_dtypes
import numpy as np

bfloat16 = ml_dtypes.bfloat16
bool = np.bool_  # noqa: A001 - jax.numpy's name
int4, uint4 = ml_dtypes.int4, ml_dtypes.uint4
float16, float32, float64 = np.float16, np.float32, np.float64
int64 = np.int64


def _integer_type(base: type[np.integer]) -> type[np.integer]:
    """JAX's ``jnp.int8`` (and the other integer types): a NumPy scalar type for dtype
    purposes (``np.dtype(jnp.int8)`` is ``int8``), which, called, converts as
    ``jnp.asarray(x, jnp.int8)`` does: floats round toward zero and saturate, NaN is 0
    (``jnp.int8(jnp.rint(x))``, JAX's int8 quantization, gives 127 for 127.5, not
    NumPy's wrapped -128), and a kernel value stays a kernel value."""

    def __new__(cls: type, x: object = 0) -> object:
        from .jnp_arrays import asarray

        return asarray(x, base)

    return type(base.__name__, (base,), {"__new__": __new__, "__module__": "pallas_sim.jnp",
                                         "__doc__": _integer_type.__doc__})


int8, int16, int32 = _integer_type(np.int8), _integer_type(np.int16), _integer_type(np.int32)
uint8, uint16, uint32 = (_integer_type(np.uint8), _integer_type(np.uint16),
                         _integer_type(np.uint32))
bool_ = np.bool_
dtype = np.dtype
iinfo = np.iinfo
finfo = ml_dtypes.finfo
inf, nan, pi, e = np.inf, np.nan, np.pi, np.e
newaxis = None
