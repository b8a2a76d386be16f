"""Batches hand out files, not students, so the README's first command (the samples) finishes
within 30 s.

A student whose files are slow (``dev_broken``'s endless loops) used to be graded in one
process while the other process idled; now every (student, file) is one job, the most
expensive first, and the results are those of a one-process batch.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from graders.batch.discovery import discover
from graders.batch.run import run_batch
from graders.batch.schedule import pending_students, schedule
from tests.helpers.labs import stem_of

from ._batch_class import make_class, results_without_timing

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "submissions"
A1, A2, A4 = stem_of("a1"), stem_of("a2"), stem_of("a4")


def test_the_schedule_is_per_file_most_expensive_first_in_student_order(
        tmp_path: Path) -> None:
    klass = make_class(tmp_path / "class", {"amy": ("cleo_untouched", (A1, A2, A4)),
                                        "bob": ("cleo_untouched", (A2, A4))})
    pending = pending_students(discover([klass]).submissions, tmp_path / "out")
    order = [(s.student, s.stem) for s in schedule(pending)]
    from graders.checking.framework import load_checks
    from graders.course.catalog import assignment_for_stem

    checks = {stem: len(load_checks(assignment_for_stem(stem).id)) for stem in (A1, A2, A4)}
    assert checks[A4] > max(checks[A1], checks[A2]) and checks[A1] != checks[A2]
    in_class_order = [("amy", A1), ("amy", A2), ("amy", A4), ("bob", A2), ("bob", A4)]
    assert order == sorted(in_class_order, key=lambda pair: -checks[pair[1]]), (
        "the assignments with more checks first; equal costs keep the students' order")
    assert order[:2] == [("amy", A4), ("bob", A4)]
    only = [(s.student, s.stem) for s in schedule(pending, tasks=("1.1", "2.1"))]
    assert only[-2:] == [("amy", A4), ("bob", A4)], "with --task only those checks count"


def test_the_plan_is_the_pending_files_in_schedule_order_and_counts_the_students_skipped(
        tmp_path: Path) -> None:
    from graders.batch.schedule import plan_batch
    from graders.batch.store import result_path

    klass = make_class(tmp_path / "class", {"amy": ("cleo_untouched", (A1, A2)),
                                        "bob": ("cleo_untouched", (A2,))})
    subs, out = discover([klass]).submissions, tmp_path / "out"
    plan = plan_batch(subs, out)
    assert plan.skipped == 0 and list(plan.pending) == ["amy", "bob"]
    assert list(plan.order) == schedule(pending_students(subs, out))
    # bob's only file has a current result (written as a grader writes it): he is skipped,
    # and only amy's files are planned; --force (or --task) plans every file again.
    from graders.batch.store import write_result
    from graders.grading.grade import grade_submission

    bob = next(s for s in subs if s.student == "bob")
    write_result(grade_submission(bob, timeout=3.0, tasks=("2.1",)),
                 result_path(out, "bob", A2))
    plan = plan_batch(subs, out)
    assert plan.skipped == 1 and list(plan.pending) == ["amy"]
    assert {s.student for s in plan.order} == {"amy"}
    assert plan_batch(subs, out, force=True).skipped == 0
    assert len(plan_batch(subs, out, tasks=("1.1",)).order) == 3


@pytest.mark.slow
def test_jobs_1_and_2_give_the_same_results_and_progress_counts_files(
        tmp_path: Path) -> None:
    klass = make_class(tmp_path / "class", {"amy": ("cleo_untouched", (A1, A2)),
                                        "bob": ("ada_correct", (A2,)),
                                        "cal": ("ben_typical_mistakes", (A1,))})
    subs = discover([klass]).submissions
    outcomes, results, logs = [], [], []
    for jobs in (1, 2):
        log = io.StringIO()
        out = tmp_path / f"out{jobs}"
        outcomes.append(run_batch(subs, out=out, jobs=jobs, timeout=3.0,
                                  err=Console(file=log, width=200)))
        results.append(results_without_timing(out))
        logs.append(log.getvalue())
        assert (out / "gradebook.csv").is_file()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0].graded == 3 and outcomes[0].errors == []
    assert results[0] == results[1], "the same results whatever the number of processes"
    assert len(results[0]) == 4
    assert (tmp_path / "out1" / "gradebook.csv").read_bytes() == (
        tmp_path / "out2" / "gradebook.csv").read_bytes()
    for log in logs:
        assert "[4/4]" in log, "N/M counts the files handed out, one job each"
        assert "graded amy/a2_pipelining.py" in log


@pytest.mark.slow
def test_a_resumed_batch_grades_only_the_files_without_a_current_result(
        tmp_path: Path) -> None:
    klass = make_class(tmp_path / "class", {"amy": ("cleo_untouched", (A1, A2)),
                                        "bob": ("cleo_untouched", (A2,))})
    out = tmp_path / "out"
    err = Console(file=io.StringIO())
    assert run_batch(discover([klass]).submissions, out=out, jobs=2, timeout=3.0,
                     err=err).graded == 2
    kept = out / "amy" / A2 / "results.json"
    before = kept.stat().st_mtime_ns
    shutil.copyfile(SAMPLES / "ada_correct" / f"{A1}.py", klass / "amy" / f"{A1}.py")
    outcome = run_batch(discover([klass]).submissions, out=out, jobs=2, timeout=3.0, err=err)
    assert (outcome.graded, outcome.skipped) == (1, 1), "amy resubmitted, bob did not"
    assert kept.stat().st_mtime_ns == before, (
        "amy's unchanged a2 keeps its current result; only her new a1 is graded")
    score = json.loads((out / "amy" / A1 / "results.json").read_text(encoding="utf-8"))
    assert score["score"] == 100


def test_a_ctrl_c_lost_in_a_gc_callback_stops_the_file_without_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import gc
    import sys
    import types

    from graders.batch import pool as batch

    monkeypatch.setattr(batch, "_INTERRUPTED", False)
    lost = types.SimpleNamespace(exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt(),
                                 exc_traceback=None, err_msg=None, object=None)
    batch._note_lost_interrupt(lost)
    assert batch._INTERRUPTED, "remembered: the file being graded keeps no result"
    assert capsys.readouterr().err == "", "and no 'Exception ignored' traceback"
    class Unraisable:  # what gc.callbacks raised for anything else reaches Python's hook
        def __del__(self) -> None:
            raise ValueError("not an interrupt")

    monkeypatch.setattr(sys, "unraisablehook", batch._note_lost_interrupt)
    Unraisable()
    gc.collect()
    assert "ValueError: not an interrupt" in capsys.readouterr().err, (
        "anything else is reported as usual")


def test_a_ctrl_c_that_a_check_swallowed_still_keeps_no_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TA's walk: a Ctrl-C that reached a grader inside a check was turned into that
    check's failure ("internal grader error (AssertionError)"); the grader, now ignoring
    Ctrl-C, finished the file and kept its result (90 where the file scores 100), and the
    rerun took it as final. A grader that got a Ctrl-C while grading keeps nothing."""
    import os
    import signal
    import time

    import graders.grading.grade as grading
    from graders.batch import pool

    klass = make_class(tmp_path / "class", {"ada": ("ada_correct", (A1,))})
    sub = discover([klass]).submissions[0]
    out = tmp_path / "results"
    real = grading.grade_submission

    def swallowing(submission, **options):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(2)
        except KeyboardInterrupt:
            pass  # what a broad ``except`` in the interrupted code did
        return real(submission, **options)

    monkeypatch.setattr(pool, "_INTERRUPTED", False)
    monkeypatch.setattr(pool, "_STOP", None)
    monkeypatch.setattr(grading, "grade_submission", swallowing)
    previous = signal.getsignal(signal.SIGINT)
    try:
        student, stem, score, error = pool._grade_here(sub, str(out), 3.0, None, None)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (student, error, score) == ("ada", pool.INTERRUPTED, None)
    assert not list(out.glob("*/*/results.json")), "nothing kept for an interrupted file"


def test_a_student_with_a_file_not_graded_yet_has_no_total(tmp_path: Path) -> None:
    """A TA's walk: a stopped batch's gradebook gave ben a total of 34 (17 %) while one of
    his two files was "not graded yet"; sorted by total, he looked like a 34. His graded
    assignments keep their columns; the total waits for the rest."""
    import csv

    from graders.batch.store import gradebook_from_results

    klass = make_class(tmp_path / "class", {"ben": ("ben_typical_mistakes", (A1,))})
    out = tmp_path / "results"
    err = Console(file=io.StringIO())
    run_batch(discover([klass]).submissions, out=out, jobs=1, timeout=3.0, err=err)
    text = gradebook_from_results(out, {"ben": [f"not graded yet: {A2}.py"]})
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["a1"] not in ("", None) and row["total"] == "", row
    assert row.get("total percent", "") == "", row
    whole = next(csv.DictReader(io.StringIO(gradebook_from_results(out))))
    assert whole["total"] == whole["a1"], "graded in full: the total is back"
