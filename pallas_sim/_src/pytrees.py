"""Pytrees of tuples, lists, dicts, NamedTuples and None (``jax.tree``, ``jax.tree_util``).

The same node types and the same leaf order as JAX 0.10.2: tuples and lists in
order, dicts by sorted key, ``collections.OrderedDict`` in insertion order,
``collections.defaultdict`` by sorted key, NamedTuples in field order; ``None``
is a node with no children; everything else (arrays, scalars, strings,
dataclasses, subclasses of dict or list) is a leaf. There is no registry of
further node types (``jax.tree_util.register_pytree_node`` is refused): a
registry would be simulator state that code under grading could change.
:mod:`pallas_sim.tree` and :mod:`pallas_sim.tree_util` export these under JAX's names.
"""

from __future__ import annotations

import builtins
import collections
import functools
from collections.abc import Callable, Iterable
from typing import Any

from .exports import publish

IsLeaf = Callable[[Any], bool] | None

_NO_INITIALIZER = object()


class PyTreeDef:
    """The structure of a pytree, without its leaves (``jax.tree_util.PyTreeDef``).

    Immutable; equal when the structures are equal; prints as JAX does, e.g.
    ``PyTreeDef((*, {'a': None, 'b': *}))``.
    """

    __slots__ = ("_kind", "_data", "_children")

    def __init__(self, kind: str, data: Any, children: tuple[PyTreeDef, ...]) -> None:
        self._kind = kind
        self._data = data
        self._children = children

    @property
    def num_leaves(self) -> int:
        """How many leaves a tree of this structure has."""
        if self._kind == "leaf":
            return 1
        return sum(child.num_leaves for child in self._children)

    @property
    def num_nodes(self) -> int:
        """How many nodes (leaves, None and containers) a tree of this structure has."""
        return 1 + sum(child.num_nodes for child in self._children)

    def children(self) -> list[PyTreeDef]:
        """The structures of the node's children (empty for a leaf or None)."""
        return list(self._children)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """The tree of this structure holding ``leaves`` in order.

        Raises:
          ValueError: more or fewer leaves than :attr:`num_leaves` (JAX's messages).
        """
        items = list(leaves)
        expected = self.num_leaves
        if len(items) < expected:
            raise ValueError(f"Too few leaves for PyTreeDef; expected {expected}, got "
                             f"{len(items)}")
        if len(items) > expected:
            raise ValueError(f"Too many leaves for PyTreeDef; expected {expected}.")
        return self._build(iter(items))

    def _build(self, leaves: Any) -> Any:
        kind, data = self._kind, self._data
        if kind == "leaf":
            return next(leaves)
        if kind == "none":
            return None
        values = [child._build(leaves) for child in self._children]
        if kind == "tuple":
            return tuple(values)
        if kind == "list":
            return values
        if kind == "dict":
            return dict(zip(data, values, strict=True))
        if kind == "ordereddict":
            return collections.OrderedDict(zip(data, values, strict=True))
        if kind == "defaultdict":
            return collections.defaultdict(data[0], zip(data[1], values, strict=True))
        if kind == "class":
            return data[0].tree_unflatten(data[1], values)
        return data(*values)  # namedtuple

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` at this structure's leaves (``tree`` has this structure
        as a prefix).

        Raises:
          ValueError: ``tree`` does not have this structure as a prefix, naming where.
        """
        out: list[Any] = []
        self._up_to(tree, out, "")
        return out

    def _up_to(self, tree: Any, out: list[Any], path: str) -> None:
        kind = self._kind
        if kind == "leaf":
            out.append(tree)
            return
        where = f" at key path {path}" if path else ""
        if kind == "none":
            if tree is not None:
                raise ValueError(f"Expected None, got {tree!r}{where}.")
            return
        node = _node(tree)
        if node is None or node[0] != kind:
            raise ValueError(f"Expected {_KIND_NAMES[kind]}, got {tree!r}{where}.")
        _, data, children = node
        if kind in ("tuple", "list") and len(children) != len(self._children):
            raise ValueError(f"{_KIND_NAMES[kind].capitalize()} arity mismatch: "
                             f"{len(children)} != {len(self._children)}; {kind}: {tree!r}"
                             f"{where}.")
        if kind not in ("tuple", "list") and data != self._data:
            raise ValueError(f"Mismatch custom node data{where}: {data!r} != {self._data!r}; "
                             f"value: {tree!r}.")
        keys = data[1] if kind == "defaultdict" else data
        for index, (child_def, child) in enumerate(zip(self._children, children, strict=True)):
            step = f"[{index}]" if kind in ("tuple", "list") else (
                f".{self._data._fields[index]}" if kind == "namedtuple" else
                f"[<flat index {index}>]" if kind == "class" else f"[{keys[index]!r}]")
            child_def._up_to(child, out, path + step)

    def _text(self) -> str:
        kind, data = self._kind, self._data
        if kind == "leaf":
            return "*"
        if kind == "none":
            return "None"
        inner = [child._text() for child in self._children]
        if kind == "tuple":
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        if kind == "list":
            return "[" + ", ".join(inner) + "]"
        if kind == "dict":
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(data, inner, strict=True)) + "}"
        if kind == "ordereddict":
            node = f"OrderedDict[{data!r}]"
        elif kind == "defaultdict":
            node = f"defaultdict[({data[0]!r}, {data[1]!r})]"
        elif kind == "class":
            node = f"{data[0].__name__}[{data[1]!r}]"
        else:
            node = f"namedtuple[{data.__name__}]"
        return f"CustomNode({node}, [{', '.join(inner)}])"

    def __repr__(self) -> str:
        return f"PyTreeDef({self._text()})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return (self._kind, self._data, self._children) == (
            other._kind, other._data, other._children)

    def __hash__(self) -> int:
        return hash((self._kind, self._children))


_KIND_NAMES = {"tuple": "tuple", "list": "list", "dict": "dict", "ordereddict": "OrderedDict",
               "defaultdict": "defaultdict", "namedtuple": "named tuple", "none": "None",
               "class": "registered class"}
_LEAF = PyTreeDef("leaf", None, ())
_NONE = PyTreeDef("none", None, ())


def _sorted_keys(mapping: dict[Any, Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(mapping))
    except TypeError:
        raise ValueError("Comparator raised exception while sorting pytree dictionary "
                         "keys.") from None


def _node(tree: Any) -> tuple[str, Any, list[Any]] | None:
    """``(kind, data, children)`` of a container node, None for a leaf or None."""
    tp = type(tree)
    if tp is tuple:
        return "tuple", None, list(tree)
    if tp is list:
        return "list", None, list(tree)
    if tp is dict:
        keys = _sorted_keys(tree)
        return "dict", keys, [tree[k] for k in keys]
    if tp is collections.OrderedDict:
        keys = tuple(tree)
        return "ordereddict", keys, [tree[k] for k in keys]
    if tp is collections.defaultdict:
        keys = _sorted_keys(tree)
        return "defaultdict", (tree.default_factory, keys), [tree[k] for k in keys]
    if isinstance(tree, tuple) and isinstance(getattr(tp, "_fields", None), tuple):
        return "namedtuple", tp, list(tree)
    if tp.__dict__.get(_REGISTERED):
        children, aux = tree.tree_flatten()
        return "class", (tp, aux), list(children)
    return None


#: The class attribute :func:`register_pytree_node_class` sets: the mark lives on the
#: class itself, so nothing is shared between the grader and the code it runs.
_REGISTERED = "__pallas_sim_pytree_node__"


def register_pytree_node_class(cls: type) -> type:
    """``jax.tree_util.register_pytree_node_class``: make instances of ``cls`` pytree
    nodes, flattened by their ``tree_flatten()`` (``(children, aux_data)``) and rebuilt
    by the classmethod ``tree_unflatten(aux_data, children)``, as JAX does. Used as a
    class decorator; returns ``cls``. Subclasses are not registered (as in JAX).

    pallas_sim keeps no global registry: the mark is an attribute of ``cls``.

    Raises:
      TypeError: ``cls`` is not a class or lacks ``tree_flatten``/``tree_unflatten``.
    """
    if not isinstance(cls, type) or not callable(getattr(cls, "tree_flatten", None)) or \
            not callable(getattr(cls, "tree_unflatten", None)):
        raise TypeError(f"register_pytree_node_class({cls!r}): expected a class with "
                        "tree_flatten and tree_unflatten methods")
    setattr(cls, _REGISTERED, True)
    return cls


def _flatten(tree: Any, is_leaf: IsLeaf, leaves: list[Any]) -> PyTreeDef:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    if tree is None:
        return _NONE
    node = _node(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    kind, data, children = node
    return PyTreeDef(kind, data, tuple(_flatten(c, is_leaf, leaves) for c in children))


def flatten(tree: Any, is_leaf: IsLeaf = None) -> tuple[list[Any], PyTreeDef]:
    """``jax.tree.flatten``: the leaves of ``tree`` in order, and its structure.

    Args:
      tree: a pytree.
      is_leaf: optional predicate; a subtree for which it returns True is a leaf.

    Raises:
      ValueError: a dict whose keys cannot be sorted (JAX's message).
    """
    leaves: list[Any] = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def leaves(tree: Any, is_leaf: IsLeaf = None) -> list[Any]:
    """``jax.tree.leaves``: the leaves of ``tree`` in order (None is not a leaf)."""
    return flatten(tree, is_leaf)[0]


def structure(tree: Any, is_leaf: IsLeaf = None) -> PyTreeDef:
    """``jax.tree.structure``: the :class:`PyTreeDef` of ``tree``."""
    return flatten(tree, is_leaf)[1]


def unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """``jax.tree.unflatten``: the tree of structure ``treedef`` holding ``leaves``.

    Raises:
      ValueError: the number of leaves does not match ``treedef.num_leaves``.
    """
    return treedef.unflatten(leaves)


def map(f: Callable[..., Any], tree: Any, *rest: Any,  # noqa: A001 - JAX's name
        is_leaf: IsLeaf = None) -> Any:
    """``jax.tree.map``: ``f`` applied leaf by leaf; the result has ``tree``'s structure.

    Each tree in ``rest`` must have ``tree``'s structure as a prefix; ``f``
    receives the leaf of ``tree`` and the matching subtrees of ``rest``.

    Raises:
      ValueError: a tree in ``rest`` does not match ``tree``'s structure.
    """
    first, treedef = flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(first, *others, strict=True))


def all(tree: Any, *, is_leaf: IsLeaf = None) -> bool:  # noqa: A001 - JAX's name
    """``jax.tree.all``: whether every leaf is truthy (True for a tree with no leaves)."""
    return builtins.all(leaves(tree, is_leaf))


def reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INITIALIZER,
           is_leaf: IsLeaf = None) -> Any:
    """``jax.tree.reduce``: ``functools.reduce(function, leaves(tree)[, initializer])``.

    Raises:
      TypeError: a tree with no leaves and no ``initializer``.
    """
    items = leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, items)
    return functools.reduce(function, items, initializer)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """``jax.tree_util.treedef_is_leaf``: whether ``treedef`` is the structure of a leaf."""
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(iterable: Any, is_leaf: Any = None) -> bool:
    """``jax.tree_util.all_leaves``: whether every element of ``iterable`` is a leaf."""
    return builtins.all(treedef_is_leaf(structure(x, is_leaf)) for x in iterable)


publish("pallas_sim.tree_util", globals(), ["treedef_is_leaf", "all_leaves"])
