"""Batches: resume by content, --force, --student, --task, --format csv with a file
--out, the table and feedback files, the class report and the similarity check."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graders.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
STEM = "a1_pallas_basics"


def _student(klass: Path, name: str, sample: str) -> Path:
    (klass / name).mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(SAMPLES / sample / f"{STEM}.py", klass / name / f"{STEM}.py"))


def _book(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.fixture
def klass(tmp_path: Path) -> Path:
    klass = tmp_path / "class"
    _student(klass, "ada", "ada_correct")
    _student(klass, "ben", "ben_typical_mistakes")
    _student(klass, "cleo", "cleo_untouched")
    return klass


@pytest.mark.slow
def test_a_csv_batch_writes_the_gradebook_file_the_table_and_feedback_files(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    book = tmp_path / "gb.csv"
    assert main(["grade", str(klass), "--format", "csv", "--jobs", "2", "--out", str(book),
                 "--feedback"]) == 0
    out = capsys.readouterr()
    assert book.is_file(), "--format csv --out gb.csv writes a file, not a folder"
    assert {s: r["a1"] for s, r in _book(book).items()} == {"ada": "100", "ben": "76",
                                                            "cleo": "0"}
    assert "Totals" in out.out and "ben" in out.out, "batch mode prints the score table"
    assert "looks like:" in out.out, "--feedback is honoured in batch mode"
    assert "3/3" in out.err, "N/M progress on stderr"
    folder = tmp_path / "gb_results" / "ben" / STEM
    markdown = (folder / "feedback.md").read_text(encoding="utf-8")
    html = (folder / "feedback.html").read_text(encoding="utf-8")
    feedback = [t["output"] for t in json.loads((folder / "results.json").read_text(
        encoding="utf-8"))["tests"] if t["status"] == "failed"]
    first = feedback[0].splitlines()[0]
    heading = first.split(" — ")[0]  # "Task 1.3 bias_add", then "this check: 0 of 10 points"
    assert f"{heading} — this check:" in markdown.replace("\\", ""), (
        "each failed check has its section")
    assert "**looks like:**" in markdown
    assert first.split(" — ")[0] in html and "<html" in html.lower()


@pytest.mark.slow
def test_resume_regrades_changed_files_and_force_student_task_select(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    grade = ["grade", str(klass), "--jobs", "2", "--out", str(out)]
    assert main(grade) == 0
    capsys.readouterr()
    assert main(grade) == 0
    assert "graded 0 student(s), 3 already had results" in capsys.readouterr().out

    _student(klass, "cleo", "ada_correct")  # cleo resubmits: new content, same name
    assert main(grade) == 0
    assert "graded 1 student(s), 2 already had results" in capsys.readouterr().out
    assert _book(out / "gradebook.csv")["cleo"]["a1"] == "100"

    ada = out / "ada" / STEM / "results.json"
    before = ada.stat().st_mtime_ns
    assert main([*grade, "--student", "ben"]) == 0
    # It said "graded 1 student(s), 0 already had results" while ada and cleo kept theirs.
    assert ("graded 1 student(s) selected by --student ben; 2 other student(s) keep their "
            "results") in " ".join(capsys.readouterr().out.split())
    assert ada.stat().st_mtime_ns == before, "--student grades only that student"

    assert main([*grade, "--force"]) == 0
    assert "graded 3 student(s), 0 already had results" in capsys.readouterr().out

    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8")
    ben = json.loads((out / "ben" / STEM / "results.json").read_text(encoding="utf-8"))
    assert main([*grade, "--task", "1.3"]) == 0
    capsys.readouterr()
    again = json.loads((out / "ben" / STEM / "results.json").read_text(encoding="utf-8"))
    assert [(t["number"], t["name"], t["score"]) for t in again["tests"]] == [
        (t["number"], t["name"], t["score"]) for t in ben["tests"]], (
        "re-running Task 1.3 merges its checks back in the same order and scores")
    assert (out / "gradebook.csv").read_text(encoding="utf-8") == gradebook


@pytest.mark.slow
def test_class_report_and_similarity(klass: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    copy = _student(klass, "dan", "ada_correct")
    copy.write_text(copy.read_text(encoding="utf-8").replace("z_ref", "out_ref"),
                    encoding="utf-8")  # a copy with a variable renamed
    _student(klass, "eve", "cleo_untouched")  # two untouched handouts: not similar
    out = tmp_path / "results"
    assert main(["grade", str(klass), "--jobs", "2", "--out", str(out), "--report",
                 "--similarity", "0.8"]) == 0
    printed = capsys.readouterr().out
    report = (out / "class_report.txt").read_text(encoding="utf-8")
    row = next(line.split() for line in report.splitlines() if line.strip().startswith("1.3"))
    assert row[1:4] == ["5", "0", "2"], "5 graded, none missing, 2 never started 1.3"
    assert "mistakes seen" in report and "column-block axis" in report, (
        "ben's diagnosed 1.3 mistake is counted")
    assert (out / "class_report_a1.png").read_bytes()[:4] == b"\x89PNG"
    pairs = (out / "similarity.txt").read_text(encoding="utf-8")
    assert "ada <-> dan" in pairs, "a renamed copy is found"
    assert "cleo <-> eve" not in pairs, "the handout's own text is not counted"
    page = (out / "similarity.html").read_text(encoding="utf-8")
    assert "ada and dan" in page and "<mark>" in page, "the pair side by side, marked"
    assert "ada <-> dan" in printed
    assert report.splitlines()[0].startswith("Task points as graded by the checks, before "
                                             "late penalties and adjustments"), report[:300]
    # A TA's walk: a later batch without --report left the earlier class_report.txt and
    # similarity files beside the new results without a word; each is now named as stale.
    _student(klass, "fay", "ben_typical_mistakes")
    assert main(["grade", str(klass), "--jobs", "2", "--out", str(out)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    for name, flag in (("class_report.txt", "--report"), ("similarity.txt", "--similarity")):
        assert (f"{out / name} is from an earlier run and does not count the files graded "
                f"now: add {flag} to bring it up to date") in err, err
    assert main(["grade", str(klass), "--jobs", "2", "--out", str(out)]) == 0
    assert "earlier run" not in capsys.readouterr().err, "nothing graded: nothing stale"


@pytest.mark.slow
def test_ctrl_c_stops_a_batch_cleanly_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    for i in range(8):
        _student(klass, f"s{i}", "ada_correct" if i % 2 else "ben_typical_mistakes")
    command = [sys.executable, "-m", "graders.cli.main", "grade", str(klass), "--jobs", "2",
               "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(  # Ctrl-C reaches the whole foreground process group
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while not list(out.glob("*/*/results.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr
    assert "run the same command again to grade the rest" in stderr
    done = len(list(out.glob("*/*/results.json")))
    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{done} already had results" in rerun.stdout
    assert {s: r["a1"] for s, r in _book(out / "gradebook.csv").items()} == {
        f"s{i}": "100" if i % 2 else "76" for i in range(8)}


@pytest.mark.slow
@pytest.mark.parametrize("batch", [[], ["--jobs", "1"]], ids=["single", "batch"])
def test_third_party_warnings_do_not_reach_the_ta(tmp_path: Path, batch: list[str]) -> None:
    notebook = json.loads((ROOT / "assignments" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        cell.pop("id", None)  # nbformat warns (MissingIDFieldWarning) when it reads this
    (tmp_path / "class" / "amy").mkdir(parents=True)
    (tmp_path / "class" / "amy" / f"{STEM}.ipynb").write_text(json.dumps(notebook),
                                                             encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "graders.cli.main", "grade", str(tmp_path / "class"), *batch,
         "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": ""})
    assert run.returncode == 0, run.stderr
    assert "Warning" not in run.stderr and "warn(" not in run.stderr, run.stderr
    assert "amy" in run.stdout and "0/100" in run.stdout


@pytest.mark.slow
def test_a_stopped_forced_regrade_marks_earlier_results_and_the_same_command_finishes_it(
        tmp_path: Path) -> None:
    """A TA's walk: Ctrl-C during ``--force`` left a gradebook with the earlier scores
    beside "not graded yet", and "run the same command again" regraded everybody."""
    klass, out = tmp_path / "class", tmp_path / "results"
    for i in range(6):
        _student(klass, f"s{i}", "ben_typical_mistakes")
    command = [sys.executable, "-m", "graders.cli.main", "grade", str(klass), "--jobs", "2",
               "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Graded first under another call timeout: what the regrade makes is not equivalent.
    first = subprocess.run([*command, "--timeout", "20"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    before = {p: p.stat().st_mtime for p in out.glob("*/*/results.json")}
    assert len(before) == 6
    time.sleep(0.05)  # a regraded result's time differs from the first grading's
    forced = subprocess.Popen(
        [*command, "--force"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def regraded() -> set[Path]:
        return {p for p, t in before.items() if p.stat().st_mtime > t}

    deadline = time.monotonic() + 300
    while not regraded() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(forced.pid, signal.SIGINT)
    _, stderr = forced.communicate(timeout=300)
    assert forced.returncode == 130, stderr
    assert "run the same command again to regrade the rest" in " ".join(stderr.split())
    kept = regraded()
    assert 1 <= len(kept) < 6, len(kept)
    rows = _book(out / "gradebook.csv")
    marked = {s for s, row in rows.items() if "not regraded yet (an earlier result is shown)"
              in row["notes"]}
    assert marked == {s for s in rows if out / s / STEM / "results.json" not in kept}
    assert all(row["a1"] == "76" for row in rows.values())  # the earlier scores, shown
    assert not any("not graded yet" in row["notes"] for row in rows.values())
    # A plain batch in the same folder does not forget the stopped regrade (red team: it
    # dropped the notes and the mark, and the gradebook looked final).
    plain = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
    assert plain.returncode == 0, plain.stderr
    assert (f"a stopped regrade (--force, --task or --student) has {6 - len(kept)} file(s) it "
            "has not regraded yet") in " ".join(plain.stderr.split())
    assert {s for s, row in _book(out / "gradebook.csv").items()
            if "not regraded yet by a stopped regrade" in row.get("notes", "")} == marked
    # Resumed in a copy of the folder that kept no file times (red team: the resume
    # trusted modification times).
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, copy_function=shutil.copyfile)
    out = copy
    command[command.index("--out") + 1] = str(copy)
    resumed = subprocess.run([*command, "--force"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert (f"resumed the stopped regrade: graded {6 - len(kept)} student(s), {len(kept)} "
            "regraded before the stop") in " ".join(resumed.stdout.split())
    assert not any(row.get("notes") for row in _book(out / "gradebook.csv").values())
    assert all(json.loads(p.read_text(encoding="utf-8"))["extra_data"]["pallas_lab"]["stamp"]
               for p in out.glob("*/*/results.json"))
    again = subprocess.run([*command, "--force"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "graded 6 student(s), 0 already had results" in " ".join(again.stdout.split())


def test_a_one_folder_regrade_keeps_the_classmates_notes(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """A TA's walk: grading one student's folder into the class's results rebuilt the
    gradebook without the notes of everyone else (fay's "misnamed: hw.py" vanished, the
    only record that a file of hers was never graded). Classmates this run did not find
    keep their notes; they are not printed as this run's news."""
    klass = tmp_path / "class"
    _student(klass, "ada", "ada_correct")
    (klass / "fay").mkdir()
    shutil.copyfile(SAMPLES / "ada_correct" / f"{STEM}.py", klass / "fay" / "a1.py")
    (klass / "fay" / "hw.py").write_text("x = 1\n", encoding="utf-8")
    out = tmp_path / "results"
    assert main(["grade", str(klass), "--jobs", "1", "--out", str(out)]) == 0
    before = _book(out / "gradebook.csv")["fay"]["notes"]
    assert "misnamed: hw.py" in before, before
    capsys.readouterr()
    assert main(["grade", str(klass / "ada"), "--jobs", "1", "--out", str(out),
                 "--force"]) == 0
    assert _book(out / "gradebook.csv")["fay"]["notes"] == before
    assert "hw.py" not in capsys.readouterr().err, "a classmate's note is not this run's news"


def test_a_one_folder_regrade_after_a_stop_keeps_the_classmates_pending(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Red team: after a stopped batch (ben "not graded yet"), a one-folder regrade of ada
    with the roster marked ben "missing: no submission" with a total of 0, a row that
    looked final; without the roster ben's row vanished. He keeps his note and no total;
    a file named like a note cannot blank its owner's total; and a hand-edited notes cell
    in gradebook.csv is not read back (it blanked a total)."""
    from graders.batch.store import write_notes

    klass = tmp_path / "class"
    _student(klass, "ada", "ada_correct")
    _student(klass, "ben", "ben_typical_mistakes")
    (klass / "mal").mkdir()
    shutil.copyfile(SAMPLES / "ada_correct" / f"{STEM}.py", klass / "mal" / f"{STEM}.py")
    (klass / "mal" / "not graded yet: hw.py").write_text("x = 1\n", encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text("student\nada\nben\nmal\ngus\n", encoding="utf-8")
    out = tmp_path / "results"
    common = ["--jobs", "1", "--out", str(out), "--roster", str(roster)]
    assert main(["grade", str(klass / "ada"), str(klass / "mal"), *common]) == 0
    book = _book(out / "gradebook.csv")
    assert (book["mal"]["a1"], book["mal"]["total"]) == ("100", "100"), book["mal"]
    # what a batch stopped before ben's file leaves (run.py writes it with the gradebook)
    write_notes(out, {"ben": [f"not graded yet: {STEM}.py"], "gus": ["missing: no submission"],
                      "mal": ["misnamed: not graded yet: hw.py"]})
    text = (out / "gradebook.csv").read_text(encoding="utf-8")
    (out / "gradebook.csv").write_text(text.replace("missing: no submission",
                                                    "not graded yet: see email"),
                                       encoding="utf-8")
    capsys.readouterr()
    assert main(["grade", str(klass / "ada"), *common, "--force"]) == 0
    book = _book(out / "gradebook.csv")
    assert book["ben"]["notes"] == f"not graded yet: {STEM}.py" and book["ben"]["total"] == ""
    assert (book["gus"]["notes"], book["gus"]["total"]) == ("missing: no submission", "0")
    assert book["mal"]["total"] == "100", book["mal"]
    assert "ben: missing" not in capsys.readouterr().err
    assert main(["grade", str(klass / "ada"), "--jobs", "1", "--out", str(out)]) == 0
    assert "ben" in _book(out / "gradebook.csv"), "without the roster the row stays too"


def test_a_force_stopped_before_its_first_file_regrades_everyone_when_resumed(
        klass: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Red team: a --force stopped before it regraded anything was resumed as "graded 0
    student(s), N regraded before the stop": the results made before it, under the same
    code, passed for its own."""
    from graders.batch import regrade
    from graders.batch.discovery import discover

    out = tmp_path / "results"
    assert main(["grade", str(klass), "--jobs", "2", "--out", str(out)]) == 0
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/*/results.json")}
    subs = discover([klass]).submissions
    stamp = regrade.batch_stamp(10.0, None)  # the default timeout: this --force's stamp
    regrade.open_regrade(out, subs, force=True, tasks=None, batch=stamp)  # then stopped
    capsys.readouterr()
    assert main(["grade", str(klass), "--jobs", "2", "--out", str(out), "--force"]) == 0
    line = " ".join(capsys.readouterr().out.split())
    assert f"graded {len(before)} student(s)" in line, line
    assert all(p.stat().st_mtime_ns != t for p, t in before.items()), "every file regraded"
    assert not (out / regrade.REGRADE_MARK).exists(), "and the regrade is closed"
