"""Trusted-side reads of student files are bounded (docs/security.md,
"Bounded reads").

A student chooses what sits under a submission's name: a sparse file of 1 TiB
(``truncate -s 1T``, no disk used), a FIFO, a device, a socket, a folder. Before the
fix the grader hashed a submission whole before any size check (1 TiB: MemoryError, the
student had no row, exit 1 "internal error"), ``--similarity`` read whole files and let
the error through (no ``similarity.txt`` for anyone), and ``grade_file`` on a FIFO
blocked for ever in ``open``. Each case runs through the real CLI (or ``grade_file`` in a
subprocess) with a time limit, beside honest students who keep 100.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "solutions" / "a1_pallas_basics.py"
STEM = "a1_pallas_basics"
TIB = 1 << 40
#: Seconds a CLI run may take before the test calls the grader hung.
RUN_LIMIT = 300


def grade(*args: object) -> subprocess.CompletedProcess[str]:
    """``pallas-lab grade ARGS --timeout 5`` in a subprocess, 300 columns wide."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "300", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "graders.cli.main", "grade", *map(str, args),
                           "--timeout", "5"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=RUN_LIMIT)


def student(klass: Path, name: str) -> Path:
    """``klass/name/a1_pallas_basics.py``, the solution (100 points)."""
    (klass / name).mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(SOLUTION, klass / name / f"{STEM}.py"))


def sparse(klass: Path, name: str, size: int = TIB, file: str = f"{STEM}.py") -> Path:
    """``klass/name/file``: a sparse file of ``size`` bytes (no disk used)."""
    (klass / name).mkdir(parents=True, exist_ok=True)
    path = klass / name / file
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def book(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def huge_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alice and carol (the same solution: a real copy), a 1 TiB sparse .py (huge) and a
    1 TiB sparse notebook (nbhuge)."""
    klass = tmp_path_factory.mktemp("huge") / "class"
    student(klass, "alice")
    student(klass, "carol")
    sparse(klass, "huge")
    sparse(klass, "nbhuge", file=f"{STEM}.ipynb")
    return klass


@pytest.fixture(scope="module")
def huge_batch(huge_class: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = huge_class.parent / "results"
    return grade(huge_class, "--jobs", "2", "--out", out, "--similarity", "--report"), out


def test_a_1_tib_submission_gets_its_row_and_costs_nothing_else_in_the_table(
        huge_class: Path) -> None:
    run = grade(huge_class)
    assert run.returncode == 0, f"exit {run.returncode} (0: grading ran):\n{run.stderr[-3000:]}"
    assert "MemoryError" not in run.stdout + run.stderr
    for name in ("alice", "carol", "huge", "nbhuge"):
        assert f"{name} — a1 Pallas basics" in run.stdout, f"{name} has no section"
    huge = run.stdout.split("\nhuge — a1 Pallas basics", 1)[1].split("nbhuge — ", 1)[0]
    assert f"file too large: {TIB} bytes, limit {1 << 20}" in huge, huge
    nbhuge = run.stdout.split("nbhuge — a1 Pallas basics", 1)[1].split("Totals", 1)[0]
    assert f"file too large: {TIB} bytes, limit {16 << 20}" in nbhuge, nbhuge
    totals = {m[1]: m[2] for m in re.finditer(r"^\s+(\w+)\s+a1\s+(\d+)/100\s*$",
                                                run.stdout.split("Totals", 1)[1], re.M)}
    assert totals == {"alice": "100", "carol": "100", "huge": "0", "nbhuge": "0"}, totals


def test_a_1_tib_submission_gets_its_row_in_a_batch_and_its_gradebook(
        huge_batch: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    run, out = huge_batch
    assert run.returncode == 0, f"exit {run.returncode}:\n{run.stderr[-3000:]}"
    rows = book(out / "gradebook.csv")
    assert {name: row["a1"] for name, row in rows.items()} == {
        "alice": "100", "carol": "100", "huge": "0", "nbhuge": "0"}
    results = json.loads((out / "huge" / STEM / "results.json").read_text(encoding="utf-8"))
    outputs = [test["output"] for test in results["tests"]]
    assert outputs and all(f"file too large: {TIB} bytes, limit {1 << 20}" in text
                           for text in outputs), outputs[:1]
    assert results["extra_data"]["pallas_lab"]["load_error"].startswith(
        f"{STEM}.py was not read: file too large")


def test_similarity_skips_the_oversized_files_and_still_reports_the_real_copy(
        huge_batch: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    run, out = huge_batch
    assert run.returncode == 0, run.stderr[-3000:]
    text = (out / "similarity.txt").read_text(encoding="utf-8")
    assert "alice <-> carol" in text, f"the real copy is reported:\n{text}"
    assert f"huge ({STEM}.py: file too large: {TIB} bytes" in text, text
    assert f"nbhuge ({STEM}.ipynb: file too large: {TIB} bytes" in text, text
    assert (out / "class_report.txt").is_file()


def test_a_rerun_of_the_batch_regrades_nothing_it_cannot_read(
        huge_batch: tuple[subprocess.CompletedProcess[str], Path], huge_class: Path) -> None:
    _, out = huge_batch
    again = grade(huge_class, "--jobs", "2", "--out", out)
    assert again.returncode == 0, again.stderr[-3000:]
    assert book(out / "gradebook.csv")["huge"]["a1"] == "0"


# --- files that are not regular files ------------------------------------------------------

GRADE_ONE = textwrap.dedent("""
    import sys
    from graders.grading.grade import grade_file
    result = grade_file(sys.argv[1], assignment="a1", timeout=5)
    print(result.score, "|", result.load_error)
""")


def _special(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()  # the socket file stays
    elif kind == "folder":
        path.mkdir()
    elif kind == "device":
        if os.geteuid() != 0:
            if os.environ.get("CI"):
                pytest.fail("making a device node needs root, but CI must run this case")
            pytest.skip("making a device node needs root")
        os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero: endless bytes
    else:  # pragma: no cover
        raise ValueError(kind)


@pytest.mark.parametrize("suffix", [".py", ".ipynb"])
@pytest.mark.parametrize("kind", ["fifo", "device", "socket", "folder"])
def test_grade_file_never_opens_what_is_not_a_regular_file(
        tmp_path: Path, kind: str, suffix: str) -> None:
    (tmp_path / "mallory").mkdir()
    path = tmp_path / "mallory" / f"{STEM}{suffix}"
    _special(kind, path)
    run = subprocess.run([sys.executable, "-c", GRADE_ONE, str(path)], cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    score, error = run.stdout.strip().split(" | ", 1)
    assert score == "0.0"
    assert "not a regular file: it is a" in error, error


def test_a_fifo_named_like_a_submission_never_blocks_a_batch(tmp_path: Path) -> None:
    klass = tmp_path / "class"
    student(klass, "alice")
    (klass / "fifo").mkdir()
    os.mkfifo(klass / "fifo" / f"{STEM}.py")
    out = tmp_path / "results"
    run = grade(klass, "--jobs", "2", "--out", out, "--similarity", "--report")
    assert run.returncode == 0, run.stderr[-3000:]
    rows = book(out / "gradebook.csv")
    assert rows["alice"]["a1"] == "100"
    assert "is a FIFO" in rows["fifo"]["notes"], rows["fifo"]
    direct = grade(klass / "fifo" / f"{STEM}.py")
    assert direct.returncode == 2, direct.stdout + direct.stderr
    assert "not a regular file: it is a FIFO" in direct.stderr, direct.stderr
