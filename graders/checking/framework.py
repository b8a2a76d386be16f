"""What hidden checks are written against: ``@check``, ``Session``, and (from the one
check framework, ``graders.checking.registry``) ``Check``, ``CheckFailure``, ``run_property``.

A hidden check is a function registered with ``@check(assignment, task, points, name)``;
it receives a ``Session`` for one submission, calls the student's functions
through it (each call runs in the untrusted worker, see ``graders/worker/``),
compares the replies with the reference, and raises ``CheckFailure`` to fail.
Hypothesis properties run through ``run_property`` under the deterministic
``GRADING_SETTINGS`` profile (docs/grading-design.md, "Trusted and untrusted code": the same
submission graded twice gives the same scores and feedback).
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graders.checking.registry import (
    EXPLORATORY_SETTINGS,
    GRADING_SETTINGS,
    IN_PROPERTY,
    REGISTRY,
    Check,
    CheckFailure,
    PropertyAbort,
    StudentRaised,
    Visibility,
    register,
    registered,
    run_property,
)
from graders.checking.status import FAILURE_STATUSES
from graders.checking.values import describe_value

if TYPE_CHECKING:
    from graders.course.records import Assignment
    from graders.worker.client import CallResult, Worker, WorkerFailure

__all__ = [
    "EXPLORATORY_SETTINGS", "GRADING_SETTINGS", "REGISTRY", "RETRY_TIMEOUT", "Check",
    "CheckFailure", "PropertyAbort", "Reply", "Session", "StudentRaised", "check", "describe_value",
    "load_checks", "run_property",
]

STATUSES = FAILURE_STATUSES

#: Seconds a call gets once the same function has run out of a full call timeout in this
#: submission (a loop that never ends then costs the full timeout once and this on every
#: later check that calls it; an honest call takes milliseconds). At most a third of the
#: call timeout (``Session.retry_timeout``): 1 s for the bundled samples' 3 s.
RETRY_TIMEOUT = 2.0


def check(
    assignment: str, task: str, points: float, name: str
) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    """Decorator registering ``fn(session)`` as a hidden ``Check`` worth ``points``
    (``graders.checking.registry.register`` with ``Visibility.HIDDEN``).

    Checks keep their definition order. Re-registering the same function (a
    module reload) replaces the old entry; a different function with the same
    assignment, task and name raises ``ValueError``, as do a task id not of
    the form ``N.M`` and non-positive points. Returns ``fn`` unchanged.
    """
    return register(assignment, task, name, visibility=Visibility.HIDDEN, points=points)


def load_checks(assignment: str) -> list[Check]:
    """Import the hidden checks module of ``assignment`` and return its hidden checks, in
    order.

    The module comes from the assignment's lab (``graders.labs.<stem>.checks``; an
    assignment without a package uses whatever is already registered). Raises
    ``KeyError`` for an unknown assignment and lets the module's ``ImportError``
    through (a grader bug).
    """
    from graders.course.catalog import get_assignment

    module = get_assignment(assignment).checks_module
    if module is not None:
        importlib.import_module(module)
    return registered(assignment, Visibility.HIDDEN)


# -- describing inputs: graders/checking/values.py (the one formatter) ---------------------

# -- replies and the session -------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful call of a student function.

    ``value``: the returned value tree (numpy arrays, tuples stay tuples).
    ``traces``: one ``pallas_sim.tracing.CallTrace`` per pallas_call, in order.
    ``returned_arg``: for a returned array, the index of the positional argument
    it is (``is`` identity in the worker) or None; for a returned tuple/list,
    a tuple with that entry per element (None for non-arrays).
    ``sources``: per returned top-level value (the value itself when it is not a
    tuple/list), the index in ``traces`` of the pallas_call whose output it is (the
    array the call returned, a view of it or an equal copy, from a kernel the
    submission defined), else None.
    ``args_after``: the positional args after the call (``return_args=True``), else None.
    ``stdout_tail``: the end (at most 4 KiB) of what the call printed.
    """

    func: str
    value: Any
    traces: list[Any]
    returned_arg: int | None | tuple[int | None, ...]
    args_after: tuple[Any, ...] | None
    stdout_tail: str
    seconds: float = 0.0
    sources: tuple[int | None, ...] = ()

    def own_call(self, element: int | None = None) -> Any:
        """The ``CallTrace`` of the pallas_call whose output the returned array is
        (``element``: which item of a returned tuple; None: the value itself).

        Raises ``CheckFailure`` when the function made no pallas_call, or when what
        it returned is not the output of one it made (computed another way, e.g.
        with NumPy next to a decoy call): a wrapper's result counts only when its
        own pallas_call computed it.
        """
        if element is None:
            index = self.sources[0] if len(self.sources) == 1 else None
        else:
            index = self.sources[element] if 0 <= element < len(self.sources) else None
        if index is not None and 0 <= index < len(self.traces):
            return self.traces[index]
        if not self.traces:
            raise CheckFailure(
                f"{self.func} made no pallas_call",
                expected="the result of pl.pallas_call",
                got="a result computed without any pallas_call",
                hint="the task is to write the kernel and call it through pl.pallas_call; "
                     "plain NumPy earns no points here")
        arg = self.returned_arg if element is None else (
            self.returned_arg[element] if isinstance(self.returned_arg, tuple)
            and 0 <= element < len(self.returned_arg) else None)
        if isinstance(arg, int):  # the worker saw the very argument object come back
            raise CheckFailure(
                f"{self.func} returned its argument {arg} itself, not its pallas_call's result",
                expected="the array pl.pallas_call returned",
                got=f"argument {arg}, unchanged",
                hint="JAX arrays are immutable: pl.pallas_call never updates its inputs, not "
                     "even one named in input_output_aliases; return the array the call "
                     "returns")
        raise CheckFailure(
            f"what {self.func} returned is not the output of its pallas_call",
            expected="the array pl.pallas_call returned (or a view of it)",
            got=f"an array computed another way, next to {len(self.traces)} pallas_call(s) "
                "whose outputs it is not",
            hint="return what pl.pallas_call returns; a kernel of your own must compute it")

    @property
    def trace(self) -> Any:
        """The last pallas_call's ``CallTrace``; ``CheckFailure`` when the call made none."""
        if not self.traces:
            raise CheckFailure(
                f"{self.func} did not run a pallas_call",
                expected="one pl.pallas_call",
                got="no pallas_call",
            )
        return self.traces[-1]


#: Most grid dimensions a recorded pallas_call may have (the course's grids have 1-3).
MAX_GRID_DIMS = 16


def _to_call_traces(records: tuple[dict[str, Any], ...]) -> list[Any]:
    """``CallTrace``s of a reply's records, each consistent with itself (checks index the
    block indices of a step without guarding): raises ``ValueError`` (or the
    ``from_dict`` errors) for a record the simulator cannot have produced."""
    try:
        from pallas_sim.extend import CallTrace
    except ImportError:  # the simulator is not there yet: keep the plain records
        return list(records)
    calls = [CallTrace.from_dict(record) for record in records]
    for call in calls:
        if len(call.grid) > MAX_GRID_DIMS:  # before multiplying thousands of big ints
            raise ValueError(f"pallas_call {call.name[:40]!r} records a grid of "
                             f"{len(call.grid)} dimensions")
        steps = 1
        for size in call.grid:
            steps *= size
        if call.num_steps != steps or min(call.grid, default=0) < 0:
            raise ValueError(f"pallas_call {call.name[:40]!r} records {call.num_steps} steps "
                             f"for the grid {call.grid}")
        for op in call.operands:
            if op.role not in ("in", "out"):
                continue
            if op.block_indices.shape != (steps, len(op.shape)) or \
                    op.kernel_reads.size not in (0, steps):
                raise ValueError(
                    f"operand {op.name[:40]!r} of pallas_call {call.name[:40]!r} records block "
                    f"indices of shape {op.block_indices.shape} and {op.kernel_reads.size} "
                    f"read counts for {steps} steps of an array of {len(op.shape)} dims")
    return calls


#: What the worker's output file may hold (``graders.worker.sandbox.LIMITS``,
#: RLIMIT_FSIZE): a bigger print fails with ``OSError: [Errno 27] File too large``.
OUTPUT_LIMIT_TEXT = "16 MiB"


def _output_too_large(error_type: str, message: str) -> bool:
    return error_type == "OSError" and "File too large" in (message or "")


def raised_text(what: str, error_type: str, message: str) -> str:
    """``"f raised KeyError: 'b'"``; an ``OSError: File too large`` (the worker's output
    limit, hit by printing too much) is said in words instead."""
    if _output_too_large(error_type, message):
        return (f"{what} printed more than the {OUTPUT_LIMIT_TEXT} of output a submission may "
                "write, so the print failed (OSError: File too large)")
    return f"{what} raised {error_type}{f': {message}' if message else ''}"


def raised_hint(error_type: str, message: str) -> str | None:
    """A hint for ``raised_text``'s output-limit case (None otherwise)."""
    if _output_too_large(error_type, message):
        return "remove the large print, or print a summary (a shape, a few values) instead"
    return None


class Session:
    """One submission file, given to every check (``check.run(session)``).

    ``stem`` (the record's, e.g. ``"<stem>"``) and ``assignment`` (``"a1"``) name
    it; ``file_name`` is what the student knows it as. ``call``/``invoke`` run
    a student function in the worker and return a ``Reply``, or raise
    ``CheckFailure`` (never anything else). Within one check (between
    ``begin_check`` calls) a function that was not started, timed out or
    crashed fails again at once without a worker round trip; once a function has run
    out of a full call timeout, its calls in later checks get ``RETRY_TIMEOUT`` seconds.
    ``why_unbound``
    (a notebook's ``ConvertedNotebook.why_unbound``) explains a missing function
    or a ``NameError`` whose name was bound only by code set aside (a
    disallowed import and what depends on it); ``in_cells`` (a notebook's
    ``ConvertedNotebook.frames_in_cells``) gives the student's tracebacks the
    notebook's cells and lines.
    """

    def __init__(
        self,
        *,
        stem: str,
        assignment: str,
        worker: Worker | None,
        load_failure: CheckFailure | None = None,
        names: frozenset[str] = frozenset(),
        file_name: str | None = None,
        why_unbound: Callable[[str], str | None] | None = None,
        in_cells: Callable[[str], str] | None = None,
    ) -> None:
        self.stem = stem
        self._why_unbound = why_unbound
        self._in_cells = in_cells
        self.assignment = assignment
        self.file_name = file_name or f"{stem}.py"
        self.names = names
        self.round_trips = 0
        self._worker = worker
        self._load_failure = load_failure
        self._memo: dict[str, PropertyAbort] = {}
        self._timed_out: set[str] = set()  # functions that ran out of a full call timeout
        self.current_check: Check | None = None
        self._calls_in_check = 0  # the index of the next call in call_seed
        self._deadline: float | None = None
        self._budget = (0.0, "")
        #: The hex SHA-256 of the file's bytes as the session read them (what is graded;
        #: "" when the file was not read): set by ``graders.grading.session.open_session``.
        self.file_sha256 = ""
        if worker is None and load_failure is None:
            raise ValueError("a Session needs a worker or a load failure")


    @classmethod
    def failed(cls, assignment: Assignment, failure: CheckFailure, file_name: str) -> Session:
        """The session of a file that never reached a worker (a link, an unreadable or
        empty file, a notebook that does not convert, a static-check refusal, an import
        that failed): every call raises ``failure``, so every check says why."""
        return cls(stem=assignment.stem, assignment=assignment.id, worker=None,
                   load_failure=failure, file_name=file_name)
    def set_budget(self, deadline: float, seconds: float, rule: str) -> None:
        """Give the submission a wall-clock budget: every call must end by ``deadline``
        (``time.monotonic()``), ``seconds`` after grading began, ``rule`` saying how it was
        set (e.g. "13 checks x 3 x the 10 s call timeout"). A call is cut to what is left;
        after the deadline every call fails at once with ``budget_failure``."""
        self._deadline = deadline
        self._budget = (seconds, rule)

    @property
    def out_of_budget(self) -> bool:
        """True once the wall-clock budget (``set_budget``) is spent."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    def budget_failure(self, *, ran: bool) -> CheckFailure:
        """The timeout recorded for a check stopped (``ran``) or skipped by the budget."""
        seconds, rule = self._budget
        what = "this check was stopped" if ran else "this check was not run"
        return CheckFailure(
            f"grading of {self.file_name} stopped: it used its whole wall-clock budget of "
            f"{seconds:g} s ({rule}); {what}",
            status="timeout",
            hint="every call of your functions should take far less than the timeout; "
                 "a slow call costs grading time for every input a check draws",
        )

    @property
    def isolation(self) -> str:
        """The worker's sandbox level and tree limits (``Worker.isolation``), "" without one."""
        return getattr(self._worker, "isolation", "") if self._worker is not None else ""

    @property
    def load_failure(self) -> CheckFailure | None:
        """Why the submission cannot be run (static check or import), else None."""
        return self._load_failure

    def begin_check(self, check: Check | None) -> None:
        """Start a new check: forget the previous check's memoized failures and count its
        calls from 0 (each call's randomness is seeded by the file, the check and that
        count: ``call_seed``)."""
        self.current_check = check
        self._calls_in_check = 0
        self._memo.clear()

    def call_seed(self) -> int:
        """The seed of the next call sent to the worker (``graders.worker.client.call_seed``
        of the file's SHA-256, ``"<assignment>/<task>/<check name>"`` and the call's index
        in the check), counted: the same file gets the same draws in every grade."""
        from graders.worker.client import call_seed

        check = self.current_check
        name = "" if check is None else f"{check.assignment}/{check.task}/{check.name}"
        index, self._calls_in_check = self._calls_in_check, self._calls_in_check + 1
        return call_seed(getattr(self._worker, "source_digest", b""), name, index)

    def has(self, func: str) -> bool:
        """True when the loaded submission defines a public name ``func``."""
        return self._load_failure is None and func in self.names

    def call(self, func: str, /, *args: Any, **kwargs: Any) -> Reply:
        """``invoke(func, args, kwargs)`` with the default timeout, no harness."""
        return self.invoke(func, args, kwargs)

    def invoke(
        self,
        func: str,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        harness: str | None = None,
        return_args: bool = False,
        timeout: float | None = None,
        reply_bytes: int = 0,
    ) -> Reply:
        """Run the student's ``func(*args, **kwargs)`` in the worker and return its ``Reply``.

        With ``harness="a1"`` the worker runs that lab's ``hidden/harness.py``'s
        ``func(submission_module, *args, **kwargs)`` instead (``func`` must
        still be defined by the submission). ``return_args`` asks for the
        positional args after the call; ``timeout`` (s) overrides the worker's.
        The reply may hold what ``protocol.ReplyBudget.for_request`` allows for
        these arguments plus ``reply_bytes`` of arrays that this check expects
        a correct result to need beyond that (an output larger than the
        inputs); a larger reply is refused unread (status "error").
        Raises ``CheckFailure``: the submission did not pass the static check
        or load (status "error"); ``func`` is missing; the student raised
        (type, message, trimmed traceback; status "not started" for
        NotImplementedError); timeout (status "timeout"); crash or malformed
        reply (status "error"); an unsendable result.
        """
        if self._load_failure is not None:
            self._raise(self._load_failure.copy(), with_input=False)
        memo = self._memo.get(func)
        if memo is not None:
            self._raise(memo.failure.copy(input=None), with_input=memo.with_input)
        if func not in self.names:
            self._raise(self._missing(func), with_input=False)
        assert self._worker is not None
        from graders.worker.protocol import ProtocolError

        call_timeout, cut = timeout, False
        limit = timeout if timeout is not None else float(self._worker.timeout)
        retry = self.retry_timeout()
        shortened = func in self._timed_out and limit > retry
        if shortened:
            call_timeout = limit = retry
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                self._remember(func, self.budget_failure(ran=True), with_input=False)
            if remaining < limit:
                call_timeout, cut = remaining, True
        self.round_trips += 1
        try:
            result = self._worker.call(
                func, tuple(args), dict(kwargs or {}), harness=harness,
                return_args=return_args, timeout=call_timeout, reply_bytes=reply_bytes,
                seed=self.call_seed(),
            )
        except ProtocolError as exc:  # our arguments could not be sent: a grader bug
            failure = CheckFailure(
                f"internal grader error: the arguments of {func} cannot be sent ({exc})",
                status="error", internal=True,
            )
            self._raise(failure, with_input=True)
        except (OSError, RuntimeError) as exc:  # the worker could not be (re)started
            failure = CheckFailure(
                f"internal grader error: the worker is unavailable ({exc})",
                status="error", internal=True,
            )
            self._raise(failure, with_input=False)
        if not result.ok:
            assert result.error is not None
            if cut and result.error.kind == "timeout":
                self._remember(func, self.budget_failure(ran=True), with_input=False)
            if result.error.kind == "timeout" and not shortened:
                self._timed_out.add(func)
            self._fail_call(func, result.error, call_timeout if shortened else timeout,
                            earlier=shortened)
        return self._reply(func, result)

    def _reply(self, func: str, result: CallResult) -> Reply:
        try:
            traces = _to_call_traces(result.traces)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError,
                AttributeError) as exc:
            detail = str(exc)[:200]
            failure = CheckFailure(
                f"the trace of {func} could not be read ({type(exc).__name__}: {detail})",
                status="error",
            )
            self._raise(failure, with_input=True)
        returned: int | None | tuple[int | None, ...]
        if isinstance(result.value, tuple | list):
            returned = tuple(result.returned_arg)
        else:
            returned = result.returned_arg[0] if result.returned_arg else None
        return Reply(
            func=func,
            value=result.value,
            traces=traces,
            returned_arg=returned,
            args_after=result.args_after,
            stdout_tail=result.output,
            seconds=result.seconds,
            sources=tuple(result.sources),
        )

    def _fail_call(self, func: str, error: WorkerFailure, timeout: float | None, *,
                   earlier: bool = False) -> None:
        output = error.output or None
        trace = error.traceback or None
        if trace and self._in_cells is not None:
            trace = self._in_cells(trace)
        kind = error.kind
        if kind == "not_implemented":
            message = f": {error.message}" if error.message else ""
            failure = CheckFailure(
                f"{func} is not implemented yet (NotImplementedError{message})",
                status="not started", output=output,
            )
            self._remember(func, failure, with_input=False)
        elif kind == "timeout":
            seconds = timeout if timeout is not None else getattr(self._worker, "timeout", None)
            limit = f" within {seconds:g} s" if seconds is not None else ""
            if earlier:
                limit += (" (it already ran out of the full timeout on an earlier check, so "
                          f"its later calls get {self.retry_timeout():g} s)")
            failure = CheckFailure(
                f"{func} did not finish{limit}",
                status="timeout", output=output,
                hint="look for a loop that never ends (a while loop whose condition never "
                     "changes, or a grid that is far too large)",
            )
            self._remember(func, failure, with_input=True)
        elif kind == "oversize":
            failure = CheckFailure(
                error.message, status="error", output=output,
                hint="return only what the task asks for: a reply is checked against the "
                     "size its inputs allow before the grader reads it",
            )
            self._remember(func, failure, with_input=True)
        elif kind in ("crash", "malformed"):
            what = "crashed the grading process" if kind == "crash" else "broke the reply"
            failure = CheckFailure(
                f"{func} {what}: {error.message}", status="error", output=output
            )
            self._remember(func, failure, with_input=True)
        elif kind == "exception":
            why = self._unbound_name_note(error.type, error.message)
            failure = StudentRaised(
                raised_text(func, error.type, error.message) + why, traceback=trace,
                output=output, hint=raised_hint(error.type, error.message),
                error_type=error.type or "", message=error.message or "",
            )
        elif kind == "missing":
            self._raise(self._missing(func), with_input=False)
        elif kind == "unencodable":
            failure = CheckFailure(error.message, output=output)
        elif kind == "not_loaded":
            failure = CheckFailure(error.message, status="error", traceback=trace)
            self._raise(failure, with_input=False)
        else:  # "harness", "request": the grader's own fault
            detail = f"{error.type}: {error.message}" if error.type else error.message
            failure = CheckFailure(
                f"internal grader error ({kind}): {detail}", status="error", internal=True
            )
            self._raise(failure, with_input=True)
        self._raise(failure, with_input=True)

    def _missing(self, func: str) -> CheckFailure:
        why = self._why_unbound(func) if self._why_unbound is not None else None
        if why is not None:
            return CheckFailure(
                f"function '{func}' was set aside: {why}",
                status="error",
                hint="import only numpy, math, functools, itertools, dataclasses, typing, "
                     "warnings and pallas_sim (from pallas_sim import jax, jnp, pl, pltpu)")
        return CheckFailure(f"function '{func}' is not defined in {self.file_name}",
                            hint="keep the function names and signatures of the handout")

    def retry_timeout(self) -> float:
        """Seconds a function's calls get once it has run out of a full call timeout:
        ``RETRY_TIMEOUT``, or a third of the worker's call timeout when that is less."""
        full = getattr(self._worker, "timeout", None)
        return RETRY_TIMEOUT if full is None else min(RETRY_TIMEOUT, float(full) / 3)

    def _unbound_name_note(self, kind: str, message: str) -> str:
        """For ``NameError: name 'x' is not defined`` where x was set aside: why."""
        found = re.fullmatch(r"name '(\w+)' is not defined", message or "")
        if kind != "NameError" or found is None or self._why_unbound is None:
            return ""
        why = self._why_unbound(found.group(1))
        return f" (set aside: {why})" if why else ""

    def _remember(self, func: str, failure: CheckFailure, *, with_input: bool) -> None:
        self._memo[func] = PropertyAbort(failure, with_input)
        self._raise(failure, with_input=with_input)

    def _raise(self, failure: CheckFailure, *, with_input: bool) -> None:
        """Raise ``failure``; inside ``run_property``, stop hypothesis for non-"failed" ones."""
        if IN_PROPERTY.get() and (failure.status != "failed" or not with_input):
            raise PropertyAbort(failure, with_input)
        raise failure
