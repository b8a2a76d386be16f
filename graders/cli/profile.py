"""``pallas-lab profile``: predicted TPU time of a file's kernels (pallas_sim.estimate).

The command's options are its own: ``kernel_profile.main`` of ``graders.student`` parses
every argument after the command's name, ``--help`` included. The student bundle's
``pallas-lab`` has the same command (``graders.student.cli``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from graders.student import cli as student

NAME = "profile"
#: The arguments after the command's name are the command's own.
PASS_THROUGH = True


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add the command to ``commands``, the ``pallas-lab`` subcommands."""
    student.add_profile_command(commands)


def run(argv: Sequence[str]) -> int:
    """Run the command on ``argv``, the arguments after its name; returns the exit status."""
    return student.run_profile(argv)
