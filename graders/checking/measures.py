"""Measurements a check records beside its points: a performance task's
predicted time, say, which the CSV gradebook and ``pallas-lab leaderboard`` show.

A check calls ``record(session, name, value)`` while it runs; ``graders.grading.grade.run_check``
takes what was recorded (``take``) into the check's ``CheckResult.measures``. Kept apart from
the framework's ``Session`` so that checks need nothing from its internals. Values are plain
floats computed by the trusted grader from the worker's JSON reply, never objects from the
worker.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

#: Name of the predicted time of a performance task, in milliseconds.
PREDICTED_MS = "predicted_ms"

_RECORDED: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()


def record(session: Any, name: str, value: float) -> None:
    """Record ``value`` (a finite float) under ``name`` for the check ``session`` runs now.

    Raises:
      ValueError: ``value`` is not a finite number.
    """
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"measure {name!r} must be a finite number, got {value!r}")
    _RECORDED.setdefault(session, {})[name] = number


def take(session: Any) -> dict[str, float]:
    """What the running check recorded for ``session`` (name -> value), forgotten after."""
    return _RECORDED.pop(session, {})
