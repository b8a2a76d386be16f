"""A class roster: the students who should have a row, read from a CSV an LMS exports.

``pallas-lab grade CLASS --roster roster.csv`` gives every student on the roster
a row in the gradebook and the table, those without a submission included
("missing: no submission"), and marks submitters who are not on it ("not on
the roster"). Accepted files (the header decides; columns are found by name,
in any letter case):

* a plain list: a column ``student`` (or ``id``, ``username``, ``login``,
  ``name``), or one column without a header;
* a Canvas gradebook export: ``Student`` ("Last, First"), ``ID``, ``SIS User
  ID``, ``SIS Login ID``; the ``Points Possible`` row and other rows without an
  ID are not students;
* a Moodle grades export or grading worksheet: ``First name`` + ``Last name``
  (or ``Full name``), ``ID number``, ``Username``, ``Email address``,
  ``Identifier`` ("Participant 123");
* a Blackboard export: ``Last Name``, ``First Name``, ``Username``,
  ``Student ID``.

A submission folder belongs to a roster entry when one of the entry's names (an id, a
login, an e-mail address or its local part, "first last", "last first" or "last,
first") means that folder by the one name-matching rule, ``graders.reports.names.
resolve_student`` (the rule the extensions and adjustments files use): its name, its
Moodle download prefix (``Jane Smith_123_assignsubmission_file_``) or its Canvas file
prefix (``smithjane``), exactly, or folded to lower-case letters and digits when nothing
else folds alike and no look-alike character is involved. A folder is given a roster
entry only when that entry means it alone and no other entry means it too, so a folder
named like a classmate never lands on the classmate's row: both are set aside and said
to be unclear (``match_entries``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graders.reports.names import fold, resolve_student

#: Header names (folded) of columns that identify a student, by what they hold.
#: The gradebook note of a roster student without a submission: their total is 0.
NO_SUBMISSION = "missing: no submission"

ID_COLUMNS = ("student", "id", "student id", "id number", "sis user id", "sis login id",
              "username", "login", "user", "email", "email address", "identifier",
              "name", "full name")
FIRST = ("first name", "firstname", "given name")
LAST = ("last name", "lastname", "surname", "family name")


class RosterError(ValueError):
    """The roster file cannot be read or holds no student; the message says which file."""


@dataclass(frozen=True)
class RosterEntry:
    """One student on the roster: ``name`` (what their row is called when they did not
    submit), ``keys`` (folded ids, logins and name orders that identify them), ``values``
    (the same, as written: what ``match_entries`` resolves) and ``cells`` (the roster's
    own columns of this row, header -> value as written, for an LMS import file)."""

    name: str
    keys: frozenset[str]
    values: tuple[str, ...] = ()
    cells: tuple[tuple[str, str], ...] = ()

    def cell(self, header: str) -> str:
        """The value of the roster column ``header`` (compared by ``fold_header``), or
        ``""``."""
        wanted = fold_header(header)
        return next((v for k, v in self.cells if fold_header(k) == wanted), "")


@dataclass(frozen=True)
class Roster:
    """A roster file read: its ``header`` (column names as written, in file order; a
    headerless list has ``("student",)``) and its students (``entries``, file order)."""

    header: tuple[str, ...]
    entries: list[RosterEntry]


def _entry(row: dict[str, str]) -> RosterEntry | None:
    cells = {fold_header(k): (v or "").strip() for k, v in row.items() if k is not None}
    first = next((cells[c] for c in FIRST if cells.get(c)), "")
    last = next((cells[c] for c in LAST if cells.get(c)), "")
    values = [cells[c] for c in ID_COLUMNS if cells.get(c)]
    if first or last:
        values += [f"{first} {last}", f"{last} {first}"]
    for column in ("email", "email address"):
        if "@" in cells.get(column, ""):
            local = cells[column].split("@", 1)[0]
            if not local.strip().isdigit():
                # the student chooses it: a digits-only one would read as an LMS id and
                # take or cancel the row of the classmate with that id
                values.append(local)
    full = cells.get("student") or cells.get("name") or cells.get("full name") or ""
    if "," in full:  # Canvas: "Last, First"
        last_name, first_name = (part.strip() for part in full.split(",", 1))
        values += [f"{first_name} {last_name}", f"{last_name} {first_name}"]
    if not values or (cells.get("student", "").strip().casefold() == "points possible"):
        return None
    if "sis user id" in cells or "sis login id" in cells:  # Canvas: students have an ID
        if not (cells.get("id") or cells.get("sis user id") or cells.get("sis login id")):
            return None
    name = next((cells[c] for c in ("sis login id", "username", "login", "id number",
                                    "student id", "sis user id", "student", "id", "user",
                                    "identifier", "name", "full name") if cells.get(c)),
                values[0])
    keys = frozenset(k for k in map(fold, values) if k)
    written = tuple((k, (v or "").strip()) for k, v in row.items() if k is not None)
    return RosterEntry(name, keys, tuple(dict.fromkeys(values)), written) if keys else None


def fold_header(name: str) -> str:
    """A column header compared by its words: ``"SIS User ID"`` -> ``"sis user id"``."""
    return " ".join(re.sub(r"[^0-9a-z@]+", " ", name.casefold()).split())


def read_roster(path: str | Path) -> list[RosterEntry]:
    """The students of the roster CSV at ``path`` (formats in the module docstring), in
    file order. Raises ``RosterError`` when it cannot be read or names no student."""
    return read_roster_file(path).entries


def read_roster_file(path: str | Path) -> Roster:
    """The roster CSV at ``path`` with its header (``Roster``): quoted cells may hold
    commas and line breaks; blank lines are skipped. Raises ``RosterError`` when it
    cannot be read or names no student."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"the roster {path} cannot be read: {exc}") from None
    try:
        records = [r for r in csv.reader(io.StringIO(text, newline=""))
                   if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise RosterError(f"the roster {path} is not a CSV file: {exc}") from None
    if not records:
        raise RosterError(f"the roster {path} is empty")
    header = [fold_header(h) for h in records[0]]
    known = set(ID_COLUMNS) | set(FIRST) | set(LAST)
    if not known & set(header):  # no header: one student per line, first column
        names: tuple[str, ...] = ("student",)
        rows: Iterable[dict[str, str]] = ({"student": r[0]} for r in records if r)
    else:
        names = tuple(h.strip() for h in records[0])
        rows = (dict(zip(names, r, strict=False)) for r in records[1:])
    entries, seen = [], set()
    for row in rows:
        entry = _entry(row)
        if entry is not None and entry.keys not in seen:
            seen.add(entry.keys)
            entries.append(entry)
    if not entries:
        first_line = ",".join(records[0])[:120]
        raise RosterError(f"the roster {path} names no student (columns: {first_line})")
    return Roster(names, entries)


@dataclass
class RosterMatch:
    """How the folders found match the roster (``match_entries``).

    ``matched``: folder -> its entry; ``missing``: entries no folder matches;
    ``strangers``: folders no entry matches; ``unclear``: folder -> why it was given no
    entry although one matches it (several entries match it, or its entry matches
    another folder too); ``contested``: entry -> why it was given no folder although one
    matches it. A folder or entry is in exactly one of these."""

    matched: dict[str, RosterEntry] = field(default_factory=dict)
    missing: list[RosterEntry] = field(default_factory=list)
    strangers: list[str] = field(default_factory=list)
    unclear: dict[str, str] = field(default_factory=dict)
    contested: dict[RosterEntry, str] = field(default_factory=dict)


def match_entries(entries: Sequence[RosterEntry], students: Iterable[str]) -> RosterMatch:
    """Which folder of ``students`` each roster entry means (``RosterMatch``).

    Each of an entry's names as written (``RosterEntry.values``) is resolved among the
    folders by ``graders.reports.names.resolve_student``, the rule the extensions and
    adjustments files use (exact first; folded only when unambiguous, with the same word
    breaks and no look-alike character; digits are ids). An entry whose names mean one
    folder, which no other entry means, is that folder's. An entry whose names mean
    several folders, and a folder several entries mean, are set aside (``contested``,
    ``unclear``): a folder named like a classmate never takes their row, and the TA is
    told which names collide."""
    folders = sorted(set(students))
    meant: dict[RosterEntry, set[str]] = {}
    for entry in entries:
        found = {resolve_student(value, folders)[0] for value in entry.values}
        meant[entry] = {f for f in found if f is not None}
    out = RosterMatch()
    claims: dict[str, list[RosterEntry]] = {}
    for entry in entries:
        if len(meant[entry]) > 1:
            names = ", ".join(sorted(meant[entry])[:4])
            out.contested[entry] = f"several folders match this roster entry ({names})"
            for folder in meant[entry]:
                out.unclear.setdefault(folder, f"roster entry {entry.name!r} also matches "
                                               f"another folder ({names})")
        elif meant[entry]:
            claims.setdefault(next(iter(meant[entry])), []).append(entry)
    for folder, claimants in claims.items():
        if len(claimants) == 1:
            out.matched[folder] = claimants[0]
            out.unclear.pop(folder, None)
            continue
        names = ", ".join(repr(e.name) for e in claimants[:4])
        out.unclear[folder] = f"several roster entries match it ({names})"
        for entry in claimants:
            out.contested[entry] = f"the folder {folder!r} matches other roster entries too"
    out.missing = [e for e in entries if not meant[e]]
    out.strangers = [f for f in folders if f not in out.matched and f not in out.unclear]
    return out


def match_roster(entries: Sequence[RosterEntry], students: Iterable[str]
                 ) -> tuple[dict[str, RosterEntry], list[RosterEntry], list[str]]:
    """(student -> their roster entry, entries without a submission told apart, students
    not on the roster or not told apart): ``match_entries`` in three lists, the
    contested entries among the missing and the unclear folders among the strangers."""
    found = match_entries(entries, students)
    missing = [e for e in entries if e in found.contested or e in found.missing]
    return found.matched, missing, [*found.strangers, *found.unclear]
