"""Session: every failure is a CheckFailure with the right status; stubs and loops fail fast."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from graders.checking.framework import (
    GRADING_SETTINGS,
    RETRY_TIMEOUT,
    CheckFailure,
    Session,
    describe_value,
    run_property,
)
from graders.course.catalog import get_assignment
from graders.grading.session import open_session
from tests.helpers.fake_lab import BUGGY, STUB

SUBMISSION = """
import numpy as np


def blocked_add(x, y, *, block_shape=(256, 256)):
    return x + y


def accumulate_inplace(acc, x):
    acc += x
    return acc


def stub(x):
    raise NotImplementedError("Need to implement for Task 1.2")


def fails(x):
    return {"a": 1}["b"]


def spin(n):
    while n > 3:
        pass
    return n
"""


def _session(path: Path, timeout: float = 1.0):
    return open_session(path, get_assignment("a1"), timeout=timeout)


def _count_timeouts(session) -> list[str]:  # noqa: ANN001 - a Session
    """A list that grows by the function's name each time a call times out in the worker
    (the session's worker's ``call`` is wrapped; memoized failures never reach it)."""
    worker = session._worker
    seen: list[str] = []
    call = worker.call

    def counting(func: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        result = call(func, *args, **kwargs)
        if result.error is not None and result.error.kind == "timeout":
            seen.append(func)
        return result

    worker.call = counting
    return seen


@pytest.fixture
def a1_file(make_submission: Callable[..., Path]) -> Path:
    return make_submission(SUBMISSION, name="a1_pallas_basics.py")


def test_a_call_returns_the_value_and_identity_of_the_result(a1_file: Path) -> None:
    with _session(a1_file) as s:
        reply = s.call("blocked_add", np.ones(2), np.ones(2), block_shape=(1, 1))
        np.testing.assert_array_equal(reply.value, [2.0, 2.0])
        assert reply.returned_arg is None
        reply = s.invoke("accumulate_inplace", (np.zeros(2), np.ones(2)), return_args=True)
        assert reply.returned_arg == 0
        np.testing.assert_array_equal(reply.args_after[0], [1.0, 1.0])
        assert reply.traces == []
        assert s.stem == "a1_pallas_basics" and s.assignment == "a1"


def test_a_missing_function_names_itself_and_the_file(a1_file: Path) -> None:
    with _session(a1_file) as s, pytest.raises(CheckFailure) as info:
        s.call("bias_add", np.ones(2), np.ones(2))
    assert info.value.what == "function 'bias_add' is not defined in a1_pallas_basics.py"
    assert info.value.status == "failed"


def test_not_implemented_is_not_started_and_is_memoized_within_a_check(a1_file: Path) -> None:
    with _session(a1_file) as s:
        s.begin_check(None)
        for _ in range(3):
            with pytest.raises(CheckFailure) as info:
                s.call("stub", 1)
            assert info.value.status == "not started"
            assert "Need to implement for Task 1.2" in info.value.what
        assert s.round_trips == 1
        s.begin_check(None)
        with pytest.raises(CheckFailure):
            s.call("stub", 1)
        assert s.round_trips == 2


def test_a_student_exception_carries_type_message_and_their_traceback(a1_file: Path) -> None:
    with _session(a1_file) as s, pytest.raises(CheckFailure) as info:
        s.call("fails", 1)
    failure = info.value
    assert failure.status == "failed"
    assert failure.what == "fails raised KeyError: 'b'"
    assert "a1_pallas_basics.py, line" in failure.traceback
    assert 'return {"a": 1}["b"]' in failure.traceback


def test_a_timeout_is_memoized_so_the_check_fails_fast(a1_file: Path) -> None:
    with _session(a1_file, timeout=0.5) as s:
        timeouts = _count_timeouts(s)
        for _ in range(3):
            with pytest.raises(CheckFailure) as info:
                s.call("spin", 10)
            assert info.value.status == "timeout"
        with pytest.raises(CheckFailure):  # the whole function, whatever the input
            s.call("spin", 1)
        assert timeouts == ["spin"], (
            "only the first call reached the worker (and timed out); the others were "
            "answered from the memo. bench/bench_timeouts.py measures the time")
        assert s.call("blocked_add", 1, 2).value == 3  # other functions still run
        s.begin_check(None)
        assert s.call("spin", 1).value == 1  # and the next check starts afresh


def test_after_a_full_timeout_later_checks_give_the_function_the_retry_timeout(
        a1_file: Path) -> None:
    """A loop that never ends costs the full call timeout once; in later checks the same
    function gets the retry timeout, says so, and still returns on inputs where it ends."""
    with _session(a1_file, timeout=RETRY_TIMEOUT + 0.5) as s:
        retry = s.retry_timeout()
        assert retry == (RETRY_TIMEOUT + 0.5) / 3, "a third of a call timeout below 6 s"
        s.begin_check(None)
        with pytest.raises(CheckFailure) as first:
            s.call("spin", 10)
        assert first.value.what == f"spin did not finish within {RETRY_TIMEOUT + 0.5:g} s"
        s.begin_check(None)
        assert s.call("spin", 1).value == 1
        with pytest.raises(CheckFailure) as later:
            s.call("spin", 10)
        assert later.value.status == "timeout"
        assert later.value.what == (
            f"spin did not finish within {retry:g} s (it already ran out of the full "
            f"timeout on an earlier check, so its later calls get {retry:g} s)")


def test_the_retry_timeout_is_two_seconds_or_a_third_of_the_call_timeout(a1_file: Path) -> None:
    for timeout, retry in ((10, RETRY_TIMEOUT), (6, RETRY_TIMEOUT), (3, 1.0)):
        with _session(a1_file, timeout=timeout) as s:
            assert s.retry_timeout() == retry


def test_a_rejected_file_fails_every_call_with_the_static_message(
    make_submission: Callable[..., Path],
) -> None:
    path = make_submission("import numpy as np\nimport os\n", name="a1_pallas_basics.py")
    with _session(path) as s, pytest.raises(CheckFailure) as info:
        s.call("blocked_add", 1, 2)
    assert info.value.status == "error"
    assert "line 2: import of 'os' is not allowed" in info.value.what


def test_a_file_that_fails_to_import_fails_every_call(
    make_submission: Callable[..., Path],
) -> None:
    path = make_submission("import numpy as np\nnp.foo()\n", name="a1_pallas_basics.py")
    with _session(path) as s, pytest.raises(CheckFailure) as info:
        s.call("blocked_add", 1, 2)
    assert info.value.status == "error"
    assert "importing a1_pallas_basics.py raised AttributeError" in info.value.what
    assert "line 2, in <module>" in info.value.traceback


# -- run_property -----------------------------------------------------------------------------


def test_run_property_reports_the_shrunk_input(make_submission: Callable[..., Path]) -> None:
    path = make_submission(BUGGY, name="a1_pallas_basics.py")
    with _session(path) as s:
        def body(values: list[int]) -> None:
            x = np.array(values)
            got = s.call("add", x, np.ones_like(x)).value
            if not np.array_equal(got, x + 1):
                raise CheckFailure("add is wrong", expected=str(x + 1), got=str(got))

        with pytest.raises(CheckFailure) as info:
            run_property(st.lists(st.integers(0, 1000), min_size=1, max_size=4), body)
    assert info.value.input == "[10]"
    assert info.value.expected == "[11]" and info.value.got == "[9]"


def test_run_property_stops_at_once_on_a_timeout(make_submission: Callable[..., Path]) -> None:
    path = make_submission(BUGGY, name="a1_pallas_basics.py")
    with _session(path, timeout=1.0) as s:
        seen: list[int] = []

        def body(n: int) -> None:
            seen.append(n)
            s.call("spin", n)

        timeouts = _count_timeouts(s)
        with pytest.raises(CheckFailure) as info:
            run_property(st.integers(0, 100), body, max_examples=50)
    assert info.value.status == "timeout"
    assert timeouts == ["spin"], (
        f"the property stops at the first timeout; the worker timed out {len(timeouts)} "
        "times (bench/bench_timeouts.py measures how long it takes)")
    assert info.value.input == str(seen[-1]) and seen[-1] > 3
    assert "within 1 s" in info.value.what


def test_run_property_stops_at_once_on_a_stub(make_submission: Callable[..., Path]) -> None:
    path = make_submission(STUB, name="a1_pallas_basics.py")
    with _session(path) as s:
        def body(n: int) -> None:
            s.call("spin", n)

        with pytest.raises(CheckFailure) as info:
            run_property(st.integers(0, 100), body)
        assert s.round_trips == 1
    assert info.value.status == "not started"
    assert info.value.input is None


def test_run_property_passes_quietly_and_lets_grader_bugs_through() -> None:
    run_property(st.integers(), lambda n: None)
    with pytest.raises(ZeroDivisionError):
        run_property(st.integers(), lambda n: 1 / 0)


def test_run_property_is_deterministic() -> None:
    def draws() -> list[int]:
        seen: list[int] = []
        run_property(st.integers(), seen.append, max_examples=10)
        return seen

    assert draws() == draws()


def test_the_grading_profile_pins_every_setting() -> None:
    assert GRADING_SETTINGS.derandomize is True
    assert GRADING_SETTINGS.database is None
    assert GRADING_SETTINGS.deadline is None
    assert GRADING_SETTINGS.print_blob is False
    assert GRADING_SETTINGS.report_multiple_bugs is False


def test_inputs_are_described_compactly() -> None:
    assert describe_value({"x": np.array([[0.0, 1.0]], np.float32), "block_size": 1}) == (
        "x = f32[1,2] [[0.0, 1.0]], block_size = 1"
    )
    assert describe_value(np.zeros((64, 128))).startswith("f64[64,128] in [0, 0]")
    assert describe_value((1, [2.5])) == "(1, [2.5])"
    assert describe_value(np.array([True, False])) == "bool[2] [True, False]"
    assert describe_value(np.array([1e30, -0.36787944])) == "f64[2] [1e+30, -0.3679]"


def test_a_session_needs_a_worker_or_a_failure() -> None:
    with pytest.raises(ValueError):
        Session(stem="a1_pallas_basics", assignment="a1", worker=None)
