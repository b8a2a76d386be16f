"""Late submissions outside nbgrader: due dates, extensions, submission times and penalties.

Applied by the grader after grading, when the gradebook and the feedback are written
(``graders.reports.ledger``), never by anything a submission runs: a results folder graded
once serves any later policy (docs/ta-guide.md, "Late work and adjustments").

A submission's time comes from the best source its layout has (``submission_time``):

* an nbgrader course (``COURSE/submitted/<student>/<assignment>/``): ``timestamp.txt``
  beside the notebook, which nbgrader's ``collect`` writes there;
* Gradescope's layout (``/autograder/submission/`` given as the PATH): the
  ``created_at`` of ``submission_metadata.json`` *beside* the ``submission`` folder,
  where Gradescope writes it, never one inside it;
* a flat Canvas download (``<name>_[LATE_]<id>_<id>_<file>``): Canvas's ``LATE`` flag in
  the part of the name Canvas writes (late or not, measured against Canvas's own due
  date); how late it was comes from the file's time when that is after the due date;
* anything else (student folders, Moodle downloads): the file's modification time, which
  whoever copied the file last, the student included, could set.

Every source is named in the gradebook (``<aN> late source``) and the feedback.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from graders.course.catalog import ASSIGNMENTS, Assignment, assignment_for_stem
from graders.grading.submission import Submission
from graders.safety import submission_files

#: The late policies: ``none`` records lateness only, ``zero`` scores a late submission 0,
#: ``percent`` takes ``rate`` percent per started day or hour, at most ``cap`` percent.
POLICIES = ("none", "zero", "percent")
PERIODS = {"day": 86400.0, "hour": 3600.0}
BASES = ("score", "max")
#: The largest timestamp.txt / submission_metadata.json read, in bytes.
MAX_TIME_FILE_BYTES = 64 << 10
#: Canvas's flag in the prefix it writes: ``<name>_LATE_<user id>_<submission id>_``.
CANVAS_LATE = re.compile(r"^[^_]+_late_\d+_\d+_", re.IGNORECASE)


class LateError(ValueError):
    """A due date, policy or extensions file that cannot be used; the message says which."""


@dataclass(frozen=True)
class LatePolicy:
    """How lateness costs points.

    ``kind``: one of ``POLICIES``; ``per``: ``"day"`` or ``"hour"`` (the period counted,
    started periods count whole); ``rate``: percent taken per period; ``cap``: the most
    percent taken in all; ``grace_minutes``: minutes after the due date that are not late;
    ``basis``: ``"score"`` (percent of the points earned) or ``"max"`` (of the assignment's
    maximum). A penalty never exceeds the points earned, so no score goes below 0.
    """

    kind: str = "none"
    per: str = "day"
    rate: float = 10.0
    cap: float = 100.0
    grace_minutes: float = 0.0
    basis: str = "score"

    def check(self) -> LatePolicy:
        """``self`` when every field is valid; raises ``LateError`` naming the field."""
        if self.kind not in POLICIES:
            raise LateError(f"late policy must be one of {', '.join(POLICIES)}, "
                            f"not {self.kind!r}")
        if self.per not in PERIODS:
            raise LateError(f"late per must be day or hour, not {self.per!r}")
        if self.basis not in BASES:
            raise LateError(f"late basis must be score or max, not {self.basis!r}")
        for name, value, top in (("rate", self.rate, 100.0), ("cap", self.cap, 100.0),
                                 ("grace_minutes", self.grace_minutes, math.inf)):
            if not 0 <= value <= top:
                raise LateError(f"late {name} must lie within 0 and {top:g}, not {value:g}")
        return self

    def describe(self) -> str:
        """The policy in words: "10% per started day, at most 50% (of the score)"."""
        grace = f", {self.grace_minutes:g} min grace" if self.grace_minutes else ""
        if self.kind == "none":
            return f"none (lateness recorded, no penalty{grace})"
        if self.kind == "zero":
            return f"zero (a late submission scores 0{grace})"
        return (f"{self.rate:g}% per started {self.per}, at most {self.cap:g}% "
                f"(of the {'points earned' if self.basis == 'score' else 'maximum'}{grace})")

    def penalty(self, late_seconds: float | None, earned: float, maximum: float) -> float:
        """Points taken from ``earned`` (of ``maximum``) for a submission ``late_seconds``
        after its due date (``None``: late by an unknown amount, counted as one period;
        ``<= 0``: on time). Never more than ``earned``, never below 0."""
        if late_seconds is not None and late_seconds <= self.grace_minutes * 60:
            return 0.0
        if self.kind == "none" or earned <= 0:
            return 0.0
        if self.kind == "zero":
            return earned
        periods = 1 if late_seconds is None else math.ceil(
            (late_seconds - self.grace_minutes * 60) / PERIODS[self.per] - 1e-9)
        percent = min(self.cap, self.rate * max(periods, 1))
        basis = earned if self.basis == "score" else maximum
        return round(min(earned, basis * percent / 100.0), 6)


@dataclass(frozen=True)
class SubmissionTime:
    """When a submission was made, as far as the grader can tell.

    ``when``: an aware datetime, or None when only the fact of lateness is known;
    ``source``: where it came from, in words ("nbgrader timestamp.txt", "file mtime");
    ``late_flag``: the LMS's own verdict (True/False), None when it gave none.
    """

    when: dt.datetime | None
    source: str
    late_flag: bool | None = None


def parse_time(text: str, zone: dt.tzinfo) -> dt.datetime:
    """An aware datetime from ``text``: ISO 8601 with a ``T`` or a space, seconds and
    fractions optional, a trailing ``Z``, ``UTC``/``GMT`` or ``+HH:MM`` zone; a date
    alone means the end of that day (23:59:59). Without a zone, ``zone``. Raises
    ``LateError``."""
    raw = text.strip()
    clean = re.sub(r"\s*(?:UTC|GMT)$", "+00:00", raw, flags=re.IGNORECASE)
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", clean):
            when = dt.datetime.combine(dt.date.fromisoformat(clean), dt.time(23, 59, 59))
        else:
            when = dt.datetime.fromisoformat(clean)
    except ValueError:
        raise LateError(f"{raw!r} is not a date and time (e.g. 2026-03-01 23:59, "
                        "2026-03-01T23:59+01:00, '2026-03-01 17:00 UTC')") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=zone)


def as_aware(value: object, zone: dt.tzinfo, what: str) -> dt.datetime:
    """A TOML value (datetime, date or text) as an aware datetime; raises ``LateError``."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=zone)
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(23, 59, 59), tzinfo=zone)
    if isinstance(value, str):
        try:
            return parse_time(value, zone)
        except LateError as exc:
            raise LateError(f"{what}: {exc}") from None
    raise LateError(f"{what} must be a date and time, not {type(value).__name__}")


def course_zone(name: str | None) -> dt.tzinfo:
    """The zone naive times are read in: the IANA ``name`` ("Europe/Berlin"), else this
    machine's local zone. Raises ``LateError`` for an unknown name."""
    if not name:
        local = dt.datetime.now().astimezone().tzinfo
        return local if local is not None else dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise LateError(f"timezone {name!r} is not an IANA zone name "
                        "(e.g. Europe/Berlin, America/New_York, UTC)") from None


def assignment_named(name: str) -> Assignment | None:
    """The assignment ``name`` names: its id (``a4``) or its stem."""
    return ASSIGNMENTS.get(name.strip()) or assignment_for_stem(name.strip())


def parse_due_flag(spec: str, zone: dt.tzinfo) -> tuple[str | None, dt.datetime]:
    """``--due``'s value: ``aN=WHEN`` (or ``<stem>=WHEN``) -> (``"aN"``, time), or a bare
    ``WHEN`` -> (None, time): every assignment graded. Raises ``LateError``."""
    name, sep, when = spec.partition("=")
    if sep:
        info = assignment_named(name)
        if info is None:
            raise LateError(f"--due {spec!r}: {name.strip()!r} is not an assignment "
                            "(a1..a5 or a stem)")
        return info.id, _flag_time(spec, when, zone)
    return None, _flag_time(spec, spec, zone)


def _flag_time(spec: str, text: str, zone: dt.tzinfo) -> dt.datetime:
    try:
        return parse_time(text, zone)
    except LateError as exc:
        raise LateError(f"--due {spec!r}: {exc}") from None


def _bounded_text(path: Path) -> str | None:
    """The text of a small regular file (never through a link), or None."""
    try:
        return submission_files.read_bytes(path, MAX_TIME_FILE_BYTES).decode("utf-8")
    except (OSError, ValueError, submission_files.RefusedFile):
        return None


def _nbgrader_time(sub: Submission) -> SubmissionTime | None:
    """nbgrader's ``timestamp.txt`` in ``submitted/<student>/<assignment>/``, only in an
    nbgrader course (``origin == "nbgrader"``); nbgrader writes UTC."""
    if sub.origin != "nbgrader":
        return None
    stamp = Path(sub.file).parent / "timestamp.txt"
    text = _bounded_text(stamp)
    if text is None:
        return None
    line = text.strip().splitlines()[0] if text.strip() else ""
    try:
        return SubmissionTime(parse_time(line[:64], dt.UTC), "nbgrader timestamp.txt")
    except LateError:
        return None


def _gradescope_time(sub: Submission) -> SubmissionTime | None:
    """Gradescope's ``submission_metadata.json`` beside the ``submission`` folder given as
    the PATH (``origin == "gradescope"``): its ``created_at``, with a zone."""
    if sub.origin != "gradescope" or sub.folder is None:
        return None
    text = _bounded_text(Path(sub.folder).parent / "submission_metadata.json")
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    created = data.get("created_at") if isinstance(data, dict) else None
    if not isinstance(created, str) or len(created) > 64:
        return None
    try:
        when = dt.datetime.fromisoformat(created.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return SubmissionTime(when, "Gradescope submission_metadata.json created_at")


def _mtime(sub: Submission) -> dt.datetime | None:
    try:
        return dt.datetime.fromtimestamp(os.lstat(sub.file).st_mtime, tz=dt.UTC)
    except (OSError, OverflowError, ValueError):
        return None


def submission_time(sub: Submission) -> SubmissionTime:
    """The submission time of ``sub`` from the best source its layout has (module
    docstring), saying which. Never raises: no source at all gives ``when=None`` and the
    source "unknown"."""
    for source in (_nbgrader_time, _gradescope_time):
        found = source(sub)
        if found is not None:
            return found
    mtime = _mtime(sub)
    if sub.origin == "canvas":
        flag = CANVAS_LATE.match(Path(sub.file).name) is not None
        word = "LATE flag" if flag else "no LATE flag"
        return SubmissionTime(mtime, f"Canvas file name ({word}); time: file mtime", flag)
    if mtime is None:
        return SubmissionTime(None, "unknown (the file's time cannot be read)")
    where = " (Moodle download)" if sub.origin == "moodle" else ""
    return SubmissionTime(mtime, f"file mtime{where}")


def late_seconds(time: SubmissionTime, due: dt.datetime, *, extended: bool = False
                 ) -> float | None:
    """Seconds ``time`` lies after ``due`` (<= 0: on time); None when late by an unknown
    amount (Canvas's flag without a later file time). Canvas's verdict wins over the file's
    time: a file without the flag is on time. With an extension (``extended``: ``due`` is
    the student's own), Canvas's flag, judged against Canvas's due date, says nothing
    about ``due``: the time decides, and with no time known the extension wins (on
    time)."""
    if time.late_flag is False:
        return 0.0
    if time.when is None:
        return 0.0 if extended and time.late_flag else None
    if extended:
        return (time.when - due).total_seconds()
    seconds = (time.when - due).total_seconds()
    if time.late_flag is True and seconds <= 0:
        return None
    return seconds


def lateness_text(seconds: float | None) -> str:
    """Lateness in words: "on time", "late by 1 d 2 h 5 min", "late (amount unknown)"."""
    if seconds is None:
        return "late (amount unknown: counted as one period)"
    if seconds <= 0:
        return "on time"
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "",
             f"{mins} min" if mins else ""]
    return "late by " + " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Extension:
    """A student's extension for one assignment (``assignment`` None: every one): a new
    due date ``due``, or ``hours`` more; ``reason`` as written; ``where``: file:line."""

    student: str
    assignment: str | None
    due: dt.datetime | None
    hours: float
    reason: str
    where: str


#: The columns of an extensions CSV (``student`` and one of ``due``, ``days``, ``hours``).
EXTENSION_COLUMNS = ("student", "assignment", "due", "days", "hours", "reason")


def read_extensions(path: Path, zone: dt.tzinfo) -> tuple[list[Extension], list[str]]:
    """The extensions in the CSV ``path`` (``EXTENSION_COLUMNS``; ``assignment`` empty or
    ``*``: every assignment) and one message per row that cannot be used ("FILE line N:
    why"), which costs only that row. Raises ``LateError`` when the file cannot be read
    or has no ``student`` column."""
    rows, problems = read_table(path, ("student",), EXTENSION_COLUMNS)
    found: list[Extension] = []
    for line, row in rows:
        where = f"{path} line {line}"
        try:
            found.append(_extension(row, zone, where))
        except LateError as exc:
            problems.append(f"{where}: {exc}; row ignored")
    return found, problems


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise LateError(f"{what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise LateError(f"{what} {text!r} is not a finite number")
    return value


def _extension(row: Mapping[str, str], zone: dt.tzinfo, where: str) -> Extension:
    student = row.get("student", "").strip()
    if not student:
        raise LateError("no student")
    name = row.get("assignment", "").strip()
    info = None if name in ("", "*") else assignment_named(name)
    if name not in ("", "*") and info is None:
        raise LateError(f"{name!r} is not an assignment (a1..a5, a stem, or * for all)")
    given = [c for c in ("due", "days", "hours") if row.get(c, "").strip()]
    if len(given) != 1:
        raise LateError("give exactly one of due, days, hours")
    due, hours = None, 0.0
    if given[0] == "due":
        due = parse_time(row["due"], zone)
    else:
        hours = _number(row[given[0]].strip(), given[0]) * (24 if given[0] == "days" else 1)
        if hours < 0:
            raise LateError(f"{given[0]} must not be negative")
    return Extension(student, info.id if info else None, due, hours,
                     row.get("reason", "").strip(), where)


#: The largest extensions or adjustments CSV read, in bytes.
MAX_TABLE_BYTES = 4 << 20


def read_table(path: Path, required: tuple[str, ...], known: tuple[str, ...]
               ) -> tuple[list[tuple[int, dict[str, str]]], list[str]]:
    """(line number, row by lower-case column) of the CSV ``path``, and messages about
    columns it does not know; an empty file has no rows. Raises ``LateError`` when it
    cannot be read, is larger than ``MAX_TABLE_BYTES`` or lacks a ``required`` column."""
    try:
        if path.stat().st_size > MAX_TABLE_BYTES:
            raise LateError(f"{path} is larger than {MAX_TABLE_BYTES >> 20} MiB")
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise LateError(f"{path} cannot be read: {exc}") from None
    if not text.strip():
        return [], []  # an empty file (made at the start of term): no rows yet
    reader = csv.reader(text.splitlines())
    header = [h.strip().casefold() for h in next(reader, [])]
    missing = [c for c in required if c not in header]
    if missing:
        raise LateError(f"{path} line 1: no {', '.join(missing)} column "
                        f"(columns: {', '.join(known)})")
    problems = [f"{path} line 1: column {h!r} is not one of {', '.join(known)}; ignored"
                for h in header if h and h not in known]
    rows = []
    for number, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            problems.append(f"{path} line {number}: {len(cells)} cells for "
                            f"{len(header)} columns; row ignored")
            continue
        rows.append((number, {h: c for h, c in zip(header, cells, strict=False) if h}))
    return rows, problems
