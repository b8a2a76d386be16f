"""``graders.checking.performance.invoke_once``: both checks of a performance task (3.5, 4.8)
read one worker round trip per grading session, failures included."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

from graders.checking import performance
from graders.checking.registry import CheckFailure


class FakeSession:
    """Counts invocations; answers with the function's name, or fails for "broken"."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def invoke(self, name, args, kwargs, *, harness, timeout):
        self.calls.append(name)
        if name == "broken":
            raise CheckFailure("the student's chooser raised")
        if name == "slow":
            raise CheckFailure("did not finish within 30 s", status="timeout")
        return SimpleNamespace(value={"name": name, "kwargs": kwargs, "harness": harness})


def test_each_chooser_is_invoked_once_per_session_and_its_failure_is_kept():
    s = FakeSession()
    first = performance.invoke_once(s, "choose", {"a": 1}, harness="a3", timeout=1.0)
    again = performance.invoke_once(s, "choose", {"a": 1}, harness="a3", timeout=1.0)
    assert first is again and first == {"name": "choose", "kwargs": {"a": 1}, "harness": "a3"}
    failure = performance.invoke_once(s, "broken", {}, harness="a3", timeout=1.0)
    assert isinstance(failure, CheckFailure), "returned for the caller to raise, not raised"
    assert performance.invoke_once(s, "broken", {}, harness="a3", timeout=1.0) is failure
    assert s.calls == ["choose", "broken"]
    other = FakeSession()
    performance.invoke_once(other, "choose", {}, harness="a3", timeout=1.0)
    assert other.calls == ["choose"], "another session (student) invokes again"


def test_the_kept_replies_go_with_the_session():
    gc.collect()  # sessions of earlier tests in this process: not counted below
    s = FakeSession()
    performance.invoke_once(s, "choose", {}, harness="a3", timeout=1.0)
    assert s in performance._REPLIES
    before = len(performance._REPLIES)
    gone = weakref.ref(s)
    del s
    gc.collect()
    assert gone() is None and len(performance._REPLIES) == before - 1


def test_a_chooser_that_runs_out_of_time_is_told_to_return_constants():
    """An honest chooser that runs the handout's sweep itself times out: the failure says
    what to do instead (an honest-student pass saw only 'did not finish within 30 s')."""
    failure = performance.invoke_once(FakeSession(), "slow", {}, harness="a4", timeout=30.0)
    assert isinstance(failure, CheckFailure) and failure.status == "timeout"
    assert failure.hint == performance.CHOOSER_TIMEOUT_HINT
    assert "return the winner as constants" in failure.hint
    other = performance.invoke_once(FakeSession(), "broken", {}, harness="a4", timeout=30.0)
    assert other.hint is None, "only a timeout gets the hint"
