"""Run one function of a kernel file on pallas_sim and on real JAX, and compare.

Outputs must agree within the tolerance of their dtype (float32 1e-5,
bfloat16 2e-2, integers and booleans exactly), NaN where the other has NaN
(poison must match poison); containers element by element.  When one
backend raises, the other must raise the same kind of error
(``NotImplementedError`` for a stub, ``ValueError`` for bad arguments, any
other exception otherwise).  JAX runs with 64-bit types off, so int64/float64
results of pallas_sim are compared by value with JAX's 32-bit ones.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings

from graders.checking.registry import CheckFailure
from graders.fidelity.cases import FidelityCase, FromModule

#: (rtol, atol) per dtype name; floats not listed use float32's.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-5, 1e-5), "float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3),
    "bfloat16": (2e-2, 2e-2),
}

#: Deterministic; no shrinking, since every JAX run costs a compile (the first
#: failing input is reported as drawn).
FIDELITY_SETTINGS = settings(deadline=None, derandomize=True, database=None,
                             print_blob=False, phases=(Phase.explicit, Phase.generate),
                             suppress_health_check=list(HealthCheck))


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one backend did: a value, or an exception (type name, message)."""

    value: Any = None
    error: BaseException | None = None


def _resolve(value: Any, module: types.ModuleType) -> Any:
    if isinstance(value, FromModule):
        return value.resolve(module)
    return copy.deepcopy(value)


def call(module: types.ModuleType, func: str, args: tuple[Any, ...], kwargs: dict[str, Any],
         *, on_error: Callable[[], None] | None = None,
         driver: Callable[..., Any] | None = None) -> Outcome:
    """Call ``module.<func>`` on private copies of the inputs (or ``driver(module, ...)``,
    which runs ``module.<func>`` in a pallas_call of its own; ``FidelityCase.driver``).

    Arrays are copied so an in-place update (``input_output_aliases``) on one
    backend cannot leak into the other.  ``on_error`` runs after an exception
    (JAX's TPU interpret mode needs its state reset).
    """
    try:
        fn = getattr(module, func)
        if driver is not None:
            fn = functools.partial(driver, module)
        value = fn(*(_resolve(a, module) for a in args),
                   **{k: _resolve(v, module) for k, v in kwargs.items()})
        return Outcome(value=_to_numpy(value))
    except Exception as exc:  # noqa: BLE001 - compared with the other backend's
        if on_error is not None:
            on_error()
        return Outcome(error=exc)


def _to_numpy(value: Any) -> Any:
    if isinstance(value, (str, bytes, bool, int, float, type(None))):
        return value
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_to_numpy(v) for v in value) if not hasattr(value, "_fields") else \
            tuple(_to_numpy(v) for v in value)
    if hasattr(value, "__array__") or isinstance(value, np.generic):
        return np.asarray(value)
    return value


def _error_kind(exc: BaseException) -> str:
    for kind in (NotImplementedError, ValueError):
        if isinstance(exc, kind):
            return kind.__name__
    return "other error"


def assert_same(sim: Outcome, jax: Outcome, where: str) -> None:
    """Raise ``CheckFailure`` (the one check framework's failure) unless the two outcomes
    agree (see module doc)."""
    if sim.error is not None or jax.error is not None:
        if sim.error is None or jax.error is None:
            raised, fine = ("pallas_sim", "JAX") if sim.error is not None else ("JAX",
                                                                                "pallas_sim")
            exc = sim.error if sim.error is not None else jax.error
            raise CheckFailure(f"{where}: {raised} raised {type(exc).__name__}: "
                           f"{_short(exc)} but {fine} returned a result")
        if _error_kind(sim.error) != _error_kind(jax.error):
            raise CheckFailure(f"{where}: pallas_sim raised {type(sim.error).__name__}: "
                           f"{_short(sim.error)}; JAX raised {type(jax.error).__name__}: "
                           f"{_short(jax.error)}")
        return
    _same_value(sim.value, jax.value, where)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def _same_value(a: Any, b: Any, where: str) -> None:
    if isinstance(a, dict):
        if not isinstance(b, dict) or set(a) != set(b):
            other = sorted(b) if isinstance(b, dict) else repr(b)
            raise CheckFailure(f"{where}: dict keys {sorted(a)} vs {other}")
        for k in a:
            _same_value(a[k], b[k], f"{where}[{k!r}]")
        return
    if isinstance(a, (tuple, list)):
        if not isinstance(b, (tuple, list)) or len(a) != len(b):
            raise CheckFailure(f"{where}: {type(a).__name__} of {len(a)} vs {b!r:.80}")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_value(x, y, f"{where}[{i}]")
        return
    if isinstance(a, str) or a is None:
        if a != b:
            raise CheckFailure(f"{where}: {a!r} vs {b!r}")
        return
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        raise CheckFailure(f"{where}: shape {x.shape} on pallas_sim, {y.shape} on JAX")
    kinds = {x.dtype.kind, y.dtype.kind}
    if kinds <= {"b"} or kinds <= {"i", "u"}:
        if not np.array_equal(x, y):
            bad = np.argwhere(x != y)[0]
            raise CheckFailure(f"{where}: exact values differ first at {tuple(bad)}: "
                           f"{x[tuple(bad)]} vs {y[tuple(bad)]}")
        return
    if x.dtype.kind not in "fciub" and x.dtype.name != "bfloat16":
        raise CheckFailure(f"{where}: cannot compare dtype {x.dtype}")
    name = x.dtype.name if x.dtype.name in TOLERANCES else "float32"
    rtol, atol = TOLERANCES[name]
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    nan_x, nan_y = np.isnan(xf), np.isnan(yf)
    if not np.array_equal(nan_x, nan_y):
        where_nan = tuple(np.argwhere(nan_x != nan_y)[0])
        raise CheckFailure(f"{where}: NaN (poison) differs at {where_nan}: pallas_sim "
                       f"{xf[where_nan]}, JAX {yf[where_nan]}")
    close = np.isclose(xf, yf, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        i = tuple(np.argwhere(~close)[0])
        err = np.abs(xf - yf)[~close].max()
        raise CheckFailure(f"{where}: {int((~close).sum())} of {close.size} {x.dtype} values "
                       f"differ beyond rtol={rtol}, atol={atol}; first at {i}: pallas_sim "
                       f"{xf[i]!r}, JAX {yf[i]!r} (largest difference {err:.3g})")


@dataclasses.dataclass
class RunStats:
    """How many drawn inputs were compared, and on how many pallas_sim raised
    ``NotImplementedError`` (a stub: both backends must then raise it)."""

    compared: int = 0
    not_implemented: int = 0


def run_case(sim_module: types.ModuleType, jax_module: types.ModuleType,
             case: FidelityCase, mode: str, *, max_examples: int | None = None) -> RunStats:
    """Compare ``case.func`` on both modules over hypothesis-drawn inputs.

    Args:
      sim_module, jax_module: the same file loaded on each backend
        (:func:`pallas_sim.backends.swap.load`).
      case: what to call and on which inputs.
      mode: JAX interpreter, "hlo" (``interpret=True``) or "tpu".
      max_examples: override ``case.max_examples``.

    Returns:
      A :class:`RunStats`.

    Raises:
      CheckFailure: the first disagreement (hypothesis shrinks it first).
    """
    from pallas_sim.backends import real_jax  # noqa: PLC0415 - needs the jax extra

    stats = RunStats()

    @settings(FIDELITY_SETTINGS, max_examples=max_examples or case.max_examples)
    @given(case.inputs)
    def body(drawn: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
        args, kwargs = drawn
        sim = call(sim_module, case.func, args, kwargs, driver=case.driver)
        with real_jax.mode(mode):
            got = call(jax_module, case.func, args, kwargs, on_error=real_jax.reset,
                       driver=case.driver)
        stats.compared += 1
        stats.not_implemented += isinstance(sim.error, NotImplementedError)
        assert_same(sim, got, f"{case.func} on JAX {mode} interpret mode")

    body()
    return stats
