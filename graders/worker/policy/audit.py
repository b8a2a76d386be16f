"""The last net of the submission policy: a CPython audit hook in the worker (PEP 578).

``install(submission_file, acting_codes, owns_type)`` adds a hook that,
once installed, cannot be removed. It only acts after the returned
``arm()`` is called (when the trusted worker has finished its own imports
and is about to run the submission's first line):

* an audited event raised while the innermost Python frame is the
  submission's code, or one of the guards acting for it, is refused
  (:class:`PolicyEventError`), except setting or deleting an attribute of a
  class the submission defined itself;
* an event raised by trusted code is allowed only where the worker needs it
  while it grades (:data:`TRUSTED`): each allowed event names the modules
  whose frames may raise it — ``exec`` and ``compile`` only from the import
  system, dataclasses, namedtuple, typing and the worker's own loading of
  the submission; reading a function's code only from pallas_sim,
  ``inspect`` and ``traceback``; imports only of numpy, pallas_sim, codecs
  and the harnesses; files only opened for reading by the import system and
  ``linecache``. A trusted function handed a callable by the submission
  (``np.fromfunction(exec, ...)``) therefore gains nothing: the event is
  judged by the module that raises it. Everything else — processes,
  sockets, ctypes, pickle, writing files, new hooks, tracing — is refused
  whoever asks.

The tables live in the hook's closure, not in module globals, so code that
reached this module could not rebind them. The hook reads the caller's frame
with ``sys._getframe``, which raises an audit event of its own; a flag stops
that inner event from recursing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

_IMPORT_SYSTEM = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
_ANY = None  # any trusted frame may raise the event

#: Per event, the frames (file-name suffixes) that may raise it once the worker is armed.
TRUSTED: dict[str, tuple[str, ...] | None] = {
    "builtins.id": _ANY,
    "exec": (*_IMPORT_SYSTEM, "/dataclasses.py", "/collections/__init__.py",
             "/pallas_lab_policy/guards.py"),
    "compile": (*_IMPORT_SYSTEM, "/ast.py", "/dataclasses.py", "/collections/__init__.py",
                "/typing.py"),
    "object.__getattr__": ("/pallas_sim/_src/pallas_call.py", "/inspect.py", "/traceback.py",
                           "/linecache.py", "/pallas_sim/_src/surface.py"),
    "object.__setattr__": ("/collections/__init__.py", "/typing.py", "/dataclasses.py",
                           "/functools.py", "/abc.py"),
    "object.__delattr__": ("/collections/__init__.py", "/typing.py", "/dataclasses.py"),
    "sys._getframe": ("/typing.py", "/collections/__init__.py", "/warnings.py",
                      "/inspect.py", "/traceback.py",
                      # tells ``from pallas_sim.jax import <missing>`` from an attribute
                      # read, to keep its explanation (reads its caller's opcode only)
                      "/pallas_sim/_src/surface.py"),
    "open": (*_IMPORT_SYSTEM, "/tokenize.py", "/linecache.py"),
    "marshal.loads": _IMPORT_SYSTEM,
    "os.listdir": _IMPORT_SYSTEM,
    "os.scandir": _IMPORT_SYSTEM,
    "import": _ANY,
    "cpython._PySys_ClearAuditHooks": _ANY,
}
#: Modules the trusted side may still import after arming (lazily loaded parts).
IMPORTABLE_PREFIXES = ("numpy", "ml_dtypes", "pallas_sim", "pallas_lab_", "encodings")
#: File modes the trusted side may open with (reading only).
READ_MODES = frozenset({"r", "rb", None})


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
    trusted = dict(TRUSTED)
    importable = IMPORTABLE_PREFIXES
    read_modes = READ_MODES
    state = {"armed": False, "inside": False}
    getframe = sys._getframe

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if not state["armed"] or state["inside"]:
            return
        state["inside"] = True
        try:
            code = getframe(1).f_code
        except ValueError:  # raised with no Python frame at all (C at shutdown)
            code = None
        finally:
            state["inside"] = False
        if code is None:
            if event not in trusted or trusted[event] is not None:
                raise PolicyEventError(f"{event} is not allowed while grading")
            return
        if event in ("object.__setattr__", "object.__delattr__") and args and isinstance(
                args[0], type) and owns_type(args[0]):
            return
        if code in acting_codes or code.co_filename == submission_file:
            raise PolicyEventError(f"{event} is not allowed while grading (the submission "
                                   "reached the interpreter's internals)")
        if event not in trusted:
            raise PolicyEventError(f"{event} is not allowed while grading")
        frames = trusted[event]
        if frames is not None and not code.co_filename.endswith(frames):
            raise PolicyEventError(f"{event} from {code.co_filename} is not allowed while "
                                   "grading")
        if event == "open" and len(args) > 1 and args[1] not in read_modes:
            raise PolicyEventError(f"opening {args[0]!r} for writing is not allowed while "
                                   "grading")
        if event == "import" and args and not str(args[0]).startswith(importable):
            raise PolicyEventError(f"importing {args[0]!r} is not allowed while grading")

    sys.addaudithook(hook)

    def arm() -> None:
        state["armed"] = True

    return arm
