"""The gradebook-import layouts of Canvas, Moodle and Blackboard: columns, key and cells.

Each ``Layout`` says which of the roster's own columns an LMS's import file keeps (in
that LMS's order), which of them is the key the LMS finds a student by, how an
assignment's column is named, and whether a "Points Possible" row follows the header.
``graders.reports.lms_export`` fills it with the grades. Sources, read for this layout:

* Canvas, Instructure's guide "How do I import grades in the Gradebook?"
  (community.canvaslms.com, Instructor Guide) and its export: ``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID`` (``Integration ID`` when the course has one),
  ``Section``, then one column per assignment named ``Title (assignment id)``; the second
  row is ``Points Possible``. Canvas finds a student by ``ID``, ``SIS User ID`` or ``SIS
  Login ID``; a column whose name carries an existing assignment's id updates it, any
  other name creates an assignment with the points of the ``Points Possible`` row.
* Moodle, its CSV grade import (``grade/import/csv/classes/load_data.php``): the TA maps
  one column to a user field (``useridnumber``: ``ID number``; ``useremail``: ``Email
  address``; ``username``) and each grade column to a grade item or a new one. Its
  export's identity columns are ``First name``, ``Last name``, ``ID number``,
  ``Institution``, ``Department``, ``Email address``; grade columns are named
  ``Assignment: Title (Real)``. An empty grade or ``-`` means no grade. A row whose key
  matches no user aborts the whole import, and a row with an empty key keeps the user of
  the row before it, so rows without a key are never written.
* Blackboard Learn (Original), "Uploading External Grade Center Items" (Blackboard Help
  for instructors, Grade Center, "Work Offline"): the key is ``Username``; the download's
  identity columns are ``Last Name``, ``First Name``, ``Username``, ``Student ID``
  (``Last Access`` and ``Availability`` are Blackboard's own and not uploaded); a column
  named ``Title [Total Pts: 100 Score] |1234`` updates the Grade Center column 1234, a
  column without an id creates a text column with 0 points possible (set its points
  after the upload). In a comma-delimited file every cell is quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from graders.course.records import Assignment
from graders.reports.names import fold
from graders.reports.roster import Roster, fold_header

#: The LMSs ``pallas-lab grade --format`` writes an import file for.
LMS_FORMATS = ("canvas", "moodle", "blackboard")


@dataclass(frozen=True)
class Layout:
    """One LMS's import file.

    ``identity``: the roster columns kept, in the LMS's order (those the roster has);
    ``keys``: the columns the LMS can find a student by, in order of preference (the
    first the roster has is the file's key); ``points_row``: the first cell of a row of
    maxima after the header, or ``""`` for none; ``quote_numbers``: every cell quoted
    (Blackboard's comma-delimited files); ``linked``: a pattern of the LMS's own column
    name for an existing item, whose group ``title`` names it. A new item's column is
    named ``"<id> <title>"`` (``"a1 Pallas basics"``)."""

    lms: str
    identity: tuple[str, ...]
    keys: tuple[str, ...]
    points_row: str
    quote_numbers: bool
    linked: re.Pattern[str]


LAYOUTS = {
    "canvas": Layout(
        "canvas", ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section"),
        ("ID", "SIS User ID", "SIS Login ID"), "Points Possible", False,
        re.compile(r"^(?P<title>.+?)\s*\(\d+\)$")),
    "moodle": Layout(
        "moodle", ("First name", "Last name", "ID number", "Institution", "Department",
                   "Email address", "Username"),
        ("ID number", "Email address", "Username"), "", False,
        re.compile(r"^(?:[^:]+:\s*)?(?P<title>.+?)\s*\((?:Real|Percentage|Letter)\)$")),
    "blackboard": Layout(
        "blackboard", ("Last Name", "First Name", "Username", "Student ID"), ("Username",),
        "", True,
        re.compile(r"^(?P<title>.+?)\s*\[Total Pts:[^\]]*\]\s*(?:\|\s*\d+)?$")),
}


def identity_columns(layout: Layout, roster: Roster) -> list[str]:
    """The roster's columns the import file keeps, spelled as the roster spells them, in
    the LMS's order; Canvas's ``Student`` column is always kept (it holds the "Points
    Possible" label)."""
    have = {fold_header(h): h for h in roster.header}
    out = [have.get(fold_header(c), "") for c in layout.identity]
    return [c or layout.identity[i] for i, c in enumerate(out)
            if c or (layout.lms == "canvas" and layout.identity[i] == "Student")]


def key_column(layout: Layout, roster: Roster) -> str | None:
    """The column the LMS finds students by in this roster, as the roster spells it: of
    ``Layout.keys`` the roster has, the one filled in for the most students (an
    institution may leave Moodle's ``ID number`` empty), the earlier in ``Layout.keys``
    on a tie; None when the roster has none of them."""
    have = {fold_header(h): h for h in roster.header}
    present = [have[fold_header(k)] for k in layout.keys if fold_header(k) in have]
    if not present:
        return None
    return max(present, key=lambda column: (
        sum(1 for e in roster.entries if e.cell(column).strip()), -present.index(column)))


def missing_key_problem(layout: Layout, roster: Roster, path: object) -> str | None:
    """Why ``roster`` (read from ``path``) cannot key this LMS's import file (None when it
    can): it has none of the LMS's key columns, e.g. a plain list given for Canvas."""
    if key_column(layout, roster) is not None:
        return None
    wanted = " or ".join(repr(k) for k in layout.keys)
    return (f"--format {layout.lms} needs a roster exported from {layout.lms.capitalize()} "
            f"(a column {wanted} to key the import by); {path} has none")


def assignment_column(layout: Layout, roster: Roster, info: Assignment) -> str:
    """The import file's column of ``info``: the roster's own column of it when the roster
    (an LMS export) has one whose title, without the LMS's id or type, is the
    assignment's title, stem or id (letter case, spaces and punctuation aside), so the
    LMS updates that item; otherwise a new column, ``"<id> <title>"``."""
    names = {fold(info.title), fold(info.stem), fold(info.id),
             fold(f"{info.id} {info.title}")}
    for header in roster.header:
        linked = layout.linked.match(header.strip())
        if linked is not None and fold(linked.group("title")) in names:
            return header.strip()
    return f"{info.id} {info.title}"


def columns(layout: Layout, roster: Roster, assignments: Sequence[Assignment]) -> list[str]:
    """The import file's header: identity columns, then one column per assignment."""
    return [*identity_columns(layout, roster),
            *(assignment_column(layout, roster, a) for a in assignments)]
