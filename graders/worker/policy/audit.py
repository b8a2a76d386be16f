"""The last net of the submission policy: a CPython audit hook in the worker (PEP 578).

``install(submission_file, guard_file)`` adds a hook that, once installed,
cannot be removed. It only acts after :func:`arm` (called when the trusted
worker has finished its own imports and is about to load the submission):

* an audited event raised while the innermost Python frame is the
  submission's code, or one of the guards acting for it, is refused
  (``PolicyError``), except setting or deleting an attribute of a class the
  submission defined itself;
* an event raised by the trusted code (numpy, pallas_sim, the worker, the
  standard library) is allowed only if it is one the worker needs while it
  grades (:data:`TRUSTED_EVENTS`): imports, reading files (numpy's lazy
  imports, the traceback of a student error), reading a function's code or
  defaults (``inspect.signature`` of a kernel), the class machinery of
  dataclasses and NamedTuple. Everything else — starting processes,
  sockets, ctypes, pickle, writing files, new audit hooks, tracing — is
  refused whoever asks.

The hook reads the caller's frame with ``sys._getframe``, which raises an
audit event of its own; a flag stops that inner event from recursing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: Events the trusted side of the worker raises while it grades (observed over every
#: solution, sample and red-team submission; see tests/redteam/test_policy.py).
TRUSTED_EVENTS = frozenset({
    "import", "open", "marshal.loads", "os.listdir", "os.scandir", "object.__getattr__",
    "object.__setattr__", "object.__delattr__", "exec", "compile", "sys._getframe",
    "builtins.id", "code.__new__", "function.__new__", "sys._getframemodulename",
})
#: File modes the trusted side may open with (reading only).
_READ_MODES = frozenset({"r", "rb", None})


class PolicyEventError(PermissionError):
    """An interpreter event (file, process, network, introspection) the policy refuses."""


def install(submission_file: str, acting_codes: frozenset[Any],
            owns_type: Callable[[type], bool]) -> Callable[[], None]:
    """Install the hook; returns ``arm()``, which switches it on.

    ``submission_file``: the filename the submission's code was compiled
    with; ``acting_codes``: the code objects of the guards that act for the
    submission (``getattr``, ``setattr``, ``__import__``, ...);
    ``owns_type(cls)``: whether a class is the submission's own (it may set
    attributes on it).
    """
    state = {"armed": False, "inside": False}
    getframe = sys._getframe

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if not state["armed"] or state["inside"]:
            return
        state["inside"] = True
        try:
            code = getframe(1).f_code
            from_submission = code in acting_codes or code.co_filename == submission_file
        finally:
            state["inside"] = False
        if event in ("object.__setattr__", "object.__delattr__") and args and isinstance(
                args[0], type) and owns_type(args[0]):
            return
        if from_submission:
            raise PolicyEventError(f"{event} is not allowed while grading (the submission "
                                   "reached the interpreter's internals)")
        if event not in TRUSTED_EVENTS:
            raise PolicyEventError(f"{event} is not allowed while grading")
        if event == "open" and len(args) > 1 and args[1] not in _READ_MODES:
            raise PolicyEventError(f"opening {args[0]!r} for writing is not allowed while "
                                   "grading")

    sys.addaudithook(hook)

    def arm() -> None:
        state["armed"] = True

    return arm
