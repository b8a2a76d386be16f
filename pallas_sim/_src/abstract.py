"""Shape-only arrays for the abstract run (:func:`pallas_sim.estimate`).

In an abstract run every HBM array and VMEM buffer of a pallas_call is an
:class:`AbstractArray`: a shape and a dtype, no data. NumPy functions and ufuncs applied
to it (through the kernel values, ``jnp`` and ``lax`` code that a real run also uses)
compute only the result's shape and dtype, in microseconds whatever the size, so the
grid loop, the index maps, the DMA plan, the VMEM accounting and the op counters
(:mod:`pallas_sim._src.op_accounting`) run exactly as in a real run and record the same trace.

What needs a value the abstract run does not have (Python control flow on a loaded
value, ``pl.when`` or ``lax.cond`` on one, using one as a ref index, storing one into
SMEM) raises :class:`AbstractValueError` naming the user's file and line. Values that
JAX also knows before the kernel runs stay concrete: grid indices (``pl.program_id``)
and scalar-prefetch tables passed as arrays.

Source: JAX's abstract evaluation (``jax.eval_shape``, ``ShapedArray``), which computes
shapes and dtypes without data in the same way.
"""

from __future__ import annotations

import linecache
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .dtypes import REFUSED, refuse
from .errors import PallasSimError

#: True while :func:`pallas_sim.estimate` runs its function (pallas_call then allocates
#: shape-only buffers).
ACTIVE = [False]

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pallas_sim/, _src included
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))


class _Flags:
    c_contiguous = True
    f_contiguous = False
    writeable = True


_FLAGS = _Flags()


class AbstractValueError(PallasSimError):
    """Code run by :func:`pallas_sim.estimate` needed the value of an array, which the
    abstract run does not have (it knows shapes and dtypes only). The message names the
    file and line."""


@contextmanager
def abstract_mode() -> Iterator[None]:
    """Within the block, pallas_call allocates :class:`AbstractArray` buffers."""
    before = ACTIVE[0]
    ACTIVE[0] = True
    try:
        yield
    finally:
        ACTIVE[0] = before


def user_line() -> str:
    """``file:line: source`` of the innermost frame outside pallas_sim and NumPy."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PKG) and not path.startswith(_NUMPY) and \
                "contextlib" not in path:
            src = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            return f"{frame.f_code.co_filename}:{frame.f_lineno}: `{src}`"
        frame = frame.f_back
    return "<unknown line>"


def needs_value(x: AbstractArray, what: str) -> AbstractValueError:
    """The error for ``what`` (e.g. "bool()") applied to the shape-only ``x``."""
    return AbstractValueError(
        f"{user_line()} needs the value of a {x.dtype.name}{list(x.shape)} array ({what}), "
        "which pallas_sim.estimate does not have: the abstract run knows shapes and dtypes "
        "only. Branch on grid indices (pl.program_id) or on scalar-prefetch tables passed "
        "as arrays, or compute both sides and choose with jnp.where")


def _new(shape: tuple[int, ...], dtype: np.dtype) -> AbstractArray:
    """An :class:`AbstractArray` from a tuple of ints and a NumPy dtype (no checks)."""
    a = object.__new__(AbstractArray)
    a.shape = shape
    a.dtype = dtype
    return a


#: Result dtypes of ufunc calls by (ufunc, method, operand kinds, keyword arguments).
_DTYPES: dict[tuple, Any] = {}
#: Result shapes of indexing by (shape, index key).
_INDEXED: dict[tuple, tuple[int, ...]] = {}


def _kind(x: object) -> object:
    if isinstance(x, AbstractArray | np.ndarray | np.generic):
        return x.dtype
    return type(x)


def _index_key(idx: object) -> object:
    entries = idx if isinstance(idx, tuple) else (idx,)
    key = []
    for e in entries:
        t = type(e)
        if t is slice:
            key.append(("s", e.start, e.stop, e.step))  # type: ignore[union-attr]
        elif t is int or e is None or e is Ellipsis:
            key.append(e)
        elif isinstance(e, np.integer):
            key.append(int(e))
        else:
            return None  # arrays: not cached
    return (isinstance(idx, tuple), tuple(key))


def _shape_of(x: object) -> tuple[int, ...]:
    return x.shape if isinstance(x, AbstractArray | np.ndarray | np.generic) else np.shape(x)


def _probe(x: object) -> object:
    """A one-element stand-in with ``x``'s dtype (Python scalars stay weakly typed)."""
    if isinstance(x, AbstractArray | np.ndarray):
        return np.ones((), x.dtype)
    if isinstance(x, np.generic):
        return np.ones((), x.dtype)
    return x


def standin(x: AbstractArray) -> np.ndarray:
    """A read-only zero-strided NumPy view of ``x``'s shape (no memory): for shape rules
    that NumPy computes on views (indexing, transposes)."""
    return np.broadcast_to(np.zeros((), x.dtype), x.shape)


def _axes(axis: object, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple | list):
        return tuple(int(a) % ndim for a in axis) if ndim else ()
    return (int(axis) % ndim,) if ndim else ()  # type: ignore[call-overload]


def _reduced_shape(shape: tuple[int, ...], axis: object, keepdims: bool) -> tuple[int, ...]:
    axes = _axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reshaped(size: int, newshape: Any) -> tuple[int, ...]:
    if isinstance(newshape, int | np.integer):
        newshape = (int(newshape),)
    shape = [int(d) for d in newshape]
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = size // known if known else 0
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
    return tuple(shape)


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {b2[-2]} is different from {a2[-1]})")
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _einsum_shape(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The result shape of ``np.einsum(subscripts, *operands)`` for operands of these
    shapes, with NumPy's rules: ``...`` stands for broadcast leading dims, a letter of size
    1 broadcasts, and without ``->`` the output is the ellipsis dims then the letters used
    once, sorted."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, out = spec.partition("->")
    sizes: dict[str, int] = {}
    ellipses: list[tuple[int, ...]] = []
    for term, shape in zip(inputs.split(","), shapes, strict=True):
        head, dots, tail = term.partition("...")
        if dots:
            ellipses.append(tuple(shape[len(head):len(shape) - len(tail)]))
            named = [*zip(head, shape[:len(head)], strict=True),
                     *zip(tail, shape[len(shape) - len(tail):], strict=True)]
        else:
            named = list(zip(term, shape, strict=True))
        for ch, d in named:
            sizes[ch] = max(sizes.get(ch, 1), d)
    ellipsis = np.broadcast_shapes(*ellipses) if ellipses else ()
    if not arrow:
        counts: dict[str, int] = {}
        for ch in inputs.replace(",", "").replace(".", ""):
            counts[ch] = counts.get(ch, 0) + 1
        out = "..." * bool(ellipses) + "".join(sorted(ch for ch, n in counts.items() if n == 1))
    head, dots, tail = out.partition("...")
    return (*(sizes[ch] for ch in head), *(ellipsis if dots else ()),
            *(sizes[ch] for ch in tail))


_REDUCTIONS = frozenset({"sum", "max", "min", "amax", "amin", "mean", "prod", "any", "all",
                         "argmax", "argmin", "std", "var", "nanmax", "nanmin", "nansum"})


class AbstractArray(NDArrayOperatorsMixin):
    """A shape and a dtype standing for an array whose values the abstract run does not
    have.

    Behaves as a NumPy array for shape purposes: ufuncs, ``np.dot``/``np.matmul``/
    ``np.einsum``, reductions, ``np.where``, indexing, ``reshape``/``transpose``/``astype``
    return new :class:`AbstractArray` results; stores, fills and copies into it do nothing.

    Raises:
      AbstractValueError: anything that needs the values (``bool()``, ``int()``,
        ``float()``, ``np.asarray``, ``.item()``, an abstract index), naming the line.
    """

    __slots__ = ("shape", "dtype")
    __array_priority__ = 2000

    def __init__(self, shape: tuple[int, ...], dtype: object) -> None:
        self.shape = tuple(int(d) for d in shape)
        dt = np.dtype(dtype)
        self.dtype = refuse(dt) if dt in REFUSED else dt

    # -- attributes -----------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array."""
        return self.size * self.dtype.itemsize

    @property
    def flags(self) -> Any:
        """C-contiguous, as a fresh NumPy array (only the layout rules read it)."""
        return _FLAGS

    @property
    def T(self) -> AbstractArray:  # noqa: N802 - NumPy's name
        """Axes reversed."""
        return AbstractArray(self.shape[::-1], self.dtype)

    @property
    def mT(self) -> AbstractArray:  # noqa: N802 - NumPy's name
        """The last two axes swapped."""
        return AbstractArray((*self.shape[:-2], self.shape[-1], self.shape[-2]), self.dtype)

    def __jax_array__(self) -> AbstractArray:
        """JAX's array-like protocol: ``jax.jit``/``vmap`` accept it as a value."""
        return self

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"AbstractArray({self.dtype.name}{list(self.shape)})"

    # -- what needs values ------------------------------------------------------------------
    def __bool__(self) -> bool:
        raise needs_value(self, "bool(), e.g. `if` or pl.when on it")

    def __int__(self) -> int:
        raise needs_value(self, "int()")

    def __float__(self) -> float:
        raise needs_value(self, "float()")

    def __index__(self) -> int:
        raise needs_value(self, "an index")

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise needs_value(self, "its values as a NumPy array")

    def item(self, *args: object) -> Any:
        """Refused: needs the value."""
        raise needs_value(self, ".item()")

    def tolist(self) -> Any:
        """Refused: needs the values."""
        raise needs_value(self, ".tolist()")

    def __iter__(self) -> Iterator[AbstractArray]:
        for _ in range(len(self)):
            yield AbstractArray(self.shape[1:], self.dtype)

    # -- shape-only methods -----------------------------------------------------------------
    def __getitem__(self, idx: object) -> AbstractArray:
        key = _index_key(idx)
        if key is not None:
            cached = _INDEXED.get((self.shape, key))
            if cached is not None:
                return _new(cached, self.dtype)
        _check_index(idx)
        shape = np.shape(standin(self)[idx])  # type: ignore[index]
        if key is not None:
            if len(_INDEXED) > 65536:
                _INDEXED.clear()
            _INDEXED[(self.shape, key)] = shape
        return _new(shape, self.dtype)

    def __setitem__(self, idx: object, value: object) -> None:
        _check_index(idx)

    def fill(self, value: object) -> None:
        """Nothing to fill: no data."""

    def copy(self, order: str = "C") -> AbstractArray:
        """Itself: an abstract array never changes."""
        return self

    def astype(self, dtype: object, copy: bool = True, **_: object) -> AbstractArray:
        """The same shape in ``dtype``."""
        return AbstractArray(self.shape, dtype)

    def view(self, dtype: object = None) -> AbstractArray:
        """The same shape (a same-size dtype) or itself."""
        if dtype is None:
            return self
        dt = refuse(np.dtype(dtype))  # type: ignore[call-overload]
        last = self.shape[-1] * self.dtype.itemsize // dt.itemsize if self.shape else 1
        return AbstractArray((*self.shape[:-1], last) if self.shape else (), dt)

    def reshape(self, *shape: Any, order: str = "C") -> AbstractArray:
        """The same data in ``shape`` (-1 allowed)."""
        if len(shape) == 1 and not isinstance(shape[0], int | np.integer):
            shape = tuple(shape[0])
        return AbstractArray(_reshaped(self.size, shape), self.dtype)

    def transpose(self, *axes: Any) -> AbstractArray:
        """Axes permuted (reversed by default)."""
        if len(axes) == 1 and isinstance(axes[0], tuple | list):
            axes = tuple(axes[0])
        if not axes:
            return self.T
        return AbstractArray(tuple(self.shape[int(a)] for a in axes), self.dtype)

    def ravel(self, order: str = "C") -> AbstractArray:
        """Flattened."""
        return AbstractArray((self.size,), self.dtype)

    flatten = ravel

    def __getattr__(self, name: str) -> Any:
        fn = getattr(np, name, None)
        if fn is None or name.startswith("_"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            return fn(self, *args, **kwargs)
        return method

    # -- NumPy protocols --------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        if method == "__call__":
            if ufunc.signature:  # matmul
                shape = _matmul_shape(_shape_of(inputs[0]), _shape_of(inputs[1]))
            else:
                shape = ()
                for x in inputs:
                    sx = _shape_of(x)
                    if sx != shape:
                        shape = sx if not shape else np.broadcast_shapes(shape, sx)
            key = (ufunc, tuple(_kind(x) for x in inputs),
                   tuple(sorted(kwargs.items())) if kwargs else ())
            try:
                dtypes = _DTYPES.get(key)
            except TypeError:  # an unhashable keyword argument
                key, dtypes = None, None
            if dtypes is None:
                probes = [_probe(x) for x in inputs]
                if ufunc.signature:  # matmul's core dims need matrices
                    probes = [np.ones((1, 1), np.result_type(p)) for p in probes]
                with np.errstate(all="ignore"):
                    probe = ufunc(*probes, **kwargs)
                dtypes = (tuple(np.result_type(p) for p in probe) if isinstance(probe, tuple)
                          else np.result_type(probe))
                if key is not None:
                    _DTYPES[key] = dtypes
            if isinstance(dtypes, tuple):
                result: Any = tuple(_new(shape, d) for d in dtypes)
            else:
                result = _new(shape, dtypes)
        elif method in ("reduce", "accumulate"):
            a = inputs[0]
            axis = kwargs.pop("axis", 0)
            keepdims = kwargs.pop("keepdims", False)
            kwargs.pop("initial", None)
            kwargs.pop("where", None)
            with np.errstate(all="ignore"):
                probe = getattr(ufunc, method)(np.ones((1,), a.dtype), **kwargs)
            shape = a.shape if method == "accumulate" else _reduced_shape(a.shape, axis,
                                                                             keepdims)
            result = AbstractArray(shape, probe.dtype)
        else:
            return NotImplemented
        if out is not None:
            target = out[0] if isinstance(out, tuple) else out
            if isinstance(target, AbstractArray):
                return target
            raise needs_value(result, f"np.{ufunc.__name__} into a NumPy array")
        return result

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        name = func.__name__
        handler = _FUNCTIONS.get(name)
        if handler is not None:
            return handler(*args, **kwargs)
        if name in _REDUCTIONS:
            return _reduce(func, *args, **kwargs)
        return _generic(func, args, kwargs)


def _check_index(idx: object) -> None:
    entries = idx if isinstance(idx, tuple) else (idx,)
    for e in entries:
        if isinstance(e, AbstractArray):
            raise needs_value(e, "an index")
        if isinstance(e, slice):
            for part in (e.start, e.stop, e.step):
                if isinstance(part, AbstractArray):
                    raise needs_value(part, "a slice bound")


def _abstract_leaves(x: Any) -> Any:
    if isinstance(x, AbstractArray):
        return standin(x)
    if isinstance(x, tuple | list):
        return type(x)(_abstract_leaves(v) for v in x)
    return x


def _back(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return AbstractArray(x.shape, x.dtype)
    if isinstance(x, tuple | list):
        return type(x)(_back(v) for v in x)
    if isinstance(x, np.generic):
        return AbstractArray((), x.dtype)
    return x


def _generic(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``func`` on zero-strided stand-ins and keep only the result's shape and dtype
    (for layout functions; results that are not arrays would need the values)."""
    out = func(*_abstract_leaves(args), **{k: _abstract_leaves(v) for k, v in kwargs.items()})
    if isinstance(out, bool | int | float | complex) and func.__name__ not in (
            "ndim", "size", "shape"):
        for a in args:
            if isinstance(a, AbstractArray):
                raise needs_value(a, f"np.{func.__name__}")
    return _back(out)


def _reduce(func: Any, a: Any, axis: object = None, *args: Any, keepdims: bool = False,
            **kwargs: Any) -> AbstractArray:
    kwargs.pop("out", None)
    kwargs.pop("where", None)
    kwargs.pop("initial", None)
    nd = len(_shape_of(a))
    dtype = a.dtype if isinstance(a, AbstractArray) else np.asarray(a).dtype
    with np.errstate(all="ignore"):
        probe = func(np.ones((1,) * nd, dtype), axis, *args, **kwargs)
    return AbstractArray(_reduced_shape(_shape_of(a), axis, keepdims), np.result_type(probe))


def _dtype_of(x: Any) -> Any:
    return _probe(x)


def _where(cond: Any, x: Any = None, y: Any = None) -> AbstractArray:
    if x is None:
        raise needs_value(cond, "np.where(cond) without values")
    shape = np.broadcast_shapes(_shape_of(cond), _shape_of(x), _shape_of(y))
    return AbstractArray(shape, np.where(True, _probe(x), _probe(y)).dtype)


def _dot(a: Any, b: Any, out: Any = None) -> AbstractArray:
    sa, sb = _shape_of(a), _shape_of(b)
    if len(sa) <= 2 and len(sb) <= 2 and sa and sb:
        shape = _matmul_shape(sa, sb)
    elif not sa or not sb:
        shape = sa or sb
    else:
        shape = (*sa[:-1], *sb[:-2], sb[-1])
    return AbstractArray(shape, np.result_type(_probe(a), _probe(b)))


def _einsum(subscripts: str, *operands: Any, **kwargs: Any) -> AbstractArray:
    shape = _einsum_shape(subscripts, [_shape_of(o) for o in operands])
    return AbstractArray(shape, np.result_type(*(_probe(o) for o in operands)))


def _copyto(dst: Any, src: Any, **_: Any) -> None:
    if not isinstance(dst, AbstractArray):
        raise needs_value(src, "a copy into a concrete array (SMEM?)")


def _reshape(a: Any, *args: Any, **kwargs: Any) -> AbstractArray:
    newshape = args[0] if args else kwargs.get("shape", kwargs.get("newshape"))
    return AbstractArray(_reshaped(math.prod(_shape_of(a)), newshape), a.dtype)


def _transpose(a: Any, axes: Any = None) -> AbstractArray:
    return a.transpose(axes) if axes is not None else a.T


def _broadcast_to(a: Any, shape: Any, **_: Any) -> AbstractArray:
    shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(shape)
    np.broadcast_shapes(_shape_of(a), shape)
    return AbstractArray(shape, a.dtype)


def _concatenate(arrays: Any, axis: int = 0, **kwargs: Any) -> AbstractArray:
    shapes = [_shape_of(x) for x in arrays]
    ax = axis % len(shapes[0])
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    return AbstractArray(tuple(out), np.result_type(*(_probe(x) for x in arrays)))


def _identity(a: Any, *args: Any, **kwargs: Any) -> Any:
    return a


_FUNCTIONS: dict[str, Any] = {
    "copyto": _copyto, "where": _where, "dot": _dot, "einsum": _einsum,
    "reshape": _reshape, "transpose": _transpose, "broadcast_to": _broadcast_to,
    "concatenate": _concatenate, "ascontiguousarray": _identity, "copy": _identity,
    "asarray": _identity, "shape": lambda a: _shape_of(a), "ndim": lambda a: len(_shape_of(a)),
    "size": lambda a, axis=None: (math.prod(_shape_of(a)) if axis is None
                                  else _shape_of(a)[axis]),
    "matmul": lambda a, b, **k: AbstractArray(_matmul_shape(_shape_of(a), _shape_of(b)),
                                              np.result_type(_probe(a), _probe(b))),
}


def from_struct(x: Any) -> Any:
    """``x`` as an abstract run takes it: a ``jax.ShapeDtypeStruct`` (pallas_sim's or
    JAX's, anything with ``shape`` and ``dtype`` that is not an array) becomes an
    :class:`AbstractArray`; arrays and everything else stay."""
    if isinstance(x, np.ndarray | AbstractArray | np.generic):
        return x
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is not None and dtype is not None and not hasattr(x, "__array__"):
        return AbstractArray(tuple(shape), dtype)
    if shape is not None and dtype is not None and type(x).__name__ == "ShapeDtypeStruct":
        return AbstractArray(tuple(shape), dtype)
    return x
