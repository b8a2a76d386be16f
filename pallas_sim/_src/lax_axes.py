"""``jax.lax.axis_index`` and ``jax.lax.axis_size``: a core's place on the mesh axes of the
running ``pl.kernel``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .exports import publish
from .values import KernelValue as _KernelValue


def _mesh_axes(axis_name: Any, what: str) -> list[tuple[int, int]]:
    """(index, size) of each named mesh axis of the running ``pl.kernel``.

    Raises:
      UnboundAxisError: a name no running kernel's mesh defines (JAX's message).
    """
    from .context import running
    from .errors import UnboundAxisError

    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    ctx = running()
    axes = ctx.axes if ctx is not None else {}
    missing = [n for n in names if n not in axes]
    if missing:
        head = ("Found an unbound axis name: {0}. To fix this, please call axis_index under "
                "`jax.shard_map`." if what == "axis_index" else "unbound axis name: {0}")
        raise UnboundAxisError(
            head.format(missing[0]) + " (pallas_sim binds mesh axes only inside a pl.kernel "
            "body on pltpu.create_tensorcore_mesh(axis_name))")
    return [axes[n] for n in names]


def axis_index(axis_name: Any) -> Any:
    """``jax.lax.axis_index(axis_name)`` inside a ``pl.kernel`` body: this core's index
    along the mesh axis (an int32 kernel value; 0 on the one simulated core). A tuple of
    names gives the row-major index over them.

    Raises:
      UnboundAxisError: outside a ``pl.kernel`` on a mesh with that axis (JAX's
        NameError; JAX's HLO interpreter fails even inside one, TPU interpret mode works).
    """
    index = 0
    for i, size in _mesh_axes(axis_name, "axis_index"):
        index = index * size + i
    return _KernelValue(np.asarray(index, np.int32))


def axis_size(axis_name: Any) -> int:
    """``jax.lax.axis_size(axis_name)`` inside a ``pl.kernel`` body: the mesh axis's size,
    a Python int (1 on the one simulated core); the product for a tuple of names.

    Raises:
      UnboundAxisError: outside a ``pl.kernel`` on a mesh with that axis (JAX's NameError).
    """
    return math.prod(size for _, size in _mesh_axes(axis_name, "axis_size"))


__all__ = ["axis_index", "axis_size"]
publish("pallas_sim.lax", globals(), __all__)
