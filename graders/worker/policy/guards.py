"""The run-time half of the submission policy: the guards the compiled submission calls.

:func:`load_submission` runs a compiled submission in globals a submission module runs in:
builtins restricted to :data:`rules.BUILTIN_NAMES` plus guarded ``getattr``,
``setattr``, ``delattr``, ``hasattr``, ``type`` and ``__import__``, and the
guards RestrictedPython's rewritten code calls:

* ``_getattr_(obj, name)`` — every attribute read. Allowed: the names an
  allowed module offers (:func:`.transform.allowed_names`); the attributes
  of the submission's own objects (its classes, their instances, its
  functions), private ones included; the listed attributes of numpy arrays,
  scalars, dtypes, ``finfo``, ufuncs and random generators, of Python's
  data types and exceptions, and the public API of pallas_sim's objects;
  ``__name__``/``__qualname__``/``__doc__``/``__module__``/``__class__`` of
  anything. Everything else — frames, code, generators' internals, another
  module's private state, a function's globals, a class's subclasses — is
  refused with :class:`PolicyAttributeError`, however the name was spelled
  or computed.
* ``_write_(obj)`` — every attribute store or delete: only the submission's
  own objects. ``_write_item_(obj)`` — every item store or delete: lists,
  dicts, bytearrays, numpy arrays, pallas_sim refs and the submission's own
  objects. Anything else raises :class:`PolicyError`.
* ``__import__`` — only the allowed modules and names (as the compile-time
  check), so a module name built at run time meets the same rule.

A refusal fails only the call that made it (the feedback shows the
student's line); the compile-time check (:mod:`.transform`) catches the
spelled-out cases before anything runs.
"""

from __future__ import annotations

import _string
import builtins
import dataclasses
import functools
import importlib
import operator
import string
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

from . import rules
from .transform import allowed_names, is_allowed_module


class PolicyAttributeError(AttributeError):
    """An attribute read the submission policy does not allow (docs/security.md)."""


class PolicyImportError(ImportError):
    """An import the submission policy does not allow."""


class PolicyError(PermissionError):
    """A write, builtin or event the submission policy does not allow."""


_PUBLIC = object()  # rule: every attribute whose name does not start with "_"
_GUARD_FILE = __file__


def _public_names(tp: type, refused: frozenset[str] = frozenset()) -> frozenset[str]:
    return frozenset(n for n in dir(tp) if not n.startswith("_") and n not in refused)


def _instance_rules() -> dict[type, frozenset[str] | object]:
    """Attribute rules by type (looked up along the MRO): a frozenset or ``_PUBLIC``."""
    table: dict[type, frozenset[str] | object] = {
        bool: rules.INT_ATTRIBUTES, int: rules.INT_ATTRIBUTES,
        float: rules.FLOAT_ATTRIBUTES, complex: rules.COMPLEX_ATTRIBUTES,
        str: _public_names(str, rules.STR_REFUSED),
        bytes: _public_names(bytes, rules.STR_REFUSED), bytearray: _public_names(bytearray),
        list: _public_names(list), tuple: _public_names(tuple), dict: _public_names(dict),
        set: _public_names(set), frozenset: _public_names(frozenset),
        range: rules.RANGE_ATTRIBUTES, slice: rules.SLICE_ATTRIBUTES,
        BaseException: rules.EXCEPTION_ATTRIBUTES,
        types.GeneratorType: rules.GENERATOR_ATTRIBUTES,
        types.SimpleNamespace: _PUBLIC,  # a namespace object; a submission cannot make one
        np.ndarray: rules.NDARRAY_ATTRIBUTES, np.generic: rules.NDARRAY_ATTRIBUTES,
        np.dtype: rules.DTYPE_ATTRIBUTES, np.finfo: rules.FINFO_ATTRIBUTES,
        np.iinfo: rules.FINFO_ATTRIBUTES, np.ufunc: rules.UFUNC_ATTRIBUTES,
        np.flatiter: rules.FLATITER_ATTRIBUTES, np.broadcast: rules.BROADCAST_ATTRIBUTES,
        np.poly1d: rules.POLY1D_ATTRIBUTES,
        np.random.Generator: rules.GENERATOR_RNG_ATTRIBUTES,
        np.random.RandomState: rules.RANDOM_STATE_ATTRIBUTES,
        functools.partial: rules.PARTIAL_ATTRIBUTES,
        dataclasses.Field: rules.FIELD_ATTRIBUTES,
        property: rules.PROPERTY_ATTRIBUTES,
    }
    lru = type(functools.lru_cache(maxsize=None)(lambda: None))
    table[lru] = rules.LRU_WRAPPER_ATTRIBUTES
    return table


#: Types whose items a submission may store into (besides its own objects).
_ITEM_WRITABLE = (list, dict, bytearray, np.ndarray, np.flatiter)


class Guards:
    """The guards of one submission module (``module_name``, compiled from ``filename``).

    ``namespace()`` returns the module's globals. ``owns(obj)`` says whether
    an object is the submission's own (a class it defined, an instance of
    one, a function it defined).
    """

    def __init__(self, module_name: str, filename: str) -> None:
        self.module_name = module_name
        self.filename = filename
        self.globals: dict[str, Any] = {}
        self._instance_rules = _instance_rules()
        self._modules: dict[types.ModuleType, frozenset[str]] = {}
        self._decisions: dict[tuple[type, str], bool] = {}
        self._class_decisions: dict[tuple[type, str], bool] = {}
        self._owned_types: dict[type, bool] = {}
        self._pallas_sim_types: dict[type, bool] = {}
        #: What ``import X`` gives a submission: numpy's and pallas_sim's own modules, and for
        #: the standard library a *facade*, a module holding only the allowed names, with
        #: guarded versions of the few that read or write attributes by name.
        self.importable: dict[str, types.ModuleType] = {}
        self._real: dict[types.ModuleType, types.ModuleType] = {}  # facade -> the real module
        substitutes = self._substitutes()
        for name in _allowed_module_names():
            module = importlib.import_module(name)
            names = allowed_names(name) or frozenset()
            if name in rules.FACADE_MODULES:
                facade = types.ModuleType(name, getattr(module, "__doc__", None))
                for item in names:
                    facade.__dict__[item] = substitutes.get(f"{name}.{item}",
                                                            getattr(module, item, None))
                self._real[facade] = module
                module = facade
            self.importable[name] = module
            self._modules[module] = names | rules.HARMLESS_DUNDER_ATTRIBUTES

    def _substitutes(self) -> dict[str, Any]:
        """Guarded versions of the standard library's functions that read or write the
        attributes a caller names (``functools.update_wrapper``) or change the class they
        are given (``dataclasses.dataclass``): they act only on the submission's own."""
        owns = self.owns

        def own_class(cls: object, what: str) -> type:
            if not isinstance(cls, type) or not self.owns_type(cls):
                raise PolicyError(f"{what} may decorate only a class of the submission's own, "
                                  f"not {_describe(cls)}")
            return cls

        def dataclass(cls: Any = None, /, **options: Any) -> Any:
            """``dataclasses.dataclass``, for the submission's own classes."""
            if cls is None:
                return lambda c: dataclasses.dataclass(own_class(c, "@dataclass"), **options)
            return dataclasses.dataclass(own_class(cls, "@dataclass"), **options)

        def total_ordering(cls: Any) -> Any:
            """``functools.total_ordering``, for the submission's own classes."""
            return functools.total_ordering(own_class(cls, "@total_ordering"))

        def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = None,
                           updated: Any = None) -> Any:
            """``functools.update_wrapper`` with its default names only, into the submission's
            own wrapper; from an object that is not its own only the plain names
            (``__module__``, ``__name__``, ``__qualname__``, ``__doc__``) are copied."""
            if assigned is not None or updated is not None:
                raise PolicyError("update_wrapper/wraps with assigned= or updated= is not "
                                  "allowed while grading (they read and write attributes by "
                                  "name)")
            if not owns(wrapper):
                raise PolicyError(f"update_wrapper may change only the submission's own "
                                  f"objects, not {_describe(wrapper)}")
            if owns(wrapped):
                return functools.update_wrapper(wrapper, wrapped)
            return functools.update_wrapper(
                wrapper, wrapped, assigned=("__module__", "__name__", "__qualname__",
                                            "__doc__"), updated=())

        def wraps(wrapped: Any, assigned: Any = None, updated: Any = None) -> Any:
            """``functools.wraps``, through the guarded ``update_wrapper``."""
            return functools.partial(update_wrapper, wrapped=wrapped, assigned=assigned,
                                     updated=updated)

        return {"dataclasses.dataclass": dataclass, "functools.total_ordering": total_ordering,
                "functools.update_wrapper": update_wrapper, "functools.wraps": wraps}

    # -- ownership -------------------------------------------------------------------------

    def owns_type(self, cls: type) -> bool:
        """True for a class defined by the submission whose bases are its own classes or
        Python's plain bases (object, tuple, Exception, ..., typing's NamedTuple/Generic).

        Cached per class: call it once the class exists (the audit hook, which sees
        classes while they are being made, uses :meth:`owns_type_now`)."""
        known = self._owned_types.get(cls)
        if known is None:
            known = self._owned_types[cls] = self.owns_type_now(cls)
        return known

    def owns_type_now(self, cls: type) -> bool:
        """:meth:`owns_type` without the cache."""
        mine = self.module_name
        return type.__getattribute__(cls, "__module__") == mine and all(
            base is cls or type.__getattribute__(base, "__module__") in ("builtins", "typing")
            or (type.__getattribute__(base, "__module__") == mine and self.owns_type_now(base))
            for base in type.__getattribute__(cls, "__mro__"))

    def owns(self, obj: object) -> bool:
        """True for the submission's own classes, their instances and its functions."""
        if isinstance(obj, type):
            return self.owns_type(obj)
        if type(obj) is types.FunctionType:
            return obj.__globals__ is self.globals  # type: ignore[attr-defined]
        return self.owns_type(type(obj))

    def _is_pallas_sim_type(self, tp: type) -> bool:
        known = self._pallas_sim_types.get(tp)
        if known is None:
            module = type.__getattribute__(tp, "__module__") or ""
            known = self._pallas_sim_types[tp] = (module == "pallas_sim"
                                                  or module.startswith("pallas_sim."))
        return known

    # -- reads -----------------------------------------------------------------------------

    def _instance_rule(self, tp: type) -> frozenset[str] | object | None:
        for base in type.__getattribute__(tp, "__mro__"):
            rule = self._instance_rules.get(base)
            if rule is not None:
                return rule
            if self._is_pallas_sim_type(base):
                return _PUBLIC
        return None

    def _decide_instance(self, tp: type, name: str) -> bool:
        if name in rules.HARMLESS_DUNDER_ATTRIBUTES:
            return True
        if self.owns_type(tp):
            if name.startswith("__"):
                return name in rules.OWN_DUNDER_METHODS
            return True
        fields = _namedtuple_fields(tp)
        if fields is not None and (name in fields or name in rules.NAMEDTUPLE_PRIVATE):
            return True  # a NamedTuple's fields are its items, by name
        if name.startswith("_"):
            return False
        rule = self._instance_rule(tp)
        if rule is _PUBLIC:
            return True
        return rule is not None and name in rule  # type: ignore[operator]

    def _decide_class(self, cls: type, name: str) -> bool:
        if name in rules.HARMLESS_DUNDER_ATTRIBUTES:
            return True
        if self.owns_type(cls):
            if name.startswith("__"):
                return name in rules.OWN_DUNDER_METHODS
            return True
        fields = _namedtuple_fields(cls)
        if fields is not None and (name in fields or name in rules.NAMEDTUPLE_PRIVATE):
            return True
        if name.startswith("_"):
            return False
        rule = self._instance_rule(cls)
        if rule is _PUBLIC:
            return True
        return rule is not None and name in rule  # type: ignore[operator]

    def _allowed(self, obj: object, name: str) -> bool:
        tp = type(obj)
        if tp is types.ModuleType:
            names = self._modules.get(obj)  # type: ignore[arg-type]
            return names is not None and name in names
        if isinstance(obj, type):
            key = (obj, name)
            decided = self._class_decisions.get(key)
            if decided is None:
                decided = self._class_decisions[key] = self._decide_class(obj, name)
            return decided
        if tp is types.FunctionType:
            if name in rules.HARMLESS_DUNDER_ATTRIBUTES:
                return True
            return self.owns(obj) and not name.startswith("__")
        if tp is super:
            me = super.__getattribute__(obj, "__self__")
            return self.owns(me) and (not name.startswith("__")
                                      or name in rules.OWN_DUNDER_METHODS)
        key = (tp, name)
        decided = self._decisions.get(key)
        if decided is None:
            decided = self._decisions[key] = self._decide_instance(tp, name)
        return decided

    def _special(self, obj: object, name: str) -> Any:
        """Guarded stand-ins for attributes the rules refuse but honest code needs: a str's
        ``format``/``format_map`` (whose ``{0.attr}`` fields then read attributes through
        the guard), and ``object.__setattr__``/``__delattr__``/``__new__`` for the
        submission's own objects (a frozen dataclass's ``__post_init__``). None otherwise."""
        if isinstance(obj, str) and name in ("format", "format_map"):
            formatter = _GuardedFormatter(self.make_getattr())
            if name == "format":
                return functools.partial(formatter.format, obj)
            return lambda mapping: formatter.vformat(obj, (), mapping)
        if obj is object and name in ("__setattr__", "__delattr__", "__new__"):
            return self._object_method(name)
        return None

    def _object_method(self, name: str) -> Callable[..., Any]:
        owns = self.owns

        def own_only(target: object, *args: object) -> Any:
            if not owns(target):
                raise PolicyError(f"object.{name} may act only on the submission's own "
                                  f"objects, not on {_describe(target)}")
            if name in ("__setattr__", "__delattr__") and args and isinstance(args[0], str) \
                    and args[0].startswith("__") and args[0] not in rules.OWN_DUNDER_METHODS:
                raise PolicyError(f"object.{name} of {args[0]!r} is not allowed while grading")
            return getattr(object, name)(target, *args)

        own_only.__name__ = own_only.__qualname__ = name
        return own_only

    def refusal(self, obj: object, name: object) -> PolicyAttributeError:
        """The error for reading ``name`` of ``obj``, saying what was refused and why."""
        what = _describe(obj)
        if not isinstance(name, str):
            return PolicyAttributeError(f"attribute names must be strings, got {name!r}")
        if name in rules.INTROSPECTION_ATTRIBUTES:
            why = "it reaches the interpreter's frames and code"
        elif name.startswith("__"):
            why = "it reaches the interpreter's internals"
        elif name.startswith("_"):
            why = "it is private state that is not the submission's own"
        elif isinstance(obj, types.ModuleType):
            why = f"it is not among the names of {obj.__name__} a submission may use"
        else:
            why = ("a submission may read its own objects' attributes and the public API of "
                   "numpy arrays, dtypes, refs and pallas_sim, not this")
        return PolicyAttributeError(f"reading '.{name}' of {what} is not allowed while "
                                    f"grading ({why})")

    def make_getattr(self) -> Callable[..., Any]:
        """``_getattr_(obj, name[, default])``: the guarded attribute read."""
        modules = self._modules
        decisions = self._decisions
        allowed = self._allowed
        refusal = self.refusal
        module_type = types.ModuleType
        special = self._special
        real_of = self._real

        def _getattr_(obj: object, name: str, *default: object) -> Any:
            tp = type(obj)
            if tp is module_type:
                names = modules.get(obj)  # type: ignore[arg-type]
                if names is not None and name in names:
                    return getattr(obj, name, *default)
            elif decisions.get((tp, name)):
                return getattr(obj, name, *default)
            if type(name) is not str or not allowed(obj, name):
                substitute = special(obj, name) if type(name) is str else None
                if substitute is not None:
                    return substitute
                if default:
                    return default[0]
                if tp is module_type and type(name) is str and not hasattr(
                        real_of.get(obj, obj), name):  # type: ignore[call-overload]
                    # pallas_sim's namespaces say why (UnsupportedJaxAPIError, with a hint)
                    getattr(real_of.get(obj, obj), name)  # type: ignore[call-overload]
                    raise AttributeError(f"module {obj.__name__!r} has no attribute {name!r}")
                raise refusal(obj, name)
            return getattr(obj, name, *default)

        return _getattr_

    # -- writes ----------------------------------------------------------------------------

    def make_write(self) -> Callable[[object], object]:
        """``_write_(obj)``: attribute stores and deletes reach only the submission's own
        objects."""
        owns = self.owns

        def _write_(obj: object) -> object:
            if owns(obj):
                return obj
            raise PolicyError(f"setting or deleting attributes of {_describe(obj)} is not "
                              "allowed while grading (a submission may change only its own "
                              "objects)")

        return _write_

    def make_write_item(self) -> Callable[[object], object]:
        """``_write_item_(obj)``: item stores and deletes reach lists, dicts, bytearrays,
        numpy arrays, pallas_sim refs and the submission's own objects."""
        owns = self.owns
        from pallas_sim.extend import Ref  # the kernel's refs: the one thing a kernel writes

        writable = (*_ITEM_WRITABLE, Ref)

        def _write_item_(obj: object) -> object:
            if type(obj) in writable or isinstance(obj, Ref) or owns(obj):
                return obj
            raise PolicyError(f"storing items into {_describe(obj)} is not allowed while "
                              "grading (a submission may write into arrays, refs, lists, "
                              "dicts and its own objects)")

        return _write_item_

    # -- the namespace ---------------------------------------------------------------------

    def acting_codes(self) -> frozenset[Any]:
        """Code objects of the guards that act for the submission (the audit hook treats an
        event raised in them as raised by the submission)."""
        builtins_table = self.globals.get("__builtins__", {})
        functions = [self.globals.get(name) for name in ("_getattr_", "_write_", "_write_item_",
                                                         "_apply_", "_inplacevar_")]
        functions += [builtins_table.get(name) for name in ("getattr", "setattr", "delattr",
                                                            "hasattr", "type", "__import__")]
        functions += [builtins_table.get(name) for name in rules.REFUSED_BUILTINS]
        return frozenset(f.__code__ for f in functions if isinstance(f, types.FunctionType))

    def install(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """Fill ``namespace`` (the submission module's ``__dict__``) with the restricted
        builtins and the guards; functions whose globals are this dict are the
        submission's own. Returns ``namespace``."""
        getattr_guard = self.make_getattr()
        write = self.make_write()
        self.globals = g = namespace
        g.update({
            "__name__": self.module_name,
            "__file__": self.filename,
            "__builtins__": self._builtins(getattr_guard, write),
            "_getattr_": getattr_guard,
            "_write_": write,
            "_write_item_": self.make_write_item(),
            "_getitem_": operator.getitem,
            "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_inplacevar_": _inplacevar,
            "_apply_": _apply,
        })
        return g

    def _builtins(self, getattr_guard: Callable[..., Any],
                  write: Callable[[object], object]) -> dict[str, Any]:
        table: dict[str, Any] = {name: getattr(builtins, name) for name in rules.BUILTIN_NAMES}
        allowed = self._allowed

        def checked_name(name: object) -> str:
            if type(name) is not str:
                raise TypeError("attribute name must be string")
            if name.startswith("__") and name not in rules.OWN_DUNDER_METHODS:
                raise PolicyError(f"setting or deleting {name!r} is not allowed while grading "
                                  "(it reaches the interpreter's internals)")
            return name

        def guarded_setattr(obj: object, name: str, value: object) -> None:
            """``setattr``, for the submission's own objects only."""
            setattr(write(obj), checked_name(name), value)

        def guarded_delattr(obj: object, name: str) -> None:
            """``delattr``, for the submission's own objects only."""
            delattr(write(obj), checked_name(name))

        def guarded_hasattr(obj: object, name: str) -> bool:
            """``hasattr`` under the read rules (a refused name is not there)."""
            if type(name) is not str:
                raise TypeError("hasattr(): attribute name must be string")
            if not allowed(obj, name):
                return False
            return hasattr(obj, name)

        def guarded_type(*args: object) -> type:
            """``type(obj)``; creating classes with ``type(name, bases, dict)`` is refused."""
            if len(args) != 1:
                raise PolicyError("type() with three arguments is not allowed while grading "
                                  "(define classes with a class statement)")
            return type(args[0])

        table.update({
            "getattr": getattr_guard,
            "setattr": guarded_setattr,
            "delattr": guarded_delattr,
            "hasattr": guarded_hasattr,
            "type": guarded_type,
            "__import__": _guarded_import(self.importable),
            "__build_class__": builtins.__build_class__,
        })
        for name, why in rules.REFUSED_BUILTINS.items():
            table[name] = _refused_builtin(name, why)
        return table


class _GuardedFormatter(string.Formatter):
    """``str.format`` whose replacement fields read attributes through the guard: in
    ``"{0.name}"`` the ``.name`` is a ``_getattr_`` call like any other in the submission."""

    def __init__(self, getattr_guard: Callable[..., Any]) -> None:
        self._getattr = getattr_guard

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._getattr(obj, key) if is_attribute else obj[key]
        return obj, first


def _namedtuple_fields(tp: type) -> tuple[str, ...] | None:
    """A NamedTuple class's field names (None for other classes)."""
    if not issubclass(tp, tuple):
        return None
    fields = getattr(tp, "_fields", None)
    if isinstance(fields, tuple) and all(type(f) is str for f in fields):
        return fields
    return None


def _allowed_module_names() -> list[str]:
    names = ["numpy", *rules.NUMPY_SUBMODULES, "math", "functools", "itertools", "dataclasses",
             "typing", "warnings", "__future__", *rules.PALLAS_SIM_MODULES]
    return [name for name in names if is_allowed_module(name)]


def _guarded_import(importable: dict[str, types.ModuleType]) -> Callable[..., Any]:
    """``__import__`` under the import allowlist (modules, and names for ``from ... import``);
    ``importable`` maps each allowed module name to what a submission gets for it."""

    def __import__(name: str, globals: object = None, locals: object = None,  # noqa: A002
                   fromlist: tuple[str, ...] | list[str] | None = (), level: int = 0) -> Any:
        """The guarded ``__import__``.

        C code that imports while a submission's frame is current (numpy's methods
        import their Python helpers through ``PyImport_Import``) calls the same
        ``__import__`` with a *list* as ``fromlist``; a compiled ``import``
        statement always passes a tuple or None, so such a call is answered from
        the modules already loaded, and only from them.
        """
        if type(fromlist) is list and not level:
            loaded = sys.modules.get(name) if type(name) is str else None
            if loaded is not None:
                return loaded
        if level:
            raise PolicyImportError("relative imports are not allowed (a submission is a "
                                    "single file)")
        if type(name) is not str or not is_allowed_module(name):
            why = (rules.TRUSTED_REASON if type(name) is str
                   and rules.refusal_reason(name) == rules.TRUSTED_REASON
                   else f"allowed: {', '.join(rules.ALLOWED_TOP_LEVEL)}")
            raise PolicyImportError(f"import of {name!r} is not allowed while grading ({why})")
        names = allowed_names(name) or frozenset()
        for item in fromlist or ():
            if type(item) is not str or (item not in names
                                         and not is_allowed_module(f"{name}.{item}")):
                why = (rules.TRUSTED_REASON if type(item) is str and rules.refusal_reason(
                    f"{name}.{item}") == rules.TRUSTED_REASON else
                    f"it is not among the names of {name} a submission may use")
                raise PolicyImportError(f"import of {name}.{item} is not allowed while grading "
                                        f"({why})")
        if fromlist:
            return importable.get(name) or builtins.__import__(name, None, None,
                                                               tuple(fromlist), 0)
        top = name.split(".")[0]
        builtins.__import__(name, None, None, (), 0)  # loads ``name`` (already loaded)
        return importable.get(top) or sys.modules[top]

    return __import__


def _refused_builtin(name: str, why: str) -> Callable[..., Any]:
    def refused(*args: object, **kwargs: object) -> Any:
        raise PolicyError(f"{name}() is not available while grading ({why})")

    refused.__name__ = refused.__qualname__ = name
    return refused


_INPLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow,
    "<<=": operator.ilshift, ">>=": operator.irshift, "|=": operator.ior,
    "^=": operator.ixor, "&=": operator.iand, "@=": operator.imatmul,
}


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    """``x op= y`` as Python does it (``__iadd__`` first, then ``__add__``)."""
    return _INPLACE[op](x, y)


def _apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A call with ``*args``/``**kwargs`` (RestrictedPython routes those through here)."""
    return func(*args, **kwargs)


def _describe(obj: object) -> str:
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, type):
        return f"class {obj.__qualname__}"
    tp = type(obj)
    names = {types.GeneratorType: "a generator", types.FrameType: "a frame",
             types.TracebackType: "a traceback", types.CodeType: "a code object",
             types.FunctionType: "a function", types.BuiltinFunctionType: "a builtin",
             types.MethodType: "a method"}
    if tp in names:
        return names[tp]
    return f"a {tp.__qualname__} object"


def load_submission(code: types.CodeType, module: types.ModuleType, filename: str,
                    before_run: Callable[[Guards], None] | None = None) -> Guards:
    """Run a submission's compiled ``code`` as ``module`` under the guards; returns them.

    ``code`` comes from :func:`.transform.compile_submission`; ``module`` is a
    fresh module object whose ``__name__`` its classes will carry;
    ``before_run(guards)`` runs just before the submission's first line (the
    worker arms its audit hook there). Whatever the submission's top level
    raises propagates.
    """
    guards = Guards(module.__name__, filename)
    guards.install(module.__dict__)
    if before_run is not None:
        before_run(guards)
    _run(code, module.__dict__)
    return guards


def _run(code: types.CodeType, namespace: dict[str, Any]) -> None:
    exec(code, namespace)  # noqa: S102 - the code was compiled under the policy
