"""What the ``pallas-lab`` commands share: exit statuses, the call timeouts and the options
``grade`` takes about them."""

from __future__ import annotations

import argparse

from graders.course.catalog import ASSIGNMENTS

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
#: Ctrl-C: the shell's convention, 128 + SIGINT.
EXIT_INTERRUPTED = 130


def positive_float(text: str) -> float:
    """``text`` as a positive number of seconds; raises ``argparse.ArgumentTypeError``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a number of seconds must be positive, not {text}")
    return value


#: Seconds a call of a student function may take.
DEFAULT_TIMEOUT = 10.0
#: The same for the bundled samples (no PATH): their honest calls take milliseconds (ada's
#: and ben's scores are the same with 0.5 s) and dev_broken's loops never end, so a shorter
#: wait changes no score and keeps the README's first command quick.
SAMPLES_TIMEOUT = 1.5


def add_timeout_options(parser: argparse.ArgumentParser) -> None:
    """``--assignment aN`` and ``--timeout S`` (seconds a student call may take)."""
    parser.add_argument(
        "--assignment", choices=sorted(ASSIGNMENTS), default=None,
        help="grade as this assignment whatever the file is called",
    )
    parser.add_argument(
        "--timeout", type=positive_float, default=None,
        help=f"seconds each call of a student function may take (default {DEFAULT_TIMEOUT:g}; "
             f"{SAMPLES_TIMEOUT:g} for the bundled samples, graded when no PATH is given)",
    )
