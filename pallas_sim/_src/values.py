"""Kernel values: what a JAX tracer would hold inside a kernel or an index map.

Inside a Pallas kernel, ``x_ref[...]``, ``pl.program_id(0)`` and every
``jnp`` result computed from them are *traced*: JAX knows their shape and
dtype while it builds the kernel, not their values, so Python cannot branch
on them (``if pl.program_id(0) == 0:`` raises ``TracerBoolConversionError``)
and a kernel must use ``pl.when``, ``jnp.where``, ``lax.cond`` or
``lax.fori_loop`` instead. pallas_sim computes with real NumPy arrays, so
without help such code would simply run here and fail on JAX.
:class:`KernelValue` closes that gap: it wraps the NumPy array of a real run,
refuses ``bool()``, ``int()``, ``float()``, ``operator.index()`` and
``np.asarray()`` with a :class:`~pallas_sim.TracerConversionError`
that points to the right construct, and supports everything JAX allows on a
traced array: arithmetic and comparisons (also with NumPy arrays and scalars on
the left, which defer to it as they defer to a JAX tracer), ``jnp`` functions,
indexing, the array methods, ``x.at[...]``, and use as an index of a ref or in
``pl.ds``. NumPy functions (``np.exp(x)``, ``np.where``) refuse it, as they
refuse a tracer: they need the values.

Values also follow JAX's default dtype rules (64-bit types off): a result
that NumPy would make float64/int64/uint64/complex128 is computed in its
32-bit counterpart, as JAX canonicalizes it, and an explicit request for a
64-bit dtype (``astype``, ``dtype=``) warns as JAX does.

Trusted code (pallas_sim itself, the grader's harnesses and reference) reads
the concrete array with :func:`concrete`; a submission cannot import this
module.

Source: JAX's tracers (``jax.core.Tracer``, ``jax.errors.TracerBoolConversionError``,
``ConcretizationTypeError``, ``TracerArrayConversionError``,
``TracerIntegerConversionError``) and ``jax.dtypes.canonicalize_dtype`` with
``jax_enable_x64`` off (JAX 0.10.x).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import op_accounting
from .abstract import AbstractArray
from .dtypes import REFUSED, convert, refuse
from .errors import CapturedConstantError, TracerConversionError
from .slices import plain_index

_CANONICAL = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}
_REFUSED_MARK = np.dtype([("refused", np.int8)])  # a dtype no array of the run has
#: What :func:`_wrap` does with a result's dtype: the 32-bit dtype to compute in, or
#: ``_REFUSED_MARK`` for a dtype pallas_sim refuses by name (``dtypes.REFUSED``).
_WRAPPED = {**_CANONICAL, **dict.fromkeys(REFUSED, _REFUSED_MARK)}
_X64_WARNING = ("Explicitly requested dtype {} requested in {} is not available, and will be "
                "truncated to dtype {}. pallas_sim follows JAX's default (jax_enable_x64 "
                "off); TPUs have no 64-bit floats.")

_HINTS = {
    "bool": ("Python control flow (if, while, and, or, not) on a value computed in the kernel; "
             "use pl.when(cond) for a block of code, jnp.where(cond, a, b) to choose values, "
             "or jax.lax.cond"),
    "int": ("int() of a value computed in the kernel; keep it a value (ref indexing and "
            "pl.ds accept it), or use jax.lax.fori_loop for a loop whose bound it is"),
    "float": "float() of a value computed in the kernel; keep it a value and use jnp functions",
    "index": ("a value computed in the kernel used where Python needs an int (range, a NumPy "
              "index, a slice of a Python list); index refs with it, use pl.ds(start, size) "
              "or jax.lax.fori_loop"),
    "array": ("a NumPy function (np.exp, np.where, np.asarray, ...) on a value computed in "
              "the kernel; use the jnp function of the same name (jnp.exp, jnp.where, ...), "
              "which accepts it"),
}


#: The contexts of the kernels running now (pallas_sim.context pushes and pops them): a
#: NumPy array met while one runs is a constant JAX would capture.
KERNELS: list[Any] = []

_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int16": "i16",
          "int8": "i8", "uint32": "u32", "uint16": "u16", "uint8": "u8", "bool": "bool",
          "complex64": "c64"}


def captured(a: np.ndarray) -> CapturedConstantError:
    """The error for a non-scalar NumPy array ``a`` used inside a running kernel, in JAX's
    words ("captures constants [f32[8,1]]") with what to do instead."""
    dt = canonical_dtype(a.dtype)
    aval = f"{_SHORT.get(dt.name, dt.name)}[{','.join(map(str, a.shape))}]"
    mesh = bool(KERNELS) and getattr(KERNELS[-1], "kind", "") == "mpmd_map"
    head = (f"The kernel function in the mpmd_map captures non-Ref constants [{aval}]. You "
            "should pass them as inputs." if mesh else
            f"The kernel function in the pallas_call captures constants [{aval}]. You should "
            "pass them as inputs.")
    return CapturedConstantError(
        f"{head} (A NumPy array used inside a kernel - np.arange, np.zeros, np.ones, "
        "np.array, or an array from outside the kernel - is a constant JAX cannot capture: "
        "build it with jnp inside the kernel (jnp.arange, jnp.zeros, ...) or pass it to "
        "pallas_call as an input. Scalars such as np.float32(2) or -np.inf are fine.)")


def traced(a: np.ndarray) -> KernelValue:
    """``a`` as a kernel value, for trusted code (the reference's exact float64 kernels)
    that stores NumPy results into refs."""
    return KernelValue(np.asarray(a))


def canonical_dtype(dtype: object) -> np.dtype:
    """The dtype JAX computes in for ``dtype`` with 64-bit types off (float64 → float32,
    int64 → int32, uint64 → uint32; others unchanged).

    Raises:
      UnsupportedJaxAPIError: a dtype pallas_sim refuses by name (fp8, complex, ...:
        ``dtypes.REFUSED``), whatever its spelling.
    """
    dt = np.dtype(dtype)
    if dt in REFUSED:
        refuse(dt)
    return _CANONICAL.get(dt, dt)


#: Dtype requests already resolved to a dtype kept as it is (no 64-bit truncation, so no
#: warning to repeat): the spelling asked for -> its dtype.
_KEPT_REQUESTS: dict[object, np.dtype] = {}


def requested_dtype(dtype: object, where: str) -> np.dtype:
    """``canonical_dtype`` of an explicitly requested dtype, warning as JAX does when a
    64-bit one is truncated (``where``: the function that asked, e.g. "astype").

    Warns:
      UserWarning: a 64-bit dtype was requested.
    """
    try:
        return _KEPT_REQUESTS[dtype]
    except (KeyError, TypeError):  # not asked before, or not hashable
        pass
    from .dtypes import as_dtype

    dt = as_dtype(dtype)
    canonical = _CANONICAL.get(dt)
    if canonical is None:
        try:
            _KEPT_REQUESTS[dtype] = dt
        except TypeError:
            pass
        return dt
    warnings.warn(_X64_WARNING.format(dt.name, where, canonical.name), UserWarning,
                  stacklevel=3)
    return canonical


def _refuse(kind: str, value: KernelValue) -> TracerConversionError:
    a = value._a
    return TracerConversionError(
        f"{_HINTS[kind]} (the value is {a.dtype.name}{list(a.shape)}, traced inside a kernel; "
        "JAX raises here too)")


def _wrap(a: Any) -> Any:
    """A NumPy result as a kernel value (32-bit dtypes); other results unchanged."""
    if isinstance(a, np.ndarray):
        dt = _WRAPPED.get(a.dtype)  # one lookup: kept, 64-bit (to 32) or refused
        if dt is None:
            return KernelValue(a)
        if dt is _REFUSED_MARK:  # jnp.zeros(shape, "float8_e4m3fn"), x.view(...)
            refuse(a.dtype)
        return KernelValue(a.astype(dt))
    if isinstance(a, np.generic):
        dt = _CANONICAL.get(a.dtype)
        return KernelValue(np.asarray(a if dt is None else a.astype(dt)))
    if type(a) is AbstractArray:  # an abstract run's shape-only value
        dt = _WRAPPED.get(a.dtype)  # one lookup: kept, 64-bit (to 32) or refused
        if dt is None:
            return KernelValue(a)
        if dt is _REFUSED_MARK:  # jnp.zeros(shape, "float8_e4m3fn"), x.view(...)
            refuse(a.dtype)
        return KernelValue(a.astype(dt))
    if isinstance(a, tuple):
        return tuple(_wrap(x) for x in a)
    if isinstance(a, list):
        return [_wrap(x) for x in a]
    return a


def _unwrap(x: Any) -> Any:
    if type(x) is KernelValue:
        return x._a
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    return x


def _has_traced(xs: Any, in_kernel: bool) -> bool:
    """Whether ``xs`` (a tuple/list, nested) holds a kernel value; inside a kernel a
    non-scalar NumPy array among them is a captured constant.

    Raises:
      CapturedConstantError: as JAX's pallas_call does for such an array.
    """
    found = False
    for x in xs:
        t = type(x)
        if t is KernelValue:
            found = True
        elif t is list or t is tuple:
            found = _has_traced(x, in_kernel) or found
        elif t is dict:
            found = _has_traced(tuple(x.values()), in_kernel) or found
        elif in_kernel and isinstance(x, np.ndarray) and x.ndim:
            raise captured(x)
    return found


def _unwrap_deep(x: Any) -> Any:
    t = type(x)
    if t is KernelValue:
        return x._a
    if t is tuple or t is list:
        return t(_unwrap_deep(v) for v in x)
    if t is dict:
        return {k: _unwrap_deep(v) for k, v in x.items()}
    return x


_LIFTED = [0]  # how deep the running lifted calls are (inner ones see plain arrays)


def lift(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, an array function written for NumPy arrays (``jax.lax``'s and
    ``jax.nn``'s), made to take kernel values as JAX's take tracers: their arrays go in,
    and the result comes back as kernel values when an argument was one or a kernel is
    running (a non-scalar NumPy array argument inside a kernel is a captured constant).

    Raises:
      CapturedConstantError: a non-scalar NumPy array argument inside a running kernel.
    """
    kind = op_accounting.category(getattr(fn, "__name__", ""))

    def lifted(*args: Any, **kwargs: Any) -> Any:
        in_kernel = bool(KERNELS)
        if _LIFTED[0] or not in_kernel and not _has_traced(args, False) and not (
                kwargs and _has_traced(tuple(kwargs.values()), False)):
            return fn(*args, **kwargs)  # a host call, or one lifted function calling another
        _has_traced(args, in_kernel)
        if kwargs:
            _has_traced(tuple(kwargs.values()), in_kernel)
        args = _unwrap_deep(args)
        kwargs = {k: _unwrap_deep(v) for k, v in kwargs.items()}
        _LIFTED[0] += 1
        try:
            result = _wrap(fn(*args, **kwargs))
        finally:
            _LIFTED[0] -= 1
        if op_accounting._STACK:
            op_accounting.count(kind, args, kwargs, result)
        return result

    lifted.__name__ = lifted.__qualname__ = getattr(fn, "__name__", "lifted")
    lifted.__module__ = getattr(fn, "__module__", __name__)
    lifted.__doc__ = fn.__doc__
    lifted.__wrapped__ = fn  # type: ignore[attr-defined]
    return lifted


def concrete(x: Any) -> Any:
    """The NumPy array behind a kernel value (anything else unchanged, tuples and lists
    element-wise). For trusted code only: the simulator, the grader's harnesses and
    reference."""
    return _unwrap(x)


def is_traced(x: object) -> bool:
    """True for a kernel value."""
    return type(x) is KernelValue


class KernelValue:
    """A value a JAX tracer would hold inside a kernel: a NumPy array that refuses to
    become a Python bool, int or float (see the module docstring).

    Attributes: ``shape``, ``dtype``, ``ndim``, ``size``, ``T``, ``mT``, ``at`` and the
    usual array methods, all returning kernel values.

    Raises:
      TracerConversionError: ``bool()``/``int()``/``float()``/``operator.index()``/
        ``np.asarray()`` of the value, or an item assignment (JAX arrays are immutable).
    """

    __slots__ = ("_a",)
    __array_priority__ = 1000

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    # -- what a tracer refuses -------------------------------------------------------------

    def __bool__(self) -> bool:
        raise _refuse("bool", self)

    def __int__(self) -> int:
        raise _refuse("int", self)

    def __float__(self) -> float:
        raise _refuse("float", self)

    def __complex__(self) -> complex:
        raise _refuse("float", self)

    def __index__(self) -> int:
        raise _refuse("index", self)

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise _refuse("array", self)

    def item(self, *args: object) -> Any:
        """Refused, as ``.item()`` of a tracer is (it would need the value)."""
        raise _refuse("float", self)

    def tolist(self) -> Any:
        """Refused, as ``.tolist()`` of a tracer is (it would need the values)."""
        raise _refuse("array", self)

    def __setitem__(self, idx: object, value: object) -> None:
        raise TracerConversionError(
            "JAX arrays are immutable: a value computed in a kernel cannot be changed in "
            "place; use x.at[idx].set(v) for a new value, or store into a ref (ref[idx] = v)")

    # -- operators ----------------------------------------------------------------------
    # A tracer has no ``__array_ufunc__``/``__array_function__``: NumPy functions convert
    # it with ``__array__`` and fail, and NumPy arrays and scalars defer their operators to
    # it (``__array_priority__``). The operators and methods below are what JAX offers.

    # -- the array API ---------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def T(self) -> KernelValue:  # noqa: N802 - NumPy's name
        return KernelValue(self._a.T)

    @property
    def mT(self) -> KernelValue:  # noqa: N802 - NumPy's name
        return KernelValue(np.swapaxes(self._a, -1, -2))

    @property
    def at(self) -> _IndexUpdates:
        """``x.at[idx].set(v)`` (and ``add``, ``multiply``, ``min``, ``max``, ``get``): a
        new value with ``idx`` updated, as on a JAX array."""
        return _IndexUpdates(self)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator[KernelValue]:
        for row in self._a:
            yield _wrap(row)

    def __getitem__(self, idx: object) -> Any:
        try:
            return _wrap(self._a[_unwrap(idx)])
        except (IndexError, TypeError):  # a pl.ds (pl.Slice) entry: NumPy takes its slice
            plain = plain_index(idx)
            if plain is idx or not any(type(e) is not type(p) for e, p in zip(
                    idx if type(idx) is tuple else (idx,),  # type: ignore[arg-type]
                    plain if type(plain) is tuple else (plain,), strict=True)):
                raise
            return _wrap(self._a[_unwrap(plain)])

    def astype(self, dtype: object, copy: bool = True) -> KernelValue:
        """The value in another dtype (a 64-bit request is truncated, with JAX's warning)."""
        out = KernelValue(convert(self._a, requested_dtype(dtype, "astype")))
        if op_accounting._STACK:
            op_accounting.cast(self._a, out)
        return out

    def __repr__(self) -> str:
        """Shape and dtype only, as a JAX tracer shows (``Traced<ShapedArray(float32[8,128])>``):
        a kernel's Python code cannot see its data (nor tell a shapes-only run from a real
        one) by printing it; ``jax.debug.print`` shows values."""
        dims = ",".join(str(int(d)) for d in self._a.shape)
        return f"Traced<ShapedArray({self._a.dtype.name}[{dims}])>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if spec:
            raise _refuse("float", self)
        return repr(self)

    def __hash__(self) -> int:
        raise TypeError("unhashable type: a traced kernel value")


#: Argument types that may hold kernel values to unwrap before NumPy sees them.
_CONTAINERS = (KernelValue, tuple, list)


def _plain(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` as NumPy takes them: unchanged (the common case: ints, axes, flags) unless
    one holds a kernel value."""
    for x in args:
        if type(x) in _CONTAINERS:
            return _unwrap(args)
    return args


def _method(name: str) -> Callable[..., Any]:
    kind = op_accounting.category(name)
    counters = op_accounting._STACK
    reduce = kind == "reduce"

    def method(self: KernelValue, *args: Any, **kwargs: Any) -> Any:
        a = self._a
        plain_kwargs = kwargs
        for v in kwargs.values():
            if type(v) in _CONTAINERS:
                plain_kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
                break
        out = _wrap(getattr(a, name)(*_plain(args), **plain_kwargs))
        if counters and kind != "free":
            if reduce:  # ``x.max(axis=1)``, ``x.sum(-1)``: the operand's axis
                axis = kwargs.get("axis")
                if axis is None and args and type(args[0]) in (int, tuple, list):
                    axis = args[0]
                op_accounting.reduction(a, axis)
            else:
                op_accounting.count(kind, (a, *args), kwargs, out)
        return out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``ndarray.{name}`` on the traced value (a kernel value back)."
    return method


#: Ops with a Python constant that the compiler folds away (MLIR ``arith``'s folders, as
#: Mosaic lowers a kernel: ``mulf(x, 1) -> x``, ``divf(x, 1) -> x``; XLA's algebraic
#: simplifier does the same), by ufunc name: (the constant, whether it may stand first).
_FOLDED_IDENTITIES = {"multiply": (1, True), "divide": (1, False), "true_divide": (1, False)}


def _identity_of(ufunc: np.ufunc, reflected: bool) -> int | None:
    """The constant ``c`` for which ``x <op> c`` (``c <op> x`` when ``reflected``) is an
    identity the compiler removes (``x * 1``, ``1 * x``, ``x / 1``; not ``1 / x``), or None
    for an op that has none on that side. Resolved once per op method, not per call."""
    rule = _FOLDED_IDENTITIES.get(ufunc.__name__)
    if rule is None or (reflected and not rule[1]):
        return None
    return rule[0]


def _is_identity_literal(other: Any, identity: int) -> bool:
    """``other`` is a Python or NumPy scalar (a literal in the traced program) equal to
    ``identity``: the op is folded, so no unit does any work."""
    constant = type(other) in (int, float) or (
        isinstance(other, np.number) and not isinstance(other, np.bool_))
    return constant and bool(other == identity)


def _binary(ufunc: np.ufunc, reflected: bool = False) -> Callable[..., Any]:
    key = "eup_ops" if ufunc.__name__ in op_accounting.EUP else "vpu_ops"
    counters = op_accounting._STACK
    identity = _identity_of(ufunc, reflected)

    def count(out: Any, other: Any) -> None:
        if type(out) is KernelValue and (identity is None
                                         or not _is_identity_literal(other, identity)):
            a = out._a
            if a.ndim:
                counters[-1].produced(key, a.size)
            else:
                counters[-1].add("scalar_ops", 1)

    # The fast path (two kernel values, or a kernel value and a Python number, giving an
    # array of a dtype kept as it is) does what ``_operand``, ``_wrap`` and ``count`` do,
    # without their calls: these operators are most of a kernel body's ops.
    if reflected:
        def method(self: KernelValue, other: Any) -> Any:
            t = type(other)
            if t is KernelValue:
                r = ufunc(other._a, self._a)
            elif t is float or t is int:
                r = ufunc(other, self._a)
            else:
                r = ufunc(_operand(other), self._a)
            if type(r) is np.ndarray and r.dtype not in _WRAPPED:
                out = KernelValue(r)
                if counters and r.ndim and (identity is None or t is KernelValue
                                            or not _is_identity_literal(other, identity)):
                    counters[-1].produced(key, r.size)
                    return out
            elif r.__class__ in _KEPT_SCALARS:  # grid-index arithmetic: ``kj * block_kv``
                out = KernelValue(np.asarray(r))
                if counters and (identity is None or t is KernelValue
                                 or not _is_identity_literal(other, identity)):
                    counters[-1].add("scalar_ops", 1)
                return out
            else:
                out = _wrap(r)
            if counters:
                count(out, other)
            return out
    else:
        def method(self: KernelValue, other: Any) -> Any:
            t = type(other)
            if t is KernelValue:
                r = ufunc(self._a, other._a)
            elif t is float or t is int:
                r = ufunc(self._a, other)
            else:
                r = ufunc(self._a, _operand(other))
            if type(r) is np.ndarray and r.dtype not in _WRAPPED:
                out = KernelValue(r)
                if counters and r.ndim and (identity is None or t is KernelValue
                                            or not _is_identity_literal(other, identity)):
                    counters[-1].produced(key, r.size)
                    return out
            elif r.__class__ in _KEPT_SCALARS:  # grid-index arithmetic: ``kj * block_kv``
                out = KernelValue(np.asarray(r))
                if counters and (identity is None or t is KernelValue
                                 or not _is_identity_literal(other, identity)):
                    counters[-1].add("scalar_ops", 1)
                return out
            else:
                out = _wrap(r)
            if counters:
                count(out, other)
            return out
    return method


def _unary(ufunc: np.ufunc) -> Callable[..., Any]:
    counters = op_accounting._STACK

    def method(self: KernelValue) -> Any:
        out = _wrap(ufunc(self._a))
        if counters and type(out) is KernelValue:
            a = out._a
            if a.ndim:
                counters[-1].produced("vpu_ops", a.size)
            else:
                counters[-1].add("scalar_ops", 1)
        return out
    return method


#: NumPy scalar types that a 0-d result keeps as they are (32-bit and narrower): an
#: operator giving one is a scalar op on the kernel's scalar unit.
_KEPT_SCALARS = frozenset({np.int32, np.int16, np.int8, np.uint32, np.uint16, np.uint8,
                           np.float32, np.float16, np.bool_})

#: Types an operator of a kernel value refuses as its other operand, each with the
#: TypeError's message. Refs register themselves here (pallas_sim._src.refs), so this
#: module never imports the module of refs, which imports it.
NOT_OPERANDS: dict[type, str] = {}


def _operand(x: Any) -> Any:
    if type(x) is KernelValue:
        return x._a
    if isinstance(x, np.ndarray):
        if x.ndim and KERNELS:
            raise captured(x)
        return x
    if isinstance(x, np.generic | bool | int | float | complex):
        return x
    for kind, why in NOT_OPERANDS.items():
        if isinstance(x, kind):
            raise TypeError(why)
    return np.asarray(x)


# ``x += y`` on a traced value rebinds x to a new value, as on a JAX array.
for _op, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                    ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                    ("mod", np.remainder), ("pow", np.power), ("and", np.bitwise_and),
                    ("or", np.bitwise_or), ("xor", np.bitwise_xor), ("lshift", np.left_shift),
                    ("rshift", np.right_shift)):
    setattr(KernelValue, f"__{_op}__", _binary(_ufunc))
    setattr(KernelValue, f"__i{_op}__", _binary(_ufunc))
    setattr(KernelValue, f"__r{_op}__", _binary(_ufunc, reflected=True))
for _op, _ufunc in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                    ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    setattr(KernelValue, f"__{_op}__", _binary(_ufunc))
for _op, _ufunc in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                    ("invert", np.invert)):
    setattr(KernelValue, f"__{_op}__", _unary(_ufunc))
# ``@`` and ``dot`` are jnp's products, installed by pallas_sim._src.products.
KernelValue.__round__ = lambda self, ndigits=None: _wrap(np.round(self._a, ndigits or 0))

for _name in ("reshape", "transpose", "swapaxes", "squeeze", "ravel", "flatten", "sum", "prod",
              "max", "min", "mean", "std", "var", "any", "all", "argmax", "argmin", "cumsum",
              "cumprod", "clip", "round", "conj", "repeat", "take", "sort", "argsort",
              "nonzero", "copy", "view"):
    setattr(KernelValue, _name, _method(_name))


class _IndexUpdates:
    """``value.at``: JAX's functional indexed updates (:mod:`pallas_sim._src.indexing`) on the
    array behind a kernel value, with kernel values back."""

    __slots__ = ("_value",)

    def __init__(self, value: KernelValue) -> None:
        self._value = value

    def __getitem__(self, idx: object) -> _IndexUpdate:
        from .indexing import IndexUpdateHelper

        return _IndexUpdate(IndexUpdateHelper(self._value._a)[_unwrap_deep(idx)])


class _IndexUpdate:
    """``value.at[idx]``: ``get``, ``set``, ``add``, ... as JAX's ``_IndexUpdateRef``."""

    __slots__ = ("_ref",)

    def __init__(self, ref: Any) -> None:
        self._ref = ref


def _update_method(name: str) -> Callable[..., Any]:
    def method(self: _IndexUpdate, *args: Any, **kwargs: Any) -> Any:
        return _wrap(getattr(self._ref, name)(*_unwrap_deep(args),
                                              **{k: _unwrap_deep(v) for k, v in kwargs.items()}))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"JAX's ``x.at[idx].{name}(...)``: a new kernel value."
    return method


for _name in ("get", "set", "add", "subtract", "multiply", "divide", "power", "min", "max",
              "apply"):
    setattr(_IndexUpdate, _name, _update_method(_name))
del _name
