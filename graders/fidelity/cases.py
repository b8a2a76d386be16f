"""What the fidelity suite calls, and on which inputs: the record and its helpers.

Each :class:`FidelityCase` names a public function of a solution or
submission file (docs/student-api.md), the kernels it exercises, and a hypothesis
strategy of ``(args, kwargs)``.  Shapes are small (grids of at most a dozen
steps) because JAX's TPU interpret mode costs tens of milliseconds per grid
step and compiles once per shape; the lecture's worked numbers are fixed
examples.  Each lab lists its own cases in ``graders/labs/<stem>/public/fidelity.py``
(``CASES``), found by :func:`cases_for`; a function that uses
``pl``/``pltpu``/``jnp``/``jax`` must appear there (as ``func`` or in ``covers``):
tests/fidelity checks that.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

F32 = np.float32


@dataclasses.dataclass(frozen=True)
class FromModule:
    """An argument computed by the module under test: ``module.<func>(*args)``.

    Used for inputs that the file itself builds in plain NumPy (a Splash
    ``MaskInfo``), so each backend gets its own module's object.
    """

    func: str
    args: tuple[Any, ...]

    def resolve(self, module: object) -> Any:
        """Call ``module.<func>(*args)``.

        Raises:
          AttributeError: the module has no such function.
        """
        return getattr(module, self.func)(*self.args)


@dataclasses.dataclass(frozen=True)
class FidelityCase:
    """One function to run on both backends.

    Attributes:
      func: the public function called (docs/student-api.md name).
      inputs: strategy of ``(args tuple, kwargs dict)``; arrays are NumPy.
      covers: other functions of the file this call runs (its kernels).
      max_examples: hypothesis examples per JAX mode.
      driver: for a kernel the file does not wrap itself (a handout task that is only a
        kernel), ``driver(module, *args, **kwargs)`` runs ``module.<func>`` through code of
        the module itself (e.g. its own wrapper, with the kernel swapped in), so that it
        runs on either backend and no grader's call ships in the student bundle; None
        calls ``module.<func>(*args, **kwargs)``.
    """

    func: str
    inputs: SearchStrategy
    covers: tuple[str, ...] = ()
    max_examples: int = 3
    driver: Callable[..., Any] | None = None


def array(shape: tuple[int, ...], seed: int, dtype: Any = F32) -> np.ndarray:
    """A seeded array of ``shape`` and ``dtype`` (float32 by default), uniform in [-2, 2)."""
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape).astype(dtype)


def just(calls: Iterable[tuple[tuple[Any, ...], dict[str, Any]]]) -> SearchStrategy:
    """Fixed calls (the lecture's worked numbers): an iterable of (args, kwargs)."""
    return st.sampled_from(list(calls))


def cases_for(stem: str) -> tuple[FidelityCase, ...]:
    """The cases of an assignment file stem (a record's ``stem``): the ``CASES`` of its
    lab's ``fidelity.py`` (``graders/labs/<stem>/public/fidelity.py``); () for a stem no lab has
    or a lab without that module. Lets a broken ``fidelity.py``'s ImportError through."""
    from graders.course.catalog import assignment_for_stem

    assignment = assignment_for_stem(stem)
    if assignment is None or assignment.package is None:
        return ()
    name = f"{assignment.package}.public.fidelity"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return ()
        raise
    return tuple(module.CASES)
