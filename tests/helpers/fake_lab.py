"""Fixtures for the grading-infrastructure tests (a pytest plugin the root conftest.py loads):
submission files and a fake assignment.

The fake assignment ``t9`` (stem ``t9_fake``) is registered only for the test
that asks for it, so these tests do not depend on the real checks or the
reference: its checks call a tiny submission through the real worker.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

from graders.checking.framework import REGISTRY, CheckFailure, Session, check, run_property
from graders.course.catalog import ASSIGNMENTS, Assignment, Task

FAKE = Assignment(
    id="t9", stem="t9_fake", title="Fake assignment", lecture="§9",
    tasks=(
        Task(id="9.1", functions=("add",), points=60),
        Task(id="9.2", functions=("spin",), points=40),
        Task(id="9.3", functions=("later",), points=10, graded=False),
    ),
)

GOOD = """
import numpy as np


def add(x, y):
    return x + y


def spin(n):
    return n


def later():
    return 1
"""

STUB = """
import numpy as np


def add(x, y):
    raise NotImplementedError("Need to implement for Task 9.1")


def spin(n):
    raise NotImplementedError("Need to implement for Task 9.2")


def later():
    raise NotImplementedError("Need to implement for Task 9.3")
"""

#: Wrong for x >= 10 (shrinks to x = 10), loops forever in spin for n > 3.
BUGGY = """
import numpy as np


def add(x, y):
    if np.max(x) >= 10:
        return x - y
    return x + y


def spin(n):
    while n > 3:
        pass
    return n


def later():
    return 1
"""


def write(folder: Path, name: str, source: str) -> Path:
    """Write dedented ``source`` to ``folder/name`` and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


@pytest.fixture
def make_submission(tmp_path: Path) -> Callable[..., Path]:
    """``make_submission(source, name="t9_fake.py", student="alice")`` writes a submission."""

    def make(source: str, name: str = "t9_fake.py", student: str = "alice") -> Path:
        return write(tmp_path / student, name, source)

    return make


def _register_fake_checks() -> None:
    @check("t9", "9.1", 40, "add(x, y) equals x + y on drawn int arrays")
    def add_matches(s: Session) -> None:
        def body(values: list[int]) -> None:
            x = np.array(values, dtype=np.int64)
            y = np.ones_like(x)
            got = s.call("add", x, y).value
            if not np.array_equal(got, x + y):
                raise CheckFailure(
                    "add returned the wrong values", expected=str((x + y).tolist()),
                    got=str(np.asarray(got).tolist()),
                    diagnosis="subtracts instead of adding",
                )

        run_property(st.lists(st.integers(0, 1000), min_size=1, max_size=5), body,
                     max_examples=20)

    @check("t9", "9.1", 20, "add works on the worked example")
    def add_worked(s: Session) -> None:
        got = s.call("add", np.array([1, 2]), np.array([3, 4])).value
        if not np.array_equal(got, [4, 6]):
            raise CheckFailure("add([1, 2], [3, 4]) is wrong", expected="[4, 6]", got=str(got))

    @check("t9", "9.2", 40, "spin(n) returns n")
    def spin_returns(s: Session) -> None:
        def body(n: int) -> None:
            got = s.call("spin", n).value
            if got != n:
                raise CheckFailure("spin returned the wrong value", expected=str(n), got=str(got))

        run_property(st.integers(0, 50), body, max_examples=20)

    @check("t9", "9.3", 10, "later() returns 1")
    def later_returns(s: Session) -> None:
        if s.call("later").value != 1:
            raise CheckFailure("later() is not 1")


@pytest.fixture
def fake_assignment(monkeypatch: pytest.MonkeyPatch) -> Iterator[Assignment]:
    """Register the fake assignment ``t9`` and its four checks for one test."""
    monkeypatch.setitem(ASSIGNMENTS, FAKE.id, FAKE)
    monkeypatch.setitem(REGISTRY, FAKE.id, [])
    _register_fake_checks()
    yield FAKE


@pytest.fixture
def no_grading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to grade fails the test: a command's options must be refused first."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a submission was graded although the options were wrong")

    monkeypatch.setattr("graders.cli.grade.grade_submission", refuse)
    monkeypatch.setattr("graders.batch.run.run_batch", refuse)
