"""Which grading server a Dask worker hands a file to (graders/batch/dask_worker.py): the
one running the grading code the batch names, a new one when the code changed since it
started, and none (a clear error) on a worker with another install."""

from __future__ import annotations

import threading

import pytest

from graders.batch import dask_worker


class _FakeServer:
    """Stands for a started server that runs the grading code ``runs[0]``."""

    runs = ["A"]
    started: list[_FakeServer] = []

    def __init__(self) -> None:
        self.grader = self.runs[0]
        self.closed = False
        _FakeServer.started.append(self)

    def alive(self) -> bool:
        return not self.closed

    def close(self, *, kill: bool = False) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[_FakeServer]:
    monkeypatch.setattr(dask_worker, "_Server", _FakeServer)
    monkeypatch.setattr(dask_worker, "_servers", {})
    monkeypatch.setattr(dask_worker, "_refused", {})
    _FakeServer.started = []
    return _FakeServer


def test_a_server_is_kept_while_the_code_is_the_same_and_replaced_when_it_changes(
        fake: type[_FakeServer]) -> None:
    """Red team: a worker's server kept grading with the checks it had loaded after a
    check was fixed on the shared file system."""
    fake.runs = ["A"]
    first = dask_worker._server("A")
    assert dask_worker._server("A") is first and len(fake.started) == 1
    fake.runs = ["B"]  # the code on disk was changed, the batch machine runs B
    second = dask_worker._server("B")
    assert second is not first and first.closed and second.grader == "B"
    assert dask_worker._servers[threading.get_ident()] is second


def test_a_worker_with_another_install_grades_nothing_and_says_so(
        fake: type[_FakeServer]) -> None:
    fake.runs = ["C"]
    refused = dask_worker._server("B")
    assert isinstance(refused, str) and "other grading code" in refused
    assert "install the same version" in refused and "fingerprint C here, B there" in refused
    again = dask_worker._server("B")
    assert isinstance(again, str) and len(fake.started) == 1, "no new server per file"
