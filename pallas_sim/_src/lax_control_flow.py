"""``jax.lax``'s control flow, run eagerly: ``cond`` and ``switch`` run the branch their
predicate selects, ``fori_loop``, ``while_loop``, ``scan`` and ``map`` run their body in
Python with JAX's checks on the carry; plus ``stop_gradient`` and
``optimization_barrier``. The one place a value decides control flow is :func:`_decide`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .dtypes import is_floating
from .exports import publish
from .lax_common import (
    _BOOL,
    _CANONICAL,
    _PYTHON_DTYPES,
    _aval,
    _aval_text,
    _kind_rank,
    lift_functions,
)
from .pytrees import flatten as _flatten
from .values import KERNELS as _KERNELS
from .values import KernelValue as _KernelValue
from .values import _wrap as _traced_result
from .values import concrete as _concrete


def _decide(value: Any) -> Any:
    """The Python value of a scalar that decides control flow (a ``cond`` predicate, a
    ``switch`` index, a ``while_loop`` condition, ``fori_loop`` bounds).

    pallas_sim runs one branch, not both, so it needs the value now; this is the one
    place lax turns a value into a Python scalar.
    """
    value = _concrete(value)  # a kernel value: the simulator's run knows it
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, np.generic):
        return value.item()
    return np.asarray(value).item()


def _scalar_pred(name: str, pred: object) -> None:
    dtype, shape = _aval(name, pred)
    if shape:
        raise TypeError(f"Pred must be a scalar, got {pred!r} of shape {shape}.")
    if dtype.kind not in "biuf" and not is_floating(dtype):
        raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")


_NO_OPERAND = object()


def _operands(name: str, operands: tuple[Any, ...], operand: Any) -> tuple[Any, ...]:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def cond(pred: object, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any, operand: Any = _NO_OPERAND) -> Any:
    """``jax.lax.cond``: ``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``.

    Only the selected branch runs, so a branch that writes a ref writes it once. JAX
    traces both branches and refuses branches whose outputs differ in structure, shape
    or dtype; pallas_sim cannot check the branch it does not run.

    Raises:
      TypeError: ``pred`` is not a scalar bool or number, a branch is not callable, or
        ``operand=`` is given together with positional operands.
    """
    if not callable(true_fun) or not callable(false_fun):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands("cond", operands, operand)
    _scalar_pred("cond", pred)
    return (true_fun if _decide(pred) else false_fun)(*operands)


def switch(index: object, branches: Sequence[Callable[..., Any]], *operands: Any,
           operand: Any = _NO_OPERAND) -> Any:
    """``jax.lax.switch``: ``branches[index](*operands)``, ``index`` clamped into range.

    Raises:
      TypeError: ``index`` is not a scalar integer. ValueError: no branches.
    """
    if not branches:
        raise ValueError("Empty branch sequence")
    operands = _operands("switch", operands, operand)
    dtype, shape = _aval("switch", index)
    if shape or dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index!r} as {dtype}")
    chosen = builtins.min(builtins.max(int(_decide(index)), 0), len(branches) - 1)
    return branches[chosen](*operands)


def _leaf_aval(leaf: Any) -> tuple[np.dtype, tuple[int, ...], bool] | None:
    """``(dtype, shape, weak)`` of a carry leaf, None for what is not an array."""
    py = _PYTHON_DTYPES.get(type(leaf))
    if py is not None:
        return py, (), True
    dtype, shape = getattr(leaf, "dtype", None), getattr(leaf, "shape", None)
    if not isinstance(dtype, np.dtype) or not isinstance(shape, tuple):
        return None
    return _CANONICAL.get(dtype, dtype), shape, False


def _check_carry(where: str, before: Any, after: Any) -> None:
    """Refuse, as JAX does, a loop body whose carry changes structure, shape or dtype.

    A Python scalar in the input carry is weakly typed: its dtype may grow (int -> float),
    as JAX promotes it.
    """
    in_leaves, in_def = _flatten(before)
    out_leaves, out_def = _flatten(after)
    if in_def != out_def:
        raise TypeError(f"{where} carry input and carry output must have the same pytree "
                        f"structure, but they differ: the input carry is {in_def} but the "
                        f"output carry is {out_def}.")
    for index, (a, b) in enumerate(zip(in_leaves, out_leaves, strict=True)):
        aa, bb = _leaf_aval(a), _leaf_aval(b)
        if aa is None or bb is None:
            continue
        what = None
        if aa[1] != bb[1]:
            what = "shapes"
        elif aa[0] != bb[0] and not (aa[2] and _kind_rank(bb[0]) >= _kind_rank(aa[0])):
            what = "dtypes"
        if what:
            raise TypeError(
                f"{where} carry input and carry output must have equal types, but they differ:"
                f"\n\nThe input carry component {index} (leaf {index} of {in_def}) has type "
                f"{_aval_text(aa[0], aa[1])} but the corresponding output carry component has "
                f"type {_aval_text(bb[0], bb[1])}, so the {what} do not match.\n\nRevise the "
                "function so that all output types match the corresponding input types.")


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """``jax.lax.fori_loop``: ``val = body_fun(i, val)`` for ``i`` in ``[lower, upper)``.

    ``i`` is an int32 kernel value inside a kernel (traced, as in JAX) and a Python int
    elsewhere. After every step the carry must keep its structure, shapes and dtypes, as
    JAX requires.

    Raises:
      TypeError: ``lower`` and ``upper`` of different dtypes, non-integer bounds, or a
        body that changes its carry (JAX's message).
    """
    (dl, _), (du, _) = _aval("fori_loop", lower), _aval("fori_loop", upper)
    if dl != du:
        raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                        f"{dl} and {du}")
    if dl.kind not in "iu":
        raise TypeError(f"fori_loop bounds must be integers, got {dl}")
    val = init_val
    in_kernel = bool(_KERNELS)
    for i in range(int(_decide(lower)), int(_decide(upper))):
        new = body_fun(_KernelValue(np.asarray(i, dl)) if in_kernel else i, val)
        _check_carry("fori_loop body_fun", val, new)
        val = new
    return val


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any) -> Any:
    """``jax.lax.while_loop``: ``val = body_fun(val)`` while ``cond_fun(val)``.

    Raises:
      TypeError: ``cond_fun`` returns something other than a bool scalar, or the body
        changes its carry (JAX's messages).
    """
    val = init_val
    while True:
        keep_going = cond_fun(val)
        aval = _leaf_aval(keep_going)
        if aval is None or aval[1] or aval[0] != _BOOL:
            shown = "?" if aval is None else _aval_text(aval[0], aval[1])
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"[ShapedArray({shown})].")
        if not _decide(keep_going):
            return val
        new = body_fun(val)
        _check_carry("while_loop body_fun", val, new)
        val = new


def _stack_ys(ys: list[Any], reverse: bool) -> Any:
    if reverse:
        ys = ys[::-1]
    leaves0, treedef = _flatten(ys[0])
    columns = [treedef.flatten_up_to(y) for y in ys]
    stacked = []
    for j, first in enumerate(leaves0):
        py = _PYTHON_DTYPES.get(type(first))
        column = [np.asarray(c[j], py) if py is not None else _concrete(c[j]) for c in columns]
        stacked.append(np.stack(column))
    if _KERNELS:
        stacked = [_traced_result(s) for s in stacked]
    return treedef.unflatten(stacked)


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None,
         length: int | None = None, reverse: bool = False, unroll: int | bool = 1,
         _split_transpose: bool = False) -> tuple[Any, Any]:
    """``jax.lax.scan``: ``carry, y = f(carry, x)`` over the leading axis of ``xs``;
    returns the final carry and the ``y`` values stacked along a new leading axis.

    Raises:
      ValueError: no ``xs`` and no ``length``, or leading axes of different sizes.
      TypeError: ``f`` changes its carry (JAX's message).
      UnsupportedJaxUsageError: a scan of length 0 (JAX traces ``f`` for the shapes of
        ``ys``; pallas_sim would have to run it).
    """
    from .errors import UnsupportedJaxUsageError

    x_leaves, x_def = _flatten(xs)
    lengths = {np.shape(leaf)[0] for leaf in x_leaves}
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError("scan got no xs and no length" if not lengths else
                         f"scan got values with different leading axis sizes: {sorted(lengths)}")
    n = lengths.pop()
    if n == 0:
        raise UnsupportedJaxUsageError("pallas_sim runs a scan step by step, so it cannot give "
                                       "the stacked outputs of a scan of length 0")
    carry, ys = init, []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        x = x_def.unflatten([leaf[i] for leaf in x_leaves])
        new, y = f(carry, x)
        _check_carry("scan body function", carry, new)
        carry = new
        ys.append(y)
    return carry, _stack_ys(ys, reverse)


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001
    """``jax.lax.map``: ``f`` applied to each slice of ``xs`` along its leading axis, the
    results stacked (:func:`scan` without a carry)."""
    return scan(lambda carry, x: (carry, f(x)), (), xs)[1]


def stop_gradient(x: Any) -> Any:
    """``jax.lax.stop_gradient``: ``x`` itself (pallas_sim has no gradients)."""
    return x


def optimization_barrier(operand: Any, /) -> Any:
    """``jax.lax.optimization_barrier``: ``operand`` itself (nothing is reordered here)."""
    return operand


__all__ = ["cond", "fori_loop", "map", "optimization_barrier", "scan", "stop_gradient", "switch",
    "while_loop"]
publish("pallas_sim.lax", globals(), __all__)
# The array functions take kernel values as JAX's take tracers (values.lift).
lift_functions(globals(), ["optimization_barrier", "stop_gradient"])
