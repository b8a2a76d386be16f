"""The one check framework's core: ``Check`` (hidden or public), ``CheckFailure``, the
registry both kinds live in, and ``run_property`` with its hypothesis profiles.

A check is one record type whatever its audience: ``visibility`` says whether
it is a **hidden** check (graded, ``points`` > 0, written against the trusted grader's
``Session`` in ``graders/labs/<stem>/checks.py``) or a **public** one (never graded,
``points`` 0, written against the ``Api`` of ``graders.student.public`` in
``graders/labs/<stem>/public_checks.py``, run by students and shown on Gradescope at
once). Both fail by raising :class:`CheckFailure`, and both draw inputs through
:func:`run_property`: the grader with the deterministic :data:`GRADING_SETTINGS`
(docs/grading-design.md, "Trusted and untrusted code": the same submission graded twice
gives the same scores and feedback), a student's own run with a fresh seed.

This module ships in the student bundle (it holds no check, no reference, nothing the
grade depends on keeping hidden): the registry stays empty there, since no hidden
checks module ships.
"""

from __future__ import annotations

import atexit
import contextvars
import functools
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, configuration, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from graders.checking.status import FAILURE_STATUSES, Status
from graders.checking.values import describe_value


class Visibility(StrEnum):
    """Who sees a check: ``HIDDEN`` checks grade; ``PUBLIC`` checks ship to students."""

    HIDDEN = "hidden"
    PUBLIC = "public"


class CheckFailure(Exception):
    """A failed check, with everything the student's feedback needs (docs/style.md).

    ``what``: one line saying what went wrong (the table's reason).
    ``input``: the (smallest) failing input; ``expected``/``got``: the values
    compared; ``diagnosis``: the known mistake it looks like (name the lecture
    section, e.g. ``"(lecture §5.1)"``); ``hint``: what to try.
    ``status``: one of ``FAILURE_STATUSES`` — ``"failed"``, ``"not started"``
    (NotImplementedError), ``"timeout"`` or ``"error"`` (crash, malformed reply,
    unloadable file). ``traceback``: the student's traceback trimmed to their file;
    ``output``: what their code printed; ``internal``: True when the grader itself is
    at fault (a broken harness or request).
    Raises ``ValueError`` for an unknown status.
    """

    def __init__(
        self,
        what: str,
        *,
        input: str | None = None,  # noqa: A002 - the API's name for it
        expected: str | None = None,
        got: str | None = None,
        diagnosis: str | None = None,
        hint: str | None = None,
        status: str = Status.FAILED,
        traceback: str | None = None,
        output: str | None = None,
        internal: bool = False,
    ) -> None:
        if status not in FAILURE_STATUSES:
            raise ValueError(f"status={status!r} is not one of {FAILURE_STATUSES}")
        super().__init__(what)
        self.what = what
        self.input = input
        self.expected = expected
        self.got = got
        self.diagnosis = diagnosis
        self.hint = hint
        self.status = Status(status)
        self.traceback = traceback
        self.output = output
        self.internal = internal

    def copy(self, **changes: Any) -> CheckFailure:
        """A new failure of the same class with the same fields except ``changes``
        (``ValueError`` for an unknown status)."""
        if "status" in changes and changes["status"] not in FAILURE_STATUSES:
            raise ValueError(f"status={changes['status']!r} is not one of {FAILURE_STATUSES}")
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        Exception.__init__(new, new.what)
        return new

    def __str__(self) -> str:
        return self.what


class StudentRaised(CheckFailure):
    """The student's function raised ``error_type`` (its class name, e.g. ``"ValueError"``)
    with ``message``: a failed check, unless the check expected the raise (a check of a
    ``ValueError`` the student API asks for catches it). Both ways a check reaches
    student code give it: the grader's ``Session`` and the self-check's ``InProcessApi``.
    Other fields as ``CheckFailure``.
    """

    def __init__(self, what: str, *, error_type: str, message: str, **fields: Any) -> None:
        super().__init__(what, **fields)
        self.error_type = error_type
        self.message = message


@dataclass(frozen=True, kw_only=True)
class Check:
    """One check: ``assignment`` ("a1"), ``task`` ("1.2"), ``name`` (one line saying what
    is checked), ``visibility``, ``points`` (> 0 for a hidden check, 0 for a public one)
    and ``run(session_or_api)``, which returns on pass and raises ``CheckFailure`` on
    failure (a hidden check gets a ``graders.checking.framework.Session``, a public one a
    ``graders.student.public.Api``)."""

    assignment: str
    task: str
    name: str
    visibility: Visibility
    points: float
    run: Callable[[Any], None]


#: Every registered check, hidden and public, by assignment id, in definition order.
REGISTRY: dict[str, list[Check]] = {}

_TASK_ID = re.compile(r"^\d+\.\d+$")


def register(assignment: str, task: str, name: str, *, visibility: Visibility,
             points: float = 0.0) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Decorator registering ``fn`` as a ``Check`` in ``REGISTRY[assignment]``.

    Checks keep their definition order. Re-registering the same function (a module
    reload) replaces the old entry; a different function with the same assignment,
    visibility, task and name raises ``ValueError``, as do a task id not of the form
    ``N.M``, a hidden check without positive points and a public check with points.
    Returns ``fn`` unchanged.
    """
    visibility = Visibility(visibility)
    if not _TASK_ID.match(task):
        raise ValueError(f"task={task!r} is not a task id of the form 'N.M'")
    if visibility is Visibility.HIDDEN and not points > 0:
        raise ValueError(f"points={points!r} must be positive for a hidden check")
    if visibility is Visibility.PUBLIC and points != 0:
        raise ValueError(f"points={points!r}: a public check is never graded")

    def add(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        entry = Check(assignment=assignment, task=task, name=name, visibility=visibility,
                      points=float(points), run=fn)
        checks = REGISTRY.setdefault(assignment, [])
        for index, existing in enumerate(checks):
            if (existing.visibility, existing.task, existing.name) == (visibility, task, name):
                same = (existing.run.__module__, existing.run.__qualname__) == (
                    fn.__module__, fn.__qualname__)
                if not same:
                    raise ValueError(f"{assignment} Task {task} already has a {visibility} "
                                     f"check {name!r}")
                checks[index] = entry
                return fn
        checks.append(entry)
        return fn

    return add


def registered(assignment: str, visibility: Visibility) -> list[Check]:
    """The checks of ``assignment`` with this ``visibility`` registered so far, in order."""
    return [c for c in REGISTRY.get(assignment, []) if c.visibility is Visibility(visibility)]


# -- hypothesis profiles -----------------------------------------------------------------------

# hypothesis keeps files (the constants it collects from source files) in ./.hypothesis/
# of whatever folder the TA or student runs from; checks use no example database, so they
# go to a folder of this process's own, removed when it exits.
# A batch's forkserver is given one (``HYPOTHESIS_HOME_VAR``) that the batch removes itself,
# as it may have to kill the forkserver while it imports this.
#: A folder made by the parent process for this one's hypothesis files (it removes it).
HYPOTHESIS_HOME_VAR = "PALLAS_LAB_HYPOTHESIS_HOME"
_HYPOTHESIS_HOME = os.environ.pop(HYPOTHESIS_HOME_VAR, "")
if not _HYPOTHESIS_HOME:
    _HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="pallas-lab-hypothesis-")
    atexit.register(shutil.rmtree, _HYPOTHESIS_HOME, ignore_errors=True)
configuration.set_hypothesis_home_dir(_HYPOTHESIS_HOME)

#: Deterministic grading profile: every setting pinned (docs/grading-design.md, "Trusted and
#: untrusted code").
GRADING_SETTINGS = settings(
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
    report_multiple_bugs=False,
    verbosity=Verbosity.quiet,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
    stateful_step_count=50,
    backend="hypothesis",
)
#: Random exploration (a student's own ``pallas-lab check``, developing checks): fewer
#: examples, a fresh seed every run.
EXPLORATORY_SETTINGS = settings(GRADING_SETTINGS, derandomize=False, max_examples=10)

settings.register_profile("grading", GRADING_SETTINGS)
settings.register_profile("exploratory", EXPLORATORY_SETTINGS)


def _without_local_constants() -> None:
    """Draw no literals from the modules this process has loaded.

    hypothesis (6.131+) mixes into its draws the literals of every module of ``sys.modules``
    it takes for the user's own (neither stdlib nor site-packages), collected under a time
    limit. Drawn inputs would then depend on the install (an editable checkout's graders
    are "local", a wheel's are not), on which labs a process preloaded and on the clock,
    and the same submission could be graded on other inputs. Its fixed global constants
    (0, -1, inf, ...) stay. Uses hypothesis' internal provider module: the test
    ``tests/checking/test_draw_determinism.py`` fails if a new version moves it.
    """
    from hypothesis.internal.conjecture import providers

    empty = providers.Constants(
        integers=providers.SortedSet(), floats=providers.SortedSet(key=providers.float_to_int),
        bytes=providers.SortedSet(), strings=providers.SortedSet())
    providers._get_local_constants = lambda: empty


_without_local_constants()


class PropertyAbort(BaseException):
    """Stops a running property at once (timeout, not started, crash): hypothesis does
    not catch BaseException subclasses other than SystemExit/GeneratorExit, so no
    shrinking happens. ``run_property`` turns it back into its ``failure``;
    ``with_input`` says whether the example that caused it should be reported."""

    def __init__(self, failure: CheckFailure, with_input: bool) -> None:
        super().__init__(failure.what)
        self.failure = failure
        self.with_input = with_input


#: True while a property runs (a session raises ``PropertyAbort`` instead of its failure).
IN_PROPERTY: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pallas_lab_in_property", default=False
)


def run_property(
    strategy: st.SearchStrategy[Any],
    body: Callable[[Any], None],
    *,
    max_examples: int = 25,
    profile: settings | None = None,
) -> None:
    """Run ``body(example)`` on examples drawn from ``strategy``; raise the shrunk failure.

    Uses ``GRADING_SETTINGS`` (or ``profile``) with ``max_examples`` overridden.
    Returns when every example passes. Raises the ``CheckFailure`` of the
    smallest failing example found by hypothesis' shrinker; when ``body``'s
    CheckFailure has no ``input``, it is filled with ``describe_value(example)``.
    A timeout, a crash or a "not started" inside the property stops hypothesis
    at once (via ``PropertyAbort``) and is raised as its CheckFailure; timeouts
    and crashes report the example that caused them. Anything else ``body``
    raises (a grader bug, or a BaseException of the caller's) propagates unchanged.
    """
    last: dict[str, Any] = {}

    def test(example: Any) -> None:
        last["example"] = example
        try:
            body(example)
        except CheckFailure as failure:
            if failure.input is None:
                failure.input = describe_value(example)
            raise

    chosen = settings(profile or GRADING_SETTINGS, max_examples=max_examples)
    if chosen.derandomize:  # the same examples every run, drawn from a seed of the check's
        chosen = settings(chosen, derandomize=False)
        prop = hypothesis_seed(check_seed(body))(chosen(given(strategy)(test)))
    else:
        prop = chosen(given(strategy)(test))
    token = IN_PROPERTY.set(True)
    try:
        prop()
    except PropertyAbort as abort:
        failure = abort.failure
        if abort.with_input and failure.input is None and "example" in last:
            failure.input = describe_value(last["example"])
        raise failure from None
    except CheckFailure as failure:
        raise failure.copy() from None
    except BaseExceptionGroup as group:  # hypothesis' FlakyFailure and friends
        inner = _first_check_failure(group)
        if inner is None:
            raise
        raise inner.copy() from None
    finally:
        IN_PROPERTY.reset(token)


@functools.lru_cache(maxsize=128)
def _source_digest(path: str) -> bytes:
    """SHA-256 of the file at ``path`` with its line endings made LF (a Windows checkout
    draws what a Linux one does); of nothing when it cannot be read."""
    try:
        data = Path(path).read_bytes().replace(b"\r\n", b"\n")
    except OSError:
        data = b""
    return hashlib.sha256(data).digest()


def check_seed(body: Callable[..., Any]) -> int:
    """The seed a derandomized property draws its examples from: a digest of the source file
    that defines ``body`` and of ``body``'s qualified name. The examples are the same on
    every run and every machine with the same checks (same file, same grade), differ from
    check to check, and cannot be drawn again without the checks' source: a hidden check's
    file never ships, so a student who has the strategies (the public ``vmem_space.py``, this
    module) cannot replay the grader's questions and tabulate their answers (a red team did,
    when every property drew from hypothesis' digest of this module's ``test``)."""
    code = getattr(body, "__code__", None)
    path = code.co_filename if code is not None else ""
    name = getattr(body, "__qualname__", type(body).__qualname__)
    digest = hashlib.sha256(_source_digest(path) + name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def _first_check_failure(group: BaseExceptionGroup) -> CheckFailure | None:
    for exc in group.exceptions:
        if isinstance(exc, CheckFailure):
            return exc
        if isinstance(exc, PropertyAbort):
            return exc.failure
        if isinstance(exc, BaseExceptionGroup):
            found = _first_check_failure(exc)
            if found is not None:
                return found
    return None
