"""Red team: a student against the late policy, extensions and adjustments
(docs/ta-guide.md, "Late work and adjustments"), through the real CLI.

A student controls their submission file(s) (names, content, modification time), what
else they put in their own folder, and their folder name as the LMS makes it from their
name. The TA runs ``pallas-lab grade ... --jobs 2 --out results --due ... --late-policy
... --extensions ... --adjustments ...``. Each test builds a small class (a1 only: the
solution scores 100, ``x = 1`` scores 0 at once), grades it in a subprocess and reads
``results/gradebook.csv``.

The tests of attacks that work fail on the code they were written against (they state
the contract); ``test_defended_*`` are attacks that are refused and must keep passing.
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


def test_canvas_looking_name_in_own_folder_does_not_make_a_late_file_on_time(
        tmp_path: Path) -> None:
    """Mallory (folder ``Mallory``, as the LMS names it) submits four days late and names
    her file ``mallory_1_2_a1_pallas_basics.py``, as if Canvas had written it without its
    ``LATE_`` flag. When the TA grades the students one folder at a time
    (``pallas-lab grade class/*/``, the README's advice for an ambiguous class, or a
    regrade of her folder alone), her folder is read as a flat Canvas download: origin
    ``canvas``, "no LATE flag", and Canvas's verdict beats the file's time.

    Observed: source "Canvas file name (no LATE flag); time: file mtime", late hours 0.00,
    penalty 0, final 100 under ``--late-policy zero`` while an honest student late by the
    same 4 days beside her scores 0. Expected: a file in a student's own folder is timed
    by its modification time (source "file mtime"), late by 96 h, final 0."""
    klass = tmp_path / "class"
    late = DUE_EPOCH + 4 * DAY
    _put(klass / "Mallory" / f"mallory_1_2_{STEM}.py", solution=True, when=late)
    _put(klass / "ada" / f"{STEM}.py", solution=False, when=late)
    out = tmp_path / "results"
    run = grade(klass / "Mallory", klass / "ada", "--jobs", "2", "--out", out, *late_flags())
    assert run.returncode == 0, run.stderr
    rows = book(out)
    mallory = rows.get("mallory") or rows["Mallory"]
    assert mallory["a1 raw"] == "100"
    assert mallory["a1 late source"] == "file mtime", mallory
    assert mallory["a1 late hours"] == "96.00", mallory
    assert mallory["a1"] == "0", mallory


def test_a_file_in_my_folder_is_not_graded_as_a_classmate(tmp_path: Path) -> None:
    """In the same one-folder-at-a-time run, Mallory's folder holds only
    ``ada_1_2_a1_pallas_basics.py``: the "Canvas prefix" ``ada`` becomes the student, so
    Mallory's file lands in Ada's row (Ada, who submitted nothing, now has an a1 score,
    counted on time), and Mallory has no row at all.

    Observed: a gradebook row "ada" with Mallory's file ("renamed: ada_1_2_..."), no row
    "mallory". Expected: a file in Mallory's folder is Mallory's (row "mallory"), never
    another student's."""
    klass = tmp_path / "class"
    _put(klass / "mallory" / f"ada_1_2_{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    _put(klass / "bob" / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    run = grade(klass / "mallory", klass / "bob", "--jobs", "2", "--out", out,
                *late_flags())
    assert run.returncode == 0, run.stderr
    rows = book(out)
    assert "ada" not in rows, rows.get("ada")
    assert "mallory" in rows, sorted(rows)


def test_regrading_one_student_keeps_every_other_students_late_penalty(
        tmp_path: Path) -> None:
    """Mallory submits four days late; the class is graded with ``--late-policy zero`` and
    she scores 0. Bob asks for a regrade and the TA regrades his folder alone into the same
    results folder with the same flags (a class "can be graded in parts": students graded
    earlier keep their rows). The gradebook is rebuilt from every results.json, but
    submission times are known only for this run's files: every other student is
    "submitted at an unknown time ... on time".

    Observed after the second run: mallory "a1 submitted" empty, source empty, penalty 0,
    a1 100 (was 0). Expected: her row unchanged by a run that did not grade her (final 0,
    late by 96 h)."""
    klass = tmp_path / "class"
    late = DUE_EPOCH + 4 * DAY
    _put(klass / "mallory" / f"{STEM}.py", solution=True, when=late)
    _put(klass / "bob" / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    first = grade(klass, "--jobs", "2", "--out", out, *late_flags())
    assert first.returncode == 0, first.stderr
    assert book(out)["mallory"]["a1"] == "0"
    again = grade(klass / "bob", "--jobs", "2", "--out", out, "--force", *late_flags())
    assert again.returncode == 0, again.stderr
    mallory = book(out)["mallory"]
    assert mallory["a1"] == "0", mallory
    assert mallory["a1 late hours"] == "96.00", mallory


def test_canvas_late_flag_within_an_extension_is_on_time(tmp_path: Path) -> None:
    """Alice has a 3-day extension (``alice,a1,,3,,medical``) and submits on Canvas one day
    after the base due date, well within it. Canvas flags the file ``LATE`` (it measures
    against its own due date); ``late_seconds`` turns a flagged file whose time is before
    the (extended) due date into "late by an unknown amount", one period.

    Observed: "due 2026-03-04 ...; extension of 72 h (medical); submitted 2026-03-02 ...:
    late (amount unknown: counted as one period)", penalty 100, final 0. Expected: on time
    within her extension, final 100."""
    canvas = tmp_path / "canvas"
    _put(canvas / f"alice_LATE_1_2_{STEM}.py", solution=True, when=DUE_EPOCH + DAY)
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("student,assignment,due,days,hours,reason\n"
                          "alice,a1,,3,,medical\n", encoding="utf-8")
    out = tmp_path / "results"
    run = grade(canvas, "--jobs", "2", "--out", out, *late_flags(),
                "--extensions", extensions)
    assert run.returncode == 0, run.stderr
    alice = book(out)["alice"]
    assert "extension of 72 h" in alice["notes"]
    assert alice["a1 penalty"] == "0", alice
    assert alice["a1"] == "100", alice


def test_a_name_that_folds_like_a_classmates_does_not_inherit_their_adjustment(
        tmp_path: Path) -> None:
    """The TA excuses Alice Smith, who has not submitted a1 (``Alice Smith,a1,100,,excused:
    medical,Prof. Lee,``). Moodle names folders ``<Full Name>_<id>_assignsubmission_file_``;
    a student whose name is "Ali Ce Smith" folds to the same key ("alicesmith") and, with
    Alice absent from the run, the row resolves to him.

    Observed: "Ali Ce Smith_456_assignsubmission_file_" raw 0, a1 100 ("adjustment: a1
    (whole assignment) set to 100: excused: medical"), no line on stderr. Expected: the
    row is not applied to a student whose name only folds alike (a problem line names the
    row), final 0."""
    klass = tmp_path / "class"
    attacker = "Ali Ce Smith_456_assignsubmission_file_"
    _put(klass / attacker / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    adjustments = tmp_path / "adjustments.csv"
    adjustments.write_text("student,item,points,delta,reason,who,regrade\n"
                           "Alice Smith,a1,100,,excused: medical,Prof. Lee,\n",
                           encoding="utf-8")
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, "--adjustments", adjustments)
    assert run.returncode == 0, run.stderr
    row = book(out)[attacker]
    assert row["a1 raw"] == "0"
    assert row["a1"] == "0", row


def test_a_name_that_folds_like_a_classmates_does_not_cancel_their_extension(
        tmp_path: Path) -> None:
    """Alice Smith (Moodle folder ``Alice Smith_123_assignsubmission_file_``) has a 3-day
    extension written by her name, as the guide allows (``Alice Smith,a1,,3,,medical``),
    and submits one day late. "Ali Ce Smith" (folder ``Ali Ce Smith_456_...``) folds to the
    same key, so the row "matches several students" and is dropped for both.

    Observed: stderr "'Alice Smith' matches several students (...); row ignored", and
    Alice's a1 is 0 under ``--late-policy zero``. Expected: the row names Alice's Moodle
    name exactly ("Alice Smith"), so her extension applies and she keeps 100."""
    klass = tmp_path / "class"
    alice = "Alice Smith_123_assignsubmission_file_"
    _put(klass / alice / f"{STEM}.py", solution=True, when=DUE_EPOCH + DAY)
    _put(klass / "Ali Ce Smith_456_assignsubmission_file_" / f"{STEM}.py", solution=False,
         when=DUE_EPOCH - 60)
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("student,assignment,due,days,hours,reason\n"
                          "Alice Smith,a1,,3,,medical\n", encoding="utf-8")
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, *late_flags(), "--extensions", extensions)
    assert run.returncode == 0, run.stderr
    row = book(out)[alice]
    assert row["a1 raw"] == "100"
    assert row["a1"] == "100", (row, run.stderr)


# --------------------------------------------------------------------------------------
# Attacks that are refused (these pass)
# --------------------------------------------------------------------------------------


def test_defended_planted_timestamp_and_gradescope_metadata_are_not_read(
        tmp_path: Path) -> None:
    """Mallory submits four days late in a plain class folder, in nbgrader's layout
    (``mallory/a1/a1_pallas_basics.py``) with her own ``timestamp.txt`` beside it and a
    ``submission_metadata.json`` claiming an on-time ``created_at``. Neither is read: only
    an nbgrader course's and Gradescope's own files are. Her file's time decides."""
    klass = tmp_path / "class"
    late = DUE_EPOCH + 4 * DAY
    folder = klass / "mallory" / "a1"
    _put(folder / f"{STEM}.py", solution=False, when=late)
    (folder / "timestamp.txt").write_text("2026-02-01 00:00:00.000000 UTC\n",
                                          encoding="utf-8")
    (klass / "mallory" / "submission_metadata.json").write_text(
        '{"created_at": "2026-02-01T00:00:00+00:00"}', encoding="utf-8")
    _put(klass / "bob" / f"{STEM}.py", solution=False, when=DUE_EPOCH - 60)
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, *late_flags())
    assert run.returncode == 0, run.stderr
    mallory = book(out)["mallory"]
    assert mallory["a1 late source"] == "file mtime", mallory
    assert mallory["a1 late hours"] == "96.00", mallory


def test_defended_canvas_late_flag_survives_a_crafted_original_name(tmp_path: Path) -> None:
    """In a real flat Canvas download, Mallory's late file is written
    ``mallory_LATE_<id>_<id>_<her file name>``. Naming her upload as if it carried an
    unflagged prefix of its own (``mallory_1_2_a1_pallas_basics.py``) does not hide the
    flag Canvas put in front: the file is not graded as an a1 submission at all (its rest,
    ``mallory_1_2_a1_pallas_basics``, is no assignment's name), and a plainly named late
    upload keeps its ``LATE`` flag and its penalty."""
    canvas = tmp_path / "canvas"
    late = DUE_EPOCH + 4 * DAY
    _put(canvas / f"mallory_LATE_7_8_mallory_1_2_{STEM}.py", solution=False, when=late)
    _put(canvas / f"carol_LATE_5_6_{STEM}.py", solution=True, when=late)
    out = tmp_path / "results"
    run = grade(canvas, "--jobs", "2", "--out", out, *late_flags())
    assert run.returncode == 0, run.stderr
    rows = book(out)
    assert "a1 raw" not in rows.get("mallory", {}) or rows["mallory"].get("a1 raw") == ""
    assert "misnamed" in rows["mallory"]["notes"]
    carol = rows["carol"]
    assert carol["a1 late source"] == "Canvas file name (LATE flag); time: file mtime"
    assert carol["a1 raw"] == "100" and carol["a1"] == "0", carol
