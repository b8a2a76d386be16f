"""``pallas-lab leaderboard``: rank a graded class on each performance task.

The command's options are its own: ``leaderboard.main`` of ``graders.batch`` parses
every argument after the command's name, ``--help`` included.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

NAME = "leaderboard"
#: The arguments after the command's name are the command's own.
PASS_THROUGH = True


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add the command to ``commands``, the ``pallas-lab`` subcommands."""
    commands.add_parser(NAME, add_help=False,
                        help="rank a graded class on each performance task")


def run(argv: Sequence[str]) -> int:
    """Run the command on ``argv``, the arguments after its name; returns the exit status."""
    from graders.batch import leaderboard

    return int(leaderboard.main(list(argv)) or 0)
