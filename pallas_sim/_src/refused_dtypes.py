"""The names of the dtypes pallas_sim refuses: one list, below both the dtype helpers
(:mod:`pallas_sim._src.dtypes`, which refuses them) and the JAX surface
(:mod:`pallas_sim._src.surface`, which says what to write instead), so neither imports
the other for it.

JAX 0.10.2's ``jax.numpy`` names these dtypes and pallas_sim's does not offer them (nor
does 64-bit truncation turn one into a dtype it offers): the 8-, 6- and 4-bit floats,
the 1- and 2-bit integers, complex. They are refused by every spelling, ``jnp.<name>``,
the string ``"<name>"``, ``np.dtype("<name>")`` or an array of that dtype, with the
message of the name. JAX Pallas TPU does run some of them (fp8 products on v6e and v7,
per JAX's ``tpu_info``); pallas_sim models none of them, so a kernel cannot use one to be
counted at another rate than the one it computes at.
"""

from __future__ import annotations

REFUSED_NAMES: tuple[str, ...] = (
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
    "float4_e2m1fn", "int1", "int2", "uint1", "uint2", "complex64", "complex128")
