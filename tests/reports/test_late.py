"""Submission times from the source each layout has, and only where the LMS or nbgrader
writes them (graders/reports/late.py); the penalty arithmetic."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from graders.batch.discovery import discover
from graders.course.catalog import Assignment
from graders.reports.late import LatePolicy, late_seconds, submission_time
from tests.helpers.fake_lab import GOOD, write

DUE = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)


def _time(paths: list[Path]):  # noqa: ANN202 - the one submission's SubmissionTime
    found = discover(paths)
    assert len(found.submissions) == 1, found.problems
    return submission_time(found.submissions[0])


def test_nbgrader_timestamp_in_a_course_is_used(tmp_path: Path,
                                                fake_assignment: Assignment) -> None:
    course = tmp_path / "course"
    (course / "submitted" / "ann" / "t9_fake").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    nb = course / "submitted" / "ann" / "t9_fake" / "t9_fake.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 5}))
    (nb.parent / "timestamp.txt").write_text("2026-03-02 12:00:00.000000 UTC")
    time = _time([course])
    assert time.source == "nbgrader timestamp.txt"
    assert late_seconds(time, DUE) == 86400


def test_a_timestamp_txt_in_a_plain_student_folder_is_not_believed(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    file = write(tmp_path / "class" / "ann", "t9_fake.py", GOOD)
    (file.parent / "timestamp.txt").write_text("2000-01-01 00:00:00 UTC")
    assert _time([tmp_path / "class"]).source == "file mtime"


def test_gradescope_metadata_beside_the_submission_folder_is_used_not_one_inside(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    file = write(tmp_path / "autograder" / "submission", "t9_fake.py", GOOD)
    planted = {"created_at": "2000-01-01T00:00:00+00:00"}
    (file.parent / "submission_metadata.json").write_text(json.dumps(planted))
    assert _time([file.parent]).source == "file mtime"  # the student's own file: ignored
    (tmp_path / "autograder" / "submission_metadata.json").write_text(
        json.dumps({"created_at": "2026-03-01T13:00:00.5-00:00", "users": []}))
    time = _time([file.parent])
    assert time.source.startswith("Gradescope submission_metadata.json")
    assert late_seconds(time, DUE) == pytest.approx(3600.5)


@pytest.mark.parametrize("bad", ['{"created_at": 5}', "[1]", '{"created_at": "soon"}',
                                 '{"created_at": "2026-03-01T13:00:00"}', "x" * 100000])
def test_a_malformed_gradescope_metadata_falls_back_to_mtime(
        tmp_path: Path, fake_assignment: Assignment, bad: str) -> None:
    file = write(tmp_path / "autograder" / "submission", "t9_fake.py", GOOD)
    (tmp_path / "autograder" / "submission_metadata.json").write_text(bad)
    assert _time([file.parent]).source == "file mtime"


def test_canvas_late_flag_is_read_from_the_prefix_canvas_writes(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    folder = tmp_path / "download"
    write(folder, "smithjane_LATE_12_34_t9_fake.py", GOOD)
    os.utime(folder / "smithjane_LATE_12_34_t9_fake.py", (0, 0))  # mtime before the due
    time = _time([folder])
    assert time.late_flag is True and "LATE flag" in time.source
    assert late_seconds(time, DUE) is None  # late by an unknown amount: one period
    assert LatePolicy("percent", rate=10).penalty(None, 50, 100) == 5


def test_canvas_without_the_flag_is_on_time_whatever_the_student_named_the_file(
        tmp_path: Path, fake_assignment: Assignment) -> None:
    folder = tmp_path / "download"
    write(folder, "smithjane_12_34_t9_fake.py", GOOD)
    time = _time([folder])
    assert time.late_flag is False and late_seconds(time, DUE) == 0


@pytest.mark.parametrize(("policy", "late", "earned", "penalty"), [
    (LatePolicy("percent", "day", 10, 50), 1, 80, 8),
    (LatePolicy("percent", "day", 10, 50), 86400 * 9, 80, 40),
    (LatePolicy("percent", "hour", 5, 100, basis="max"), 3600 * 30, 10, 10),
    (LatePolicy("zero"), 5, 70, 70),
    (LatePolicy("none"), 5000, 70, 0),
    (LatePolicy("zero", grace_minutes=10), 599, 70, 0),
    (LatePolicy("percent", "day", 10, 100), 0, 80, 0),
])
def test_penalties(policy: LatePolicy, late: float, earned: float, penalty: float) -> None:
    assert policy.penalty(late, earned, 100) == penalty
