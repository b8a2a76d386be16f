"""``pallas-lab config``: the course config's values in effect, and where each came from.

::

    pallas-lab config [--config FILE]

Reads ``pallas-lab.toml`` (or ``[tool.pallas-lab]`` in ``pyproject.toml``) in the working
directory (``graders.cli.course_config``); ``pallas-lab grade`` takes the same values, each
overridden by its flag (``apply_config``). Exit status 2, with one line, for a config that
cannot be used, or whose extensions or adjustments file cannot be (``grade`` would stop on
it).
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from graders.cli.common import DEFAULT_TIMEOUT, EXIT_OK, EXIT_USAGE
from graders.cli.course_config import ConfigError, CourseConfig, load_config, policy_fields
from graders.reports.late import LatePolicy
from graders.safety.safe_text import show, terminal_text

NAME = "config"

#: What each key is when neither a flag nor the config sets it.
DEFAULTS: dict[str, str] = {
    "out": "results (a batch's results folder)",
    "jobs": "none (one file after another; --jobs N for a batch)",
    "timeout": f"{DEFAULT_TIMEOUT:g} s per call",
    "budget": "3 x timeout per check",
    "roster": "none",
    "extensions": "none",
    "adjustments": "none",
    "timezone": "this machine's local zone",
}
#: ``pallas-lab grade``'s flag for each key.
FLAGS = {"out": "out", "jobs": "jobs", "timeout": "timeout", "budget": "budget",
         "roster": "roster", "extensions": "extensions", "adjustments": "adjustments"}
LATE_FLAGS = {"policy": "late_policy", "per": "late_per", "rate": "late_rate",
              "cap": "late_cap"}


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Add ``config`` to the ``pallas-lab`` subcommands ``commands``."""
    parser = commands.add_parser(
        NAME, help="show the course config in effect (pallas-lab.toml) and its sources",
        description="Show the values pallas-lab grade takes from pallas-lab.toml (or "
                    "[tool.pallas-lab] in pyproject.toml) in this folder, and where each "
                    "came from; flags of pallas-lab grade override them.")
    add_config_option(parser)


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """``--config FILE``: another config file than ./pallas-lab.toml."""
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="the course config (default: pallas-lab.toml, else "
                             "[tool.pallas-lab] in pyproject.toml, in this folder)")


def _shown(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def effective(config: CourseConfig, args: argparse.Namespace | None = None
              ) -> list[tuple[str, str, str]]:
    """(key, value, source) of every setting: a flag of ``args`` ("--timeout"), the config
    (its ``origin``) or the default."""
    rows: list[tuple[str, str, str]] = []
    for key, default in DEFAULTS.items():
        flag = FLAGS.get(key)
        given = getattr(args, flag, None) if args is not None and flag else None
        if given is not None:
            rows.append((key, _shown(given), f"--{flag.replace('_', '-')}"))
        elif key in config.values:
            rows.append((key, _shown(config.values[key]), config.origin))
        else:
            rows.append((key, default, "default"))
    default = LatePolicy()
    for name in policy_fields():
        attr = "kind" if name == "policy" else name
        flag = LATE_FLAGS.get(name)
        given = getattr(args, flag, None) if args is not None and flag else None
        if given is not None:
            rows.append((f"late.{name}", _shown(given), f"--{flag.replace('_', '-')}"))
        elif name in config.late_set or attr in config.late_set:
            rows.append((f"late.{name}", _shown(getattr(config.late, attr)), config.origin))
        else:
            rows.append((f"late.{name}", _shown(getattr(default, attr)), "default"))
    flag_due = dict(getattr(args, "due_dates", {}) or {}) if args is not None else {}
    for assignment in sorted(set(config.due) | set(flag_due)):
        if assignment in flag_due:
            rows.append((f"assignments.{assignment}.due", _shown(flag_due[assignment]),
                         "--due"))
        else:
            rows.append((f"assignments.{assignment}.due", _shown(config.due[assignment]),
                         config.origin))
    for assignment, policy in sorted(config.policies.items()):
        rows.append((f"assignments.{assignment}.late", policy.describe(), config.origin))
    return rows


def say_one_line(err: Console, text: str) -> None:
    """``text`` on ``err`` as one line, however narrow the terminal."""
    err.print(Text(terminal_text(text)), soft_wrap=True)


def _table_problem(config: CourseConfig) -> str | None:
    """Why the config's extensions or adjustments file cannot be used, as ``pallas-lab
    grade`` would stop on it ("extensions: nope.csv cannot be read: ..."), or None."""
    from graders.reports.adjustments import read_adjustments
    from graders.reports.late import LateError, course_zone, read_extensions

    try:
        zone = course_zone(config.values.get("timezone"))
        for key in ("extensions", "adjustments"):
            path = config.values.get(key)
            if path is None:
                continue
            try:
                read_extensions(Path(path), zone) if key == "extensions" else (
                    read_adjustments(Path(path)))
            except LateError as exc:
                return f"{key}: {exc}"
    except LateError as exc:
        return str(exc)
    return None


def run(args: argparse.Namespace, con: Console, err: Console) -> int:
    """Run ``pallas-lab config``; returns the exit status."""
    try:
        config = load_config(explicit=args.config)
    except ConfigError as exc:
        say_one_line(err, f"pallas-lab config: {exc}")
        return EXIT_USAGE
    problem = _table_problem(config)
    if problem is not None:
        say_one_line(err, f"pallas-lab config: {problem}")
        return EXIT_USAGE
    where = config.path if config.path is not None else (
        "no pallas-lab.toml or [tool.pallas-lab] in pyproject.toml here: defaults")
    show(con, f"config: {where}")
    for note in config.notes:
        show(con, f"note: {note}")
    rows = effective(config)
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        show(con, f"{key:<{width}}  {value}  [{source}]")
    return EXIT_OK
