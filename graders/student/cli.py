"""The student's commands: ``pallas-lab check``, ``pallas-lab status`` and, in the
student bundle, ``pallas-lab profile``.

::

    pallas-lab check [FILE ...] [--task N.M] [--assignment aN] [--timeout S]
                     [--backend pallas_sim|jax]
    pallas-lab status [FOLDER]
    pallas-lab profile FILE [...]        # graders.student.kernel_profile

``check`` runs the public checks (``graders.student.selfcheck``) of each FILE
(default: every handout found in the current folder or ``assignments/``);
``--task 4.1`` runs one task (finding its file the same way when no FILE is
given). ``status`` prints the progress table over all assignments. Where both
``<stem>.py`` and ``<stem>.ipynb`` are found, both commands check the one the
grader grades (``graders.student.which_file``) and print which and why; ``check
FILE`` on the other one says so. Exit
status of ``check``: 0 when every task checked passed, 1 otherwise, 2 for
usage errors; ``status`` exits 0, or 2 when it finds no handout at all.

The main CLI (``graders.cli.main``) mounts these subcommands with
:func:`add_commands` (and ``profile`` from ``graders.cli.profile``, with
:func:`add_profile_command` and :func:`run_profile`); the student bundle's ``pallas-lab`` is
:func:`main`, with the same three.
Other check backends plug in through :func:`add_check_arguments` (new
options) and :data:`CHECK_BACKENDS` (name -> runner).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graders.checking.status import Status
from graders.course.catalog import ASSIGNMENTS
from graders.student.selfcheck import (
    FileReport,
    assignment_of_file,
    assignment_of_task,
    check_file,
    find_choice,
    no_file_report,
    twin_choice,
)

EXIT_OK, EXIT_FAILING, EXIT_USAGE = 0, 1, 2
STYLE = {Status.PASSED: "green", Status.FAILING: "red", Status.NOT_STARTED: "dim",
         Status.ERROR: "bold red", Status.NO_SELF_CHECK: "yellow", Status.NO_FILE: "dim"}
SYMBOL = {Status.PASSED: "✓", Status.FAILING: "✗", Status.NOT_STARTED: "·", Status.ERROR: "!",
          Status.NO_SELF_CHECK: "?", Status.NO_FILE: "-"}


def _run_public(args: argparse.Namespace, con: Console) -> list[FileReport]:
    """The default backend: the public checks on pallas_sim, in this process."""
    reports = []
    for path, assignment in args.targets:
        tasks = [args.task] if args.task else None
        reports.append(check_file(path, assignment, tasks=tasks, timeout=args.timeout))
    return reports


#: Check backends by name; ``--backend`` chooses one (the default runs on pallas_sim).
CHECK_BACKENDS: dict[str, Callable[[argparse.Namespace, Console], list[FileReport]]] = {
    "pallas_sim": _run_public,
}


class BackendUnavailable(RuntimeError):
    """A check backend cannot run on this installation; the message says what to install."""


def _run_jax(args: argparse.Namespace, con: Console) -> list[FileReport]:
    """``--backend jax``: the file's kernels on real JAX Pallas vs pallas_sim
    (``graders.student.jax_backend``; needs the ``pallas-lab[jax]`` extra).

    Raises:
      BackendUnavailable: JAX is not installed (the command prints one line and exits 2).
    """
    if importlib.util.find_spec("jax") is None:
        raise BackendUnavailable(
            "--backend jax needs JAX, which is not installed here; install the jax extra "
            "(pip install '.[jax]' in the bundle's or repository's folder)")
    from graders.student.jax_backend import run_jax_backend

    return run_jax_backend(args, con)


CHECK_BACKENDS["jax"] = _run_jax


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``pallas-lab check``."""
    parser.add_argument("files", nargs="*", type=Path, metavar="FILE",
                        help="your .py or .ipynb handouts (default: those found in the current "
                             "folder or in assignments/; of a .py and an .ipynb, the one graded)")
    parser.add_argument("--task", default=None, metavar="N.M", help="check only this task")
    parser.add_argument("--assignment", choices=sorted(ASSIGNMENTS), default=None,
                        help="treat FILE as this assignment whatever it is called")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds each check may take (default 60)")
    parser.add_argument("--backend", choices=sorted(CHECK_BACKENDS), default="pallas_sim",
                        help="where the checks run (default: pallas_sim, in this process)")


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``check`` and ``status`` to a subcommand parser."""
    check = commands.add_parser(
        "check", help="run the public checks on your own files (fast, in this process)",
        description="Run the public checks (the lecture's worked answers and properties "
                    "against plain math) on your handouts. Per task: passed, failing with "
                    "the smallest failing input, or not started. The grade comes from "
                    "more checks than these.")
    add_check_arguments(check)
    status = commands.add_parser(
        "status", help="your progress over all assignments",
        description="Run the public checks on every handout found and print one row per "
                    "assignment.")
    status.add_argument("folder", nargs="?", type=Path, default=None, metavar="FOLDER",
                        help="where your handouts are (default: here, then assignments/)")


def _targets(args: argparse.Namespace, err: Console) -> list | None:
    if args.task is not None:
        try:
            owner = assignment_of_task(args.task)
        except ValueError as exc:
            err.print(f"pallas-lab check: {exc}", markup=False)
            return None
    files: list = []
    args.choices = {}
    if args.files:
        for path in args.files:
            if not path.is_file():
                what = (f"{path} is a folder, not a file" if path.is_dir() else
                        f"{path} is not a regular file" if path.exists() else
                        f"no such file: {path}")
                err.print(f"pallas-lab check: {what}", markup=False)
                return None
            try:
                files.append((path, assignment_of_file(path, args.assignment)))
            except ValueError as exc:
                err.print(f"pallas-lab check: {exc}", markup=False)
                return None
            args.choices[path] = twin_choice(path, files[-1][1])
        if args.task is not None:
            files = [(p, a) for p, a in files if a.id == owner.id]
    else:
        wanted = [owner] if args.task is not None else list(ASSIGNMENTS.values())
        for assignment in wanted:
            choice = find_choice(assignment)
            if choice is not None and choice.graded is not None:
                files.append((choice.graded, assignment))
                args.choices[choice.graded] = choice.note
    if not files:
        what = f"the file of Task {args.task}" if args.task else "a handout"
        err.print(f"pallas-lab check: cannot find {what} here or in assignments/; "
                  "name the file: pallas-lab check FILE", markup=False)
        return None
    return files


def print_report(report: FileReport, con: Console) -> None:
    """One file's per-task outcome, with the details of failing tasks."""
    name = report.file.name if report.file else "(no file)"
    con.print(Text(f"{report.assignment.id} {report.assignment.title} — {name}", style="bold"))
    if report.choice:
        con.print(Text(f"  {report.choice}", style="cyan"), soft_wrap=True)
    for warning in report.warnings:
        con.print(Text(f"  note: {warning}", style="yellow"))
    for task in report.tasks:
        line = Text(f"  Task {task.task} {task.title}: ")
        line.append(task.status, style=STYLE.get(task.status, ""))
        con.print(line)
        if task.status in (Status.FAILING, Status.ERROR):
            con.print(Text(f"      check: {task.check}"))
            for detail in task.detail:
                for piece in detail.splitlines():
                    con.print(Text(f"      {piece}"))


def run_check(args: argparse.Namespace, con: Console, err: Console) -> int:
    """``pallas-lab check``; returns the exit status."""
    targets = _targets(args, err)
    if targets is None:
        return EXIT_USAGE
    args.targets = targets
    try:
        reports = CHECK_BACKENDS[args.backend](args, con)
    except BackendUnavailable as exc:
        err.print(f"pallas-lab check: {exc}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    for report in reports:
        if report.file is not None and not report.choice:
            report.choice = args.choices.get(report.file, "")
        print_report(report, con)
    statuses = {t.status for r in reports for t in r.tasks} - {Status.NO_SELF_CHECK}
    return EXIT_OK if statuses <= {"passed"} else EXIT_FAILING


def status_table(reports: Sequence[FileReport]) -> Table:
    """The progress table: one row per assignment, one symbol per task."""
    table = Table(title="pallas-lab status (public checks)", box=box.SIMPLE_HEAVY,
                  title_justify="left")
    table.add_column("Assignment")
    table.add_column("File")
    table.add_column("Passed", justify="right")
    table.add_column("Tasks")
    for report in reports:
        passed = sum(t.status == "passed" for t in report.tasks)
        cells = Text()
        for task in report.tasks:
            cells.append(f"{task.task} {SYMBOL[task.status]}  ",
                         style=STYLE.get(task.status, ""))
        table.add_row(f"{report.assignment.id} {report.assignment.title}",
                      report.file.name if report.file else "not found",
                      f"{passed}/{len(report.tasks)}", cells)
    table.caption = ("✓ passed  ✗ failing  · not started  ! does not load  "
                     "? no self-check yet  - no file")
    return table


def run_status(args: argparse.Namespace, con: Console, err: Console | None = None) -> int:
    """``pallas-lab status``: the progress table over every assignment whose file is found.

    Returns 0; when no assignment's file is found at all (run outside the handouts'
    folder) says so in one line on ``err`` (stderr by default) and returns 2.
    """
    folders = [args.folder] if args.folder is not None else []
    found = {a.id: find_choice(a, folders) for a in ASSIGNMENTS.values()}
    if not any(found.values()):
        where = " or ".join(str(f) for f in folders) or (
            f"{Path.cwd()} or its assignments/ folder")
        names = ", ".join(f"{a.stem}.py" for a in ASSIGNMENTS.values())
        (err or Console(stderr=True)).print(
            f"pallas-lab status: no handout found in {where} (looked for {names} and their "
            ".ipynb); run it in the folder that holds your handouts, or name that folder",
            markup=False, highlight=False, soft_wrap=True)
        return EXIT_USAGE
    reports = []
    for assignment in ASSIGNMENTS.values():
        choice = found[assignment.id]
        if choice is None or choice.graded is None:
            reports.append(no_file_report(assignment))
            continue
        report = check_file(choice.graded, assignment)
        report.choice = choice.note
        reports.append(report)
    con.print(status_table(reports))
    for report in reports:
        if report.choice:
            con.print(Text(f"{report.assignment.id}: {report.choice}", style="cyan"),
                      soft_wrap=True)
    return EXIT_OK


#: ``pallas-lab profile``'s one-line help, in both command lines' lists of commands.
PROFILE_HELP = "predicted TPU time of a file's kernels (pallas_sim.estimate)"


def add_profile_command(commands: argparse._SubParsersAction) -> None:
    """Add ``profile`` to a subcommand parser; its arguments are its own
    (``graders.student.kernel_profile`` parses everything after the command's name)."""
    commands.add_parser("profile", add_help=False, help=PROFILE_HELP)


def run_profile(argv: Sequence[str]) -> int:
    """``pallas-lab profile`` on ``argv``, the arguments after its name; returns the exit
    status (``graders.student.kernel_profile.main``). Imported when run: listing the
    commands loads neither pallas_sim nor matplotlib."""
    from graders.student import kernel_profile

    return int(kernel_profile.main(list(argv)) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """``pallas-lab`` of the student bundle: ``check``, ``status`` and ``profile``; returns
    the exit status (2 for usage errors)."""
    parser = argparse.ArgumentParser(
        prog="pallas-lab", description="Check your Pallas exercises with the public checks "
                                       "and predict their kernels' time on a TPU.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(commands)
    add_profile_command(commands)
    argv = list(sys.argv[1:] if argv is None else argv)
    args, rest = parser.parse_known_args(argv)
    if args.command == "profile":
        return run_profile(argv[argv.index("profile") + 1:])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    con, err = Console(), Console(stderr=True)
    if args.command == "check":
        return run_check(args, con, err)
    return run_status(args, con, err)


if __name__ == "__main__":
    sys.exit(main())
