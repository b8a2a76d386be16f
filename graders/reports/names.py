"""Which student a name written by a person means: the one name-matching rule.

A TA writes names into the roster, the extensions and the adjustments files; students
choose their folder names (and, on Moodle, their display names). ``resolve_student``
decides which folder a written name means, so that a look-alike name can neither take
nor cancel a classmate's row: an exact match wins; a match found only by folding
(``folder_keys``: case, spaces and punctuation dropped) counts
only when nothing else folds alike, the words break the same way, and no character of
the name is a look-alike (a non-ASCII letter that case-folds to ASCII, such as U+212A
KELVIN SIGN, or an invisible format character such as a zero-width space); a name of
digits only is an id. Used by the ledger (``graders.reports.ledger``) and by the roster
(``graders.reports.roster.match_roster``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

#: Moodle's folder of a downloaded submission: ``<Full Name>_<id>_assignsubmission_<kind>_``.
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+_?$",
                           re.IGNORECASE)


def fold(text: str) -> str:
    """``text`` in lower case with only its letters and digits (how names are compared)."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def folder_keys(folder_name: str) -> set[str]:
    """The folded names a submission folder (or LMS prefix) may match a roster entry by."""
    keys = {fold(folder_name)}
    moodle = MOODLE_FOLDER.match(folder_name)
    if moodle is not None:
        keys |= {fold(moodle.group("name")), moodle.group("id")}
    return {k for k in keys if k}


def _spelled(text: str) -> str:
    """A name as written, but for ASCII letters' case and runs of spaces: how an "exact"
    match compares. Only ``A``-``Z`` are lowered and nothing is normalized (NFC itself
    maps U+212A KELVIN SIGN to ``K``), so a non-ASCII look-alike (the Kelvin sign, whose
    ``casefold`` is ``k``) never equals an ASCII name."""
    return " ".join("".join(ch.lower() if ch.isascii() else ch for ch in text).split())


def _words(text: str) -> tuple[str, ...]:
    """The folded words of a name: "Ali Ce Smith" -> ("ali", "ce", "smith")."""
    return tuple(w for w in (fold(part) for part in text.split()) if w)


def _names_of(student: str) -> list[str]:
    """The names a gradebook row goes by: its folder name; a Moodle folder's name and id."""
    moodle = MOODLE_FOLDER.match(student)
    return [student, *(moodle.group("name", "id") if moodle else ())]


def _folds_alike(name: str, student: str) -> bool:
    """Whether ``name`` matches ``student`` only once folded (``folder_keys``), and not
    across different word breaks: "alicesmith" may mean "Alice Smith", "Alice Smith" never
    means "Ali Ce Smith"."""
    key = fold(name)
    if key not in folder_keys(student) or _folds_to_ascii(name):
        return False
    words = _words(name)
    return any(fold(other) == key and not _folds_to_ascii(other)
               and (len(words) < 2 or len(_words(other)) < 2 or _words(other) == words)
               for other in _names_of(student))


def _folds_to_ascii(text: str) -> bool:
    """Whether ``text`` holds a look-alike, never matched by folding: a non-ASCII
    character that case-folds to ASCII (U+212A KELVIN SIGN to ``k``, U+017F LONG S to
    ``s``), or an invisible format character (category Cf: a zero-width space or joiner,
    a bidirectional control), which folding would drop."""
    return any(not ch.isascii() and (unicodedata.category(ch) == "Cf"
                                     or any(c.isascii() for c in ch.casefold()))
               for ch in text)


def resolve_student(name: str, students: Iterable[str]) -> tuple[str | None, str]:
    """The student of ``students`` (every name found and on the roster, those without a
    submission included) a CSV row's ``name`` means, or (None, why).

    An exact match wins: the folder name, else a Moodle folder's name or id as written
    (ASCII letters' case and runs of spaces aside, ``_spelled``), which must then be
    unique. A match found only by folding
    (``folder_keys``: case, spaces and punctuation dropped) counts
    only when no other name folds to the same key and it breaks into the same words
    (or one side is a single word: a login); otherwise the row is refused, so a
    look-alike name can neither take nor cancel a classmate's row.

    A name made only of digits is an id, never a display name (``_by_id``): Moodle lets a
    student choose the display name ``123``, which must not take or cancel the row of
    the classmate whose Moodle id is 123."""
    students = sorted(set(students))
    if _is_id(name):
        return _by_id(name.strip(), students)
    if name in students:
        return name, ""
    spelled = [s for s in students if any(_spelled(n) == _spelled(name) for n in _names_of(s))]
    if len(spelled) == 1:
        return spelled[0], ""
    if spelled:
        return None, (f"{name!r} names several students ({', '.join(spelled[:3])}): write "
                      "the folder name")
    key = fold(name)
    alike = [s for s in students if key and key in folder_keys(s)]
    if len(alike) > 1:
        return None, (f"{name!r} matches several students only once case, spaces and "
                      f"punctuation are dropped ({', '.join(alike[:3])}): write the name "
                      "exactly as the gradebook shows it")
    if len(alike) == 1 and _folds_alike(name, alike[0]):
        return alike[0], ""
    if alike:
        return None, (f"no student {name!r} among those found ({alike[0]!r} differs in "
                      "its words: write the name exactly as the gradebook shows it)")
    return None, f"no student {name!r} among those found"


def _is_id(name: str) -> bool:
    """Whether a row's student cell is an id: ASCII digits only (spaces around aside)."""
    text = name.strip()
    return bool(text) and text.isascii() and text.isdigit()


def _by_id(number: str, students: Sequence[str]) -> tuple[str | None, str]:
    """The one student whose id is ``number``: a Moodle folder's id, or a folder named by
    the number itself (a student number as nbgrader's ``submitted/<id>/``); never a
    Moodle folder whose display name is that number."""
    found = [s for s in students if s == number
             or ((m := MOODLE_FOLDER.match(s)) is not None and m.group("id") == number)]
    if len(found) == 1:
        return found[0], ""
    if found:
        return None, (f"{number!r} is the id of several students ({', '.join(found[:3])}): "
                      "write the folder name")
    return None, (f"no student with the id {number!r} among those found (a number names an "
                  "LMS id or a folder so named, never a display name)")
