"""The ``jax`` namespace: what kernels and their wrappers use besides ``pl`` and ``pltpu``.

``jax.numpy`` (``jnp``), ``jax.lax``, ``jax.nn``, ``jax.random``, ``jax.tree``,
``jax.tree_util``, ``jax.ad_checkpoint`` (``checkpoint_name``), ``jax.sharding``
(``PartitionSpec``), ``jax.Array``, ``jax.ShapeDtypeStruct``, the transformations
``jit``, ``vmap``, ``custom_vjp``/``custom_jvp``, and the device queries. There
is nothing to compile here, so the transformations run the function eagerly,
but they refuse what JAX refuses when it traces: ``jit`` a non-array argument
that is not marked static, or an unhashable static one; ``vmap`` axes of
different sizes. Any other ``jax.X`` raises
:class:`~pallas_sim.UnsupportedJaxAPIError` with what to use instead.
"""

from __future__ import annotations

from . import ad_checkpoint, lax, nn, random, sharding, tree, tree_util
from . import jnp as numpy
from ._src import surface as _surface
from ._src.arrays import Array
from ._src.custom_derivatives import custom_jvp, custom_vjp
from ._src.devices import (
    Device,
    default_backend,
    device_count,
    devices,
    local_device_count,
    local_devices,
    process_count,
    process_index,
)
from ._src.eager import (
    block_until_ready,
    default_matmul_precision,
    device_put,
    disable_jit,
    ensure_compile_time_eval,
    named_scope,
)
from ._src.jit import jit
from ._src.specs import ShapeDtypeStruct
from ._src.vmap import vmap

__all__ = ["Array", "ad_checkpoint", "sharding", "Device", "ShapeDtypeStruct", "block_until_ready",
           "custom_jvp", "custom_vjp", "default_backend", "default_matmul_precision",
           "device_count", "device_put", "devices", "disable_jit", "ensure_compile_time_eval",
           "jit", "lax", "local_device_count", "local_devices", "named_scope", "nn", "numpy",
           "process_count", "process_index", "random", "tree", "tree_util", "vmap"]
__getattr__ = _surface.refuse_missing("jax", __name__)
