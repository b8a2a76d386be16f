"""``jax.tree_util``: the ``tree_*`` spellings of :mod:`pallas_sim.tree`, and ``PyTreeDef``.

``register_pytree_node_class`` marks a class as a node (on the class itself: there is
no shared registry); the other registrations (``register_pytree_node`` and friends) are
refused with a message (:mod:`pallas_sim._src.pytrees`).
"""

from __future__ import annotations

from ._src import surface as _surface
from ._src.pytrees import PyTreeDef, all_leaves, register_pytree_node_class, treedef_is_leaf
from ._src.pytrees import all as tree_all
from ._src.pytrees import flatten as tree_flatten
from ._src.pytrees import leaves as tree_leaves
from ._src.pytrees import map as tree_map
from ._src.pytrees import reduce as tree_reduce
from ._src.pytrees import structure as tree_structure
from ._src.pytrees import unflatten as tree_unflatten

__all__ = ["PyTreeDef", "all_leaves", "register_pytree_node_class", "tree_all", "tree_flatten",
           "tree_leaves", "tree_map", "tree_reduce", "tree_structure", "tree_unflatten",
           "treedef_is_leaf"]
__getattr__ = _surface.refuse_missing("jax.tree_util", __name__)
