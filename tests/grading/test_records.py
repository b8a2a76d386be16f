"""The grading records: built by keyword only, statuses and kinds as StrEnums whose
members are the very strings the JSON, CSV and text reports have always held."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import numpy as np
import pytest

from graders.grading import RESULT_STATUSES, CheckResult, Status, TaskResult
from graders.student.selfcheck import TaskOutcome
from graders.worker.client import WORKER_KINDS, FailureKind, WorkerFailure
from pallas_sim._src.memory_spaces import SPACE_NAMES, SpaceName
from pallas_sim._src.tracing import OperandTrace, Role


def _result(**overrides: object) -> CheckResult:
    fields = dict(assignment="a1", task="1.1", check="worked answer", points=0.0,
                  max_points=2.0, status="not started", feedback="Task 1.1 ...")
    return CheckResult(**{**fields, **overrides})


def test_check_results_are_keyword_only_and_keep_their_status_strings() -> None:
    with pytest.raises(TypeError):
        CheckResult("a1", "1.1", "c", 0.0, 2.0, "failed", "f")  # type: ignore[misc]
    result = _result()
    assert result.status is Status.NOT_STARTED
    as_json = json.loads(json.dumps(dataclasses.asdict(result)))
    assert as_json["status"] == "not started"
    row = io.StringIO()
    csv.writer(row).writerow([result.status])
    assert row.getvalue().strip() == "not started"
    assert f"{result.status}: {result.status:>12}" == "not started:  not started"
    assert dataclasses.replace(result, status="passed").status is Status.PASSED
    with pytest.raises(ValueError):
        _result(status="partial")  # a shown status, not a result status
    assert RESULT_STATUSES == ("passed", "failed", "not started", "timeout", "error")


def test_task_results_and_outcomes_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        TaskResult("1.1", "t", 1.0, 2.0, "failed", "why", True)  # type: ignore[misc]
    task = TaskResult(task="1.1", title="t", points=1.0, max_points=2.0, status="failed",
                      reason="why", graded=True)
    assert task.status is Status.FAILED and task.shown_status == "partial"
    with pytest.raises(TypeError):
        TaskOutcome("1.1", "t", "passed")  # type: ignore[misc]
    outcome = TaskOutcome(task="1.1", title="t", status="passed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.status = "failing"  # type: ignore[misc]


def test_worker_failure_kinds() -> None:
    failure = WorkerFailure(kind="timeout", type="", message="did not finish within 1 s")
    assert failure.kind is FailureKind.TIMEOUT and failure.kind == "timeout"
    assert {str(k) for k in WORKER_KINDS} == {"exception", "not_implemented", "missing",
                                              "unencodable", "harness", "request"}
    with pytest.raises(ValueError):
        WorkerFailure(kind="sideways", type="", message="")
    with pytest.raises(TypeError):
        WorkerFailure("crash", "", "gone")  # type: ignore[misc]


def test_operand_traces_are_keyword_only_and_serialize_plain_strings() -> None:
    fields = dict(role="in", name="x_ref", shape=(8, 128), dtype="float32",
                  block_shape=(8, 128), memory_space="vmem", buffers=1, dma_count=1,
                  hbm_bytes=4096, block_indices=np.zeros((1, 2), np.int32))
    with pytest.raises(TypeError):
        OperandTrace(*fields.values())  # type: ignore[misc]
    op = OperandTrace(**fields)
    assert op.role is Role.IN and op.memory_space is SpaceName.VMEM
    d = op.to_dict()
    assert type(d["role"]) is str and type(d["memory_space"]) is str
    assert (d["role"], d["memory_space"]) == ("in", "vmem")
    assert OperandTrace.from_dict(d) == op
    assert SPACE_NAMES == ("any", "hbm", "vmem", "smem", "semaphore")
