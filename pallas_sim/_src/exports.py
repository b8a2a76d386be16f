"""Where a public name says it lives: :func:`publish` sets the ``__module__`` of the
functions and classes an internal module implements for a public one to that public
module (``pallas_sim.lax``, ``pallas_sim.jnp``), as JAX's ``set_module`` does for
``jax.numpy``, so ``help()``, ``repr`` and pickling name the module code imports them
from, not the ``pallas_sim._src`` module that holds their code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def publish(public_module: str, scope: dict[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` to ``public_module`` on each of ``names`` in ``scope`` (a
    module's ``globals()``) that is a function or class defined in that module; other
    objects (constants, NumPy's types, names imported from elsewhere) are left as they
    are."""
    home = scope["__name__"]
    for name in names:
        obj = scope[name]
        if getattr(obj, "__module__", None) == home and (
                isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__")):
            obj.__module__ = public_module
