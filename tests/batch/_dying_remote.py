"""A stand-in for ``graders.batch.dask_worker.grade_remote`` whose file's grader died twice
for the student ``abe`` (what a Dask worker's grading server reports then), for
tests/batch/test_batch_dask.py; every other student is graded for real. Module-level, so a
Dask worker imports it by name."""

from __future__ import annotations

from typing import Any

from graders.batch.dask_worker import grade_remote as _real_grade_remote

DYING = "abe"


def grade_remote(spec: dict[str, Any], stop_name: str) -> Any:
    if spec["student"] == DYING:
        return (spec["student"], spec["stem"], None,
                "the grader process died while grading a1.py (killed by SIGKILL, as the "
                "kernel's out-of-memory killer does), also when graded alone", True)
    return _real_grade_remote(spec, stop_name)
