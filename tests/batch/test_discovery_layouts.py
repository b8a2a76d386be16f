"""graders.batch.discovery: which folders are students, and when the run must stop.

The rules (graders/batch/discovery.py's docstring; docs/ta-guide.md, "Files" and "Class
folders"): a folder holding submission files, or only assignment folders (nbgrader's layout), is a
student; any other folder is a class whose every folder is a student,
whatever it is called. Nothing is graded when that would drop or merge
students silently.
"""

from __future__ import annotations

from pathlib import Path

from graders.batch.discovery import discover

A1 = "a1_pallas_basics.py"
A2 = "a2_pipelining.py"
NB1 = "a1_pallas_basics.ipynb"  # an nbgrader course grades notebooks only


def put(folder: Path, *files: str) -> Path:
    """Create ``folder`` with empty ``files`` in it; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        (folder / name).write_text("", encoding="utf-8")
    return folder


def graded(found: object) -> list[tuple[str, str]]:
    """(student, file name) of every submission found."""
    return [(s.student, s.file.name) for s in found.submissions]


def test_nbgrader_student_folder_of_assignment_folders_is_one_student(tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    put(alice / "a1", A1, "timestamp.txt")
    put(alice / "a2_pipelining", A2)
    put(alice / ".ipynb_checkpoints", "a1_pallas_basics-checkpoint.ipynb")
    found = discover([alice])
    assert graded(found) == [("alice", A1), ("alice", A2)]
    assert found.ambiguities == []


def test_folders_named_like_assignments_among_students_are_students(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    for name in ("a1", "a1_pallas_basics", "alice"):
        put(klass / name, A1)
    put(klass / "a2", A1)  # holds another assignment's file: not an assignment folder
    found = discover([klass])
    assert sorted(graded(found)) == [("a1", A1), ("a1_pallas_basics", A1), ("a2", A1),
                                     ("alice", A1)]
    assert found.ambiguities == []


def test_a_student_named_like_an_assignment_in_nbgrader_layout_is_a_student(
        tmp_path: Path) -> None:
    klass = tmp_path / "class"
    put(klass / "a1" / "a1", A1)
    put(klass / "bob" / "a1", A1)
    assert sorted(graded(discover([klass]))) == [("a1", A1), ("bob", A1)]
    course = tmp_path / "course"
    put(course, "nbgrader_config.py")
    put(course / "submitted" / "a1" / "a1_pallas_basics", NB1)
    assert graded(discover([course])) == [("a1", NB1)], (
        "an nbgrader course's submitted/ is always a class folder")


def test_only_assignment_folders_each_holding_its_own_file_read_as_one_student(
        tmp_path: Path) -> None:
    # Documented limit (docs/ta-guide.md, "Class folders"): indistinguishable from
    # nbgrader's layout.
    folder = tmp_path / "class"
    put(folder / "a1", A1)
    put(folder / "a2", A2)
    assert graded(discover([folder])) == [("class", A1), ("class", A2)]


def test_hidden_folders_are_students_only_when_they_hold_submissions(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    put(klass / "alice", A1)
    put(klass / ".bob", A1)
    put(klass / "_carol" / "a1", A1)
    put(klass / ".git", "config")
    put(klass / "__pycache__", "a1_pallas_basics.cpython-311.pyc")
    put(klass / "__MACOSX" / "alice", "._a1_pallas_basics.py")
    found = discover([klass])
    assert sorted(graded(found)) == [(".bob", A1), ("_carol", A1), ("alice", A1)]
    assert found.problems == [] and found.ambiguities == []


def test_submission_files_beside_student_folders_are_ambiguous(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    put(klass / "alice", A1)
    put(klass / "bob" / "a1", A1)
    put(klass, A1)
    found = discover([klass])
    assert len(found.ambiguities) == 1, found.ambiguities
    message = found.ambiguities[0]
    assert f"{klass}: ambiguous" in message and A1 in message, message
    assert "alice/" in message and "bob/" in message, message


def test_a_student_folder_with_a_scratch_folder_is_still_a_student(tmp_path: Path) -> None:
    alice = put(tmp_path / "alice", A1)
    put(alice / "scratch", "try.py")
    found = discover([alice])
    assert graded(found) == [("alice", A1)] and found.ambiguities == []


def test_two_folders_of_one_name_or_one_shown_name_are_a_clash(tmp_path: Path) -> None:
    put(tmp_path / "s1" / "alice", A1)
    put(tmp_path / "s2" / "alice", A1)
    found = discover([tmp_path / "s1", tmp_path / "s2"])
    assert len(found.ambiguities) == 1, found.ambiguities
    assert str(tmp_path / "s1" / "alice") in found.ambiguities[0]
    assert str(tmp_path / "s2" / "alice") in found.ambiguities[0]
    put(tmp_path / "s3" / "x\x1b", A1)
    put(tmp_path / "s3" / "x\\x1b", A1)
    assert len(discover([tmp_path / "s3"]).ambiguities) == 1, (
        "x<ESC> and x\\x1b are shown alike: their rows would be one")
    same = discover([tmp_path / "s1" / "alice", tmp_path / "s1" / "alice" / A1,
                     tmp_path / "s1"])
    assert graded(same) == [("alice", A1)] and same.ambiguities == [], (
        "one folder reached through several PATHs is one student")


def test_a_student_given_alone_with_an_assignment_folder_is_never_a_class(
        tmp_path: Path) -> None:
    klass = tmp_path / "class"
    put(klass / "mallory" / "a1", A1)
    put(klass / "mallory" / "bob", A1)
    put(klass / "bob", A1)
    found = discover([klass / "mallory"])
    assert graded(found) == [("mallory", A1)] and found.ambiguities == []
    assert sorted(graded(discover([klass / "mallory", klass / "bob"]))) == [
        ("bob", A1), ("mallory", A1)]


def test_a_flat_download_beside_student_folders_stops_the_run(tmp_path: Path) -> None:
    # Found in CI: pytest's tmp folders sit side by side, so a flat download given alone
    # sat beside folders of submissions and was graded as one student named after the
    # folder. Beside student folders a download and a student's own folder look alike:
    # several LMS prefixes stop the run (pooling them as one student mixes students'
    # files; reading them lets a student's file names choose whose row they land in).
    put(tmp_path / "ada", A1)
    download = put(tmp_path / "download", f"smithjane_11_21_{A1}", f"doejohn_12_22_{A1}")
    found = discover([download])
    assert found.submissions == []
    [why] = found.ambiguities
    assert "flat LMS download" in why and "doejohn, smithjane" in why
    assert "nothing was graded" in why
    # Alone, the same folder is a download, one student per prefix ...
    (tmp_path / "ada" / A1).unlink()
    assert sorted(graded(discover([download]))) == [
        ("doejohn", f"doejohn_12_22_{A1}"), ("smithjane", f"smithjane_11_21_{A1}")]
    # ... and one prefix beside student folders is one student's folder, graded as theirs.
    put(tmp_path / "ada", A1)
    (download / f"doejohn_12_22_{A1}").unlink()
    assert graded(discover([download])) == [("download", f"smithjane_11_21_{A1}")]


def test_two_lms_users_with_one_name_prefix_stop_the_run(tmp_path: Path) -> None:
    # Found by a red team: Canvas names a flat download's files <name>_[LATE_]<user id>_
    # <submission id>_<file>; two users with one name prefix (namesakes, or a student who
    # took a classmate's name before the download) were one student, so the file sorted
    # first was graded and the classmate's dropped ("graded instead").
    download = put(tmp_path / "download", f"smithjane_LATE_11_1001_{A1}",
                   f"smithjane_14_1003_{A1}", f"doejohn_12_1002_{A1}")
    found = discover([download])
    assert found.submissions == []
    [why] = found.ambiguities
    assert "11, 14" in why and "'smithjane'" in why and "nothing was graded" in why
    # one user's resubmissions (one user id, two submission ids) are one student
    (download / f"smithjane_14_1003_{A1}").rename(download / f"smithjane_11_1005_{A1}")
    assert sorted(s.student for s in discover([download]).submissions) == [
        "doejohn", "smithjane"]
