"""Helpers shared by the harnesses (they run inside the worker; numpy and pallas_sim only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pallas_sim.extend import untraced as _untraced


def beside_kernel(wrapper_out: Any, run_kernel: Callable[[], Any]) -> tuple[Any, Any, str | None]:
    """``(wrapper_out, kernel_out, kernel_error)``: the student's wrapper result next to their
    kernel's output in the grader's standard pallas_call on the same inputs.

    A wrapper task is graded against what its own kernel computes (one fault,
    one charge): a right wrapper around a wrong kernel keeps its points. When the kernel
    raises in the standard call, ``kernel_out`` is None and ``kernel_error`` says what it
    raised (the grader then compares the wrapper with the reference). The standard call is
    not recorded in the trace, so it never counts as one the wrapper made.
    """
    try:
        with _untraced():
            kernel_out = run_kernel()
    except Exception as exc:  # noqa: BLE001 - the student's kernel raised; reported, not raised
        return wrapper_out, None, f"{type(exc).__name__}: {exc}"[:500]
    return wrapper_out, kernel_out, None
