"""The pytrees of a call: arguments, ``in_specs``, ``out_shape``, ``out_specs``, scratch.

As in JAX 0.10.x (``pallas_call`` and ``pl.kernel``), every one of them is a pytree
(tuples, lists, dicts, NamedTuples, None; :mod:`pallas_sim._src.pytrees`):

* the arguments after the scalar-prefetch ones are flattened; the kernel receives each
  positional argument back as the same tree of refs;
* ``in_specs`` must be a tuple or a list (a bare ``BlockSpec`` or ``None`` is refused:
  "`in_specs` must be a tuple or a list"); a top-level list counts as a tuple; its
  structure must equal the arguments' ("Pytree for `in_specs` and `inputs` do not
  match"). ``None`` is an empty subtree, not "the whole array", so a ``None`` entry
  where an argument is never matches. Leaving ``in_specs`` out (``pl.no_block_spec``)
  gives every input the whole array;
* ``out_shape`` is a tree of ``ShapeDtypeStruct``s (a top-level list counts as a tuple);
  ``None`` inside it is an empty subtree: the kernel receives ``None`` there and no
  output is made. A tuple is spread over the kernel's parameters, anything else (one
  struct, a dict, ``None``) is passed as one argument, and the call returns the same tree
  of arrays;
* ``out_specs`` must have ``out_shape``'s structure;
* ``scratch_shapes`` is a tree too: a dict is passed as keyword arguments, a sequence is
  spread after the outputs.

Source: ``jax._src.pallas.pallas_call._pallas_call``, ``jax._src.pallas.core.GridSpec``
and ``get_grid_mapping`` (JAX 0.10.x).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .pytrees import PyTreeDef, _node, flatten


class NoBlockSpec:
    """``pl.no_block_spec``: the default of ``in_specs``/``out_specs``, meaning every operand
    is one whole-array block."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NoBlockSpec"


no_block_spec = NoBlockSpec()


def check_in_specs(in_specs: Any) -> Any:
    """``in_specs`` as JAX's ``GridSpec`` keeps it: a list becomes a tuple.

    Raises:
      ValueError: neither ``pl.no_block_spec`` nor a tuple or list (JAX's message).
    """
    if in_specs is no_block_spec:
        return in_specs
    if isinstance(in_specs, list):
        return tuple(in_specs)
    if not isinstance(in_specs, Sequence) or isinstance(in_specs, str):
        raise ValueError(f"`in_specs` must be a tuple or a list. Found: {in_specs}")
    return in_specs


def top_level_tuple(tree: Any) -> Any:
    """A top-level list as a tuple (JAX canonicalizes ``out_shape`` and ``out_specs`` so)."""
    return tuple(tree) if isinstance(tree, list) else tree


def match_specs(specs: Any, values: Any, count: int, what: str, against: str) -> list[Any]:
    """The spec of each leaf of ``values`` (``count`` leaves), from a tree ``specs`` of the
    same structure; ``pl.no_block_spec`` gives None (a whole-array block) for each.

    Raises:
      ValueError: the structures differ (JAX's "Pytree for `in_specs` and `inputs` do not
        match" with the mismatches).
    """
    if specs is no_block_spec:
        return [None] * count
    leaves, spec_def = flatten(specs, is_leaf=_is_spec_leaf)
    _, value_def = flatten(values)
    if spec_def != value_def:
        raise ValueError(mismatch_message(specs, values, what, against))
    return leaves


def _is_spec_leaf(x: Any) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def mismatch_message(a: Any, b: Any, what: str, against: str) -> str:
    """JAX's ``pytreedef_mismatch_err_msg``: where the trees ``a`` and ``b`` differ."""
    found: list[tuple[str, str, str, str]] = []
    _diff(a, b, "", found)
    lines = [f"Pytree for {what} and {against} do not match. There are {len(found)} "
             "mismatches, including:"]
    for path, kind_a, kind_b, why in found:
        where = f"at {path}, " if path else ""
        lines.append(f"    * {where}{what} is {kind_a} but {against} is {kind_b}, so {why}")
    return "\n".join(lines)


def _kind(x: Any) -> tuple[str, Any, list[Any]]:
    if x is None:
        return "none", None, []
    if _is_spec_leaf(x):
        return "leaf", None, []
    node = _node(x)
    return ("leaf", None, []) if node is None else node


def _describe(x: Any, kind: str) -> str:
    return "a pytree leaf" if kind == "leaf" else f"a {type(x)}"


def _diff(a: Any, b: Any, path: str, found: list[tuple[str, str, str, str]]) -> None:
    ka, da, ca = _kind(a)
    kb, db, cb = _kind(b)
    if ka == "leaf" and kb == "leaf":
        return
    if ka != kb:
        found.append((path, _describe(a, ka), _describe(b, kb), "their Python types differ"))
        return
    if ka in ("tuple", "list") and len(ca) != len(cb):
        found.append((path, f"a {ka} of length {len(ca)}", f"a {kb} of length {len(cb)}",
                      "the lengths do not match"))
        return
    if ka not in ("tuple", "list", "none") and da != db:
        found.append((path, f"a {ka} with keys {list(_keys(ka, da))}",
                      f"a {kb} with keys {list(_keys(kb, db))}", "the keys do not match"))
        return
    for i, (x, y) in enumerate(zip(ca, cb, strict=True)):
        step = f"[{i}]" if ka in ("tuple", "list") else (
            f".{da._fields[i]}" if ka == "namedtuple" else f"[{_keys(ka, da)[i]!r}]")
        _diff(x, y, path + step, found)


def _keys(kind: str, data: Any) -> tuple[Any, ...]:
    return data[1] if kind == "defaultdict" else tuple(data)


def leaf_paths(tree: Any) -> list[str]:
    """The key path of every leaf of ``tree``, in leaf order (``""`` for a leaf itself,
    ``"[0]"``, ``"['a']"``, ``".field"``), to name a pytree argument's refs."""
    out: list[str] = []
    _paths(tree, "", out)
    return out


def _paths(tree: Any, path: str, out: list[str]) -> None:
    kind, data, children = _kind(tree)
    if kind == "leaf":
        out.append(path)
        return
    for i, child in enumerate(children):
        step = f"[{i}]" if kind in ("tuple", "list") else (
            f".{data._fields[i]}" if kind == "namedtuple" else f"[{_keys(kind, data)[i]!r}]")
        _paths(child, path + step, out)


def kernel_out_args(out_def: PyTreeDef, refs: list[Any]) -> tuple[Any, ...]:
    """The output arguments of the kernel: a tuple ``out_shape`` spread, anything else as
    one argument (JAX: "if not isinstance(jaxpr_out_avals, (tuple, list))")."""
    tree = out_def.unflatten(refs)
    return tuple(tree) if isinstance(tree, tuple | list) else (tree,)
