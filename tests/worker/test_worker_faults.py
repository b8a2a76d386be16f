"""A loop, a crash or a flood of prints costs only the call that caused it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graders.worker.client import Worker

FAULTY = """
import numpy as np


def ok(x):
    return x * 2


def loop():
    while True:
        pass


def exit_hard():
    __import__("os")._exit(3)


def abort():
    __import__("os").abort()


def segfault():
    import ctypes
    return ctypes.string_at(0)


def chatty(n):
    for i in range(n):
        print("line", i, "PLW1 looks like a frame but is not")
    __import__("sys").stdout.buffer.write(b"PLW1\\x00\\x00")
    return n


def stub():
    raise NotImplementedError("Need to implement for Task 1.1")


def boom(x):
    return helper(x)


def helper(x):
    return x[10]


def unsendable():
    return (1, object())


def big():
    return np.zeros((512, 1024), dtype=np.float32)


def address():
    raise ValueError(repr(object()))
"""


@pytest.fixture
def worker(tmp_path: Path) -> Worker:
    # The process layer on its own: these faults need code the submission policy refuses
    # (os._exit, ctypes, sys.stdout), so the policy is off (tests/redteam/test_policy.py
    # shows it refusing them).
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text(FAULTY, encoding="utf-8")
    with Worker(path, timeout=1.0, policy=False) as w:
        yield w


def test_an_infinite_loop_times_out_and_the_next_call_works(worker: Worker) -> None:
    # How long the timeout takes is measured by bench/bench_timeouts.py, not asserted here.
    result = worker.call("loop")
    assert not result.ok and result.error is not None
    assert result.error.kind == "timeout"
    assert "within 1 s" in result.error.message
    assert worker.call("ok", (np.arange(3),)).value.tolist() == [0, 2, 4]
    assert worker.restarts == 1


def test_a_per_call_timeout_overrides_the_default(worker: Worker) -> None:
    error = worker.call("loop", timeout=0.3).error
    assert error.kind == "timeout"
    assert "within 0.3 s" in error.message, "the call's own limit, not the worker's 1 s"


@pytest.mark.parametrize(("func", "words"), [("exit_hard", "exited with status 3"),
                                             ("abort", "SIGABRT"),
                                             ("segfault", "SIGSEGV")])
def test_a_crash_costs_only_its_call(worker: Worker, func: str, words: str) -> None:
    result = worker.call(func)
    assert not result.ok and result.error is not None
    assert result.error.kind == "crash"
    assert words in result.error.message
    assert worker.call("ok", (2,)).value == 4


def test_prints_never_corrupt_replies(worker: Worker) -> None:
    result = worker.call("chatty", (5000,))
    assert result.ok and result.value == 5000
    assert len(result.output.encode()) <= 4096 + 8
    assert "line 4999" in result.output
    assert worker.call("ok", (1,)).value == 2


def test_the_students_exception_comes_back_with_their_frames_only(worker: Worker) -> None:
    result = worker.call("boom", (np.zeros(2),))
    error = result.error
    assert error is not None and error.kind == "exception" and error.type == "IndexError"
    assert "index 10 is out of bounds" in error.message
    lines = FAULTY.splitlines()
    outer = lines.index("    return helper(x)") + 1
    inner = lines.index("    return x[10]") + 1
    assert error.traceback.splitlines() == [
        f"  a1_pallas_basics.py, line {outer}, in boom",
        "    return helper(x)",
        f"  a1_pallas_basics.py, line {inner}, in helper",
        "    return x[10]",
    ]


def test_not_implemented_is_reported_as_its_own_kind(worker: Worker) -> None:
    error = worker.call("stub").error
    assert error is not None and error.kind == "not_implemented"
    assert error.message == "Need to implement for Task 1.1"


def test_an_unsendable_result_names_its_type(worker: Worker) -> None:
    error = worker.call("unsendable").error
    assert error is not None and error.kind == "unencodable"
    assert "'object'" in error.message and "[1]" in error.message


def test_missing_functions_and_large_results(worker: Worker) -> None:
    assert worker.call("nope").error.kind == "missing"
    value = worker.call("big").value
    assert value.shape == (512, 1024) and value.dtype == np.float32


def test_a_module_that_fails_to_import_reports_it_and_is_not_retried(tmp_path: Path) -> None:
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text("x = 1\ny = x / 0\n", encoding="utf-8")
    with Worker(path, timeout=1.0) as w:
        load = w.load_result
        assert load is not None and not load.ok and load.error is not None
        assert load.error.type == "ZeroDivisionError"
        assert "line 2, in <module>" in load.error.traceback
        result = w.call("anything")
        assert result.error is not None and result.error.kind == "not_loaded"
        assert w.restarts == 0


def test_a_module_that_loops_on_import_times_out_once(tmp_path: Path) -> None:
    # The import is not run again for each call (no restart): its time is measured by
    # bench/bench_timeouts.py, not asserted here.
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text("while True:\n    pass\n", encoding="utf-8")
    with Worker(path, timeout=0.5) as w:
        assert w.load_result is not None and w.load_result.error.kind == "timeout"
        assert w.call("f").error.kind == "timeout"
        assert w.call("g").error.kind == "timeout"
        assert w.restarts == 0, "a file that timed out on import is not imported again"


def test_messages_do_not_depend_on_the_run(worker: Worker) -> None:
    error = worker.call("address").error
    assert error is not None and error.message == "<object object at 0x...>"


def test_a_closed_worker_refuses_calls(tmp_path: Path) -> None:
    path = tmp_path / "a1_pallas_basics.py"
    path.write_text("def f():\n    return 1\n", encoding="utf-8")
    w = Worker(path, timeout=1.0)
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.call("f")
