"""``pallas-lab check`` and ``pallas-lab status``: the public checks in the student's own process.

The student's file (``.py``, or ``.ipynb`` converted by
``graders.student.notebook``) is imported here, in this process: it is the
student's own machine and own code. Each public check runs with an
exploratory hypothesis profile (fresh random examples every run, few of them,
shrinking on), so a run takes seconds and a failure shows the smallest input
hypothesis found. Hidden checks and the reference are never used.

Per task the outcome is ``passed``, ``failing`` (with the check, the smallest
failing input, expected and got), ``not started`` (a stub still raises
``NotImplementedError``), ``error`` (the file does not load) or ``no
self-check`` (the task has no public check yet; its stub is still detected).
A failing task that calls another task's functions (``Task.depends``, the records the
grade uses) says so when that task is failing or not started too ("depends on Task
N.M ..., which is failing too"), as the grade's feedback does; ``--task`` runs the
dependencies' checks as well to know (``note_dependencies``).

The checks run as grading runs them (``self_check_environment``): pallas_sim
with poisoned memory and the parallel grid axes visited in the grader's seeded
shuffled order (``SIM_OPTIONS``, the same as ``graders.grading.grade``'s), and
hypothesis with no example database and its cache in a temporary folder, so
that ``pallas-lab check`` writes nothing into the student's folder.
"""

from __future__ import annotations

import dataclasses
import signal
import tempfile
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypothesis import settings
from hypothesis import strategies as st

from graders.checking.registry import (
    EXPLORATORY_SETTINGS,
    CheckFailure,
    StudentRaised,
    run_property,
)
from graders.checking.status import SELF_CHECK_STATUSES, Status
from graders.course.catalog import ASSIGNMENTS, Assignment, assignment_for_stem, load_harness
from graders.course.records import Task
from graders.student.public import Result, load_public_checks
from graders.student.which_file import Choice, choose_in
from graders.worker.static_check import check_source

if TYPE_CHECKING:
    from graders.student.notebook import ConvertedNotebook

#: The exploratory profile of the one check framework (``graders.checking.registry``): a fresh seed
#: each run, few examples, no database, shrinking on.
SELF_CHECK_SETTINGS = EXPLORATORY_SETTINGS
STATUSES = SELF_CHECK_STATUSES


def __getattr__(name: str) -> object:
    """``SIM_OPTIONS``: pallas_sim's sanitizers while public checks run, those of grading,
    written once in ``pallas_sim._src.config.GRADING_SANITIZERS`` (parallel grid axes in
    the grader's seeded shuffled order, as TPU interpret mode visits them). Looked up when
    asked for: building the command line (``add_commands``) does not import pallas_sim."""
    if name == "SIM_OPTIONS":
        from pallas_sim.extend import GRADING_SANITIZERS

        return GRADING_SANITIZERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextmanager
def self_check_environment() -> Iterator[None]:
    """Run public checks as grading does and leave no trace in the current folder.

    pallas_sim gets ``SIM_OPTIONS`` (restored afterwards). hypothesis keeps its files
    (the cache of constants it collects from source files; no example database is used)
    in a temporary folder removed on exit instead of ``./.hypothesis/``.
    """
    from hypothesis import configuration

    import pallas_sim
    from pallas_sim.extend import GRADING_SANITIZERS

    previous = getattr(configuration, "__hypothesis_home_directory", None)
    with tempfile.TemporaryDirectory(prefix="pallas-lab-check-") as home:
        configuration.set_hypothesis_home_dir(home)
        try:
            with pallas_sim.config(**GRADING_SANITIZERS):
                yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


class NotStarted(BaseException):
    """The student's function still raises NotImplementedError (stops hypothesis at once)."""


class CheckTimeout(BaseException):
    """A public check ran longer than the time limit (stops hypothesis at once)."""


@dataclass(frozen=True, kw_only=True)
class TaskOutcome:
    """A task's self-check outcome (built by keyword only): ``status`` (one of
    ``STATUSES``) and, when failing, the ``check`` that failed with its ``detail`` lines
    (input, expected, got)."""

    task: str
    title: str
    status: str
    check: str = ""
    detail: list[str] = field(default_factory=list)


@dataclass
class FileReport:
    """Self-check of one file: the ``assignment``, the ``file`` (None when not found),
    ``warnings`` (what the grader would reject or set aside), per-task ``tasks`` and the
    ``choice`` of file the grader makes."""

    assignment: Assignment
    file: Path | None
    tasks: list[TaskOutcome]
    warnings: list[str] = field(default_factory=list)
    #: Which file of the pair <stem>.py/<stem>.ipynb the grader grades and why
    #: (``graders.student.which_file``); "" when there was no choice to make.
    choice: str = ""


# -- loading the student's module ----------------------------------------------------------------

def module_source(path: Path) -> tuple[str, list[str]]:
    """The module text of a ``.py`` or ``.ipynb`` file and warnings about it.

    Raises ``OSError``/``ValueError`` (``NotebookError``; ``UnicodeDecodeError`` for a
    ``.py`` that is not UTF-8) when it cannot be read.
    """
    warnings: list[str] = []
    if path.suffix.casefold() == ".ipynb":
        from graders.student.notebook import notebook_to_module

        converted = notebook_to_module(path)
        source = converted.source
        _NOTEBOOKS[str(path)] = converted
        warnings += [f"cell {n.cell}, line {n.line}: set aside ({n.reason}): {n.text}"
                     for n in converted.set_aside if "only displays" not in n.reason]
    else:
        source = path.read_text(encoding="utf-8")
    static = check_source(source, path.name)
    warnings += [f"the grader will reject the file: {p.message.splitlines()[0]}"
                 for p in static.problems]
    return source, warnings


def load_module(path: Path, stem: str) -> tuple[types.ModuleType, list[str]]:
    """Import the student's file as module ``stem``; raises what the import raises."""
    source, warnings = module_source(path)
    return run_code(compile_source(source, path), path, stem), warnings


def compile_source(source: str, path: Path) -> types.CodeType:
    """``source``, the module text of the file at ``path`` (from :func:`module_source`),
    compiled.

    Raises:
      SyntaxError: the text does not parse; ValueError: it holds a null byte.
    """
    return compile(source, str(path), "exec")


def run_code(code: types.CodeType, path: Path, stem: str) -> types.ModuleType:
    """Module ``stem`` made by running ``code`` (:func:`compile_source` of the file at
    ``path``); raises whatever the file's top-level code raises."""
    module = types.ModuleType(stem)
    module.__file__ = str(path)
    exec(code, module.__dict__)  # noqa: S102 - the student's own code, on their own machine
    return module


# -- the in-process Api ---------------------------------------------------------------------------

#: The conversion of each notebook loaded here (``module_source``), by its path: a
#: traceback through its code names the notebook's cells and lines (``_student_trace``).
_NOTEBOOKS: dict[str, ConvertedNotebook] = {}


def _student_trace(exc: BaseException, path: Path) -> str:
    """The frames of ``exc``'s traceback in the student's file at ``path``, formatted as
    Python does; in a notebook, each frame names its cell and line and quotes its code
    (a TA's walk: it quoted line 60 of the notebook's JSON, a markdown sentence)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    notebook = _NOTEBOOKS.get(str(path))
    if notebook is None:
        return "".join(traceback.format_list(frames)).rstrip()
    code = notebook.source.splitlines()
    lines = []
    for frame in frames:
        where = notebook.location(frame.lineno or 0)
        at = (f"cell {where[0]}, line {where[1]}" if where is not None
              else f"line {frame.lineno}")
        lines.append(f'  File "{path}", {at}, in {frame.name}')
        if frame.lineno and 0 < frame.lineno <= len(code) and code[frame.lineno - 1].strip():
            lines.append(f"    {code[frame.lineno - 1].strip()}")
    return "\n".join(lines)


class InProcessApi:
    """``Api`` over a module imported in this process (see ``graders.student.public``)."""

    def __init__(self, module: types.ModuleType, path: Path,
                 profile: settings = SELF_CHECK_SETTINGS) -> None:
        self.module, self.path, self.profile = module, path, profile

    def _run(self, func: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except NotImplementedError as exc:
            raise NotStarted(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the student's error, reported to them
            kind, message = type(exc).__name__, str(exc)
            raise StudentRaised(f"{func} raised {kind}{f': {message}' if message else ''}",
                                error_type=kind, message=message,
                                traceback=_student_trace(exc, self.path)) from None

    def _function(self, func: str) -> Callable[..., Any]:
        fn = getattr(self.module, func, None)
        if not callable(fn):
            raise CheckFailure(f"function '{func}' is not defined in {self.path.name}")
        return fn

    def call(self, func: str, *args: Any, **kwargs: Any) -> Result:
        """Run ``func`` under ``pallas_sim.trace()``; see ``Api.call``."""
        import pallas_sim

        fn = self._function(func)
        with pallas_sim.trace() as recorded:
            value = self._run(func, lambda: fn(*args, **kwargs))
        returned = next((i for i, a in enumerate(args) if a is value), None)
        return Result(value, list(recorded.calls), returned)

    def kernel(self, harness: str, func: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``graders.harnesses.<harness>.<func>`` on the module (``Api.kernel``)."""
        self._function(func)
        runner = getattr(load_harness(harness), func)
        return self._run(func, lambda: runner(self.module, *args, **kwargs))

    def run_property(self, strategy: st.SearchStrategy[Any], body: Callable[[Any], None],
                     *, max_examples: int = 10) -> None:
        """``graders.checking.registry.run_property`` with this Api's (exploratory) profile: the
        shrunk failure gets its input."""
        run_property(strategy, body, max_examples=max_examples, profile=self.profile)


# -- running -----------------------------------------------------------------------------------

@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and _in_main_thread())
    if not usable:
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise CheckTimeout()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))  # type: ignore[arg-type]
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _stub_tasks(source: str) -> set[str]:
    import re

    return set(re.findall(r'NotImplementedError\("Need to implement for Task (\d+\.\d+)"\)',
                          source))


def check_file(path: Path, assignment: Assignment, *, tasks: Sequence[str] | None = None,
               timeout: float | None = 60.0,
               profile: settings = SELF_CHECK_SETTINGS) -> FileReport:
    """Run the public checks of ``assignment`` on the file at ``path``.

    ``tasks`` restricts to these task ids; ``timeout`` (s) limits each check
    (main thread only). Never raises for anything the student's code does.
    """
    with self_check_environment():
        return _check_file(path, assignment, tasks, timeout, profile)


def _with_dependencies(assignment: Assignment, chosen: Sequence[Task]) -> list[Task]:
    """The ``chosen`` tasks and, transitively, the tasks they declare as dependencies
    (``Task.depends``), in the assignment's order."""
    wanted = {t.id for t in chosen}
    frontier = list(wanted)
    while frontier:
        for dependency in assignment.task(frontier.pop()).depends:
            if dependency not in wanted:
                wanted.add(dependency)
                frontier.append(dependency)
    return [t for t in assignment.tasks if t.id in wanted]


#: Outcomes of a dependency that may be why its dependant fails (as the grade counts a
#: dependency that did not pass): "passed" and "no self-check" are not.
UNSETTLED = (Status.FAILING, Status.ERROR, Status.NOT_STARTED)


def note_dependencies(assignment: Assignment, outcomes: Sequence[TaskOutcome]
                      ) -> list[TaskOutcome]:
    """The outcomes with, on each failing task that declares dependencies (``Task.depends``:
    the records the grade's feedback uses), a last detail line naming those that are
    failing or not started too: "depends on Task N.M (...), which is failing too: ...".

    The grade adds the same note ("which failed too", ``graders.grading.grade``) and charges a
    kernel's mistake to the kernel's task; here the wrapper's public check compares with
    plain math, so it fails too, and the note says where the fault may be. A dependency
    whose own failure says it depends on this task (a kernel check run through this
    wrapper) is not named: the fault is this task's.
    """
    status = {o.task: o.status for o in outcomes}
    blames = {o.task: " ".join(o.detail) for o in outcomes}
    noted = []
    for outcome in outcomes:
        task = assignment.task(outcome.task)
        # a dependency whose own check says it fails through this task is not the cause
        broken = [d for d in task.depends if status.get(d) in UNSETTLED
                  and f"depends on Task {task.id}" not in blames[d]]
        if outcome.status != Status.FAILING or not broken:
            noted.append(outcome)
            continue
        names = ", ".join(f"Task {d} ({assignment.task(d).title}), which is "
                          f"{'not started' if status[d] == Status.NOT_STARTED else 'failing'}"
                          f"{'' if status[d] == Status.NOT_STARTED else ' too'}"
                          for d in broken)
        line = (f"depends on {names}: your {task.title} calls it, so fix that first; this "
                "check may pass once it does")
        noted.append(dataclasses.replace(outcome, detail=[*outcome.detail, line]))
    return noted


def _check_file(path: Path, assignment: Assignment, tasks: Sequence[str] | None,
                timeout: float | None, profile: settings) -> FileReport:
    asked = [t for t in assignment.tasks if tasks is None or t.id in tasks]
    # the tasks asked for are run with their dependencies, to tell whether those fail too
    chosen = _with_dependencies(assignment, asked)
    report = FileReport(assignment, path, [])
    try:
        source, report.warnings = module_source(path)
        module, _ = load_module(path, assignment.stem)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the file does not load
        detail = [f"{type(exc).__name__}: {exc}"]
        trace = _student_trace(exc, path)
        if trace:  # where, as the grader's feedback says it (an honest student's walk)
            detail += ["code at the top level of the file runs on import: keep it to "
                       "definitions", trace]
        report.tasks = [TaskOutcome(task=t.id, title=t.title, status=Status.ERROR,
                                    check="the file loads", detail=detail)
                        for t in asked]
        return report
    api = InProcessApi(module, path, profile)
    checks = load_public_checks(assignment.id)
    stubs = _stub_tasks(source)
    for task in chosen:
        mine = [c for c in checks if c.task == task.id]
        if not mine:
            status = Status.NOT_STARTED if task.id in stubs else Status.NO_SELF_CHECK
            report.tasks.append(TaskOutcome(task=task.id, title=task.title, status=status))
            continue
        report.tasks.append(_run_task(task.id, task.title, mine, api, timeout,
                                      started=task.id not in stubs))
    shown = {t.id for t in asked}
    report.tasks = [t for t in note_dependencies(assignment, report.tasks) if t.task in shown]
    return report


def _run_task(task: str, title: str, checks: list, api: InProcessApi,
              timeout: float | None, *, started: bool = False) -> TaskOutcome:
    """Run a task's public checks in order; the first that does not pass decides.

    A check that meets a ``NotImplementedError`` makes the task ``not started``, unless
    the stub raising it is another task's (its message names that task) and this task's
    own stub is gone (``started``): a public check may run this task's code through
    another task's function (a kernel through the student's own wrapper), and then it is
    ``failing`` and says which task to write first.
    """
    for check in checks:
        try:
            with _time_limit(timeout):
                check.run(api)
        except NotStarted as stub:
            other = _stub_tasks(f'NotImplementedError("{stub}")') - {task}
            if started and other:
                names = ", ".join(f"Task {t}" for t in sorted(other))
                return TaskOutcome(task=task, title=title, status=Status.FAILING,
                                   check=check.name, detail=[
                                       f"this check runs your code through {names}, which is "
                                       f"not started yet (it raises NotImplementedError): it "
                                       f"depends on {names}, write that first"])
            return TaskOutcome(task=task, title=title, status=Status.NOT_STARTED, check=check.name)
        except CheckTimeout:
            return TaskOutcome(task=task, title=title, status=Status.FAILING, check=check.name,
                               detail=[f"did not finish within {timeout:g} s"])
        except CheckFailure as failure:
            detail = [failure.what]
            detail += [f"{label}: {value}" for label, value in (
                ("smallest failing input", failure.input), ("expected", failure.expected),
                ("got", failure.got)) if value]
            if failure.traceback:  # the student's own raise: where, in their file
                detail.append(failure.traceback)
            return TaskOutcome(task=task, title=title, status=Status.FAILING, check=check.name,
                               detail=detail)
    return TaskOutcome(task=task, title=title, status=Status.PASSED)


# -- finding files ------------------------------------------------------------------------------

def find_choice(assignment: Assignment, folders: Sequence[Path] = ()) -> Choice | None:
    """Which file of ``assignment`` the grader would grade: in the current folder, then in
    ``assignments/`` (or in ``folders``), the first folder holding ``<stem>.py`` or
    ``<stem>.ipynb`` as a file, the pair decided by the one rule
    (``graders.student.which_file.choose_in``: the one that differs from the handout,
    else the newer). None when no folder holds either."""
    search = list(folders) or [Path.cwd(), Path.cwd() / "assignments"]
    for folder in search:
        choice = choose_in(folder, assignment.stem)
        if choice is not None and choice.graded is not None:
            return choice
    return None


def find_file(assignment: Assignment, folders: Sequence[Path] = ()) -> Path | None:
    """The student's file of ``assignment`` (:func:`find_choice`'s), or None."""
    choice = find_choice(assignment, folders)
    return choice.graded if choice is not None else None


def twin_choice(path: Path, assignment: Assignment) -> str:
    """For a FILE named on the command line: what the student is told when the grader
    would grade the other file of its pair instead (its ``.ipynb`` or ``.py`` beside it),
    "" otherwise."""
    if path.stem != assignment.stem or path.suffix not in (".py", ".ipynb"):
        return ""
    choice = choose_in(path.parent, assignment.stem)
    if choice is None or choice.graded is None or choice.graded.name == path.name:
        return choice.note if choice is not None else ""
    return (f"the grader grades {choice.graded.name}, not this file ({choice.why}); "
            f"check that one: pallas-lab check {choice.graded}")


def assignment_of_file(path: Path, override: str | None = None) -> Assignment:
    """The assignment a file belongs to (its stem, or ``override``); ``ValueError`` if none."""
    if override is not None:
        return ASSIGNMENTS[override]
    found = assignment_for_stem(path.stem)
    if found is None:
        names = ", ".join(f"{a.stem}.py" for a in ASSIGNMENTS.values())
        raise ValueError(f"{path.name} does not name an assignment (expected one of {names}; "
                         "or pass --assignment aN)")
    return found


def assignment_of_task(task: str) -> Assignment:
    """The assignment holding Task ``task``; ``ValueError`` for an unknown task."""
    for assignment in ASSIGNMENTS.values():
        if any(t.id == task for t in assignment.tasks):
            return assignment
    raise ValueError(f"there is no Task {task}")


def no_file_report(assignment: Assignment) -> FileReport:
    """The report of an assignment whose file was not found."""
    return FileReport(assignment, None,
                      [TaskOutcome(task=t.id, title=t.title, status=Status.NO_FILE)
                       for t in assignment.tasks])
