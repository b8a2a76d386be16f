"""The course config: ``pallas-lab.toml`` (or ``[tool.pallas-lab]`` in ``pyproject.toml``)
in the working directory, read with ``tomllib``.

::

    out = "results"              # a batch's results folder
    jobs = 2                     # grade as a batch, this many files at once
    timeout = 10                 # seconds per call of a student function
    budget = 120                 # seconds per submission file
    roster = "roster.csv"
    extensions = "extensions.csv"
    adjustments = "adjustments.csv"
    timezone = "Europe/Berlin"   # for due dates written without a zone

    [late]                       # the default late policy
    policy = "percent"           # none | zero | percent
    per = "day"                  # day | hour
    rate = 10                    # percent per started period
    cap = 50                     # percent at most
    grace_minutes = 15
    basis = "score"              # score | max

    [assignments.a4]
    due = 2026-03-01T23:59:00+01:00
    late = { policy = "zero" }   # this assignment's own policy (fields override [late])

Paths are relative to the config file's folder. ``pallas-lab grade``'s flags override each
value; ``pallas-lab config`` prints the values in effect and where each came from. Any
mistake (a TOML syntax error, an unknown key, a value of the wrong type) raises
``ConfigError`` with one line naming the file and the key.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from graders.reports.late import LateError, LatePolicy, as_aware, assignment_named, course_zone

CONFIG_FILE = "pallas-lab.toml"
PYPROJECT = "pyproject.toml"
#: Top-level keys and what each holds.
KEYS = {"out": "path", "jobs": "int", "timeout": "seconds", "budget": "seconds",
        "roster": "path", "extensions": "path", "adjustments": "path", "timezone": "text",
        "late": "table", "assignments": "table"}
LATE_KEYS = {"policy": str, "per": str, "rate": float, "cap": float,
             "grace_minutes": float, "basis": str}
#: The largest config file read, in bytes.
MAX_CONFIG_BYTES = 1 << 20


class ConfigError(ValueError):
    """The course config cannot be used; the message is one line naming file and key."""


@dataclass
class CourseConfig:
    """The values a config file gave (``values``: key -> value; paths resolved, times
    aware, policies checked), where it was (``path``; None: no config) and the name it
    is shown by (``origin``: "pallas-lab.toml", "pyproject.toml [tool.pallas-lab]")."""

    path: Path | None = None
    origin: str = "default"
    values: dict[str, Any] = field(default_factory=dict)
    due: dict[str, dt.datetime] = field(default_factory=dict)
    late: LatePolicy = field(default_factory=LatePolicy)
    late_set: set[str] = field(default_factory=set)
    policies: dict[str, LatePolicy] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def find_config(folder: Path | None = None, explicit: Path | None = None
                ) -> tuple[Path | None, dict[str, Any], str, list[str]]:
    """(the config file, its pallas-lab table, how it is named, notes) for ``folder``
    (default: the working directory): ``explicit`` when given, else ``pallas-lab.toml``,
    else ``pyproject.toml``'s ``[tool.pallas-lab]``. Raises ``ConfigError``."""
    folder = folder or Path.cwd()
    notes: list[str] = []
    if explicit is not None:
        data = _load(explicit)
        if explicit.name == PYPROJECT:
            return explicit, _tool_table(data, explicit), f"{explicit} [tool.pallas-lab]", notes
        return explicit, data, str(explicit), notes
    own, project = folder / CONFIG_FILE, folder / PYPROJECT
    if own.is_file():
        if project.is_file() and "pallas-lab" in _load(project).get("tool", {}):
            notes.append(f"{PYPROJECT} [tool.pallas-lab] ignored: {CONFIG_FILE} is used")
        return own, _load(own), CONFIG_FILE, notes
    if project.is_file():
        data = _load(project)
        if "pallas-lab" in data.get("tool", {}):
            return project, _tool_table(data, project), f"{PYPROJECT} [tool.pallas-lab]", notes
    return None, {}, "default", notes


def _tool_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    table = data.get("tool", {}).get("pallas-lab", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.pallas-lab] must be a table")
    return table


def _load(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB")
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None


def load_config(folder: Path | None = None, explicit: Path | None = None) -> CourseConfig:
    """The course config of ``folder`` (``find_config``), every value checked. Raises
    ``ConfigError`` (one line naming the file and the key)."""
    path, table, origin, notes = find_config(folder, explicit)
    config = CourseConfig(path=path, origin=origin, notes=notes)
    if path is None:
        return config
    try:
        _fill(config, table, path.parent)
    except (LateError, ConfigError) as exc:
        raise ConfigError(f"{origin}: {exc}") from None
    return config


def _fill(config: CourseConfig, table: dict[str, Any], base: Path) -> None:
    for key in table:
        if key not in KEYS:
            raise ConfigError(f"unknown key {key!r} (known: {', '.join(KEYS)})")
    for key, kind in KEYS.items():
        if key not in table or kind == "table":
            continue
        config.values[key] = _value(key, kind, table[key], base)
    zone = course_zone(config.values.get("timezone"))
    late = table.get("late", {})
    if not isinstance(late, dict):
        raise ConfigError("late must be a table ([late])")
    config.late, config.late_set = _policy(LatePolicy(), late, "late")
    assignments = table.get("assignments", {})
    if not isinstance(assignments, dict):
        raise ConfigError("assignments must be a table ([assignments.a1])")
    for name, entry in assignments.items():
        info = assignment_named(name)
        if info is None:
            raise ConfigError(f"[assignments.{name}]: not an assignment (a1..a5 or a stem)")
        if not isinstance(entry, dict):
            raise ConfigError(f"assignments.{name} must be a table")
        unknown = set(entry) - {"due", "late"}
        if unknown:
            raise ConfigError(f"[assignments.{name}]: unknown key {sorted(unknown)[0]!r} "
                              "(known: due, late)")
        if "due" in entry:
            config.due[info.id] = as_aware(entry["due"], zone, f"assignments.{name}.due")
        if "late" in entry:
            if not isinstance(entry["late"], dict):
                raise ConfigError(f"assignments.{name}.late must be a table")
            config.policies[info.id] = _policy(config.late, entry["late"],
                                               f"assignments.{name}.late")[0]


def _value(key: str, kind: str, value: Any, base: Path) -> Any:
    if kind == "path":
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{key} must be a path in quotes, not {value!r}")
        return base / value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key} must be a whole number of at least 1, not {value!r}")
        return value
    if kind == "seconds":
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigError(f"{key} must be a positive number of seconds, not {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be text in quotes, not {value!r}")
    return value


def _policy(base: LatePolicy, table: dict[str, Any], where: str
            ) -> tuple[LatePolicy, set[str]]:
    changes: dict[str, Any] = {}
    for key, value in table.items():
        kind = LATE_KEYS.get(key)
        if kind is None:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(LATE_KEYS)})")
        if kind is float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"{where}.{key} must be a number, not {value!r}")
            value = float(value)
        elif not isinstance(value, str):
            raise ConfigError(f"{where}.{key} must be text in quotes, not {value!r}")
        changes["kind" if key == "policy" else key] = value
    try:
        return replace(base, **changes).check(), set(changes)
    except LateError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def policy_fields() -> list[str]:
    """The ``LatePolicy`` fields as the config names them (``policy`` for ``kind``)."""
    return ["policy" if f.name == "kind" else f.name for f in fields(LatePolicy)]
