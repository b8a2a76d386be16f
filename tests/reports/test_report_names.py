"""Results folder names: one per student, never the gradebook, a temp file or unsafe text."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from graders.reports.files import RESERVED_NAMES, student_folder_name, student_of_folder_name
from graders.safety.safe_text import UNSAFE_CODEPOINTS

#: Any folder name a file system can hold (bytes but "/" and NUL), as Python reads it.
FOLDER_NAMES = st.binary(min_size=1, max_size=24).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")).map(os.fsdecode)


@settings(max_examples=300)
@given(FOLDER_NAMES)
def test_a_folder_name_reads_back_as_its_student_and_is_safe(student: str) -> None:
    folder = student_folder_name(student)
    assert student_of_folder_name(folder) == student
    folder.encode("utf-8")  # valid UTF-8 whatever bytes the student's folder had
    assert not folder.startswith("."), f"{student!r} -> {folder!r} is hidden like a temp file"
    assert folder.casefold() not in RESERVED_NAMES, f"{student!r} -> {folder!r}"
    assert not {c for c in folder if ord(c) in UNSAFE_CODEPOINTS}, f"{student!r} -> {folder!r}"


def test_the_names_that_could_collide_are_encoded_and_others_kept() -> None:
    assert student_folder_name("gradebook.csv") == "%67radebook.csv"
    assert student_folder_name("GradeBook.CSV") == "%47radeBook.CSV"
    assert student_folder_name("%67radebook.csv") == "%2567radebook.csv"
    assert student_folder_name(".old.tmp") == "%2Eold.tmp"
    assert student_folder_name(os.fsdecode(b"x\xff\x1b")) == "x%FF%1B"
    for name in ("alice", "Zoë Müller", "a1", "a1_pallas_basics", "=1+2", "[bold]x"):
        assert student_folder_name(name) == name
