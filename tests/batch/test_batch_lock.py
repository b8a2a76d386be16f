"""One batch at a time per results folder (graders/batch/lock.py).

A TA's walk: two ``pallas-lab grade CLASS --jobs 1 --out rc`` started a second apart each
graded all twelve files (twice the CPU) and rewrote the same gradebook in turn, with no
word. The second is now refused at once, naming the first; a batch that was killed leaves
no lock behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graders.batch.lock import LOCK_FILE, BatchBusy, batch_lock
from tests.batch._batch_class import ROOT, make_class
from tests.helpers.cli import pallas_lab

HOLD = """
import sys, time
from pathlib import Path
from graders.batch.lock import batch_lock
with batch_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def _holder(out: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_batch_into_the_same_results_is_refused_naming_the_first(
        tmp_path: Path) -> None:
    klass = make_class(tmp_path / "class", {"ada": ("ada_correct", ("a1_pallas_basics",))})
    out = tmp_path / "results"
    out.mkdir()
    holder = _holder(out)
    try:
        second = subprocess.run([*pallas_lab(), "grade", str(klass), "--jobs", "1", "--out",
                                 str(out)], cwd=ROOT, capture_output=True, text=True,
                                timeout=300, check=False,
                                env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"})
        assert second.returncode == 2, second.stderr[-2000:]
        assert (f"another batch is grading into {out} (process {holder.pid})"
                in second.stderr and "nothing was graded" in second.stderr), second.stderr
        assert not list(out.glob("*/*/results.json"))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    # killed: the kernel released its lock, and the folder is graded as usual; a batch
    # that ends removes the file
    assert (out / LOCK_FILE).is_file()
    with batch_lock(out):
        assert (out / LOCK_FILE).is_file()
    assert not (out / LOCK_FILE).exists()


def test_the_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with batch_lock(tmp_path):
        with pytest.raises(BatchBusy, match=f"process {os.getpid()}"):
            with batch_lock(tmp_path):
                pass
    start = time.monotonic()
    with batch_lock(tmp_path):
        assert time.monotonic() - start < 5


def test_a_csv_gradebook_in_another_batchs_results_folder_is_refused(tmp_path: Path) -> None:
    """Red team: ``--format csv --out r4/gradebook.csv`` (a batch into r4/gradebook_results)
    replaced batch r4's gradebook with its own; the lock is per results folder, so two at
    once were both accepted too."""
    from graders.batch.store import write_notes

    klass = make_class(tmp_path / "class", {"ada": ("ada_correct", ("a1_pallas_basics",))})
    other = tmp_path / "r4"
    other.mkdir()
    write_notes(other, {"zed": ["misnamed: hw.py"]})  # what a batch into r4 records
    before = "student,total\nzed,\n"
    (other / "gradebook.csv").write_text(before, encoding="utf-8")
    run = subprocess.run([*pallas_lab(), "grade", str(klass), "--jobs", "1", "--format",
                          "csv", "--out", str(other / "gradebook.csv")], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"})
    assert run.returncode == 2 and "the results folder of another batch" in run.stderr, (
        run.stderr[-2000:])
    assert (other / "gradebook.csv").read_text(encoding="utf-8") == before
