"""Hostile class folders, graded through the real CLI (docs/security.md).

Each test builds a class folder in a temp dir: honest students (the a1
solution, 100 points) beside students whose folder names or files are
hostile, and grades it with ``pallas-lab grade`` in a subprocess, in the
formats a TA uses (table, csv, gradescope, ``--jobs``, a rerun and a resumed
killed batch). The contract for every case:

* every student found gets a row (table, CSV gradebook, results.json), and
  honest students keep their full score;
* what reaches the TA's terminal is valid UTF-8 with no control character
  but the newline (no ANSI/OSC escapes, carriage returns, C1 controls or bidi
  overrides) and rich markup in a student's text shows as text;
* no CSV cell starts with ``=``, ``+``, ``-``, ``@``, tab or CR; scores stay
  numbers;
* files written are valid UTF-8 (results.json: valid JSON).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import jupytext
import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "solutions" / "a1_pallas_basics.py"
STUB = REPO / "examples" / "submissions" / "cleo_untouched" / "a1_pallas_basics.py"
STEM = "a1_pallas_basics"
#: Seconds a CLI run may take before the test calls the grader hung.
RUN_LIMIT = 300
#: What must never reach a terminal: C0 controls but the newline, DEL, C1
#: controls (U+009B is a one-character CSI), bidi overrides, line separators.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                    "\u2066-\u2069\u2028\u2029\ud800-\udfff]")
#: A1's vmem_bytes (Task 1.5, 15 points) replaced by one that prints and raises
#: terminal escapes, rich markup and an emoji code.
PRINTER = '''

def vmem_bytes(*args, **kwargs):
    print("out:\\x1b]0;owned\\x07\\x1b[2J[bold red]printed[/bold red] :smile:\\x9b31m\\u202e")
    raise ValueError("\\x1b[31mRED\\x1b[0m [link=https://evil.example]click[/link] "
                     "\\r\\x9b2J\\u202e")
'''
#: The same task raising an exception message with lone surrogates.
SURROGATE_THROWER = '''

def vmem_bytes(*args, **kwargs):
    print("sur: \\ud800")
    raise ValueError("lone \\ud800 and \\udcff")
'''


def grade(*args: object, timeout: float = 5) -> subprocess.CompletedProcess[bytes]:
    """``pallas-lab grade ARGS`` in a subprocess without colours, 400 columns wide;
    stdout and stderr as bytes, exactly as a terminal would receive them."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="400", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "graders.cli.main", "grade", *map(str, args), "--timeout",
         str(timeout)], cwd=REPO, env=env, capture_output=True, timeout=RUN_LIMIT)


def student(klass: Path, name: str | bytes, source: Path | str | bytes = SOLUTION,
            file: str = f"{STEM}.py") -> Path:
    """A student folder ``klass/name`` (``bytes`` for a name that is not UTF-8) holding
    ``file`` with ``source`` (a path to copy, a text or bytes)."""
    folder = Path(os.fsdecode(os.path.join(os.fsencode(klass), os.fsencode(name))))
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(source, Path):
        data = source.read_bytes()
    elif isinstance(source, str):
        data = source.encode("utf-8")
    else:
        data = source
    (folder / file).write_bytes(data)
    return folder


def solution_notebook(extra_cell: str) -> str:
    """The a1 solution as a notebook plus one code cell, as JSON with every non-ASCII
    character escaped (so that a lone surrogate survives as ``\\udXXX``)."""
    notebook = jupytext.reads(SOLUTION.read_text(encoding="utf-8"), fmt="py:percent")
    notebook.cells.append(nbformat.v4.new_code_cell(extra_cell))
    return json.dumps(notebook, ensure_ascii=True)


def terminal_problems(data: bytes) -> list[str]:
    """What in ``data`` would reach a terminal unsafely: invalid UTF-8, or each control
    character (with its surroundings)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [f"not UTF-8: {exc}: {data[max(0, exc.start - 40):exc.end + 40]!r}"]
    return [f"{m.group()!r} at {m.start()}: {text[max(0, m.start() - 40):m.end() + 40]!r}"
            for m in UNSAFE.finditer(text)]


def assert_terminal_safe(run: subprocess.CompletedProcess[bytes], what: str) -> None:
    for stream, data in (("stdout", run.stdout), ("stderr", run.stderr)):
        problems = terminal_problems(data)
        assert not problems, f"{what}: {stream} reaches the terminal with {problems[:5]}"


def assert_ok(run: subprocess.CompletedProcess[bytes], what: str) -> None:
    assert run.returncode == 0, (
        f"{what} exited {run.returncode}:\n{run.stderr.decode('utf-8', 'replace')[-3000:]}")


def read_csv(path: Path) -> list[list[str]]:
    """The rows of a CSV file (header first), which must be valid UTF-8."""
    text = path.read_bytes().decode("utf-8")
    return list(csv.reader(io.StringIO(text, newline="")))


def gradebook(path: Path) -> dict[str, dict[str, str]]:
    """student cell -> row of a gradebook."""
    header, *rows = read_csv(path)
    book = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert len(book) == len(rows), f"{path}: two rows for one student: {[r[0] for r in rows]}"
    return book


def results_files(out: Path) -> dict[str, dict]:
    """Student name -> results.json under a results folder ``out`` (a folder name is
    the student's name, percent-encoded where it must be: ``unquote`` reads it)."""
    found = {}
    for path in out.glob(f"*/{STEM}/results.json"):
        name = urllib.parse.unquote(path.parent.parent.name, errors="surrogateescape")
        text = path.read_bytes().decode("utf-8")  # strict: a results file is valid UTF-8
        assert not terminal_problems(path.read_bytes()), (
            f"{path} holds control characters: {terminal_problems(path.read_bytes())[:3]}")
        found[name] = json.loads(text)
    return found


# --- escapes, markup and formulas in names, prints and exception messages ---------------

#: Folder name -> a1 score. Every name is hostile but the first.
HOSTILE = {
    "alice": 100,
    "esc\x1b[2J\x1b]0;owned\x07name": 100,
    "\rcr overwrite": 0,
    "c1\x9b31m bidi\u202eevil": 0,
    "zz[bold red]mk[link=https:evil.example]:smile:": 0,
    "=HYPERLINK(\"https:evil.example\",\"x\")": 0,
    "+1+cmd": 0,
    "-2+3": 0,
    "@SUM(1+1)": 0,
    "\ttab": 0,
    "printer": 85,
}
FORMULAS = {"=HYPERLINK(\"https:evil.example\",\"x\")", "+1+cmd", "-2+3", "@SUM(1+1)"}


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory
                 ) -> dict[str, tuple[subprocess.CompletedProcess[bytes], Path]]:
    """The HOSTILE class graded as a table with feedback, a CSV gradebook, Gradescope
    results and a batch (--jobs 1: name order, so the progress bar ends on "zz..."), and
    the printer alone with its results.json on stdout."""
    base = tmp_path_factory.mktemp("hostile")
    klass = base / "class"
    for name, score in HOSTILE.items():
        source = SOLUTION if score == 100 else STUB
        if name == "printer":
            source = SOLUTION.read_text(encoding="utf-8") + PRINTER
        student(klass, name, source)
    (klass / "alice" / "notes\x1b[2J\u202e.py").write_text("x = 1\n", encoding="utf-8")
    return {
        "table": (grade(klass, "--feedback"), base),
        "csv": (grade(klass, "--format", "csv", "--out", base / "book.csv"), base / "book.csv"),
        "gradescope": (grade(klass, "--format", "gradescope", "--out", base / "gs"),
                       base / "gs"),
        "jobs": (grade(klass, "--jobs", "1", "--out", base / "batch"), base / "batch"),
        "stdout": (grade(klass / "printer", "--format", "gradescope"), base),
    }


@pytest.mark.parametrize("mode", ["table", "csv", "gradescope", "jobs", "stdout"])
def test_no_escape_sequence_reaches_the_terminal(hostile_runs: dict, mode: str) -> None:
    run, _ = hostile_runs[mode]
    assert_ok(run, mode)
    assert_terminal_safe(run, f"grade in mode {mode}")
    if mode == "stdout":
        assert json.loads(run.stdout.decode("utf-8"))["score"] == 85


def test_names_prints_and_exception_messages_show_as_visible_text(hostile_runs: dict) -> None:
    table = hostile_runs["table"][0].stdout.decode("utf-8")
    for shown in (r"esc\x1b[2J\x1b]0;owned\x07name — a1", r"\rcr overwrite — a1",
                  r"c1\x9b31m bidi\u202eevil — a1",
                  "zz[bold red]mk[link=https:evil.example]:smile: — a1",
                  r"skipped: alice/notes\x1b[2J\u202e.py: not an assignment file"):
        assert shown in table, f"the table does not show {shown!r} as text:\n{table}"
    assert "printer — a1" in table and "85/100" in table, table
    reason = r"vmem_bytes raised ValueError: \x1b[31mRED\x1b[0m [link=https://evil.example]"
    rows = [line for line in table.splitlines() if "vmem_bytes" in line and " failed " in line]
    assert rows and reason in rows[0], (
        f"the Reason column shows the exception message as text: {rows}")
    assert f"problem: {reason}click[/link] \\r\\x9b2J\\u202e" in table, (
        "the feedback shows the whole message as text")
    assert r"out:\x1b]0;owned\x07\x1b[2J[bold red]printed[/bold red] :smile:\x9b31m" in table
    batch_err = hostile_runs["jobs"][0].stderr.decode("utf-8")
    assert "zz[bold red]mk[link=https:evil.example]:smile:" in batch_err, (
        f"the progress bar shows the last student's name as text:\n{batch_err}")


def test_results_files_are_valid_json_without_control_characters(hostile_runs: dict) -> None:
    for mode in ("gradescope", "jobs"):
        run, out = hostile_runs[mode]
        assert_ok(run, mode)
        found = results_files(out)
        assert {s: r["score"] for s, r in found.items()} == HOSTILE, mode


# --- formulas in the gradebook ------------------------------------------------------


@pytest.mark.parametrize("mode", ["csv", "jobs"])
def test_gradebook_cells_are_neutralised_and_scores_stay_numbers(
        hostile_runs: dict, mode: str) -> None:
    run, path = hostile_runs[mode]
    assert_ok(run, mode)
    path = path / "gradebook.csv" if path.is_dir() else path
    assert not terminal_problems(path.read_bytes()), terminal_problems(path.read_bytes())[:3]
    header, *rows = read_csv(path)
    assert len(rows) == len(HOSTILE), f"one row per student: {[r[0] for r in rows]}"
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (
                f"{path}: the cell {cell!r} of row {row[0]!r} is read as a formula")
        scores = row[1:header.index("notes")] if "notes" in header else row[1:]
        assert all(re.fullmatch(r"\d+(\.\d+)?", cell) for cell in scores), (
            f"{path}: the scores of {row[0]!r} are not plain numbers: {scores}")
    book = {row[0]: row for row in rows}
    assert book["alice"][header.index("notes")] == r"misnamed: notes\x1b[2J\u202e.py", (
        "the file that was not graded is named in the notes column, escaped")
    for name in FORMULAS:
        assert "'" + name in book, f"{name!r} is written as {sorted(book)}"
    scores = sorted(float(row[header.index("a1")]) for row in rows)
    assert scores == sorted(float(s) for s in HOSTILE.values()), (
        "honest students keep 100, the printer 85, the stubs 0")


def test_regrading_one_student_keeps_one_row_per_neutralised_name(tmp_path: Path) -> None:
    klass, book = tmp_path / "class", tmp_path / "book.csv"
    for name in ("=1+2", "'quoted", "alice"):
        student(klass, name, STUB)
    assert_ok(grade(klass, "--format", "csv", "--out", book), "grade the class")
    first = read_csv(book)
    assert [row[0] for row in first[1:]] == ["''quoted", "'=1+2", "alice"], (
        "a leading quote is doubled so that reading the gradebook back gives the name")
    assert_ok(grade(klass / "=1+2", "--format", "csv", "--out", book), "grade =1+2 again")
    assert read_csv(book) == first, "the regraded student keeps their single row"


# --- discovery: a student folder named like an assignment -------------------------------


def test_students_named_like_an_assignment_are_students_of_the_class(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    for name in ("alice", "a1", STEM):
        student(klass, name)
    student(klass, "zed", STUB)
    expected = {"alice": "100", "a1": "100", STEM: "100", "zed": "0"}

    book = tmp_path / "book.csv"
    run = grade(klass, "--format", "csv", "--out", book)
    assert_ok(run, "grade --format csv")
    assert {s: r["a1"] for s, r in gradebook(book).items()} == expected, (
        "a folder named a1 or a1_pallas_basics among student folders is a student; "
        "the class is not one student")

    table = grade(klass)
    assert_ok(table, "grade (table)")
    for name in expected:
        assert f"{name} — a1 Pallas basics".encode() in table.stdout, (
            f"the table has no section for student {name!r}:\n{table.stdout.decode()}")

    out = tmp_path / "results"
    batch = grade(klass, "--jobs", "2", "--out", out)
    assert_ok(batch, "grade --jobs 2")
    assert {s: r["a1"] for s, r in gradebook(out / "gradebook.csv").items()} == expected
    assert {s: r["score"] for s, r in results_files(out).items()} == {
        s: int(v) for s, v in expected.items()}


def test_a_folder_with_submission_files_and_student_folders_stops_naming_both(
        tmp_path: Path) -> None:
    klass = tmp_path / "class"
    student(klass, "alice")
    student(klass, "bob")
    (klass / f"{STEM}.py").write_bytes(SOLUTION.read_bytes())  # a stray copy beside them
    run = grade(klass, "--format", "csv", "--out", tmp_path / "book.csv")
    err = run.stderr.decode()
    assert run.returncode == 2, (
        f"grading one file of the class and dropping alice and bob is a silent subset; "
        f"exit {run.returncode}, stderr:\n{err}")
    assert "ambiguous" in err and f"{STEM}.py" in err and "alice/" in err and "bob/" in err, err
    assert not (tmp_path / "book.csv").exists(), "nothing is graded when the run stops"


def test_two_students_with_one_name_in_two_folders_stop_the_run(tmp_path: Path) -> None:
    student(tmp_path / "section1", "alice")
    student(tmp_path / "section2", "alice", STUB)
    book = tmp_path / "book.csv"
    run = grade(tmp_path / "section1", tmp_path / "section2", "--format", "csv", "--out", book)
    err = run.stderr.decode()
    assert run.returncode == 2, (
        f"two students called alice share one gradebook row; exit {run.returncode}:\n{err}")
    assert "section1/alice" in err and "section2/alice" in err, err
    assert not book.exists()


def test_hidden_student_folders_holding_submissions_are_students(tmp_path: Path) -> None:
    klass, book = tmp_path / "class", tmp_path / "book.csv"
    for name in ("alice", ".bob", "_carol"):
        student(klass, name, STUB)
    student(klass, ".ipynb_checkpoints", "{}", f"{STEM}-checkpoint.ipynb")
    student(klass, "__pycache__", b"", f"{STEM}.cpython-311.pyc")
    (klass / ".git").mkdir()
    run = grade(klass, "--format", "csv", "--out", book)
    assert_ok(run, "grade --format csv")
    assert sorted(gradebook(book)) == [".bob", "_carol", "alice"], (
        "a folder whose name starts with . or _ and that holds a submission is a student; "
        ".git, __pycache__ and .ipynb_checkpoints are not")


# --- output names: students named like what the grader writes --------------------------

#: gradebook.csv is the batch's own gradebook; %67radebook.csv is what an escaped
#: "gradebook.csv" could look like; ".old.tmp" looks like a temp file of a killed write.
COLLIDING = {"alice": SOLUTION, "gradebook.csv": SOLUTION, "%67radebook.csv": STUB,
             ".old.tmp": STUB}
COLLIDING_SCORES = {"alice": 100, "gradebook.csv": 100, "%67radebook.csv": 0, ".old.tmp": 0}


def test_students_named_like_output_files_are_graded_in_batches_and_reruns(
        tmp_path: Path) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    for name, source in COLLIDING.items():
        student(klass, name, source)
    first = grade(klass, "--jobs", "2", "--out", out)
    assert_ok(first, "the first batch")
    book = out / "gradebook.csv"
    assert book.is_file(), f"{book} is the gradebook, not a student's folder"
    assert {s: float(r["a1"]) for s, r in gradebook(book).items()} == COLLIDING_SCORES
    assert {s: r["score"] for s, r in results_files(out).items()} == COLLIDING_SCORES
    before = book.read_bytes()

    rerun = grade(klass, "--jobs", "2", "--out", out)
    assert_ok(rerun, "the rerun")
    assert b"4 already had results" in rerun.stdout, rerun.stdout.decode()
    assert book.read_bytes() == before, "a rerun of a finished batch changes nothing"

    gradescope = grade(klass, "--format", "gradescope", "--out", out)
    assert_ok(gradescope, "grade --format gradescope into the batch's folder")
    assert {s: r["score"] for s, r in results_files(out).items()} == COLLIDING_SCORES
    assert book.read_bytes() == before

    csv_run = grade(klass, "--format", "csv", "--out", tmp_path / "book.csv")
    assert_ok(csv_run, "grade --format csv")
    assert {s: float(r["a1"]) for s, r in gradebook(tmp_path / "book.csv").items()} == (
        COLLIDING_SCORES)
    leftovers = [p for p in tmp_path.rglob("*.tmp") if p.is_file()]
    assert not leftovers, f"temp files left behind: {leftovers}"


def test_a_killed_batch_of_colliding_names_resumes_to_the_full_gradebook(
        tmp_path: Path) -> None:
    klass, out = tmp_path / "class", tmp_path / "results"
    for name, source in COLLIDING.items():
        student(klass, name, source)
    # Graded last (--jobs 1 goes in name order) and slow: the kill lands while it runs.
    student(klass, "zz_slow", SOLUTION.read_text(encoding="utf-8") + "\nwhile True:\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    first = subprocess.Popen(
        [sys.executable, "-m", "graders.cli.main", "grade", str(klass), "--jobs", "1", "--out",
         str(out), "--timeout", "5"], cwd=REPO, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + RUN_LIMIT
    while (len(list(out.glob(f"*/{STEM}/results.json"))) < len(COLLIDING)
           and first.poll() is None and time.monotonic() < deadline):
        time.sleep(0.05)
    try:
        os.killpg(first.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, stderr = first.communicate(timeout=60)
    done = len(list(out.glob(f"*/{STEM}/results.json")))
    assert done == len(COLLIDING), (
        f"the first run was to be killed while zz_slow was graded, after the "
        f"{len(COLLIDING)} others; it left {done} results:\n{stderr.decode('utf-8', 'replace')}")

    resumed = grade(klass, "--jobs", "1", "--out", out)
    assert_ok(resumed, "the resumed batch")
    assert_terminal_safe(resumed, "the resumed batch")
    assert f"graded 1 student(s), {len(COLLIDING)} already had results".encode() in (
        resumed.stdout), resumed.stdout.decode()
    book = gradebook(out / "gradebook.csv")
    assert {s: float(r["a1"]) for s, r in book.items()} == {**COLLIDING_SCORES, "zz_slow": 0}
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".tmp") and p.is_file()]
    assert not leftovers, f"temp files of the killed writes are left: {leftovers}"


# --- undecodable notebooks, names and messages ------------------------------------------

#: Folder name (bytes: not all are UTF-8) -> a1 score.
UNDECODABLE = {b"alice": 100, b"bytes\xff\xfename": 100, b"sur": 0, b"badnb": 0,
               b"thrower": 85}


@pytest.fixture(scope="module")
def undecodable_runs(tmp_path_factory: pytest.TempPathFactory
                     ) -> dict[str, tuple[subprocess.CompletedProcess[bytes], Path]]:
    base = tmp_path_factory.mktemp("undecodable")
    klass = base / "class"
    student(klass, b"alice")
    student(klass, b"bytes\xff\xfename")
    student(klass, b"sur", solution_notebook("s = '\ud800'\nt = 1"), f"{STEM}.ipynb")
    broken = solution_notebook("s = 'MARK'").encode("ascii").replace(b"MARK", b"\xff\xfe")
    student(klass, b"badnb", broken, f"{STEM}.ipynb")
    student(klass, b"thrower", SOLUTION.read_text(encoding="utf-8") + SURROGATE_THROWER)
    return {
        "table": (grade(klass, "--feedback"), base),
        "csv": (grade(klass, "--format", "csv", "--out", base / "book.csv"), base / "book.csv"),
        "gradescope": (grade(klass, "--format", "gradescope", "--out", base / "gs"),
                       base / "gs"),
        "jobs": (grade(klass, "--jobs", "2", "--out", base / "batch"), base / "batch"),
        "stdout": (grade(klass / "thrower", "--format", "gradescope"), base),
    }


@pytest.mark.parametrize("mode", ["table", "csv", "gradescope", "jobs", "stdout"])
def test_undecodable_input_is_reported_for_its_student_and_the_run_goes_on(
        undecodable_runs: dict, mode: str) -> None:
    run, where = undecodable_runs[mode]
    assert_ok(run, mode)
    assert_terminal_safe(run, mode)
    expected = {os.fsencode(name).decode("utf-8", "backslashreplace"): score
                for name, score in UNDECODABLE.items()}
    if mode == "table":
        text = run.stdout.decode("utf-8")
        for name in expected:
            assert f"{name} — a1" in text, f"no table for {name!r}:\n{text}"
        assert "cell " in text and "surrogate" in text, (
            f"the notebook with a lone surrogate is an error naming its cell:\n{text}")
        assert "not valid UTF-8" in text or "can't decode" in text, text
    elif mode in ("csv", "jobs"):
        book = gradebook(where / "gradebook.csv" if where.is_dir() else where)
        assert {s: float(r["a1"]) for s, r in book.items()} == expected
    if mode == "stdout":
        assert json.loads(run.stdout.decode("utf-8"))["score"] == 85, "results.json on stdout"
    if mode in ("gradescope", "jobs"):
        found = results_files(where)
        assert {os.fsencode(s).decode("utf-8", "backslashreplace"): r["score"]
                for s, r in found.items()} == expected
        sur = found["sur"]
        assert {t["status"] for t in sur["tests"]} == {"failed"}
        assert "surrogate" in sur["tests"][0]["output"], sur["tests"][0]["output"]
