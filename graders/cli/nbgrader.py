"""``pallas-lab nbgrader``: write an nbgrader course (instructors).

The command's options are its own: ``course.main`` of ``graders.integrations.nbgrader`` parses
every argument after the command's name, ``--help`` included.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

NAME = "nbgrader"
#: The arguments after the command's name are the command's own.
PASS_THROUGH = True


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add the command to ``commands``, the ``pallas-lab`` subcommands."""
    commands.add_parser(NAME, add_help=False,
                        help="write an nbgrader course (instructors)")


def run(argv: Sequence[str]) -> int:
    """Run the command on ``argv``, the arguments after its name; returns the exit status."""
    from graders.integrations.nbgrader import course

    return int(course.main(list(argv)) or 0)
