"""The one status vocabulary of grading, the self-check and the reports.

Every status a check, a task or a self-check can end in is a member of
:class:`Status` (a ``StrEnum``: members are the strings reports print and
results.json holds, so ``Status.PASSED == "passed"``). The tuples below say
which statuses each kind of outcome may take. Source: docs/ta-guide.md
("Statuses") and docs/students.md (``pallas-lab check``).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """How a check, a task or a self-check ended.

    PASSED: every check passed. PARTIAL (a task's rollup only): some points earned.
    FAILED: a hidden check failed. FAILING: a public check failed in the student's own
    run (``pallas-lab check``). NOT_STARTED: the stub still raises NotImplementedError.
    TIMEOUT: a call took longer than its timeout or the file's budget ran out.
    ERROR: the file does not load, the worker crashed or a reply was refused.
    NO_SELF_CHECK: a task without public checks. NO_FILE: no file for the assignment.
    """

    PASSED = "passed"
    PARTIAL = "partial"
    FAILED = "failed"
    FAILING = "failing"
    NOT_STARTED = "not started"
    TIMEOUT = "timeout"
    ERROR = "error"
    NO_SELF_CHECK = "no self-check"
    NO_FILE = "no file"


#: What a failed hidden check (``CheckFailure.status``) may be.
FAILURE_STATUSES: tuple[Status, ...] = (Status.FAILED, Status.NOT_STARTED, Status.TIMEOUT,
                                        Status.ERROR)
#: What a graded check's result may be.
RESULT_STATUSES: tuple[Status, ...] = (Status.PASSED, *FAILURE_STATUSES)
#: Which failing status a task shows when its checks fail differently, most telling first.
TASK_FAILURE_ORDER: tuple[Status, ...] = (Status.ERROR, Status.TIMEOUT, Status.FAILED,
                                          Status.NOT_STARTED)
#: What a task's self-check outcome (``pallas-lab check``) may be.
SELF_CHECK_STATUSES: tuple[Status, ...] = (Status.PASSED, Status.FAILING, Status.NOT_STARTED,
                                           Status.ERROR, Status.NO_SELF_CHECK, Status.NO_FILE)
