"""``pallas-lab``: grade submissions, check one's own file, release handouts, export.

One module of ``graders/cli/`` per command; this one only parses and dispatches::

    pallas-lab grade [PATH ...] [...]            # graders.cli.grade
    pallas-lab check [FILE ...] [...]            # graders.cli.student (graders.student.cli)
    pallas-lab status [FOLDER]                   # graders.cli.student
    pallas-lab release [...] [--bundle DIR]      # graders.cli.release
    pallas-lab nbgrader DIR [...]                # graders.cli.nbgrader
    pallas-lab gradescope --assignment aN        # graders.cli.gradescope
    pallas-lab profile FILE [...]                # graders.cli.profile
    pallas-lab leaderboard RESULTS [...]         # graders.cli.leaderboard
    pallas-lab config [--config FILE]            # graders.cli.config

``check`` and ``status`` run the public checks in this process (the student's tools);
``grade`` runs the hidden checks with the code in the worker. A command whose options are
its own (``PASS_THROUGH``) gets every argument after its name.

Exit status: 0 when grading ran (whatever the scores), 1 when the grader itself failed (a
check's bug, a missing checks module), 2 for usage errors (nothing to grade, a PATH that
does not exist, a class folder that is ambiguous or two students that would share a name:
``graders.batch.discovery``; options that cannot work; a failed ``--to-gradebook``), 130
after Ctrl-C (or SIGTERM) at any moment, with one line and no traceback.

The module imports nothing heavy at its top: a Ctrl-C in the first second, while the
commands' modules load, is caught by ``main`` like any later one.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

#: Exit status after Ctrl-C or SIGTERM (128 + SIGINT), as a shell reports it.
EXIT_INTERRUPTED = 130

#: The command modules of ``graders/cli/``, in the order ``pallas-lab --help`` lists them.
COMMAND_MODULES: tuple[str, ...] = ("grade", "student", "release", "nbgrader", "gradescope",
                                    "profile", "leaderboard", "config")


def commands() -> tuple[ModuleType, ...]:
    """The command modules (each with ``add_parser`` and ``run``), imported on first use."""
    import importlib

    return tuple(importlib.import_module(f"graders.cli.{name}") for name in COMMAND_MODULES)


def _by_name() -> dict[str, ModuleType]:
    return {name: command for command in commands()
            for name in getattr(command, "NAMES", (getattr(command, "NAME", ""),))}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pallas-lab``: each command module adds its subcommand."""
    parser = argparse.ArgumentParser(
        prog="pallas-lab",
        description="Grade Pallas kernel exercises in an isolated worker process.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands():
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pallas-lab`` console script; returns the exit status.

    SIGTERM (``kill PID``, a job scheduler, ``timeout``) stops a command as Ctrl-C does:
    what it made is cleaned up (a batch notes it between files, ``graders.batch.pool``)."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before a command's own handler, or outside it
        try:
            print("pallas-lab: interrupted; nothing more was done", file=sys.stderr)
        except (KeyboardInterrupt, OSError):
            pass
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM's handler while a command runs: Ctrl-C's KeyboardInterrupt."""
    raise KeyboardInterrupt


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    command = _by_name()[args.command]
    if getattr(command, "PASS_THROUGH", False):
        return command.run(argv[argv.index(args.command) + 1:])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    from rich.console import Console

    return command.run(args, Console(), Console(stderr=True))


if __name__ == "__main__":
    sys.exit(main())
