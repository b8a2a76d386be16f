"""``jax.lax``'s matrix products: ``dot_general`` and ``dot``, with JAX's ``Precision`` and
``preferred_element_type`` and the MXU's accumulation dtype.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import op_accounting
from .dtypes import is_floating
from .exports import publish
from .lax_common import _aval, _cast, _dims, _value, canonical_dtype, lift_functions


class Precision(enum.Enum):
    """``jax.lax.Precision``: accepted and ignored (pallas_sim multiplies in float32)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        names = {"default": 0, "fastest": 0, "bfloat16": 0, "high": 1, "bfloat16_3x": 1,
                 "tensorfloat32": 1, "highest": 2, "float32": 2}
        if isinstance(value, str) and value.lower() in names:
            return cls(names[value.lower()])
        return None


def _accumulation_dtype(dtypes: Sequence[np.dtype]) -> np.dtype:
    if any(d.kind == "c" for d in dtypes):
        return np.dtype(np.complex64)
    if any(is_floating(d) for d in dtypes):
        return np.dtype(np.float32)
    return np.dtype(np.int64)  # integer products accumulate wide, then wrap to the result


def _dot_general_out_elements(sl: tuple[int, ...], sr: tuple[int, ...], lc: tuple[int, ...],
                              lb: tuple[int, ...], rc: tuple[int, ...],
                              rb: tuple[int, ...]) -> int:
    """Elements of ``dot_general``'s result, a Python int: batch x lhs free x rhs free.

    It used to be (lhs size x rhs size) // (contracted**2 x batch) through this module's
    ``max``, which is ``lax.max``: its int32 array overflowed at lecture sizes.
    """
    lhs_free = math.prod(sl[d] for d in range(len(sl)) if d not in lc and d not in lb)
    rhs_free = math.prod(sr[d] for d in range(len(sr)) if d not in rc and d not in rb)
    return math.prod(sl[d] for d in lb) * lhs_free * rhs_free


def dot_general(lhs: object, rhs: object, dimension_numbers: Any, precision: object = None,
                preferred_element_type: object = None, *, out_sharding: object = None) -> Any:
    """``jax.lax.dot_general``: contract ``lhs`` and ``rhs`` over the given dimensions.

    ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``. The
    result's dimensions are the batch dimensions, then ``lhs``'s free dimensions, then
    ``rhs``'s. Products are summed in float32 (integers: exactly, then wrapped), as the
    MXU does, and the result has ``preferred_element_type`` or the inputs' promoted dtype
    (bf16 x bf16 -> bf16, bf16 x f32 -> f32).

    Raises:
      TypeError: contracting or batch dimensions of different sizes (JAX's messages), or
        dimensions out of range or repeated.
      ValueError: malformed ``dimension_numbers``.
    """
    (dl, sl), (dr, sr) = _aval("dot_general", lhs), _aval("dot_general", rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = _dims(lc), _dims(rc), _dims(lb), _dims(rb)
    for side, shape, dims in (("lhs", sl, lc + lb), ("rhs", sr, rc + rb)):
        if any(not 0 <= d < len(shape) for d in dims):
            raise TypeError(f"dot_general requires {side} dimension numbers to be in range "
                            f"[0, {len(shape)}), got {dims} for shape {shape}.")
        if len(set(dims)) != len(dims):
            raise TypeError(f"dot_general requires {side} dimension numbers to be distinct, "
                            f"got {dims}.")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs and rhs contracting and "
                        f"batch dimensions, got {dimension_numbers}.")
    for what, ldims, rdims in (("contracting", lc, rc), ("batch", lb, rb)):
        lsizes, rsizes = tuple(sl[d] for d in ldims), tuple(sr[d] for d in rdims)
        if lsizes != rsizes:
            prefix = "contracting dimensions" if what == "contracting" else (
                "lhs batch dimensions and rhs batch dimensions")
            raise TypeError(f"dot_general requires {prefix} to have the same shape, got "
                            f"{lsizes} and {rsizes}.")
    out_dtype = (canonical_dtype(preferred_element_type) if preferred_element_type is not None
                 else canonical_dtype(np.result_type(dl, dr)))
    if op_accounting._STACK:
        op_accounting.product(lhs, rhs, _dot_general_out_elements(sl, sr, lc, lb, rc, rb),
                              math.prod(sl[d] for d in lc))
    acc = _accumulation_dtype((dl, dr))
    a, b = _value(lhs, dl).astype(acc), _value(rhs, dr).astype(acc)
    if not lb and lc == (len(sl) - 1,) and rc == (0,) and len(sr) <= 2:
        return _cast(np.matmul(a, b), out_dtype)  # the common cases, without reshapes
    lfree = [d for d in range(len(sl)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(sr)) if d not in rc and d not in rb]
    batch = [sl[d] for d in lb]
    a = np.reshape(np.transpose(a, (*lb, *lfree, *lc)),
                   (math.prod(batch), math.prod(sl[d] for d in lfree),
                    math.prod(sl[d] for d in lc)))
    b = np.reshape(np.transpose(b, (*rb, *rc, *rfree)),
                   (math.prod(batch), math.prod(sr[d] for d in rc),
                    math.prod(sr[d] for d in rfree)))
    out = np.reshape(np.matmul(a, b), (*batch, *(sl[d] for d in lfree),
                                       *(sr[d] for d in rfree)))
    return _cast(out, out_dtype)


def dot(lhs: object, rhs: object, *, dimension_numbers: Any = None, precision: object = None,
        preferred_element_type: object = None, out_sharding: object = None) -> Any:
    """``jax.lax.dot``: vector-vector, matrix-vector or matrix-matrix product (the last
    dimension of ``lhs`` with the first of ``rhs``), or :func:`dot_general` when
    ``dimension_numbers`` is given. Accumulation and dtypes as :func:`dot_general`.

    Raises:
      ValueError: an operand of rank 0 or above 2 without ``dimension_numbers``.
      TypeError: the contracted sizes differ.
    """
    if dimension_numbers is None:
        (_, sl), (_, sr) = _aval("dot", lhs), _aval("dot", rhs)
        if len(sl) not in (1, 2) or len(sr) not in (1, 2):
            raise ValueError("jax.lax.dot: dimension_numbers must be specified when not "
                             "performing simple un-batched matrix-matrix, matrix-vector, or "
                             f"vector-vector products; got lhs_shape={sl} rhs_shape={sr}")
        dimension_numbers = (((len(sl) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


__all__ = ["Precision", "dot", "dot_general"]
publish("pallas_sim.lax", globals(), __all__)
# The array functions take kernel values as JAX's take tracers (values.lift).
lift_functions(globals(), __all__)
