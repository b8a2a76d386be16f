"""``pallas-lab check`` and ``pallas-lab status``: the student's self-check and progress,
run in this process against the public checks (``graders.student.cli``, which ships in the
student bundle with its own ``pallas-lab`` of these two commands)."""

from __future__ import annotations

import argparse

from rich.console import Console

NAMES = ("check", "status")


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add ``check`` and ``status`` to the ``pallas-lab`` subcommands ``commands``."""
    from graders.student.cli import add_commands

    add_commands(commands)


def run(args: argparse.Namespace, con: Console, err: Console) -> int:
    """Run ``check`` or ``status`` (``args.command``) with the parsed ``args``."""
    from graders.student.cli import run_check, run_status

    if args.command == "status":
        return run_status(args, con, err)
    return run_check(args, con, err)
