"""The order in which a pallas_call visits its grid.

Row-major, last axis fastest (JAX ``pallas_call``).  With the
``shuffle_parallel`` sanitizer on (``pallas_sim.config(shuffle_parallel=True)``,
docs/pallas-sim.md rule 1), every leading "parallel" axis is visited through its
own seeded permutation of ``0 .. n-1``, while the loop nest stays row-major:
step ``(i, j, k)`` runs grid point ``(perm0[i], perm1[j], k)``.  This is what
TPU interpret mode does (JAX 0.10.x ``_get_randomized_grid_coordinates``,
seeded by ``InterpretParams.random_seed``), and it exposes kernels that
depend on the order of parallel steps (which a megacore TPU splits between
two cores).  The permutations come from NumPy's generator, so they differ
from JAX's for the same seed; only the kind of reordering matches.
"""

from __future__ import annotations

import itertools

import numpy as np


def grid_steps(grid: tuple[int, ...], semantics: tuple[str, ...], *, shuffle: bool,
               seed: int) -> list[tuple[int, ...]]:
    """Grid points in visiting order.

    Args:
      grid: steps per axis.
      semantics: "parallel"/"arbitrary" per axis (parallel axes a prefix).
      shuffle: permute the parallel axes.
      seed: seed of the permutations (non-negative int).

    Returns:
      A list of ``len(grid)``-tuples of Python ints, one per grid step.
    """
    if not shuffle or "parallel" not in semantics:
        return list(itertools.product(*(range(g) for g in grid)))
    rng = np.random.default_rng(seed)
    coords = [rng.permutation(g).tolist() if s == "parallel" else range(g)
              for g, s in zip(grid, semantics, strict=True)]
    return list(itertools.product(*coords))
