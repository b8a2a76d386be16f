"""The mark a stopped regrade leaves in the results folder: the same regrade resumes it,
any other (other options, other students, other grading code) starts afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.batch import schedule
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


def test_the_same_regrade_resumes_and_any_other_starts_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results"
    out.mkdir()
    subs = _subs(tmp_path / "class", "ada", "ben")
    assert schedule.start_regrade(out, subs, force=False, tasks=None) is None
    assert not (out / schedule.REGRADE_MARK).exists(), "a plain batch is no regrade"
    assert schedule.start_regrade(out, subs, force=True, tasks=None) is None  # marked
    started = (out / schedule.REGRADE_MARK).stat().st_mtime
    assert schedule.start_regrade(out, subs, force=True, tasks=None) == started
    assert schedule.start_regrade(out, subs[:1], force=True, tasks=None) is None
    assert schedule.start_regrade(out, subs, force=True, tasks=("1.1",)) is None
    assert schedule.start_regrade(out, subs, force=True, tasks=("1.1",)) is not None
    # A regrade stopped to fix a check, then run again with the fixed grader: afresh.
    monkeypatch.setattr(schedule, "grader_fingerprint", lambda: "another grader")
    assert schedule.start_regrade(out, subs, force=True, tasks=("1.1",)) is None
    schedule.finish_regrade(out)
    assert not (out / schedule.REGRADE_MARK).exists()


def test_the_fingerprint_follows_the_grading_code(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.machinery
    import importlib.util

    for name in ("graders", "reference", "pallas_sim"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "sub" / "checks.py").write_text("POINTS = 10\n", encoding="utf-8")

    def find_spec(name: str) -> importlib.machinery.ModuleSpec:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(tmp_path / name)]
        return spec

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    first = schedule.grader_fingerprint()
    assert first == schedule.grader_fingerprint() and len(first) == 64
    (tmp_path / "reference" / "sub" / "checks.py").write_text("POINTS = 5\n", encoding="utf-8")
    assert schedule.grader_fingerprint() != first
    (tmp_path / "reference" / "sub" / "checks.py").write_text("POINTS = 10\n", encoding="utf-8")
    assert schedule.grader_fingerprint() == first
    (tmp_path / "pallas_sim" / "sub" / "new.py").write_text("", encoding="utf-8")
    assert schedule.grader_fingerprint() != first
