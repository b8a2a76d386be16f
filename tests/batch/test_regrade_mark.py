"""What a batch folder remembers of stopped regrades (graders/batch/regrade.py) and the
fingerprint of the grading code (graders/batch/fingerprint.py): the same regrade resumes,
any other (other options, students, timeout, grading code) starts afresh, and a stopped
regrade is not forgotten when another batch runs in the same folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.batch import fingerprint, regrade
from graders.course.catalog import ASSIGNMENTS
from graders.grading.submission import Submission


def _subs(folder: Path, *students: str) -> list[Submission]:
    lab = next(iter(ASSIGNMENTS.values()))
    subs = []
    for student in students:
        (folder / student).mkdir(parents=True, exist_ok=True)
        path = folder / student / f"{lab.stem}.py"
        path.write_text("x = 1\n", encoding="utf-8")
        subs.append(Submission.of(path, lab, student=student))
    return subs


STAMP = {"grader": "g1", "timeout": 10.0, "budget": None, "sandbox": "", "tasks": None}


def test_the_same_regrade_resumes_and_any_other_starts_afresh(tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    subs = _subs(tmp_path / "class", "ada", "ben")

    def opened(subs: list[Submission], force: bool = True, tasks: tuple[str, ...] | None = None,
               **stamp: object) -> bool:
        return regrade.open_regrade(out, subs, force=force, tasks=tasks,
                                    batch={**STAMP, **stamp})

    assert not opened(subs) and opened(subs), "the second run of a stopped --force resumes"
    assert not opened(subs[:1]), "--student ada is another regrade"
    assert not opened(subs, tasks=("1.1",)) and opened(subs, tasks=("1.1",))
    assert not opened(subs, timeout=0.3), "another --timeout is another regrade"
    assert not opened(subs, grader="g2"), "a regrade stopped to fix a check starts afresh"
    assert opened(subs), "starting other regrades did not forget the first"
    regrade.close_regrade(out, subs, force=True, tasks=None, batch=STAMP)
    assert not opened(subs[:0] + subs, grader="g3")
    assert opened(subs[:1]), "closing one regrade leaves the others"
    assert not opened(subs), "a finished regrade is not resumed: the next one regrades all"


def test_a_result_is_equivalent_only_under_the_same_stamp_and_tasks() -> None:
    full = dict(STAMP)
    assert regrade.equivalent(full, STAMP, None) and regrade.equivalent(full, STAMP, ["1.1"])
    assert not regrade.equivalent({**full, "timeout": 0.3}, STAMP, None)
    assert not regrade.equivalent({**full, "grader": "old"}, STAMP, ["1.1"])
    assert not regrade.equivalent(None, STAMP, None)
    merged = regrade.merged_stamp({**full, "grader": "old"}, STAMP, ["1.3"])
    assert merged["tasks"] == ["1.3"], "only the re-run task is the new code's"
    assert regrade.equivalent(merged, STAMP, ["1.3"]) and not regrade.equivalent(
        merged, STAMP, None), "a --task merge does not pass for a full regrade"
    both = regrade.merged_stamp(merged, STAMP, ["1.1"])
    assert both["tasks"] == ["1.1", "1.3"]
    assert regrade.merged_stamp(full, STAMP, ["1.1"])["tasks"] is None


def test_the_fingerprint_follows_the_grading_code_and_its_data(tmp_path: Path) -> None:
    for name in fingerprint.GRADING_PACKAGES:
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "sub" / "checks.py").write_text("POINTS = 10\n", encoding="utf-8")
    (tmp_path / "pallas_sim" / "chips.toml").write_text("hbm = 819\n", encoding="utf-8")
    first = fingerprint.grader_fingerprint(tmp_path)
    assert first == fingerprint.grader_fingerprint(tmp_path) and len(first) == 64
    checks = tmp_path / "reference" / "sub" / "checks.py"
    checks.write_text("POINTS = 5\n", encoding="utf-8")
    assert fingerprint.grader_fingerprint(tmp_path) != first
    checks.write_text("POINTS = 10\n", encoding="utf-8")
    assert fingerprint.grader_fingerprint(tmp_path) == first
    (tmp_path / "pallas_sim" / "chips.toml").write_text("hbm = 410\n", encoding="utf-8")
    assert fingerprint.grader_fingerprint(tmp_path) != first, "a data file decides grades too"
    (tmp_path / "pallas_sim" / "chips.toml").write_text("hbm = 819\n", encoding="utf-8")
    (tmp_path / "graders" / "sub" / "__pycache__").mkdir()
    (tmp_path / "graders" / "sub" / "__pycache__" / "checks.pyc").write_bytes(b"\0")
    assert fingerprint.grader_fingerprint(tmp_path) == first, "compiled caches do not count"


def test_the_fingerprint_is_of_this_install_whatever_sys_path_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test runner put tests/reference/ on sys.path: the batch machine and its Dask
    workers disagreed about which grading code they ran."""
    import sys

    before = fingerprint.grader_fingerprint()
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert fingerprint.grader_fingerprint() == before
    assert (fingerprint.INSTALL_ROOT / "graders" / "batch" / "fingerprint.py").is_file()


def test_a_resumed_regrade_counts_only_the_files_it_regraded_itself(tmp_path: Path) -> None:
    """Red team (and a TA's walk): a --force stopped before any file was regraded resumed
    as "graded 0 student(s), 3 regraded before the stop": results made earlier under the
    same code and options passed for regraded, so an interrupted --force never regraded
    anyone, though a TA forces one for results that depended on the machine's load. A
    regrade's results carry its id; only those count as regraded by it."""
    out = tmp_path / "results"
    out.mkdir()
    subs = _subs(tmp_path / "class", "ada", "ben")
    assert not regrade.open_regrade(out, subs, force=True, tasks=None, batch=STAMP)
    mine = regrade.regrade_stamp(out, subs, force=True, tasks=None, batch=STAMP)
    assert mine["regrade"] and {k: v for k, v in mine.items() if k != "regrade"} == STAMP
    assert not regrade.equivalent(dict(STAMP), mine, None), "made before the regrade"
    assert regrade.equivalent(dict(mine), mine, None), "made by it"
    assert regrade.open_regrade(out, subs, force=True, tasks=None, batch=STAMP)
    assert regrade.regrade_stamp(out, subs, force=True, tasks=None, batch=STAMP) == mine, (
        "the resumed regrade is the same one")
    assert regrade.equivalent(dict(mine), STAMP, None), "a later normal batch keeps it"
    regrade.close_regrade(out, subs, force=True, tasks=None, batch=STAMP)
    assert not regrade.open_regrade(out, subs, force=True, tasks=None, batch=STAMP)
    assert regrade.regrade_stamp(out, subs, force=True, tasks=None, batch=STAMP) != mine
