"""Public checks: what a student may run on their own machine, and what Gradescope shows at once.

A public check compares a student's function with the lecture's worked
answers or with a plain math oracle written in the check itself (``x + y``,
a NumPy softmax, the VMEM formula of the student API), never with the hidden
reference. It is written once against :class:`Api` and runs two ways:

* in the student's own process (``pallas-lab check``, ``InProcessApi`` in
  ``graders.student.selfcheck``) with an exploratory hypothesis profile: a
  fresh random seed each run, few examples;
* in the trusted grader with the student's code in the worker (the Gradescope
  autograder's visible tests, ``graders.integrations.gradescope.autograder``).

Register one with ``@public_check(assignment, task, name)``; the modules are
``graders/labs/<stem>/public_checks.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from hypothesis import strategies as st

from graders.checking.registry import (  # noqa: F401 - StudentRaised: for public checks
    Check,
    CheckFailure,
    StudentRaised,
    Visibility,
    register,
    registered,
)
from graders.checking.values import describe_value

#: The failure a public check raises: the one framework's ``CheckFailure`` (``what``, and
#: the failing ``input``, ``expected`` and ``got``), under the name public checks use.
Mismatch = CheckFailure


@dataclass(frozen=True)
class Result:
    """One call of a student function: ``value``; ``traces`` (one ``CallTrace`` per
    pallas_call); ``returned_arg`` (index of the positional argument that was returned,
    by identity, else None)."""

    value: Any
    traces: list[Any]
    returned_arg: int | None


class Api(Protocol):
    """How a public check reaches the student's code (in-process or through the worker)."""

    def call(self, func: str, *args: Any, **kwargs: Any) -> Result:
        """Run the student's ``func(*args, **kwargs)`` under ``pallas_sim.trace()``."""

    def kernel(self, harness: str, func: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``<func>(module, *args, **kwargs)`` of the harness module ``harness``
        (``graders.course.catalog.load_harness``); public checks name a lab's public one,
        ``<id>_public`` (``graders/labs/<stem>/public_harness.py``: the student's kernel
        in a call the handout shows, or through their own wrapper; never the grader's
        standard call, which does not ship). Returns its value."""

    def run_property(self, strategy: st.SearchStrategy[Any], body: Callable[[Any], None],
                     *, max_examples: int = 10) -> None:
        """Run ``body`` on drawn examples (``graders.checking.registry.run_property``); raise the
        smallest failing one's ``CheckFailure``."""


def public_check(assignment: str, task: str, name: str
                 ) -> Callable[[Callable[[Api], None]], Callable[[Api], None]]:
    """Decorator registering ``fn(api)`` as a public ``Check``
    (``graders.checking.registry.register``
    with ``Visibility.PUBLIC``, 0 points; re-registering the same function replaces it).
    Raises ``ValueError`` for a task id not of the form ``N.M``."""
    return register(assignment, task, name, visibility=Visibility.PUBLIC)


def load_public_checks(assignment: str) -> list[Check]:
    """The public checks of an assignment (importing its lab's ``public_checks`` module,
    ``graders.labs.<stem>.public_checks``; an assignment without one has none).

    Raises ``KeyError`` for an assignment id no lab defines.
    """
    from graders.course.catalog import get_assignment

    module = get_assignment(assignment).public_checks_module
    if module is not None:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return registered(assignment, Visibility.PUBLIC)


# -- helpers for writing checks ----------------------------------------------------------------

def describe(value: Any) -> str:
    """Short deterministic text of a value, as every feedback prints it
    (``graders.checking.values.describe_value``: arrays as ``f32[2,3] [..]`` or with their range;
    a drawn case whose class defines its own ``__repr__`` as that)."""
    return describe_value(value)


def as_float_array(value: Any, what: str) -> np.ndarray:
    """``value`` as a float64 array; ``Mismatch`` when it is not numeric."""
    try:
        array = np.asarray(value)
        if array.dtype.kind == "V":  # bfloat16
            array = array.astype(np.float32)
        return array.astype(np.float64)
    except (TypeError, ValueError):
        raise Mismatch(f"{what} is not a numeric array", got=type(value).__name__) from None


def number(value: Any, what: str) -> float:
    """``value`` as a finite float; ``Mismatch`` when it is not a number, NaN or infinite
    (NaN compares False with everything, so it must never pass a check by accident)."""
    if isinstance(value, bool | np.bool_) or not isinstance(
            value, int | float | np.integer | np.floating):
        raise Mismatch(f"{what} must be a number", got=f"{type(value).__name__}")
    try:
        result = float(value)
    except OverflowError:
        result = np.inf if value > 0 else -np.inf
    if not np.isfinite(result):
        kind = "NaN" if np.isnan(result) else "infinite"
        raise Mismatch(f"{what} is {kind}; a finite number is expected", got=repr(result))
    return result


def assert_close(got: Any, expected: np.ndarray, *, rtol: float, atol: float,
                 what: str) -> None:
    """Shapes equal and values within ``atol + rtol·|expected|`` (NaN and inf never match);
    else ``Mismatch``, which names NaN or inf when the values hold them."""
    array = as_float_array(got, what)
    expected = np.asarray(expected, dtype=np.float64)
    if array.shape != expected.shape:
        raise Mismatch(f"{what} has the wrong shape", expected=str(expected.shape),
                       got=str(array.shape))
    bad = ~np.isclose(array, expected, rtol=rtol, atol=atol, equal_nan=False)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        note = ""
        if np.isnan(array).any():
            note = "; it holds NaN"
        elif np.isinf(array).any():
            note = "; it holds inf"
        raise Mismatch(f"{what} differs at index {where} ({int(bad.sum())} of {bad.size} "
                       f"elements wrong{note})", expected=f"{expected[where]:.6g}",
                       got=f"{array[where]:.6g}")


def arrays(shape: tuple[int, ...], seed: int, *, low: float = -4.0, high: float = 4.0,
           dtype: Any = np.float32) -> np.ndarray:
    """A seeded uniform array (hypothesis draws the shape and the seed)."""
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


seeds = st.integers(0, 2**16)
