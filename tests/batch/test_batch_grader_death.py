"""A grader process that dies (SIGKILL: the OOM killer, a crash in a C extension, an
operator's kill) costs only its own file: the batch goes on, the files whose grading the
broken pool cut short are graded again, each in a pool of its own, and a file whose grader
dies again has no result, an error naming it and a gradebook row with a note.

The deaths are real: ``graders.batch.run.grade_in_child`` is replaced by a stand-in from
``tests/batch/_dying_grader.py`` that SIGKILLs its own grader process for student ``abe``.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from graders.batch import run as batch
from graders.batch.discovery import discover
from graders.batch.run import run_batch
from tests.helpers.labs import stem_of

from . import _dying_grader
from ._batch_class import SAMPLES, make_class, results_without_timing

A1, A2 = stem_of("a1"), stem_of("a2")
TIMEOUT = 3.0


def _class(root: Path, students: dict[str, tuple[str, ...]]) -> Path:
    """``students``: name -> the stems of ``cleo_untouched`` (cheap to grade) to copy."""
    return make_class(root, {name: ("cleo_untouched", stems)
                             for name, stems in students.items()})


def _book(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _batch(klass: Path, out: Path, jobs: int, force: bool = False
           ) -> tuple[batch.BatchOutcome, str]:
    log = io.StringIO()
    outcome = run_batch(discover([klass]).submissions, out=out, jobs=jobs, timeout=TIMEOUT,
                        err=Console(file=log, width=300), force=force)
    return outcome, log.getvalue()


@pytest.mark.slow
def test_a_grader_that_always_dies_costs_only_its_own_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One job: abe's death breaks the pool while amy's a1 is still waiting in it.
    klass = _class(tmp_path / "class", {"abe": (A1,), "amy": (A1, A2)})
    expected = _class(tmp_path / "without_abe", {"amy": (A1, A2)})
    normal, _ = _batch(expected, tmp_path / "normal", jobs=1)
    assert normal.errors == []

    monkeypatch.setattr(batch, "grade_in_child", _dying_grader.always_dies)
    out = tmp_path / "out"
    outcome, log = _batch(klass, out, jobs=1)  # returns: no BrokenProcessPool

    assert results_without_timing(out) == results_without_timing(tmp_path / "normal"), (
        "amy's results are those of a batch without abe; abe has no results.json")
    assert not (out / "abe").exists() or not list((out / "abe").rglob("results.json"))
    book, reference = _book(out), _book(tmp_path / "normal")
    assert {k: v for k, v in book["amy"].items() if k != "notes"} == reference["amy"]
    assert book["amy"]["notes"] == ""
    assert book["abe"]["notes"] == f"grader died: {A1}.py", "abe still gets a row"
    assert book["abe"]["total"] == ""
    assert outcome.graded == 2 and len(outcome.errors) == 1
    error = outcome.errors[0]
    assert error.startswith(f"abe: the grader process died while grading {A1}.py"), error
    assert "SIGKILL" in error and "no result was written" in error, error
    assert "[3/3]" in log and "[4/3]" not in log, "every file advances the progress once"


@pytest.mark.slow
def test_a_grader_that_dies_once_is_graded_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    klass = _class(tmp_path / "class", {"abe": (A1,), "amy": (A1,)})
    normal, _ = _batch(klass, tmp_path / "normal", jobs=2)
    monkeypatch.setattr(batch, "grade_in_child", _dying_grader.dies_once)
    out = tmp_path / "out"
    outcome, log = _batch(klass, out, jobs=2)
    assert (out / _dying_grader.DIED_ONCE).exists(), "abe's grader did die the first time"
    assert outcome == normal, "no error: the second attempt graded abe's file"
    assert results_without_timing(out) == results_without_timing(tmp_path / "normal")
    assert (out / "gradebook.csv").read_bytes() == (
        tmp_path / "normal" / "gradebook.csv").read_bytes()
    assert "[2/2]" in log and "[3/2]" not in log


@pytest.mark.slow
def test_a_file_graded_beside_a_dying_grader_keeps_its_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    klass = _class(tmp_path / "class", {"abe": (A2,), "amy": (A1,), "al": (A1,)})
    expected = _class(tmp_path / "without_abe", {"amy": (A1,), "al": (A1,)})
    _batch(expected, tmp_path / "normal", jobs=1)
    monkeypatch.setattr(batch, "grade_in_child", _dying_grader.dies_while_amy_grades)
    out = tmp_path / "out"
    outcome, log = _batch(klass, out, jobs=3)
    assert _dying_grader.attempts(out, "amy") == 2, (
        "amy's grader was cut short by the broken pool, then graded her file alone")
    assert results_without_timing(out) == results_without_timing(tmp_path / "normal")
    assert _book(out)["abe"]["notes"] == f"grader died: {A2}.py"
    assert [e.split(" (")[0] for e in outcome.errors] == [
        f"abe: the grader process died while grading {A2}.py"]
    assert "[3/3]" in log and "[4/3]" not in log


@pytest.mark.slow
@pytest.mark.parametrize("resubmitted", [True, False], ids=["resubmitted", "forced"])
def test_a_dead_graders_earlier_result_is_kept_only_for_the_same_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resubmitted: bool) -> None:
    klass = make_class(tmp_path / "class", {"abe": ("ada_correct", (A1,))})
    out = tmp_path / "out"
    first, _ = _batch(klass, out, jobs=1)
    assert first.errors == [] and _book(out)["abe"]["a1"] == "100"
    if resubmitted:  # abe hands in another file: the earlier 100 is not this file's
        shutil.copyfile(SAMPLES / "cleo_untouched" / f"{A1}.py", klass / "abe" / f"{A1}.py")
    monkeypatch.setattr(batch, "grade_in_child", _dying_grader.always_dies)
    outcome, _ = _batch(klass, out, jobs=1, force=not resubmitted)

    folder = out / "abe" / A1
    row = _book(out)["abe"]
    assert row["notes"] == f"grader died: {A1}.py"
    [error] = outcome.errors
    if resubmitted:
        assert not [p.name for p in folder.iterdir()], "no results.json nor feedback left"
        assert row.get("a1", "") == "" and row["total"] == "", row
        assert error.endswith("no result was written"), error
    else:  # graded again on request (--force): the result of this very content stays
        assert (folder / "results.json").exists() and (folder / "feedback.md").exists()
        assert row["a1"] == "100", row
        assert error.endswith("an earlier result of the same content is kept"), error


def test_a_stopped_batchs_gradebook_says_which_files_are_not_graded_yet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch stopped by Ctrl-C left a gradebook that looked finished: the student whose
    file was being graded had no row at all. Now every gradebook written before the batch
    is over has a row for each student with files left, noting "not graded yet: FILE";
    the others' rows carry no such note."""
    klass = _class(tmp_path / "class", {"amy": (A1,), "bob": (A1, A2), "cal": (A1,)})
    monkeypatch.setattr(batch, "grade_in_child", _dying_grader.interrupted_at_bob)
    out = tmp_path / "out"
    with pytest.raises(batch.BatchInterrupted):
        _batch(klass, out, jobs=1)
    book = _book(out)
    assert set(book) == {"amy", "bob", "cal"}, "bob, stopped, still has a row"
    assert book["bob"]["notes"] == f"not graded yet: {A1}.py, {A2}.py"
    assert book["bob"]["total"] == ""
    assert book["amy"]["notes"] == book["cal"]["notes"] == ""
    assert book["amy"]["total"] != ""
