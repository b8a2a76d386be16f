"""The trusted side of the worker: spawn, talk to, time out, restart and clean up.

``Worker(submission_path)`` runs one submission in a separate
``python -I -S -B`` process (``graders/worker/main.py``) whose working
directory holds only a copy of the submission and whose ``sys.path`` is that
directory, a private library directory (symlinks to numpy, ml_dtypes and
pallas_sim; copies of the protocol, the worker and ``graders/harnesses/``) and
the standard library. The environment is scrubbed, rlimits are modest, and
the process leads its own process group so that a timeout kills everything it
started (docs/grading-design.md, "Trusted and untrusted code": a crash, timeout or exception fails
only the call that caused it; the worker is restarted for the next call).

Nothing read from the worker is unpickled: replies are ``protocol`` messages,
validated here before use.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from graders.safety import submission_files
from graders.worker import cgroups, protocol, sandbox, zygote
from graders.worker.conversation import Conversation, Malformed, Refused, validate_call_reply
from graders.worker.libdir import (  # noqa: F401 - re-exported: the worker's files and env
    HARNESS_DIR,
    POLICY_DIR,
    WORKER_DIR,
    build_libdir,
    interpreter,
    site_package_dirs,
    worker_env,
)
from graders.worker.policy import policy_enabled
from graders.worker.process import apply_limits, cleanup, describe_exit, kill_group
from graders.worker.zygote import ForkedProcess

#: Bytes of the worker's captured output kept for a reply (the end of it).
OUTPUT_TAIL_BYTES = 4096
#: Restarts after which a worker gives up (every later call fails at once).
MAX_RESTARTS = 50
#: Seconds allowed for the interpreter, numpy and pallas_sim to start.
STARTUP_TIMEOUT = 30.0
#: Resource limits of the worker: see ``sandbox.LIMITS`` (address space, CPU, file size,
#: processes, open files, core dumps).

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_RESERVED_MODULE_NAMES = frozenset(
    {"numpy", "ml_dtypes", "pallas_sim", "pallas_lab_protocol", "pallas_lab_worker",
     "pallas_lab_harnesses", "pallas_lab_policy", "pallas_lab_sandbox", "pallas_lab_zygote",
     "reference",
     "graders", "solutions"}
)


#: The check name of a file's load in ``call_seed`` (no check is named so).
LOAD_CHECK = "(load)"


def call_seed(source_digest: bytes, check: str, index: int) -> int:
    """The seed of the ``index``-th call (0-based) of ``check`` (``"a1/1.5/<name>"``, "" for
    calls outside a check, ``LOAD_CHECK`` for the import) on the submission whose bytes
    have SHA-256 ``source_digest``: the first 8 bytes of SHA-256(digest, check, index), an
    int in [0, 2**64). The same file gets the same draws in every grade; another check,
    another call or another file gets other draws (the worker applies
    it: ``seed_randomness`` in ``graders/worker/main.py``)."""
    material = b"\0".join([source_digest, check.encode("utf-8", "surrogatepass"),
                            str(index).encode()])
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")

class FailureKind(StrEnum):
    """Why a load or call failed (``WorkerFailure.kind``); members are the strings
    themselves (``FailureKind.TIMEOUT == "timeout"``). The worker's error replies carry
    the first six (``WORKER_KINDS``); the client adds the rest."""

    EXCEPTION = "exception"
    NOT_IMPLEMENTED = "not_implemented"
    MISSING = "missing"
    UNENCODABLE = "unencodable"
    HARNESS = "harness"
    REQUEST = "request"
    TIMEOUT = "timeout"
    CRASH = "crash"
    MALFORMED = "malformed"
    OVERSIZE = "oversize"
    NOT_LOADED = "not_loaded"


#: The kinds a worker's error reply may name; any other is a malformed reply.
WORKER_KINDS = frozenset({FailureKind.EXCEPTION, FailureKind.NOT_IMPLEMENTED,
                          FailureKind.MISSING, FailureKind.UNENCODABLE, FailureKind.HARNESS,
                          FailureKind.REQUEST})


#: Seconds ``Worker.close`` lets the worker exit on EOF before killing its process group.
CLOSE_GRACE = 0.25


@dataclass(frozen=True, kw_only=True)
class WorkerFailure:
    """Why a load or call did not produce a value (built by keyword only).

    ``kind`` (a :class:`FailureKind`; a string given becomes its member):
    ``"exception"`` (the student's code raised), ``"not_implemented"``
    (it raised NotImplementedError), ``"missing"`` (no such function),
    ``"unencodable"`` (the result cannot be sent), ``"timeout"``, ``"crash"``
    (the process died), ``"malformed"`` (a reply broke the protocol),
    ``"oversize"`` (a reply larger than its ``protocol.ReplyBudget``, refused unread),
    ``"harness"`` (a grader harness failed: our bug), ``"request"`` (a bad
    request: our bug) or ``"not_loaded"`` (the submission failed to load).
    ``type``/``message``: the exception's class name and text (student-facing);
    ``traceback``: frames in the submission's file only; ``output``: the end of
    what the worker printed meanwhile.
    """

    kind: FailureKind
    type: str
    message: str
    traceback: str = ""
    output: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", FailureKind(self.kind))


@dataclass(frozen=True)
class LoadResult:
    """Outcome of importing the submission: public ``names`` or the ``error``."""

    ok: bool
    names: frozenset[str] = frozenset()
    error: WorkerFailure | None = None
    output: str = ""


@dataclass(frozen=True)
class CallResult:
    """Outcome of one call.

    On success: ``value`` (a decoded value tree), ``traces`` (one
    ``CallTrace.to_dict()`` dict per pallas_call, in order), ``returned_arg``
    (per top-level element of the value, or for the value itself when it is not
    a tuple/list: the index of the positional argument it is, else None),
    ``sources`` (the same shape: the index in ``traces`` of the pallas_call whose
    output it is, else None; see the worker's ``_source``) and ``args_after``
    (the positional args after the call, when requested).
    On failure: ``error``. ``output`` is the end of what the call printed.
    """

    ok: bool
    value: Any = None
    traces: tuple[dict[str, Any], ...] = ()
    returned_arg: tuple[int | None, ...] = ()
    sources: tuple[int | None, ...] = ()
    args_after: tuple[Any, ...] | None = None
    error: WorkerFailure | None = None
    output: str = ""
    seconds: float = 0.0


def _safe_module_name(path: Path, module_name: str | None) -> str:
    name = module_name or path.stem
    if (
        not name.isidentifier()
        or name in _RESERVED_MODULE_NAMES
        or name in sys.stdlib_module_names
        or name.startswith("_")
    ):
        return "submission"
    return name


class Worker:
    """One untrusted worker process for one submission file.

    ``Worker(path, timeout=10.0)`` prepares private temp directories; the
    process starts on ``start()`` (or entering ``with``), which also loads the
    submission. ``call`` never raises for anything the submission does: a
    timeout, crash or malformed reply kills the process group, and the next
    call restarts it and re-loads the submission. Raises ``FileNotFoundError``
    when the submission does not exist, ``graders.safety.submission_files.RefusedFile`` (an
    ``OSError``) when it is not a regular file or is larger than the submission limit
    (the file is read once, bounded, into the snapshot every start runs), and
    ``RuntimeError`` when numpy cannot be found. ``source`` (bytes): what to run instead of
    reading ``path`` (the grader passes the bytes it has statically checked, or a
    notebook's converted module; ``path`` then only names the file). Every load and call
    carries a seed (``call_seed``) that the worker applies to the submission's randomness.
    ``close()`` (or leaving ``with``) kills the process and removes every temp
    directory.
    """

    def __init__(
        self,
        submission_path: str | Path,
        *,
        timeout: float = 10.0,
        module_name: str | None = None,
        startup_timeout: float = STARTUP_TIMEOUT,
        python: str | None = None,
        sandbox_level: str | None = None,
        policy: bool | None = None,
        tree_level: str | None = None,
        source: bytes | None = None,
    ) -> None:
        #: Whether the worker compiles and runs the submission under the submission policy
        #: (``graders.worker.policy``); off only through ``PALLAS_LAB_POLICY=off``.
        self.policy = policy_enabled() if policy is None else bool(policy)
        self.submission_path = Path(submission_path).resolve()
        if source is None and not self.submission_path.is_file():
            raise FileNotFoundError(f"no submission file at {submission_path}")
        # Every (re)start runs this snapshot: ``source`` when the grader has read and
        # checked the file already (the bytes it checked are the bytes that run), else read
        # here as the grader reads student files: a regular file, never past its limit
        # (graders.safety.submission_files).
        self._source = (submission_files.read_bytes(self.submission_path) if source is None
                        else bytes(source))
        #: The SHA-256 of what the worker runs: the file part of every call's seed.
        self.source_digest = hashlib.sha256(self._source).digest()
        self.module_name = _safe_module_name(self.submission_path, module_name)
        self.timeout = float(timeout)
        self.startup_timeout = float(startup_timeout)
        self.python = python or sys.executable
        #: "namespace", "uid" or "process": see ``graders.worker.sandbox`` and docs/security.md.
        self.sandbox_level = sandbox_level or sandbox.choose_level(self.python)
        if self.sandbox_level not in sandbox.LEVELS:
            raise ValueError(f"sandbox_level={sandbox_level!r} is not one of {sandbox.LEVELS}")
        #: How the submission's process tree is limited: one of ``sandbox.TREE_LEVELS``.
        self.tree_level = tree_level or sandbox.choose_tree_level(self.sandbox_level)
        if self.tree_level not in sandbox.TREE_LEVELS:
            raise ValueError(f"tree_level={tree_level!r} is not one of {sandbox.TREE_LEVELS}")
        self.memory_bytes = sandbox.tree_memory_bytes()
        self._cgroup: cgroups.Cgroup | None = None
        if self.tree_level.startswith("cgroup"):
            self._cgroup = self._make_cgroup()
        self._limits = sandbox.limits_for(self.tree_level)
        self._oom_kills = 0
        self.restarts = 0
        self.load_result: LoadResult | None = None
        self._conversation: Conversation | None = None
        self._spawned = 0
        self._loaded_once = False
        self._closed = False
        self._mark = 0  # output offset where the current exchange began
        self._live: dict[str, subprocess.Popen[bytes] | None] = {"process": None}
        self._base = Path(tempfile.mkdtemp(prefix="pallas-lab-"))
        self._finalizer = weakref.finalize(self, cleanup, self._live, self._base, self._cgroup)
        #: The batch's worker zygote (``graders.worker.zygote``) this worker forks from, or
        #: None: then each (re)start execs a new interpreter.
        self._zygote = zygote.current() if self.sandbox_level == "namespace" else None
        self._tmp_paths = [str(self._base)]
        if self._zygote is not None:
            self.libdir = Path(self._zygote["libdir"])
            self._binds = list(self._zygote["binds"])
            self._tmp_paths.append(str(self.libdir.parent))
        else:
            self._build_own_libdir()
        self.workdir = self._base / "work"
        self.logdir = self._base / "log"
        self.logdir.mkdir(mode=0o700)
        if self.sandbox_level == "uid":  # the worker's own uid must reach lib/ and work/
            self._base.chmod(0o711)

    def _build_own_libdir(self) -> None:
        try:
            self.libdir = self._base / "lib"
            self._binds = build_libdir(
                self.libdir, mount_points=self.sandbox_level == "namespace"
            )
        except BaseException:
            self.close()
            raise

    def _make_cgroup(self) -> cgroups.Cgroup | None:
        """This worker's cgroup, or None (and ``tree_level`` one process per worker, or none
        for a root worker) when it cannot be made after all."""
        hierarchy = cgroups.available()
        if hierarchy is not None:
            try:
                return cgroups.create(hierarchy, memory_bytes=self.memory_bytes,
                                      pids=sandbox.TREE_PIDS)
            except OSError:
                pass
        self.tree_level = "none" if self.sandbox_level == "process" and os.geteuid() == 0 \
            else sandbox.SINGLE_PROCESS
        return None

    @property
    def isolation(self) -> str:
        """The sandbox level and how the process tree is limited, e.g. "namespace, cgroup v1"
        (what reports record; ``sandbox.describe`` says when it is weaker than the full one)."""
        return f"{self.sandbox_level}, {self.tree_level}"

    # -- context manager -------------------------------------------------------------------------

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The running worker's process id (None when no process runs)."""
        return self._conversation.process.pid if self._conversation else None

    def close(self) -> None:
        """Stop the worker (EOF, then SIGKILL to its process group) and delete the temp dirs."""
        self._closed = True
        conversation, self._conversation = self._conversation, None
        if conversation is not None:
            process = conversation.process
            try:
                if process.stdin is not None:
                    process.stdin.close()
                # an idle worker exits on EOF at once; one still running the student's code
                # (a batch being stopped mid-call) is killed without waiting out its call
                process.wait(timeout=CLOSE_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
            kill_group(process)
        self._live["process"] = None
        self._finalizer()

    # -- process lifecycle -----------------------------------------------------------------------

    def _command(self) -> list[str]:
        """The command line that starts the worker at this worker's sandbox level."""
        if self.sandbox_level == "process":
            return [self.python, "-I", "-S", "-B", str(self.libdir / "pallas_lab_worker.py")]
        plan_path = self.logdir / f"plan-{self._spawned}.json"
        plan_path.write_text(self._plan().to_json(), encoding="utf-8")
        return [self.python, "-I", "-S", "-B", str(WORKER_DIR / "sandbox.py"), str(plan_path)]

    def _plan(self) -> sandbox.SandboxPlan:
        """The sandbox of this (re)start: a fresh root folder, this worker's binds."""
        python, prefix = interpreter()
        root = self._base / f"root-{self._spawned}"
        root.mkdir(exist_ok=True)
        plan = sandbox.SandboxPlan(
            level=self.sandbox_level,
            root=str(root),
            argv=[python, "-I", "-S", "-B", str(self.libdir / "pallas_lab_worker.py")],
            env=worker_env(self.workdir),
            workdir=str(self.workdir),
            files={f"{self.module_name}.py": str(self.workdir / f"{self.module_name}.py")},
            ro_binds=[(prefix, prefix), (str(self.libdir), str(self.libdir)), *self._binds],
            masks=site_package_dirs(),
            limits=self._limits,
            cgroup_procs=self._cgroup.procs_files if self._cgroup is not None else [],
        )
        return plan

    def _fork_from_zygote(self, output_fd: int) -> ForkedProcess | None:
        """A worker forked from the batch's zygote, or None (the zygote is gone: from
        now on this worker execs its own, with a library directory of its own)."""
        if self._zygote is None:
            return None
        try:
            return zygote.spawn(self._plan(), output_fd)
        except zygote.ZygoteUnavailable:
            self._zygote = None
            self._build_own_libdir()
            return None

    def _popen(self, output_path: Path, use_prlimit: bool,
               in_launcher: bool) -> subprocess.Popen[bytes]:
        """Start the worker by exec: the launcher (or, at the process level, the worker
        program itself) in a new session, stderr appended to ``output_path``."""
        command = self._command()
        with open(output_path, "ab") as output:
            return subprocess.Popen(
                command,
                cwd=self.workdir,
                env=worker_env(self.workdir),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=output,
                start_new_session=True,
                close_fds=True,
                preexec_fn=None if use_prlimit or in_launcher
                else functools.partial(apply_limits, None, self._limits),
            )

    def _spawn(self) -> WorkerFailure | None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir.mkdir()
        (self.workdir / f"{self.module_name}.py").write_bytes(self._source)
        self._spawned += 1
        for old in self.logdir.glob("output-*.txt"):  # keep at most one capped output file
            old.unlink(missing_ok=True)
        output_path = self.logdir / f"output-{self._spawned}.txt"
        use_prlimit = hasattr(__import__("resource"), "prlimit")
        in_launcher = self.sandbox_level != "process"  # the launcher applies the limits
        key = secrets.token_bytes(protocol.KEY_BYTES)
        if self._cgroup is not None:
            self._cgroup.kill_all()  # nothing of an earlier process survives into this one
            self._oom_kills = self._cgroup.oom_kills()
        try:
            with open(output_path, "ab") as output:
                process = self._fork_from_zygote(output.fileno())
            if process is None:
                process = self._popen(output_path, use_prlimit, in_launcher)
        except OSError as exc:
            return WorkerFailure(kind=FailureKind.CRASH, type="",
                                 message=f"the worker could not be started: {exc}")
        self._live["process"] = process
        if not in_launcher:
            # Before the hello: the worker program runs no student code until it has it.
            try:
                if use_prlimit:
                    apply_limits(process.pid, self._limits)
                if self._cgroup is not None:
                    self._cgroup.join(process.pid)
            except (OSError, ValueError) as exc:
                self._conversation = Conversation(process, output_path, key)
                return self._fail("crash", f"the worker could not be limited ({exc})")
        self._conversation = Conversation(process, output_path, key)
        self._mark = 0
        deadline = time.monotonic() + self.startup_timeout
        try:
            # The key goes first, before any student code exists in the worker.
            self._send(protocol.pack_message({"op": "hello", "key": key.hex()}), deadline)
            ready = self._receive(deadline, protocol.ReplyBudget.small())
        except TimeoutError:
            return self._fail("crash", "the worker did not start in time")
        except EOFError:
            return self._fail("crash", "the worker could not start")
        except Malformed as exc:
            return self._fail("malformed", f"the worker's first message is malformed: {exc}")
        if not (isinstance(ready, dict) and ready.get("ok") is True and ready.get("ready") is True):
            return self._fail("malformed", "the worker's first message is not 'ready'")
        return None

    def _fail(self, kind: str, message: str) -> WorkerFailure:
        """Kill the current process and describe why (with the end of its output)."""
        conversation, self._conversation = self._conversation, None
        output = ""
        if conversation is not None:
            process = conversation.process
            if kind == "crash":
                try:
                    process.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
                message = f"{message}: {describe_exit(process.returncode)}"
                if self._cgroup is not None and self._cgroup.oom_kills() > self._oom_kills:
                    message += (" (the kernel stopped the submission's processes: together "
                                "they used more than their "
                                f"{protocol.fmt_bytes(self.memory_bytes)} of memory)")
            kill_group(process)
            if self._cgroup is not None:
                self._cgroup.kill_all()  # children that left the process group, too
            self._live["process"] = None
            output = self._read_output(conversation.output_path, self._mark)
        return WorkerFailure(kind=kind, type="", message=message, output=output)

    def start(self) -> LoadResult:
        """Start the worker (if needed) and import the submission; returns the load outcome.

        Raises nothing for anything the submission does; a process that cannot
        start gives a failed ``LoadResult`` of kind ``"crash"``. Raises
        ``RuntimeError`` after ``close()``.
        """
        if self._closed:
            raise RuntimeError("this worker has been closed")
        if self._conversation is not None and self.load_result is not None:
            return self.load_result
        failure = self._spawn()
        if failure is not None:
            self.load_result = LoadResult(False, error=failure, output=failure.output)
            return self.load_result
        self.load_result = self._load()
        return self.load_result

    def _load(self) -> LoadResult:
        start = self._output_size()
        request = {"op": "load", "module": self.module_name, "policy": self.policy,
                   "seed": call_seed(self.source_digest, LOAD_CHECK, 0)}
        try:
            reply = self._exchange(request, self.timeout, protocol.ReplyBudget.small(),
                                   "the reply to loading the file")
        except _Failed as failed:
            return LoadResult(False, error=failed.failure, output=failed.failure.output)
        output = self._output_since(start)
        if reply.get("ok") is True:
            names = reply.get("names")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                failure = self._fail("malformed", "the load reply has no list of names")
                return LoadResult(False, error=failure)
            self._loaded_once = True
            return LoadResult(True, frozenset(names), output=output)
        return LoadResult(False, error=self._error_from(reply, output), output=output)

    # -- calls -----------------------------------------------------------------------------------

    def call(
        self,
        func: str,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        harness: str | None = None,
        return_args: bool = False,
        timeout: float | None = None,
        reply_bytes: int = 0,
        budget: protocol.ReplyBudget | None = None,
        seed: int | None = None,
    ) -> CallResult:
        """Run ``func(*args, **kwargs)`` (or through ``harness``) in the worker.

        ``args`` is a tuple and ``kwargs`` a dict of protocol values; ``harness``
        names a module of ``graders/harnesses/`` whose function ``func`` is run
        as ``func(submission_module, *args, **kwargs)``; ``timeout`` in
        seconds defaults to the worker's. The reply must fit ``budget``, by
        default ``protocol.ReplyBudget.for_request`` of this request plus
        ``reply_bytes`` of arrays the caller expects beyond it; a larger reply
        is refused unread (kind ``"oversize"``) and the worker restarted.
        ``seed`` (``call_seed``; default: that of call 0 outside any check) seeds every
        source of randomness the submission can reach before it runs.
        Returns a ``CallResult``; raises ``protocol.EncodeError`` only when the
        arguments cannot be sent (a grader bug).
        """
        began = time.monotonic()
        request = {
            "op": "call",
            "func": func,
            "args": tuple(args),
            "kwargs": dict(kwargs or {}),
            "harness": harness,
            "return_args": bool(return_args),
            "seed": call_seed(self.source_digest, "", 0) if seed is None else int(seed),
        }
        packed = protocol.pack_message(request)  # EncodeError here is the grader's bug
        if budget is None:
            budget = protocol.ReplyBudget.for_request(
                packed, protocol.count_arrays((request["args"], request["kwargs"])),
                expected_array_bytes=reply_bytes)
        load = self._ensure_running()
        if not load.ok:
            assert load.error is not None
            error = load.error
            if error.kind not in ("timeout", "crash", "malformed"):
                error = WorkerFailure(kind=FailureKind.NOT_LOADED, type=error.type,
                                      message=error.message, traceback=error.traceback)
            return CallResult(False, error=error, seconds=time.monotonic() - began)
        start = self._output_size()
        try:
            reply = self._exchange(packed, self.timeout if timeout is None else timeout,
                                   budget, f"the reply of {func}")
        except _Failed as failed:
            return CallResult(
                False, error=failed.failure, output=failed.failure.output,
                seconds=time.monotonic() - began,
            )
        output = self._output_since(start)
        seconds = time.monotonic() - began
        if reply.get("ok") is not True:
            return CallResult(False, error=self._error_from(reply, output), output=output,
                              seconds=seconds)
        try:
            result = validate_call_reply(reply, len(request["args"]), return_args, budget)
        except Refused as exc:
            failure = self._fail("oversize", f"the reply of {func} was refused: {exc}")
            return CallResult(False, error=failure, output=output, seconds=seconds)
        except Malformed as exc:
            failure = self._fail("malformed", f"the worker's reply is malformed: {exc}")
            return CallResult(False, error=failure, output=output, seconds=seconds)
        return CallResult(True, *result, output=output, seconds=seconds)

    def _ensure_running(self) -> LoadResult:
        if self._conversation is not None and self.load_result is not None:
            return self.load_result
        if not self._loaded_once and self.load_result is not None:
            return self.load_result  # the first load failed: never retried
        if self._spawned:
            if self.restarts >= MAX_RESTARTS:
                failure = WorkerFailure(
                    kind=FailureKind.CRASH, type="",
                    message=f"the worker was restarted {MAX_RESTARTS} times; giving up")
                return LoadResult(False, error=failure)
            self.restarts += 1
        self.load_result = None
        return self.start()

    # -- wire ------------------------------------------------------------------------------------

    def _exchange(self, request: dict[str, Any] | bytes, timeout: float,
                  budget: protocol.ReplyBudget, what: str = "the reply") -> dict[str, Any]:
        """Send one request and wait for its reply, refused unread beyond ``budget``
        (``what`` names it in that message); raises ``_Failed`` (process then killed)."""
        if self._conversation is None:
            raise _Failed(WorkerFailure(kind=FailureKind.CRASH, type="",
                                        message="the worker is not running"))
        data = request if isinstance(request, bytes) else protocol.pack_message(request)
        self._mark = self._output_size()
        deadline = time.monotonic() + timeout
        try:
            self._send(data, deadline)
            reply = self._receive(deadline, budget)
        except TimeoutError:
            raise _Failed(self._fail("timeout", f"did not finish within {timeout:g} s")) from None
        except EOFError:
            raise _Failed(self._fail("crash", "the worker stopped")) from None
        except Refused as exc:
            raise _Failed(self._fail("oversize", f"{what} was refused: {exc}")) from None
        except Malformed as exc:
            raise _Failed(self._fail("malformed", f"the worker's reply is malformed: {exc}")) \
                from None
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise _Failed(self._fail("malformed", "the worker's reply is not a status dict"))
        return reply

    def _send(self, data: bytes, deadline: float) -> None:
        assert self._conversation is not None
        stdin = self._conversation.process.stdin
        assert stdin is not None
        fd = stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            _, writable, _ = select.select([], [fd], [], remaining)
            if not writable:
                continue
            try:
                written = os.write(fd, view[: 1 << 16])
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise EOFError from None
            view = view[written:]

    def _receive(self, deadline: float, budget: protocol.ReplyBudget) -> Any:
        """Read one signed reply: a protocol frame, then its HMAC tag.

        The prefix is checked against ``budget`` before the rest is read, and the
        frame's arrays before they are decoded. Raises ``TimeoutError``,
        ``EOFError``, ``Refused`` (over the budget) or ``Malformed`` (bad
        framing, or a tag that does not verify: bytes the worker program did not
        sign, e.g. written to the channel by the submission).
        """
        conversation = self._conversation
        assert conversation is not None
        stdout = conversation.process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        buffer = bytearray()
        needed = protocol.PREFIX_SIZE
        framed = False
        while len(buffer) < needed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(fd, min(1 << 20, needed - len(buffer)))
            if not chunk:
                raise EOFError
            buffer += chunk
            if not framed and len(buffer) >= protocol.PREFIX_SIZE:
                framed = True
                try:
                    needed = protocol.frame_size(bytes(buffer[: protocol.PREFIX_SIZE]), budget)
                except protocol.ReplyRefused as exc:
                    raise Refused(str(exc)) from None
                except protocol.ProtocolError as exc:
                    raise Malformed(str(exc)) from None
                needed += protocol.TAG_BYTES
        frame, tag = bytes(buffer[: -protocol.TAG_BYTES]), bytes(buffer[-protocol.TAG_BYTES:])
        expected = protocol.reply_tag(conversation.key, conversation.replies, frame)
        if not hmac.compare_digest(tag, expected):
            raise Malformed("a reply that the worker program did not sign (forged or corrupted)")
        conversation.replies += 1
        try:
            return protocol.unpack_message(frame, budget)
        except protocol.ReplyRefused as exc:
            raise Refused(str(exc)) from None
        except protocol.ProtocolError as exc:
            raise Malformed(str(exc)) from None

    # -- output ----------------------------------------------------------------------------------

    def _output_size(self) -> int:
        if self._conversation is None:
            return 0
        try:
            return self._conversation.output_path.stat().st_size
        except OSError:
            return 0

    def _output_since(self, start: int) -> str:
        if self._conversation is None:
            return ""
        return self._read_output(self._conversation.output_path, start)

    def _read_output(self, path: Path, start: int) -> str:
        try:
            with open(path, "rb") as handle:
                end = handle.seek(0, os.SEEK_END)
                begin = max(start, end - OUTPUT_TAIL_BYTES)
                handle.seek(begin)
                data = handle.read(OUTPUT_TAIL_BYTES)
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace")
        if begin > start:
            text = "..." + text
        return self.scrub(text)

    def scrub(self, text: str) -> str:
        """Remove what differs between runs from student-facing text: this worker's temp
        paths and object addresses (so the same submission gets the same feedback)."""
        text = text.replace(f"{self.workdir}{os.sep}", "")
        for path in self._tmp_paths:
            text = text.replace(path, "<tmp>")
        return _ADDRESS.sub(" at 0x...", text)

    def _error_from(self, reply: dict[str, Any], output: str) -> WorkerFailure:
        error = reply.get("error")
        if not isinstance(error, dict):
            return self._fail("malformed", "an error reply without an error record")
        fields = [error.get(key) for key in ("kind", "type", "message", "traceback")]
        if not all(isinstance(value, str) for value in fields):
            return self._fail("malformed", "an error reply with a malformed error record")
        kind, type_name, message, traceback_text = fields
        if kind not in WORKER_KINDS:
            return self._fail("malformed", f"an error reply of unknown kind {kind!r}")
        return WorkerFailure(kind=kind, type=type_name, message=self.scrub(message),
                             traceback=self.scrub(traceback_text), output=output)


class _Failed(Exception):
    def __init__(self, failure: WorkerFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


