"""Red team, second round: a student against the late-policy fixes of the first round
(``tests/redteam/test_late_attacks.py``) and what is around them, through the real CLI.

Same conventions: each test builds a small class (a1 only: the solution scores 100,
``x = 1`` scores 0 at once), grades it in a subprocess with ``--jobs 2`` and reads
``results/gradebook.csv``. The tests of attacks that work fail on the code they were
written against (they state the contract); ``test_defended_*`` are attacks that are
refused and must keep passing.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.late_class import (
    DAY,
    DUE_EPOCH,
    STEM,
    _put,
    book,
    grade,
    late_flags,
)

#: KELVIN SIGN: casefolds to a plain "k" and is shown as a "K" in every report.
KELVIN = "\u212a"


def _extensions(tmp_path: Path, student: str) -> Path:
    path = tmp_path / "extensions.csv"
    path.write_text("student,assignment,due,days,hours,reason\n"
                    f"{student},a1,,3,,medical\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------
# Attacks that work (each test fails on the current code)
# --------------------------------------------------------------------------------------


def test_regrading_my_folder_does_not_grade_a_nested_folder_as_a_classmate(
        tmp_path: Path) -> None:
    """Mallory submits in nbgrader's layout (``mallory/a1/a1_pallas_basics.py``, the
    solution) and also keeps a folder ``mallory/bob/a1_pallas_basics.py`` (``x = 1``,
    modified four days late). Graded as a class, ``bob/`` inside her folder is ignored
    (it is no assignment folder): both score 100. Mallory then asks for a regrade and the
    TA regrades her folder alone into the same results folder (``pallas-lab grade
    class/mallory --jobs 2 --out results ...``). Alone, her folder holds an assignment
    folder and a folder of submissions, so it is read as a *class* folder: its students
    are ``a1`` and ``bob``. The planted file is graded as Bob and overwrites Bob's
    ``results/bob/a1_pallas_basics/results.json`` (no name clash is seen: the real
    ``class/bob`` is not in this run).

    Observed after the regrade: row "bob" raw 0, submitted 2026-03-05 (the planted file's
    time), late 94 h, a1 0 (was 100); a new row "a1" with Mallory's solution. Expected:
    Bob's row unchanged by a regrade of Mallory's folder (a1 100), no row "a1"."""
    klass = tmp_path / "class"
    _put(klass / "mallory" / "a1" / f"{STEM}.py", solution=True, when=DUE_EPOCH - 7200)
    _put(klass / "mallory" / "bob" / f"{STEM}.py", solution=False,
         when=DUE_EPOCH + 4 * DAY - 7200)
    _put(klass / "bob" / f"{STEM}.py", solution=True, when=DUE_EPOCH - 7200)
    out = tmp_path / "results"
    first = grade(klass, "--jobs", "2", "--out", out, *late_flags())
    assert first.returncode == 0, first.stderr
    assert book(out)["bob"]["a1"] == "100"
    assert book(out)["mallory"]["a1"] == "100"
    again = grade(klass / "mallory", "--jobs", "2", "--out", out, *late_flags())
    rows = book(out)
    assert rows["bob"]["a1 raw"] == "100", (rows["bob"], again.stderr)
    assert rows["bob"]["a1"] == "100", rows["bob"]
    assert "a1" not in rows, sorted(rows)


def test_a_name_that_is_a_classmates_moodle_id_does_not_cancel_their_extension(
        tmp_path: Path) -> None:
    """Alice Smith (Moodle folder ``Alice Smith_123_assignsubmission_file_``) has a 3-day
    extension written by her Moodle id, as the guide allows ("a Moodle folder also by its
    name or id"): ``123,a1,,3,,medical``; she submits one day late. Mallory sets her
    display name to ``123``, so Moodle names her folder ``123_456_assignsubmission_file_``:
    her *name* is Alice's *id*, both count as an exact match, and the row "names several
    students" and is dropped for both.

    Observed: stderr "'123' names several students (...); row ignored", Alice's a1 0
    under ``--late-policy zero``. Expected: an id names the student with that id (a name
    that only equals it does not make the row ambiguous): Alice keeps 100."""
    klass = tmp_path / "class"
    alice = "Alice Smith_123_assignsubmission_file_"
    _put(klass / alice / f"{STEM}.py", solution=True, when=DUE_EPOCH + DAY)
    _put(klass / "123_456_assignsubmission_file_" / f"{STEM}.py", solution=False,
         when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, *late_flags(),
                "--extensions", _extensions(tmp_path, "123"))
    assert run.returncode == 0, run.stderr
    row = book(out)[alice]
    assert row["a1 raw"] == "100"
    assert row["a1"] == "100", (row, run.stderr)


def test_a_name_that_is_an_absent_classmates_moodle_id_does_not_take_their_excusal(
        tmp_path: Path) -> None:
    """The TA excuses Alice (Moodle id 123), who has not submitted a1, by her id:
    ``123,a1,100,,excused: medical,Prof. Lee,``. Mallory's display name is ``123`` (folder
    ``123_456_assignsubmission_file_``); with Alice absent from the run her *name* is the
    only exact match of the row, which the guide reserves for a Moodle folder's name *or
    id*.

    Observed: Mallory raw 0, a1 100 ("adjustment: a1 (whole assignment) set to 100:
    excused: medical"), nothing on stderr. Expected: a number names a Moodle folder by its
    id, never by a student's chosen name equal to it: the row is not applied to her
    (a problem line names it), final 0."""
    klass = tmp_path / "class"
    mallory = "123_456_assignsubmission_file_"
    _put(klass / mallory / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text("student,item,points,delta,reason,who,regrade\n"
                           "123,a1,100,,excused: medical,Prof. Lee,\n", encoding="utf-8")
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, "--adjustments", adjustments)
    assert run.returncode == 0, run.stderr
    row = book(out)[mallory]
    assert row["a1 raw"] == "0"
    assert row["a1"] == "0", row


def test_a_casefold_lookalike_name_does_not_cancel_a_classmates_extension(
        tmp_path: Path) -> None:
    """Kim Lee (Moodle folder ``Kim Lee_123_assignsubmission_file_``) has a 3-day
    extension written exactly by her Moodle name (``Kim Lee,a1,,3,,medical``) and submits
    one day late. Mallory's display name is "Kim Lee" spelled with U+212A KELVIN SIGN for
    the K: a different name (no fold of the first red team's kind: the words are the same)
    that every report shows as "Kim Lee". The "exact" comparison is ``str.casefold``, which
    maps the Kelvin sign to "k", so the row "names several students" and is dropped.

    Observed: stderr "'Kim Lee' names several students (...); row ignored", Kim's a1 0.
    Expected: the row names Kim's Moodle name as written: her extension applies, 100."""
    klass = tmp_path / "class"
    kim = "Kim Lee_123_assignsubmission_file_"
    _put(klass / kim / f"{STEM}.py", solution=True, when=DUE_EPOCH + DAY)
    _put(klass / f"{KELVIN}im Lee_456_assignsubmission_file_" / f"{STEM}.py",
         solution=False, when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, *late_flags(),
                "--extensions", _extensions(tmp_path, "Kim Lee"))
    assert run.returncode == 0, run.stderr
    row = book(out)[kim]
    assert row["a1 raw"] == "100"
    assert row["a1"] == "100", (row, run.stderr)


# --------------------------------------------------------------------------------------
# Attacks that are refused (these pass)
# --------------------------------------------------------------------------------------


def test_defended_cyrillic_and_zero_width_lookalikes_do_not_cancel_an_extension(
        tmp_path: Path) -> None:
    """Two look-alikes of "Kim Lee" beside her: "Кim Lee" (Cyrillic К) and "Ki\\u200bm Lee"
    (a zero-width space inside). Neither casefolds to "kim lee", so the row written
    exactly by Kim's Moodle name is hers alone: her extension applies."""
    klass = tmp_path / "class"
    kim = "Kim Lee_123_assignsubmission_file_"
    _put(klass / kim / f"{STEM}.py", solution=True, when=DUE_EPOCH + DAY)
    for name in ("\u041aim Lee_456_assignsubmission_file_",
                 "Ki\u200bm Lee_789_assignsubmission_file_"):
        _put(klass / name / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, *late_flags(),
                "--extensions", _extensions(tmp_path, "Kim Lee"))
    assert run.returncode == 0, run.stderr
    row = book(out)[kim]
    assert row["a1"] == "100", (row, run.stderr)


def test_defended_one_student_regrade_keeps_a_stored_late_time(tmp_path: Path) -> None:
    """Mallory's late solution is graded with the class (a1 0 under ``zero``); she then
    replaces it with a copy dated before the due date, hoping a later one-folder regrade of
    a classmate reuses a time for her new file. The regrade does not find her, so her
    stored result and its stored (late) time stay together: still 0, late 96 h."""
    klass = tmp_path / "class"
    late = DUE_EPOCH + 4 * DAY
    mine = _put(klass / "mallory" / f"{STEM}.py", solution=True, when=late)
    _put(klass / "bob" / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    first = grade(klass, "--jobs", "2", "--out", out, *late_flags())
    assert first.returncode == 0, first.stderr
    _put(mine, solution=True, when=DUE_EPOCH - 3600)
    again = grade(klass / "bob", "--jobs", "2", "--out", out, *late_flags())
    assert again.returncode == 0, again.stderr
    mallory = book(out)["mallory"]
    assert mallory["a1"] == "0", mallory
    assert mallory["a1 late hours"] == "96.00", mallory
