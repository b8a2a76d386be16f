"""``jax.lax``: the primitives Pallas kernels and their wrappers use, on NumPy.

Every function mirrors the JAX 0.10.2 function of the same name: the same
signature, the same result shape and dtype, and the same refusals where JAX
refuses at trace time (``lax.add`` of float32 and int32, ``lax.exp`` of an
integer, ``lax.select`` cases of different shapes, a ``fori_loop`` body that
changes its carry's dtype or shape). Unlike ``jax.numpy``, lax does not
promote: both operands of a binary op must have the same dtype, a Python
``int`` counts as int32 and a Python ``float`` as float32, and arrays of
64-bit dtypes count as their 32-bit versions (JAX's default, x64 off), so
results have the dtypes JAX gives.

Arithmetic goes through NumPy functions and ufuncs, so values that implement
NumPy's ``__array_ufunc__`` / ``__array_function__`` protocols pass through.
Control flow runs eagerly: ``cond`` runs only the branch its predicate
selects (its side effects on refs happen once, as on a TPU), ``fori_loop``
and ``while_loop`` run their body in Python. The one place a value decides
control flow is ``_decide`` (``pallas_sim._src.lax_control_flow``).
"""

from __future__ import annotations

from ._src import surface as _surface
from ._src.lax_axes import (
    axis_index,
    axis_size,
)
from ._src.lax_control_flow import (  # noqa: A004 - JAX's names
    cond,
    fori_loop,
    map,
    optimization_barrier,
    scan,
    stop_gradient,
    switch,
    while_loop,
)
from ._src.lax_elementwise import (  # noqa: A004 - JAX's names
    RoundingMethod,
    abs,
    add,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    clamp,
    cos,
    div,
    eq,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    ge,
    gt,
    integer_pow,
    is_finite,
    le,
    log,
    log1p,
    logistic,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    nextafter,
    pow,
    reciprocal,
    rem,
    round,
    rsqrt,
    select,
    select_n,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    sign,
    sin,
    sqrt,
    square,
    sub,
    tan,
    tanh,
)
from ._src.lax_products import (
    Precision,
    dot,
    dot_general,
)
from ._src.lax_reductions import (
    argmax,
    argmin,
    cummax,
    cummin,
    cumprod,
    cumsum,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reduce_xor,
    sort,
)
from ._src.lax_shapes import (  # noqa: A004 - JAX's names
    bitcast_convert_type,
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    convert_element_type,
    empty,
    expand_dims,
    full,
    full_like,
    index_in_dim,
    iota,
    reshape,
    slice,
    slice_in_dim,
    squeeze,
    transpose,
)
from ._src.lax_slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)

__all__ = [
    "Precision", "RoundingMethod", "abs", "add", "argmax", "argmin", "atan2", "axis_index",
    "axis_size", "bitcast_convert_type", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "broadcast", "broadcast_in_dim", "broadcasted_iota", "cbrt", "ceil",
    "clamp", "concatenate", "cond", "convert_element_type", "cos", "cummax", "cummin",
    "cumprod", "cumsum", "div", "dot", "dot_general", "dynamic_index_in_dim",
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "empty", "eq", "erf", "exp", "exp2", "expand_dims",
    "expm1", "floor", "fori_loop", "full", "full_like", "ge", "gt", "index_in_dim",
    "integer_pow", "iota", "is_finite", "le", "log", "log1p", "logistic", "lt", "map",
    "max", "min", "mul", "ne", "neg", "nextafter", "optimization_barrier", "pow",
    "reciprocal", "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod",
    "reduce_sum", "reduce_xor", "rem", "reshape", "round", "rsqrt", "scan", "select",
    "select_n", "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign",
    "sin", "slice", "slice_in_dim", "sort", "sqrt", "square", "squeeze", "stop_gradient",
    "sub", "switch", "tan", "tanh", "transpose", "while_loop",
]
__getattr__ = _surface.refuse_missing("jax.lax", __name__)
