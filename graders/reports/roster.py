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

A submission folder belongs to a roster entry when its name, its Moodle
download prefix (``Jane Smith_123_assignsubmission_file_``) or its Canvas
file prefix (``smithjane``), folded to lower-case letters and digits, equals
one of the entry's keys: an id, a login, an e-mail address or its local part,
"first last", "last first" or "last, first".
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Header names (folded) of columns that identify a student, by what they hold.
ID_COLUMNS = ("student", "id", "student id", "id number", "sis user id", "sis login id",
              "username", "login", "user", "email", "email address", "identifier",
              "name", "full name")
FIRST = ("first name", "firstname", "given name")
LAST = ("last name", "lastname", "surname", "family name")
#: Moodle's folder of a downloaded submission: ``<Full Name>_<id>_assignsubmission_<kind>_``.
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+_?$",
                           re.IGNORECASE)


class RosterError(ValueError):
    """The roster file cannot be read or holds no student; the message says which file."""


def fold(text: str) -> str:
    """``text`` in lower case with only its letters and digits (how names are compared)."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


@dataclass(frozen=True)
class RosterEntry:
    """One student on the roster: ``name`` (what their row is called when they did not
    submit) and ``keys`` (folded ids, logins and name orders that identify them)."""

    name: str
    keys: frozenset[str]


def _entry(row: dict[str, str]) -> RosterEntry | None:
    cells = {fold_header(k): (v or "").strip() for k, v in row.items() if k is not None}
    first = next((cells[c] for c in FIRST if cells.get(c)), "")
    last = next((cells[c] for c in LAST if cells.get(c)), "")
    values = [cells[c] for c in ID_COLUMNS if cells.get(c)]
    if first or last:
        values += [f"{first} {last}", f"{last} {first}"]
    for column in ("email", "email address"):
        if "@" in cells.get(column, ""):
            values.append(cells[column].split("@", 1)[0])
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
    return RosterEntry(name, keys) if keys else None


def fold_header(name: str) -> str:
    """A column header compared by its words: ``"SIS User ID"`` -> ``"sis user id"``."""
    return " ".join(re.sub(r"[^0-9a-z@]+", " ", name.casefold()).split())


def read_roster(path: str | Path) -> list[RosterEntry]:
    """The students of the roster CSV at ``path`` (formats in the module docstring), in
    file order. Raises ``RosterError`` when it cannot be read or names no student."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"the roster {path} cannot be read: {exc}") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise RosterError(f"the roster {path} is empty")
    header = [fold_header(h) for h in next(csv.reader([lines[0]]))]
    known = set(ID_COLUMNS) | set(FIRST) | set(LAST)
    if not known & set(header):  # no header: one student per line, first column
        rows: Iterable[dict[str, str]] = ({"student": r[0]} for r in csv.reader(lines) if r)
    else:
        rows = csv.DictReader(lines)
    entries, seen = [], set()
    for row in rows:
        entry = _entry(row)
        if entry is not None and entry.keys not in seen:
            seen.add(entry.keys)
            entries.append(entry)
    if not entries:
        raise RosterError(f"the roster {path} names no student (columns: {lines[0][:120]})")
    return entries


def folder_keys(folder_name: str) -> set[str]:
    """The folded names a submission folder (or LMS prefix) may match a roster entry by."""
    keys = {fold(folder_name)}
    moodle = MOODLE_FOLDER.match(folder_name)
    if moodle is not None:
        keys |= {fold(moodle.group("name")), moodle.group("id")}
    return {k for k in keys if k}


def match_roster(entries: Sequence[RosterEntry], students: Iterable[str]
                 ) -> tuple[dict[str, RosterEntry], list[RosterEntry], list[str]]:
    """(student -> their roster entry, entries without a submission, students not on the
    roster). A student matches the first entry sharing a key (``folder_keys``)."""
    matched: dict[str, RosterEntry] = {}
    strangers = []
    for student in students:
        keys = folder_keys(student)
        entry = next((e for e in entries if e.keys & keys), None)
        if entry is None:
            strangers.append(student)
        else:
            matched[student] = entry
    taken = set(matched.values())
    return matched, [e for e in entries if e not in taken], strangers
