"""Comparisons that turn a mismatch into feedback a student can act on.

Every function here raises :class:`~graders.checking.framework.CheckFailure`
with ``expected`` and ``got`` filled in; none raises anything else, whatever
the submission returned (a list, None, an object array, a wrong shape).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from graders.checking.framework import CheckFailure
from graders.checking.values import describe_array, describe_value
from pallas_sim.extend import CallTrace, is_floating

#: (rtol, atol) per result dtype: a float32 kernel summing a few hundred terms
#: stays within 1e-5 relative of float64; bfloat16 keeps 8 bits of mantissa.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "float32": (2e-5, 1e-6),
    "bfloat16": (1.6e-2, 1e-2),
    "float16": (2e-3, 1e-3),
}


def tolerance(dtype: object) -> tuple[float, float]:
    """(rtol, atol) for comparing results of this input dtype; integers exact."""
    name = np.dtype(dtype).name
    return TOLERANCES.get(name, (0.0, 0.0))


def fmt_array(a: object) -> str:
    """A value as feedback prints it (``graders.checking.values.describe_array``: ``f32[2,3]``
    and the
    values when there are few, else their range); what is not an array says so."""
    try:
        arr = np.asarray(a)
    except Exception:  # noqa: BLE001 - any object the student returned
        return f"{type(a).__name__} (not an array)"
    if arr.dtype == object:
        return f"{type(a).__name__} holding objects"
    return describe_array(arr) if arr.ndim else describe_value(arr[()])


def nonfinite_kind(values: object) -> str | None:
    """"NaN", "inf" or "-inf": the first kind of non-finite value in ``values`` (a number or a
    float array, bfloat16 included), or None when every value is finite or not a float."""
    try:
        arr = np.asarray(values)
        if arr.dtype.kind == "V" and is_floating(arr.dtype):
            arr = arr.astype(np.float32)
        if arr.dtype.kind not in "fc":
            return None
        with np.errstate(invalid="ignore"):
            if np.isnan(arr).any():
                return "NaN"
            if np.isposinf(arr.real).any():
                return "inf"
            if np.isneginf(arr.real).any():
                return "-inf"
    except (TypeError, ValueError):
        return None
    return None


def require_finite(arr: np.ndarray, what: str, *, expected: str = "finite values") -> None:
    """Every element of a float array must be finite (NaN and ±inf compare False with
    everything, so a rule checked with ``<`` or ``>`` would never see them broken).

    Raises:
      CheckFailure: naming the kind (NaN, inf), the first index and how many elements.
    """
    kind = nonfinite_kind(arr)
    if kind is None:
        return
    values = np.asarray(arr)
    if values.dtype.kind == "V":
        values = values.astype(np.float32)
    bad = ~np.isfinite(values)
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    raise CheckFailure(f"{what} holds {kind}: {int(bad.sum())} of {bad.size} elements are not "
                       "finite numbers (NaN or inf)", expected=expected,
                       got=f"{fmt_array(values)}; at index {first}: {_scalar(values[first])}"
                       if first else fmt_array(values))


def as_finite_number(got: object, what: str, *, expected: str = "a finite number",
                     input: str | None = None) -> float:  # noqa: A002 - CheckFailure's name
    """``got`` as a finite float: an int, float or NumPy number that is neither NaN nor
    infinite (bools are not numbers here; ints too large for a float are infinite).

    Raises:
      CheckFailure: not a number, NaN, ±inf or too large, with ``what`` and ``expected``.
    """
    if isinstance(got, bool | np.bool_) or not isinstance(
            got, int | float | np.integer | np.floating):
        raise CheckFailure(f"{what} must be a number", input=input, expected=expected,
                           got=f"{_short_repr(got)} ({type(got).__name__})")
    try:
        value = float(got)
    except OverflowError:
        value = math.inf if got > 0 else -math.inf
    if math.isnan(value):
        raise CheckFailure(f"{what} is NaN (not a number)", input=input, expected=expected,
                           got="nan")
    if math.isinf(value):
        raise CheckFailure(f"{what} is {'inf' if value > 0 else '-inf'} (infinite or too large "
                           "for a float)", input=input, expected=expected,
                           got=_short_repr(got))
    return value


def _short_repr(value: object, limit: int = 60) -> str:
    if isinstance(value, int) and abs(value) >= 10**limit:  # str() of huge ints is refused
        return f"an int of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_array(got: object, what: str) -> np.ndarray:
    """``got`` as a numeric/bool ndarray.

    Raises:
      CheckFailure: ``got`` is None, not array-like, or holds objects.
    """
    if got is None:
        raise CheckFailure(f"{what} is None", expected="an array", got="None",
                           hint="did the function forget to return its result?")
    try:
        arr = np.asarray(got)
    except Exception:  # noqa: BLE001
        raise CheckFailure(f"{what} is not an array", expected="an array",
                           got=type(got).__name__) from None
    if arr.dtype == object or arr.dtype.kind in "USM" or (
            arr.dtype.kind == "V" and not is_floating(arr.dtype)):
        raise CheckFailure(f"{what} is not a numeric array", expected="a numeric array",
                           got=f"{type(got).__name__} of {arr.dtype}")
    return arr


def assert_close(got: object, expected: np.ndarray, rtol: float, atol: float, *,
                 what: str = "output", check_dtype: object = None,
                 same_nonfinite: bool = False) -> None:
    """Shape must match; values within ``atol + rtol·|expected|``; NaNs never match.

    Args:
      got: what the submission returned.
      expected: float64 (or exact integer) reference values.
      check_dtype: if given, the dtype ``got`` must have.
      same_nonfinite: a NaN (or an infinity of the same sign) where ``expected`` has one
        matches: for comparing a wrapper with its own kernel's output, which may hold
        NaN where the kernel reads poisoned memory.

    Raises:
      CheckFailure: wrong type, shape, dtype, or values; the message names the
        first mismatching index with both values and the largest error.
    """
    arr = as_array(got, what)
    expected = np.asarray(expected)
    if arr.shape != expected.shape:
        raise CheckFailure(f"{what} has the wrong shape",
                           expected=f"shape {tuple(expected.shape)}",
                           got=f"shape {tuple(arr.shape)} ({fmt_array(arr)})")
    if check_dtype is not None and arr.dtype != np.dtype(check_dtype):
        raise CheckFailure(f"{what} has the wrong dtype",
                           expected=np.dtype(check_dtype).name, got=arr.dtype.name)
    g = arr.astype(np.float64) if arr.dtype.kind not in "b" else arr
    e = expected.astype(np.float64) if expected.dtype.kind not in "b" else expected
    if g.dtype.kind == "b" or e.dtype.kind == "b":
        bad = g != e
    else:
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(g - e) <= atol + rtol * np.abs(e))
        if same_nonfinite:
            bad &= ~((np.isnan(g) & np.isnan(e)) | (np.isinf(g) & (g == e)))
    if not bad.any():
        return
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    n_bad = int(bad.sum())
    nan_note = ""
    kind = nonfinite_kind(g) if g.dtype.kind == "f" else None
    if kind == "NaN":
        nan_note = (" — NaN in the output usually means an element was never written, or "
                    "uninitialized (poisoned) memory was read")
    elif kind is not None and np.isfinite(e).all():
        nan_note = f" — the output holds {kind} where finite values are expected (an overflow)"
    err = None
    if g.dtype.kind == "f":
        gap = np.abs(g - e)
        err = None if np.isnan(gap).all() else np.nanmax(gap)  # all NaN: nothing to report
    raise CheckFailure(
        f"{what} is wrong in {n_bad} of {bad.size} elements{nan_note}",
        expected=f"{fmt_array(expected)}; at index {first}: {_scalar(e[first])}",
        got=f"{fmt_array(arr)}; at index {first}: {_scalar(g[first])}"
            + (f" (largest error{' among the non-NaN elements' if nan_note else ''} "
               f"{err:.3g}, tolerance {atol:g} + {rtol:g}·|expected|)"
               if err is not None and np.isfinite(err) else ""))


def _scalar(v: object) -> str:
    v = np.asarray(v).item()
    return f"{v:.6g}" if isinstance(v, float) else repr(v)


def require_ndarray(got: object, what: str) -> np.ndarray:
    """``got`` must be a NumPy array (a list or a scalar is not the API's result).

    Raises:
      CheckFailure: None, or not an ``np.ndarray``.
    """
    if not isinstance(got, np.ndarray):
        as_array(got, what)  # None and non-numeric results get their own message
        raise CheckFailure(f"{what} must be a NumPy array", expected="numpy.ndarray",
                           got=type(got).__name__,
                           hint="return what pl.pallas_call returns, without converting it")
    return got


def assert_equal_int(got: object, expected: int, what: str) -> None:
    """``got`` must be an integer equal to ``expected`` (bools are not ints here).

    Raises:
      CheckFailure: not an integer, or a different value.
    """
    if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
        kind = nonfinite_kind(got) if isinstance(got, (float, np.floating)) else None
        if kind is not None:
            raise CheckFailure(f"{what} is {kind}, not an int", expected=f"{expected} (int)",
                               got=f"{got!r} ({type(got).__name__})")
        if isinstance(got, (float, np.floating)) and float(got).is_integer():
            raise CheckFailure(f"{what} must be an int", expected=f"{expected} (int)",
                               got=f"{got!r} ({type(got).__name__})")
        raise CheckFailure(f"{what} must be an int", expected=str(expected),
                           got=f"{got!r} ({type(got).__name__})")
    if int(got) != expected:
        raise CheckFailure(f"{what} is wrong", expected=str(expected), got=str(int(got)))


def trace_summary(calls: Sequence[CallTrace]) -> list[dict]:
    """What the trace-discipline checks compare, per pallas_call."""
    out = []
    for c in calls:
        out.append({
            "grid": tuple(c.grid),
            "block shapes": tuple(
                (op.name, tuple(op.block_shape)) for op in c.operands if op.role in ("in", "out")),
            "DMAs": c.dma_count,
            "VMEM bytes": c.vmem_bytes,
        })
    return out


def assert_same_trace(got: Sequence[CallTrace], expected: Sequence[CallTrace],
                      fields: Iterable[str] = ("grid", "block shapes", "DMAs", "VMEM bytes"),
                      *, what: str = "pallas_call") -> None:
    """The submission's pallas_calls must match the reference's on ``fields``.

    Block shapes are compared without operand names (students name their refs
    as they like).

    Raises:
      CheckFailure: a different number of pallas_calls, or a field differs.
    """
    if len(got) != len(expected):
        raise CheckFailure(f"the function should make {len(expected)} {what}(s)",
                           expected=f"{len(expected)} pallas_call",
                           got=f"{len(got)} pallas_call")
    for n, (g, e) in enumerate(zip(trace_summary(got), trace_summary(expected), strict=True)):
        for field in fields:
            gv, ev = g[field], e[field]
            if field == "block shapes":
                gv = tuple(b for _, b in gv)
                ev = tuple(b for _, b in ev)
            if gv != ev:
                label = f"{field} of pallas_call #{n + 1}" if len(got) > 1 else field
                raise CheckFailure(f"the pallas_call's {label} differs from the intended "
                                   "configuration", expected=_fmt_field(field, ev),
                                   got=_fmt_field(field, gv))


def _fmt_field(field: str, v: object) -> str:
    if field == "VMEM bytes":
        return f"{v} B ({int(v) / 2**20:.2f} MiB)"  # type: ignore[call-overload]
    return str(v)


def against_own_kernel(value: object, func: str, kernel: str) -> tuple[object, object]:
    """Unpack a wrapper harness's ``(wrapper_out, kernel_out, kernel_error)`` (the harnesses'
    ``beside_kernel``): the wrapper's result and what the student's own kernel computes in
    the grader's standard pallas_call on the same inputs.

    Raises:
      CheckFailure: the kernel raised in the standard call (the wrapper cannot be shown to
        run it: its task declares the kernel's, so the feedback points there), or the
        harness replied with something else (the grader's fault).
    """
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise CheckFailure(f"internal grader error: the harness of {func} replied oddly",
                           status="error", internal=True)
    wrapper_out, kernel_out, kernel_error = value
    if kernel_out is None:
        raise CheckFailure(
            f"{func}'s result cannot be checked against your {kernel}: run in the grader's "
            f"standard pallas_call on the same inputs, it raised {kernel_error}",
            hint=f"{func} is graded against what {kernel} computes; make {kernel} run first")
    return wrapper_out, kernel_out


def kernel_mismatch(failure: CheckFailure, func: str, kernel: str) -> CheckFailure:
    """Re-word a failed comparison of a wrapper with its own kernel's output (the
    wrapper is charged for calling its kernel differently, not for the kernel's faults)."""
    return failure.copy(
        what=f"{func}'s result differs from what your {kernel} computes in the grader's "
             "standard pallas_call on the same inputs",
        diagnosis=None,
        hint=f"the wrapper should run {kernel} in the call the task describes (grid, "
             "BlockSpecs, scratch, arguments); a mistake inside the kernel is charged to the "
             "kernel's task, not here")


def reference_run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[Any]]:
    """Run a trusted function (the reference, or a mistake's model) here under
    ``pallas_sim.trace()``: ``(its result, the CallTrace of each pallas_call it made)``.
    Lets the function's exceptions through."""
    import pallas_sim

    with pallas_sim.trace() as recorded:
        out = fn(*args, **kwargs)
    return out, list(recorded.calls)
