"""A student folder whose name is long once percent-encoded (100 "%" became 300 bytes, past
the file system's 255) still gets its results, its gradebook row under its whole name and
its resume: the results folder's name is cut and marked, and the whole name is read back
from its results.json only when it maps to that very folder."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

from graders.batch.store import student_of_result
from graders.reports.files import MAX_FOLDER_BYTES, is_cut, student_folder_name
from tests.helpers.cli import pallas_lab

ROOT = Path(__file__).resolve().parents[2]
STEM = "a1_pallas_basics"
CLEO = ROOT / "examples" / "submissions" / "cleo_untouched" / f"{STEM}.py"
LONG = ("%" * 100, "é" * 120, "x" * 250)


def test_a_long_name_is_cut_and_marked_and_stays_one_to_one() -> None:
    for name in LONG:
        folder = student_folder_name(name)
        assert is_cut(folder) and len(folder.encode("utf-8")) <= MAX_FOLDER_BYTES, folder
    assert student_folder_name("%" * 100) != student_folder_name("%" * 101)
    assert not is_cut(student_folder_name("%" * 10)), "a short name is encoded as before"


def test_students_with_long_names_get_their_rows_and_resume(tmp_path: Path) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    for name in (*LONG, "ada"):
        (klass / name).mkdir(parents=True)
        shutil.copy(CLEO, klass / name / f"{STEM}.py")
    command = [*pallas_lab(), "grade", str(klass), "--jobs", "2", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        students = {row["student"] for row in csv.DictReader(handle)}
    assert students == {*LONG, "ada"}, students
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0
    assert "4 already had results" in " ".join(again.stdout.split())


def test_a_record_cannot_claim_another_students_name(tmp_path: Path) -> None:
    """A cut folder's results.json names its student; a name whose folder is another one is
    not believed (the folder's own name is used)."""
    path = tmp_path / student_folder_name("%" * 100) / STEM / "results.json"
    path.parent.mkdir(parents=True)
    record = {"extra_data": {"pallas_lab": {"student": "ada"}}}
    path.write_text(json.dumps(record), encoding="utf-8")
    assert student_of_result(path) != "ada"
    record["extra_data"]["pallas_lab"]["student"] = "%25" * 100
    path.write_text(json.dumps(record), encoding="utf-8")
    assert student_of_result(path) == "%" * 100
