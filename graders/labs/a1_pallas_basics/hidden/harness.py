"""Harnesses for a1_pallas_basics (lecture §2)."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from pallas_sim import jax, pl

from .common import beside_kernel


def _kernel(sub: ModuleType, name: str):
    kernel = getattr(sub, name, None)
    if not callable(kernel):
        raise NameError(f"function {name!r} is not defined in the submission")
    return kernel


def add_kernel(sub: ModuleType, x: np.ndarray, y: np.ndarray,
               block_shape: tuple[int, int]) -> np.ndarray:
    """Run the student's ``add_kernel`` over a cdiv grid of ``block_shape`` blocks.

    x, y: [M, N] arrays of one dtype; returns the [M, N] output of that dtype.
    """
    bm, bn = block_shape
    spec = pl.BlockSpec((bm, bn), lambda i, j: (i, j))
    return pl.pallas_call(
        _kernel(sub, "add_kernel"),
        grid=(pl.cdiv(x.shape[0], bm), pl.cdiv(x.shape[1], bn)),
        in_specs=[spec, spec], out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), name="grader_add")(x, y)


def blocked_add(sub: ModuleType, x: np.ndarray, y: np.ndarray, *,
                block_shape: tuple[int, int] = (256, 256)) -> tuple:
    """The student's ``blocked_add`` beside their ``add_kernel`` in the standard cdiv-grid
    call. Returns ``(wrapper_out, kernel_out, kernel_error)`` (``common.beside_kernel``)."""
    out = _kernel(sub, "blocked_add")(x, y, block_shape=block_shape)
    return beside_kernel(out, lambda: add_kernel(sub, x, y, tuple(block_shape)))
