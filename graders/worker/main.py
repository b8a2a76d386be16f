"""The untrusted worker: imports one submission and runs its functions on request.

This file is copied into the worker's private library directory as
``pallas_lab_worker.py`` and started by ``graders.worker.client`` as
``python -I -S -B <libdir>/pallas_lab_worker.py`` with the working directory
holding only a copy of the submission (docs/grading-design.md, "Trusted and untrusted code").
It must not import anything from the project: next to it in ``libdir`` are
``pallas_lab_protocol.py`` (a copy of ``graders/worker/protocol.py``), the
package ``pallas_lab_harnesses`` (a copy of ``graders/harnesses/``) and
symlinks to numpy, ml_dtypes and pallas_sim.

Conversation (every message is a ``pallas_lab_protocol`` value tree):

* the grader's first message is ``{"op": "hello", "key": hex}``: the key that
  signs every reply (``pallas_lab_protocol.reply_tag``), received before the
  submission is imported;
* on start the worker sends ``{"ok": True, "ready": True}``;
* ``{"op": "load", "module": stem, "seed": int}`` imports ``<stem>.py`` from the
  working directory; reply ``{"ok": True, "names": [public names]}`` or an error;
* ``{"op": "call", "func", "args": tuple, "kwargs": dict, "harness": str | None,
  "return_args": bool, "seed": int}`` runs the submission's ``func(*args, **kwargs)`` or,
  when a harness module is named, ``pallas_lab_harnesses.<harness>.<func>(
  submission_module, *args, **kwargs)``, inside ``pallas_sim.trace()``; reply
  ``{"ok": True, "value", "traces": [dict], "returned_arg": [int | None],
  "args_after": tuple | None}`` or an error;
* ``{"op": "ping"}`` replies ``{"ok": True}``.

Before a load or a call the worker seeds every source of randomness the submission can
reach with the request's ``seed`` (``seed_randomness``): the grader derives it from the
file's content and the running check, so an unseeded generator draws the same numbers on
every grade of the same file.

An error reply is ``{"ok": False, "error": {"kind", "type", "message",
"traceback"}}`` where kind is ``"exception"``, ``"not_implemented"``,
``"missing"``, ``"unencodable"``, ``"harness"`` or ``"request"``, and the
traceback lists only frames in the submission's file.
"""

from __future__ import annotations

import os
import sys

_WORKDIR = os.getcwd()
_LIBDIR = os.path.dirname(os.path.abspath(__file__))


def _restrict_sys_path() -> None:
    """Make the project invisible: the work dir, the library dir, then the stdlib only."""
    stdlib = [
        entry
        for entry in sys.path
        if entry
        and "site-packages" not in entry
        and "dist-packages" not in entry
        and os.path.abspath(entry) not in (_WORKDIR, _LIBDIR)
    ]
    sys.path[:] = [_WORKDIR, _LIBDIR, *stdlib]


_restrict_sys_path()

import dataclasses  # noqa: E402
import functools  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import linecache  # noqa: E402,F401 - the error path reads the student's lines with it
import traceback  # noqa: E402
import types  # noqa: E402
from typing import Any, BinaryIO  # noqa: E402

import numpy as np  # noqa: E402
import pallas_lab_protocol as protocol  # noqa: E402

import pallas_sim  # noqa: E402 - no simulator, no worker: the client cannot start one
from pallas_sim.extend import GRADING_SANITIZERS as _SANITIZERS  # noqa: E402
from pallas_sim.extend import Options as _Options  # noqa: E402
from pallas_sim.extend import lock_sim_options as _lock_sim_options  # noqa: E402

# The grading profile: the simulator's defaults (poisoned memory, the 32 MiB scoped
# limit, ...) plus grading's sanitizers (pallas_sim's GRADING_SANITIZERS: parallel grid
# axes in a seeded random order, as TPU interpret mode visits them). Locked, so
# pallas_sim.config raises in the submission, and applied again before every call.
GRADING_OPTIONS = {**dataclasses.asdict(_Options()), **_SANITIZERS}
_lock_sim_options(**GRADING_OPTIONS)

import random as _random  # noqa: E402

import numpy.random.bit_generator as _bit_generator  # noqa: E402

#: The entropy behind every unseeded numpy generator (``np.random.default_rng()``,
#: ``RandomState()``, ``SeedSequence()``: numpy asks ``bit_generator.randbits`` for it, which
#: is ``secrets.randbits``, the OS's entropy). Replaced by a generator the grader seeds
#: before every call (``seed_randomness``), so the same file gets the same draws on every
#: grade. tests/worker/test_worker_seeding.py holds numpy to it.
_ENTROPY = _random.Random(0)
_bit_generator.randbits = _ENTROPY.getrandbits


def seed_randomness(seed: object) -> None:
    """Seed every source of randomness a submission can reach from ``seed`` (an int the
    grader derives from the file's SHA-256 and the running check: ``graders.worker.client
    .call_seed``): numpy's global RandomState (``np.random.rand``, ``np.random.seed``'s
    state), the entropy of unseeded generators (``default_rng()``, ``RandomState()``),
    and ``random``'s global generator (not importable by a submission; seeded anyway).
    ``pallas_sim.random`` takes explicit keys and the parallel-grid order a fixed seed,
    so neither needs one. Anything but an int leaves the state as it is."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        return
    seed &= (1 << 64) - 1
    np.random.seed([seed & 0xFFFFFFFF, seed >> 32])
    _ENTROPY.seed(seed)
    _random.seed(seed)


import pallas_lab_policy.audit as policy_audit  # noqa: E402
import pallas_lab_policy.guards as policy_guards  # noqa: E402
import pallas_lab_policy.transform as policy_transform  # noqa: E402

MAX_MESSAGE_CHARS = 2000
#: The largest submission the worker compiles (graders.worker.static_check refuses larger).
MAX_SOURCE_BYTES = 1 << 20
MAX_TRACEBACK_FRAMES = 20


def _open_channel() -> tuple[BinaryIO, BinaryIO]:
    """Move the protocol off fds 0/1 so that student prints and reads cannot touch it.

    fd 1 is pointed at the captured stderr file and fd 0 at /dev/null.
    """
    channel_in = os.fdopen(os.dup(0), "rb", buffering=0)
    channel_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    return channel_in, channel_out


def _make_signer(key: bytes) -> Any:
    """A function that appends the next reply's tag (the key stays in this closure)."""
    counter = [0]

    def sign(message: bytes) -> bytes:
        tag = protocol.reply_tag(key, counter[0], message)
        counter[0] += 1
        return message + tag

    return sign


class Worker:
    """The worker's state: the channel, the submission module once loaded."""

    def __init__(self, channel_in: BinaryIO, channel_out: BinaryIO, sign: Any) -> None:
        self.channel_in = channel_in
        self.channel_out = channel_out
        self._sign = sign
        self.module: types.ModuleType | None = None
        self.module_file: str | None = None
        self.guards: Any = None

    # -- error replies -------------------------------------------------------------------------

    def _student_frames(self, tb: types.TracebackType | None) -> str:
        if tb is None or self.module_file is None:
            return ""
        frames = [
            frame
            for frame in traceback.extract_tb(tb)
            if os.path.abspath(frame.filename) == self.module_file
        ][-MAX_TRACEBACK_FRAMES:]
        name = os.path.basename(self.module_file)
        lines = []
        for frame in frames:
            lines.append(f"  {name}, line {frame.lineno}, in {frame.name}")
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
        return "\n".join(lines)

    def _error(self, kind: str, exc: BaseException | None, message: str = "",
               type_name: str = "") -> dict[str, Any]:
        text = message
        tb = ""
        if exc is not None:
            type_name = type(exc).__name__
            try:
                text = str(exc)
            except Exception:  # a student exception whose __str__ fails
                text = f"<{type_name} whose message cannot be shown>"
            if isinstance(exc, SyntaxError) and exc.lineno is not None:
                text = f"{exc.msg} (line {exc.lineno})"
            tb = self._student_frames(exc.__traceback__)
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[: MAX_MESSAGE_CHARS - 3] + "..."
        return {
            "ok": False,
            "error": {"kind": kind, "type": type_name, "message": text, "traceback": tb},
        }

    def _exception_reply(self, exc: BaseException) -> dict[str, Any]:
        kind = "not_implemented" if isinstance(exc, NotImplementedError) else "exception"
        return self._error(kind, exc)

    # -- requests ------------------------------------------------------------------------------

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        """Import the submission module; reply with its public names or the error.

        With ``"policy": True`` (the grader's default) the source is compiled
        under the submission policy (``pallas_lab_policy``: RestrictedPython with
        the allowlists), run under its guards, and the audit hook is armed just
        before its first line. ``"policy": False`` (only for the red-team tests
        of the layers below, ``PALLAS_LAB_POLICY=off``) imports it as plain Python.
        """
        stem = request.get("module")
        if not isinstance(stem, str) or not stem.isidentifier():
            return self._error("request", None, f"bad module name {stem!r}")
        seed_randomness(request.get("seed"))  # the module's top level draws the same too
        if self.module is not None or stem in sys.modules:
            return self._error("request", None, "a submission is already loaded")
        path = os.path.join(_WORKDIR, stem + ".py")
        self.module_file = os.path.abspath(path)
        if request.get("policy", True) is not False:
            return self._load_restricted(stem, self.module_file)
        spec = importlib.util.spec_from_file_location(stem, path)
        if spec is None or spec.loader is None:
            return self._error("request", None, f"cannot load {stem}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[stem] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 - anything the student's module does
            sys.modules.pop(stem, None)
            return self._exception_reply(exc)
        return self._loaded(module)

    def _load_restricted(self, stem: str, path: str) -> dict[str, Any]:
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_SOURCE_BYTES + 1)
            if len(data) > MAX_SOURCE_BYTES:
                return self._error("exception", None, f"{stem}.py is larger than "
                                   f"{MAX_SOURCE_BYTES} bytes", type_name="PolicyError")
            source = policy_transform.decode_source(data)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
            return self._error("exception", exc)
        compiled = policy_transform.compile_submission(source, path)
        if compiled.code is None:
            problems = "; ".join(problem.message for problem in compiled.problems)
            return self._error("exception", None, problems, type_name="PolicyError")
        module = types.ModuleType(stem)
        module.__file__ = path
        sys.modules[stem] = module

        def arm_audit_hook(guards: Any) -> None:
            policy_audit.install(path, guards.acting_codes(), guards.owns_type_now)()

        try:
            self.guards = policy_guards.load_submission(compiled.code, module, path,
                                                        before_run=arm_audit_hook)
        except BaseException as exc:  # noqa: BLE001 - anything the student's module does
            sys.modules.pop(stem, None)
            return self._exception_reply(exc)
        return self._loaded(module)

    def _loaded(self, module: types.ModuleType) -> dict[str, Any]:
        self.module = module
        names = sorted(name for name in vars(module) if not name.startswith("_"))
        return {"ok": True, "names": names}

    def _resolve(self, request: dict[str, Any]) -> Any:
        """The callable to run and the error reply (one of the two is None)."""
        func = request.get("func")
        harness = request.get("harness")
        if self.module is None:
            return None, self._error("request", None, "no submission is loaded")
        if not isinstance(func, str) or not func.isidentifier():
            return None, self._error("request", None, f"bad function name {func!r}")
        target = getattr(self.module, func, None) if not func.startswith("_") else None
        if target is None:
            return None, self._error("missing", None, f"{func} is not defined")
        if harness is None:
            if not callable(target):
                return None, self._error("missing", None, f"{func} is not a function")
            return target, None
        if not isinstance(harness, str) or not harness.isidentifier():
            return None, self._error("request", None, f"bad harness name {harness!r}")
        try:
            harness_module = importlib.import_module(f"pallas_lab_harnesses.{harness}")
            runner = getattr(harness_module, func)
        except Exception as exc:  # noqa: BLE001 - our bug, reported as such
            return None, self._error("harness", exc, f"harness {harness}.{func} is not available")
        submission = self.module

        def run_harness(*args: Any, **kwargs: Any) -> Any:
            return runner(submission, *args, **kwargs)

        return run_harness, None

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one requested function (or harness) inside pallas_sim.trace(); reply with the
        result.
        """
        args = request.get("args", ())
        kwargs = request.get("kwargs", {})
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            return self._error("request", None, "args must be a tuple and kwargs a dict")
        target, error = self._resolve(request)
        if error is not None:
            return error
        calls: list[Any] = []
        results: list[Any] = []
        try:
            _lock_sim_options(**GRADING_OPTIONS)
            seed_randomness(request.get("seed"))
            with pallas_sim.trace() as recorded:
                recorded._keep_results = True
                value = target(*args, **kwargs)
            calls = list(recorded.calls)
            results = list(recorded._results)
        except BaseException as exc:  # noqa: BLE001 - anything the student's code raises
            return self._exception_reply(exc)
        try:
            traces = [call.to_dict() for call in calls]
        except Exception as exc:  # noqa: BLE001 - the simulator's bug, not the student's
            return self._error("harness", exc, "the trace could not be converted")
        try:
            protocol.encode_tree(value)
        except protocol.EncodeError as exc:
            what = "returned a value that cannot be sent back"
            return self._error("unencodable", None, f"{request.get('func')} {what}: {exc}")
        top = list(value) if isinstance(value, tuple | list) else [value]
        returned_arg = [_identity_index(item, args) for item in top]
        sources = [self._source(item, results) for item in top]
        reply = {
            "ok": True,
            "value": value,
            "traces": traces,
            "returned_arg": returned_arg,
            "sources": sources,
            "args_after": args if request.get("return_args") else None,
        }
        try:
            return {"packed": protocol.pack_message(reply)}
        except protocol.EncodeError as exc:
            return self._error("unencodable", None, f"the result cannot be sent back: {exc}")
        except protocol.ProtocolError as exc:
            return self._error("unencodable", None, str(exc))

    # -- loop ----------------------------------------------------------------------------------

    def send(self, reply: dict[str, Any]) -> None:
        """Sign and send one reply on the protocol channel."""
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()  # what the student printed lands before the reply is read
            except Exception:  # noqa: BLE001 - a stream the student replaced or closed
                pass
        packed = reply.get("packed")
        data = packed if isinstance(packed, bytes) else protocol.pack_message(reply)
        self.channel_out.write(self._sign(data))
        self.channel_out.flush()

    def serve(self) -> int:
        """Answer requests until the grader closes the channel."""
        self.send({"ok": True, "ready": True})
        while True:
            try:
                request = protocol.read_message(self.channel_in)
            except EOFError:
                return 0
            if not isinstance(request, dict):
                self.send(self._error("request", None, "a request must be a dict"))
                continue
            op = request.get("op")
            if op == "load":
                reply = self.load(request)
            elif op == "call":
                reply = self.call(request)
            elif op == "ping":
                reply = {"ok": True}
            else:
                reply = self._error("request", None, f"unknown op {op!r}")
            self.send(reply)


    def _source(self, item: Any, results: list[Any]) -> int | None:
        """Index of the pallas_call (in this call's trace) whose output ``item`` is.

        ``item`` counts as that call's output when it holds, bit for bit and with
        the same shape and dtype, what the call returned at the moment it
        returned (a copy taken then: writing into the output afterwards does not
        make another answer the call's); the call's kernel must be the
        submission's own code (a function it defined, possibly wrapped in
        functools.partial). The last such call wins. None for anything else (a
        value computed without a pallas_call, next to a decoy one, or written
        over the call's output).
        """
        if not isinstance(item, np.ndarray):
            return None
        for index in range(len(results) - 1, -1, -1):
            outputs, kernel = results[index]
            if not self._own_kernel(kernel):
                continue
            for out in outputs:
                if isinstance(out, np.ndarray) and _same_content(item, out):
                    return index
        return None

    def _own_kernel(self, kernel: Any) -> bool:
        while isinstance(kernel, functools.partial):
            kernel = kernel.func
        if self.guards is not None:
            return bool(self.guards.owns(kernel))
        module = self.module
        return (isinstance(kernel, types.FunctionType) and module is not None
                and kernel.__globals__ is vars(module))


def _same_content(item: np.ndarray, out: np.ndarray) -> bool:
    """``item`` holds exactly ``out``: same shape, dtype and bytes."""
    if item.shape != out.shape or item.dtype != out.dtype:
        return False
    return bool(np.array_equal(np.ascontiguousarray(item).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(out).reshape(-1).view(np.uint8)))


def _identity_index(item: Any, args: tuple[Any, ...]) -> int | None:
    """Index of the positional argument that IS ``item`` (an array), else None."""
    if not isinstance(item, np.ndarray):
        return None
    for index, arg in enumerate(args):
        if arg is item:
            return index
    return None


def main() -> int:
    """Run the worker until the grader closes the channel; returns the exit status."""
    sys.dont_write_bytecode = True
    channel_in, channel_out = _open_channel()
    try:
        hello = protocol.read_message(channel_in)
    except (EOFError, protocol.ProtocolError):
        return 3
    key = hello.get("key") if isinstance(hello, dict) and hello.get("op") == "hello" else None
    if not isinstance(key, str) or len(key) != 2 * protocol.KEY_BYTES:
        return 3
    return Worker(channel_in, channel_out, _make_signer(bytes.fromhex(key))).serve()


if __name__ == "__main__":
    sys.exit(main())
