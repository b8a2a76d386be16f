"""Load a kernel file against pallas_sim or against real JAX Pallas.

A handout, solution or submission starts with
``from pallas_sim import jax, jnp, pl, pltpu``.  :func:`load` executes the
file as a fresh module, with that one import line rewritten to
``from pallas_sim.backends.real_jax import ...`` for the "jax" backend, so the
same kernels and wrappers run unchanged on ``jax.experimental.pallas`` in
interpret mode (docs/grading-design.md, "Integrations").  Nothing else in the file changes.
"""

from __future__ import annotations

import itertools
import re
import sys
import types
from pathlib import Path
from typing import Literal

Backend = Literal["sim", "jax"]

_IMPORT = re.compile(r"^(\s*)from\s+pallas_sim\s+import\s+", re.MULTILINE)
_counter = itertools.count()


def swap_imports(source: str) -> str:
    """``source`` with every ``from pallas_sim import ...`` line reading from
    ``pallas_sim.backends.real_jax`` instead.

    Raises:
      ValueError: the source has no such line (nothing would be swapped).
    """
    swapped, n = _IMPORT.subn(r"\1from pallas_sim.backends.real_jax import ", source)
    if not n:
        raise ValueError("the file has no 'from pallas_sim import ...' line to swap for JAX")
    return swapped


def load(path: str | Path, backend: Backend) -> types.ModuleType:
    """Execute the file at ``path`` as a new module on ``backend``.

    The module is registered in ``sys.modules`` under a unique name (so
    dataclasses and NamedTuples in it work) and never under the file's stem.

    Args:
      path: a ``.py`` kernel file.
      backend: "sim" (as written) or "jax" (imports swapped; needs jax).

    Returns:
      The executed module.

    Raises:
      ValueError: unknown backend, or nothing to swap for "jax".
      OSError: the file cannot be read.
      Exception: whatever executing the file raises (SyntaxError, ImportError...).
    """
    if backend not in ("sim", "jax"):
        raise ValueError(f"backend={backend!r}: expected 'sim' or 'jax'")
    path = Path(path)
    source = path.read_text(encoding="utf-8")
    if backend == "jax":
        source = swap_imports(source)
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_pallas_lab_{backend}_{stem}_{next(_counter)}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the point
    except BaseException:
        del sys.modules[name]
        raise
    return module
