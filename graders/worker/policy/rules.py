"""The allowlists: which modules a submission may import, which names of them it may
use, which attributes of which objects it may read, and what it may write.

Everything here is data, read by the compile-time check (:mod:`.transform`,
in the grader) and by the run-time guards (:mod:`.guards`, in the worker), so
the two halves cannot disagree. docs/student-api.md fixes the modules: numpy,
math, functools, itertools, dataclasses, typing and pallas_sim's public
names; ``__future__`` (it only changes how the file compiles) and
``warnings`` (reporting a warning must not cost a whole file) are
allowed too. pallas_sim's public modules follow a rule on paths, not a list:
``pallas_sim`` and the module files at the top of its folder; everything
under ``pallas_sim/_src`` is internal (JAX's convention), so a module added
there is unreachable by a submission without anyone editing this file.

The names allowed from numpy are the array-programming API: creating,
combining and reducing arrays, elementwise math, dtypes, sorting and
searching, linear algebra, random numbers and the testing assertions. Left
out are file and process I/O (``load``, ``save``, ``fromfile``, ``memmap``,
...), raw memory (``ctypeslib``, ``lib.stride_tricks``, ``frombuffer`` of
foreign buffers, ``from_dlpack``), numpy's own mutable registries
(``sctypeDict``, ``typecodes``) and the build/test machinery (``f2py``,
``test``, ``show_config``).
"""

from __future__ import annotations

import importlib.util
import os

#: Top-level modules a submission may import, in the order messages list them.
ALLOWED_TOP_LEVEL: tuple[str, ...] = (
    "numpy", "math", "functools", "itertools", "dataclasses", "typing", "warnings",
    "pallas_sim",
)

#: ``numpy`` names a submission may use (``np.X`` or ``from numpy import X``).
NUMPY_NAMES = frozenset("""
    False_ True_ abs absolute acos acosh add all allclose amax amin angle any append
    apply_along_axis apply_over_axes arange arccos arccosh arcsin arcsinh arctan arctan2
    arctanh argmax argmin argpartition argsort argwhere around array array2string array_equal
    array_equiv array_repr array_split array_str asanyarray asarray asarray_chkfinite
    ascontiguousarray asfortranarray asin asinh astype atan atan2 atanh atleast_1d atleast_2d
    atleast_3d average bincount bitwise_and bitwise_count bitwise_invert bitwise_left_shift
    bitwise_not bitwise_or bitwise_right_shift bitwise_xor block bool bool_ broadcast
    broadcast_arrays broadcast_shapes broadcast_to byte c_ can_cast cbrt cdouble ceil character
    choose clip column_stack common_type complex128 complex64 complexfloating compress concat
    concatenate conj conjugate convolve copy copysign copyto corrcoef correlate cos cosh
    count_nonzero cov cross csingle cumprod cumsum cumulative_prod cumulative_sum deg2rad
    degrees delete diag diag_indices diag_indices_from diagflat diagonal diff digitize divide
    divmod dot double dsplit dstack dtype e ediff1d einsum einsum_path empty empty_like equal
    errstate euler_gamma exp exp2 expand_dims expm1 extract eye fabs fill_diagonal finfo fix
    flatnonzero flexible flip fliplr flipud float16 float32 float64 float_power floating floor
    floor_divide fmax fmin fmod format_float_positional format_float_scientific frexp
    fromfunction fromiter full full_like gcd generic geomspace gradient greater greater_equal
    half heaviside histogram histogram2d histogram_bin_edges histogramdd hsplit hstack hypot
    identity iinfo imag indices inexact inf inner insert int16 int32 int64 int8 int_ intc
    integer interp intersect1d intp invert isclose iscomplex iscomplexobj isdtype isfinite isin
    isinf isnan isneginf isposinf isreal isrealobj isscalar issubdtype iterable ix_ kron lcm
    ldexp left_shift less less_equal lexsort linspace log log10 log1p log2 logaddexp logaddexp2
    logical_and logical_not logical_or logical_xor logspace long longlong matmul
    matrix_transpose matvec max maximum may_share_memory mean median meshgrid mgrid min
    min_scalar_type minimum mod modf moveaxis multiply nan nan_to_num nanargmax nanargmin
    nancumprod nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod nanquantile
    nanstd nansum nanvar ndarray ndenumerate ndim ndindex newaxis nextafter nonzero not_equal
    number ogrid ones
    ones_like outer packbits pad partition percentile permute_dims pi piecewise place positive
    pow power prod promote_types ptp put put_along_axis putmask quantile r_ rad2deg radians
    ravel ravel_multi_index real real_if_close reciprocal remainder repeat require reshape
    resize result_type right_shift rint roll rollaxis rot90 round row_stack s_ searchsorted
    select setdiff1d setxor1d shape shares_memory short sign signbit signedinteger sin sinc
    single sinh size sort spacing split sqrt square squeeze stack std subtract sum swapaxes take
    take_along_axis tan tanh tensordot tile trace transpose trapezoid tri tril tril_indices
    tril_indices_from trim_zeros triu triu_indices triu_indices_from true_divide trunc ubyte
    ufunc uint uint16 uint32 uint64 uint8 uintc uintp ulong ulonglong union1d unique
    unique_all unique_counts unique_inverse unique_values unpackbits unravel_index
    unsignedinteger unstack unwrap ushort vander var vdot vecdot vecmat vsplit vstack where
    zeros zeros_like
    linalg fft random testing exceptions typing
""".split())

#: numpy submodules and the names a submission may use from each.
NUMPY_SUBMODULES: dict[str, frozenset[str]] = {
    "numpy.linalg": frozenset("""
        LinAlgError cholesky cond det eig eigh eigvals eigvalsh inv lstsq matrix_norm
        matrix_power matrix_rank multi_dot norm outer pinv qr slogdet solve svd svdvals
        tensordot tensorinv tensorsolve trace vecdot vector_norm cross diagonal matmul
        matrix_transpose
    """.split()),
    "numpy.fft": frozenset("""
        fft fft2 fftfreq fftn fftshift hfft ifft ifft2 ifftn ifftshift ihfft irfft irfft2 irfftn
        rfft rfft2 rfftfreq rfftn
    """.split()),
    "numpy.random": frozenset("""
        Generator RandomState default_rng seed rand randn randint random random_sample ranf
        sample normal standard_normal uniform choice permutation shuffle binomial poisson
        exponential beta gamma lognormal multivariate_normal integers
    """.split()),
    "numpy.testing": frozenset("""
        assert_allclose assert_almost_equal assert_approx_equal assert_array_almost_equal
        assert_array_equal assert_array_less assert_equal assert_raises assert_string_equal
        assert_array_max_ulp assert_array_almost_equal_nulp
    """.split()),
    "numpy.typing": frozenset("ArrayLike DTypeLike NDArray".split()),
    "numpy.exceptions": frozenset("""
        AxisError ComplexWarning DTypePromotionError RankWarning TooHardError
        VisibleDeprecationWarning
    """.split()),
}

#: ``math``: every public name (the module is pure arithmetic); decided when the
#: allowlist is built (``math_names``).
MATH_ALL_PUBLIC = True

FUNCTOOLS_NAMES = frozenset("""
    cache cached_property cmp_to_key lru_cache partial partialmethod reduce total_ordering
    update_wrapper wraps
""".split())
ITERTOOLS_NAMES = frozenset("""
    accumulate batched chain combinations combinations_with_replacement compress count cycle
    dropwhile filterfalse groupby islice pairwise permutations product repeat starmap takewhile
    tee zip_longest
""".split())
DATACLASSES_NAMES = frozenset("""
    FrozenInstanceError InitVar KW_ONLY MISSING Field asdict astuple dataclass field fields
    is_dataclass replace
""".split())
#: typing: the names of annotations and NamedTuple; not ``get_type_hints`` or
#: ``ForwardRef`` (they evaluate strings) nor the modules typing re-exports.
TYPING_NAMES = frozenset("""
    TYPE_CHECKING AbstractSet Annotated Any AnyStr Callable ClassVar Collection Concatenate
    Container Counter DefaultDict Deque Dict Final FrozenSet Generator Generic Hashable
    ItemsView Iterable Iterator KeysView List Literal LiteralString Mapping MappingView
    MutableMapping MutableSequence MutableSet NamedTuple Never NewType NoReturn NotRequired
    Optional OrderedDict ParamSpec Protocol Required Reversible Self Sequence Set Sized
    SupportsAbs SupportsFloat SupportsIndex SupportsInt SupportsRound Tuple Type TypeAlias
    TypeGuard TypeVar TypeVarTuple TypedDict Union Unpack ValuesView assert_never cast
""".split())
WARNINGS_NAMES = frozenset("warn catch_warnings simplefilter filterwarnings".split())
#: Standard-library modules a submission gets as a facade (only the allowed names, with
#: guarded versions of those that act on attributes by name; see guards.Guards).
FACADE_MODULES = frozenset({"math", "functools", "itertools", "dataclasses", "typing",
                            "warnings", "__future__"})

FUTURE_NAMES = frozenset("""
    annotations division absolute_import generator_stop generators nested_scopes
    print_function unicode_literals with_statement barry_as_FLUFL
""".split())

#: The package whose public modules a submission may import, and the folder of its
#: internals: everything under ``pallas_sim/_src`` is internal by path (JAX's own
#: convention), so a module added there is unreachable without any list edited here.
PALLAS_SIM = "pallas_sim"
PALLAS_SIM_INTERNALS = "pallas_sim._src"
#: pallas_sim's trusted surface (``pallas_sim/extend.py``, as ``jax.extend``): the names the
#: grader, the harnesses, the reference and the benchmarks take from the internals. It sits
#: at the top of the package but is never a submission's: the path rule leaves it out.
PALLAS_SIM_TRUSTED = "pallas_sim.extend"
#: Why an import of the internals or of the trusted surface is refused (the message's end).
INTERNALS_REASON = "it is pallas_sim's internals, not its public API"
TRUSTED_REASON = ("it is pallas_sim's trusted surface for the grader, harnesses and "
                  "reference, not a submission's")


def _pallas_sim_public_modules() -> tuple[str, ...]:
    """``pallas_sim`` and every module file at the top of its folder (``pallas_sim/pl.py``
    -> ``pallas_sim.pl``) whose name has no leading underscore, in sorted order, except
    the trusted surface ``pallas_sim.extend``.

    The path rule: internals live under ``pallas_sim/_src``; subpackages (``backends``,
    the trusted tooling that needs real JAX) are not a submission's either. The folder
    is found without importing pallas_sim (``importlib.util.find_spec``); an empty tuple
    when pallas_sim is not installed.
    """
    spec = importlib.util.find_spec(PALLAS_SIM)
    if spec is None or not spec.submodule_search_locations:
        return ()
    names = {PALLAS_SIM}
    for folder in spec.submodule_search_locations:
        for entry in os.scandir(folder):
            stem, dot, suffix = entry.name.partition(".")
            if (entry.is_file() and dot and suffix == "py" and stem.isidentifier()
                    and not stem.startswith("_")
                    and f"{PALLAS_SIM}.{stem}" != PALLAS_SIM_TRUSTED):
                names.add(f"{PALLAS_SIM}.{stem}")
    return tuple(sorted(names))


#: pallas_sim's public modules by the path rule; the names of each are its ``__all__``
#: (``transform.allowed_names``). Computed when this module is imported, before the
#: worker arms its audit hook.
PALLAS_SIM_MODULES: tuple[str, ...] = _pallas_sim_public_modules()


def pallas_sim_public_modules() -> tuple[str, ...]:
    """The dotted names of the pallas_sim modules a submission may import (the path rule
    of :data:`PALLAS_SIM_MODULES`), e.g. ``("pallas_sim", "pallas_sim.jax", ...)``."""
    return PALLAS_SIM_MODULES


def is_pallas_sim_internal(module: str) -> bool:
    """True when the dotted ``module`` is pallas_sim's internals (``pallas_sim._src`` or
    below it) or its trusted surface (``pallas_sim.extend`` or below it), whether or not
    such a module exists."""
    return any(module == root or module.startswith(root + ".")
               for root in (PALLAS_SIM_INTERNALS, PALLAS_SIM_TRUSTED))


def refusal_reason(module: str) -> str | None:
    """Why a submission may not import the dotted ``module`` when it is pallas_sim's
    trusted surface or internals (:data:`TRUSTED_REASON`, :data:`INTERNALS_REASON`);
    None for any other module."""
    if module == PALLAS_SIM_TRUSTED or module.startswith(PALLAS_SIM_TRUSTED + "."):
        return TRUSTED_REASON
    if is_pallas_sim_internal(module):
        return INTERNALS_REASON
    return None


def _pallas_sim_internal_names() -> frozenset[str]:
    """The names of the modules and packages directly under ``pallas_sim/_src``."""
    spec = importlib.util.find_spec(PALLAS_SIM)
    names: set[str] = set()
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        internals = os.path.join(folder, "_src")
        if os.path.isdir(internals):
            for entry in os.scandir(internals):
                stem = entry.name.removesuffix(".py")
                if stem.isidentifier() and (entry.is_dir() or entry.name.endswith(".py")):
                    names.add(stem)
    names.add(PALLAS_SIM_TRUSTED.rpartition(".")[2])  # ``pallas_sim.extend`` as an attribute
    return frozenset(names)


#: Names of pallas_sim's internal modules (``tracing``, ``config``, ...) and of its trusted
#: surface (``extend``): reading one as an
#: attribute of a pallas_sim module (``pallas_sim.tracing``) is refused at compile time
#: even where the attribute does not exist, so the message names the internals.
PALLAS_SIM_INTERNAL_NAMES: frozenset[str] = _pallas_sim_internal_names()

#: Builtins a submission may use as they are.
BUILTIN_NAMES = frozenset("""
    None False True Ellipsis NotImplemented abs all any ascii bin bool bytearray bytes callable
    chr classmethod complex dict divmod enumerate filter float format frozenset hash hex int
    isinstance issubclass iter len list map max min next object oct ord pow print property
    range repr reversed round set slice sorted staticmethod str sum super tuple zip
    ArithmeticError AssertionError AttributeError BaseException BufferError BytesWarning
    DeprecationWarning EOFError Exception FloatingPointError FutureWarning GeneratorExit
    ImportError ImportWarning IndexError KeyError LookupError MemoryError NameError
    NotImplementedError OSError OverflowError PendingDeprecationWarning RecursionError
    ReferenceError RuntimeError RuntimeWarning StopIteration SyntaxError SyntaxWarning
    TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError
    UnicodeWarning UserWarning ValueError Warning ZeroDivisionError
""".split())
#: Builtins replaced by a guarded version (the guard applies the attribute rules).
GUARDED_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr", "type",
                              "__import__", "__build_class__"})
#: Builtins that exist in a submission's namespace only to refuse with a clear message at
#: run time (a call fails the check that made it, not the whole file).
REFUSED_BUILTINS = {
    "open": "a submission cannot open files while it is graded",
    "input": "there is no one to answer input() while grading; take values as arguments",
    "breakpoint": "there is no debugger while grading",
    "exit": "a submission cannot stop the grader",
    "quit": "a submission cannot stop the grader",
    "globals": "it exposes the module's namespace",
    "locals": "it exposes a frame's namespace",
    "vars": "it exposes an object's namespace",
    "dir": "it lists an object's internals",
    "memoryview": "it exposes raw memory",
    "id": "object addresses are not part of any task",
    "help": "there is no help system while grading",
}
#: Names that are never allowed in a submission's source (they run strings or reach
#: the interpreter): refused by the compile-time check, naming the line.
FORBIDDEN_NAMES = frozenset({"exec", "eval", "compile", "__import__", "__builtins__",
                             "__loader__", "__spec__", "__build_class__", "__globals__",
                             "__dict__", "__class__"})

#: Double-underscore names a submission may read as plain names.
READABLE_DUNDER_NAMES = frozenset({"__name__", "__doc__", "__file__", "__qualname__",
                                   "__module__", "__annotations__"})
#: Double-underscore names a submission may assign in a class body or module.
ASSIGNABLE_DUNDER_NAMES = frozenset({"__all__", "__slots__", "__hash__", "__match_args__",
                                     "__doc__"})

#: Double-underscore attributes readable on any object: plain strings or the class.
HARMLESS_DUNDER_ATTRIBUTES = frozenset({"__name__", "__qualname__", "__doc__", "__module__",
                                        "__class__"})
#: Double-underscore methods a submission may call on its own objects (instances and
#: classes defined in the submission, and ``super()`` inside their methods).
OWN_DUNDER_METHODS = frozenset("""
    __init__ __post_init__ __new__ __call__ __len__ __iter__ __next__ __reversed__ __getitem__
    __setitem__ __delitem__ __contains__ __repr__ __str__ __format__ __eq__ __ne__ __lt__
    __le__ __gt__ __ge__ __hash__ __bool__ __add__ __radd__ __iadd__ __sub__ __rsub__ __isub__
    __mul__ __rmul__ __imul__ __truediv__ __rtruediv__ __itruediv__ __floordiv__
    __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __neg__ __pos__ __abs__ __invert__
    __matmul__ __rmatmul__ __and__ __or__ __xor__ __lshift__ __rshift__ __enter__ __exit__
    __array__ __index__ __int__ __float__ __complex__ __round__ __copy__ __deepcopy__
    __getattr__ __setattr__ __delattr__ __set_name__ __get__ __set__ __delete__
    __class_getitem__ __init_subclass__ __missing__ __length_hint__
""".split())
#: Every double-underscore attribute the compile-time check lets through (the run-time
#: guard then decides per object).
ALLOWED_DUNDER_ATTRIBUTES = HARMLESS_DUNDER_ATTRIBUTES | OWN_DUNDER_METHODS

#: Single-underscore attributes that are public API by convention (NamedTuple's).
NAMEDTUPLE_PRIVATE = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})

#: Attributes of the interpreter's introspection objects, refused wherever they appear
#: (RestrictedPython's ``INSPECT_ATTRIBUTES`` plus the code and function internals).
INTROSPECTION_ATTRIBUTES = frozenset("""
    tb_frame tb_next tb_lasti f_back f_builtins f_code f_generator f_globals f_locals f_trace
    f_lasti co_code co_consts co_names gi_frame gi_code gi_yieldfrom gi_running gi_suspended
    cr_await cr_frame cr_code cr_origin ag_await ag_frame ag_code func_globals func_code
""".split())

# -- attributes of the objects a submission meets ---------------------------------------------

#: ``numpy.ndarray`` (and numpy scalars): the array API, not its raw memory (``ctypes``,
#: ``data``, ``base``), files (``tofile``, ``dump``) or flags (``setflags``, ``flags``).
NDARRAY_ATTRIBUTES = frozenset("""
    T mT all any argmax argmin argpartition argsort astype byteswap choose clip compress conj
    conjugate copy cumprod cumsum diagonal dot dtype fill flat flatten imag item itemsize max
    mean min nbytes ndim nonzero partition prod ptp put ravel real repeat reshape round
    searchsorted shape size sort squeeze std strides sum swapaxes take tobytes tolist trace
    transpose var view device to_device as_integer_ratio is_integer
""".split())
DTYPE_ATTRIBUTES = frozenset("""
    alignment byteorder char descr fields hasobject isbuiltin isnative itemsize kind name names
    ndim num shape str subdtype type
""".split())
FINFO_ATTRIBUTES = frozenset("""
    bits dtype eps epsneg iexp machep max maxexp min minexp negep nexp nmant precision
    resolution smallest_normal smallest_subnormal tiny kind
""".split())
UFUNC_ATTRIBUTES = frozenset("""
    accumulate at identity nargs nin nout ntypes outer reduce reduceat signature types
""".split())
GENERATOR_RNG_ATTRIBUTES = frozenset("""
    beta binomial choice exponential gamma integers lognormal multivariate_normal normal
    permutation permuted poisson random shuffle standard_normal uniform
""".split())
RANDOM_STATE_ATTRIBUTES = frozenset("""
    beta binomial choice exponential gamma lognormal multivariate_normal normal permutation
    poisson rand randint randn random random_sample seed shuffle standard_normal uniform
""".split())
FLATITER_ATTRIBUTES = frozenset({"index", "coords", "copy"})
BROADCAST_ATTRIBUTES = frozenset({"shape", "size", "nd", "ndim", "numiter", "index"})
POLY1D_ATTRIBUTES = frozenset({"coeffs", "order", "roots", "variable", "deriv", "integ"})
#: ``str`` methods but ``format``/``format_map`` (their ``{0.attr}`` fields read attributes).
STR_REFUSED = frozenset({"format", "format_map"})
INT_ATTRIBUTES = frozenset("""
    real imag numerator denominator bit_length bit_count to_bytes from_bytes conjugate
    as_integer_ratio is_integer
""".split())
FLOAT_ATTRIBUTES = frozenset("real imag is_integer as_integer_ratio conjugate hex fromhex".split())
COMPLEX_ATTRIBUTES = frozenset({"real", "imag", "conjugate"})
RANGE_ATTRIBUTES = frozenset({"start", "stop", "step", "count", "index"})
SLICE_ATTRIBUTES = frozenset({"start", "stop", "step", "indices"})
EXCEPTION_ATTRIBUTES = frozenset({"args", "add_note"})
PARTIAL_ATTRIBUTES = frozenset({"func", "args", "keywords"})
LRU_WRAPPER_ATTRIBUTES = frozenset({"cache_info", "cache_clear", "cache_parameters"})
FIELD_ATTRIBUTES = frozenset("""
    name type default default_factory init repr hash compare metadata kw_only
""".split())
GENERATOR_ATTRIBUTES = frozenset({"send", "throw", "close"})
PROPERTY_ATTRIBUTES = frozenset({"getter", "setter", "deleter", "fget", "fset", "fdel"})
