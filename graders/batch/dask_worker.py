"""What runs inside a Dask worker process: hand one file to this worker's preloaded grading
server (``graders.batch.grading_server``) and bring back its (student, stem, score, error).

A Dask worker grades many files of a batch, and more batches after it. Each file is graded
as on the TA's machine, by a fresh trusted grader process whose untrusted worker forks from
a worker zygote, so what a file costs is its grading alone: the imports (the grader, every
lab's checks, numpy and ml_dtypes, ~3.5 s of CPU) and the zygote are paid once per Dask
worker thread, by a server started with the first file and kept until the Dask worker ends
(its stdin, a pipe from this process, then closes and it stops, removing what it made).
A server runs the grading code it started with and says which (a fingerprint of the
files it imports, ``graders.batch.fingerprint``): when a batch asks for other code (a
check fixed between two batches), a new server is started; a worker whose new server
does not run the batch machine's code either grades nothing and says so.

This module imports only the standard library, ``graders.batch.fingerprint`` (standard
library too) and ``distributed`` when a file is graded, so the Dask worker process itself
makes no temporary folder it could leave behind when the cluster kills it.

The server is trusted code of this package; what it sends back is one JSON line, read
bounded (``MAX_REPLY_BYTES``). Student code runs nowhere but in the sandboxed worker of
the server's grader process.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from graders.batch.fingerprint import grading_identity

#: The error text a grader reports for a file whose grading a stop ended (no result kept);
#: ``graders.batch.pool.INTERRUPTED`` is this very string.
INTERRUPTED = "interrupted"
#: Seconds between looks at the batch's stop event while a file is graded.
POLL = 0.5
#: Seconds a stopped grader has to end before its server is killed.
STOP_SECONDS = 30.0
#: Seconds a new server may take to say which grading code it runs.
READY_SECONDS = 120.0
#: Bytes of a server's reply read (one JSON line).
MAX_REPLY_BYTES = 1 << 20
#: Bytes of the end of a server's error output kept in an error text.
MAX_ERROR_CHARS = 4000

_servers: dict[int, _Server] = {}
_servers_lock = threading.Lock()


class _Server:
    """One running grading server (``python -m graders.batch.grading_server``) of this
    Dask worker thread."""

    def __init__(self) -> None:
        self.errors: IO[bytes] = tempfile.TemporaryFile()
        self.process = subprocess.Popen(  # noqa: S603 - this package's own module
            [sys.executable, "-m", "graders.batch.grading_server"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.errors, start_new_session=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"})
        self.requests = 0
        #: The grading code the server runs (its first line: ``grader_fingerprint`` where
        #: it imports it), "" when it said nothing within ``READY_SECONDS``.
        self.grader = ""
        line, _ = _read_line(self, lambda: False, READY_SECONDS)
        try:
            self.grader = str(json.loads(line or b"{}").get("grader", ""))
        except (ValueError, AttributeError):
            self.grader = ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any]) -> None:
        """One JSON line to the server (``OSError`` when it has gone)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def complaint(self) -> str:
        """The end of what the server wrote on its error output."""
        self.errors.seek(0, os.SEEK_END)
        self.errors.seek(max(0, self.errors.tell() - MAX_ERROR_CHARS))
        return self.errors.read(MAX_ERROR_CHARS).decode("utf-8", "replace")

    def close(self, *, kill: bool = False) -> None:
        """Stop the server: its stdin closed (it finishes and cleans up), or killed."""
        if kill and self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.errors.close()


def _server(grader: str) -> _Server | str:
    """This thread's server for the grading code ``grader`` (a fingerprint): the running
    one when it runs that code, else a new one (one started before the code changed is
    replaced). A message saying why not when a new server does not run ``grader`` either
    (this worker has another install than the batch's machine)."""
    key = threading.get_ident()
    with _servers_lock:
        server = _servers.get(key)
        if server is not None and server.alive() and server.grader == grader:
            return server
        if server is not None and server.alive() and _refused.get(grader) == server.grader:
            return _mismatch(server.grader, grader)  # already tried: still another install
        if server is not None:
            server.close(kill=not server.alive())
        server = _servers[key] = _Server()
        if server.grader != grader:
            _refused[grader] = server.grader
            return _mismatch(server.grader, grader)
        return server


#: Fingerprints a batch asked for -> the one a new server of this worker had instead.
_refused: dict[str, str] = {}


def _mismatch(here: str, there: str) -> str:
    """The error text of a worker whose grading code is not the batch machine's."""
    return (f"this Dask worker ({socket.gethostname()}) has other grading code than the "
            "machine that started the batch (pallas-lab, its labs, pallas_sim, Python or "
            "numpy, ml_dtypes, hypothesis, RestrictedPython differ: "
            f"fingerprint {here[:12] or 'unknown'} here, {there[:12]} there): install the "
            "same version on every worker; nothing was graded here")


def _read_line(server: _Server, stopped: Any, limit: float | None = None,
               number: int = 0) -> tuple[bytes | None, bool]:
    """The server's next line (None when it ended without one, or said nothing within
    ``limit`` seconds) and whether the batch was stopped meanwhile (then the server was
    told to stop file ``number``, and killed when it did not within ``STOP_SECONDS``).
    The server writes one line, then nothing until it is asked again, so nothing read
    past the line is lost."""
    out = server.process.stdout
    assert out is not None
    fd = out.fileno()
    data = b""
    started = time.monotonic()
    stop_sent: float | None = None
    while b"\n" not in data and len(data) < MAX_REPLY_BYTES:
        if stop_sent is None and stopped():
            stop_sent = time.monotonic()
            try:
                server.send({"stop": number})
            except OSError:
                pass
        if stop_sent is not None and time.monotonic() - stop_sent > STOP_SECONDS:
            server.close(kill=True)
            return None, True
        if limit is not None and time.monotonic() - started > limit:
            return None, False
        readable, _, _ = select.select([fd], [], [], POLL)
        if readable:
            chunk = os.read(fd, MAX_REPLY_BYTES - len(data))
            if not chunk:
                return None, stop_sent is not None
            data += chunk
    return data.split(b"\n", 1)[0], stop_sent is not None


#: What ``grade_remote`` brings back: (student, stem, score, error, grader died twice).
Outcome = tuple[str, str, float | None, str | None, bool]


def grade_remote(spec: dict[str, Any], stop_name: str) -> Outcome:
    """Run on a Dask worker: grade one file (``spec``, from
    ``graders.batch.cluster.submission_spec``: JSON-safe) on this worker thread's grading
    server (one running the grading code the spec's stamp names) and return its (student,
    stem, score, error, whether its grader died twice). When the batch sets the Dask
    ``Event`` ``stop_name``, the file's grader is stopped as a local one is
    (``INTERRUPTED``, no result kept); so it is when the batch's client ends without
    setting it (killed: the scheduler then releases the task, ``_unwanted_check``). Never
    raises for the file's own failures; a server
    that ended without a reply, or a worker with other grading code, is reported in the
    error text."""
    from distributed import Event

    stop = Event(stop_name)
    unwanted = _unwanted_check()
    if stop.is_set():
        return spec["student"], spec["stem"], None, INTERRUPTED, False
    stamp = spec.get("stamp") or {}
    server = _server(grading_identity(str(stamp.get("grader", "")),
                                      dict(stamp.get("runtime") or {})))
    if isinstance(server, str):
        return spec["student"], spec["stem"], None, server, False
    server.requests += 1
    number = server.requests
    try:
        server.send({"id": number, "spec": spec})
    except OSError:
        server.close(kill=True)
        return spec["student"], spec["stem"], None, (
            "the grading server on the Dask worker ended before it took the file: "
            f"{server.complaint()}"), False
    reply, stopped = _read_line(server, lambda: unwanted() or stop.is_set(), number=number)
    if reply is None:
        status = server.process.poll()
        complaint = "" if stopped else server.complaint()
        server.close(kill=True)
        if stopped:
            return spec["student"], spec["stem"], None, INTERRUPTED, False
        return spec["student"], spec["stem"], None, (
            f"the grading server on the Dask worker ended without a result (exit status "
            f"{status}): {complaint}"), False
    try:
        message = json.loads(reply)
        if message["id"] != number:
            raise ValueError(f"a reply to file {message['id']}, not {number}")
        student, stem, score, error = message["result"]
        return str(student), str(stem), score, error, message.get("died") is True
    except (ValueError, TypeError, KeyError):
        server.close(kill=True)
        return spec["student"], spec["stem"], None, (
            "the grading server on the Dask worker sent back something that is not a "
            "result"), False


def _unwanted_check() -> Any:
    """A function telling whether nobody wants this task's result any more: the scheduler
    released it while it ran (its client ended without stopping the batch: killed, or its
    machine lost), so the file's grader is stopped as by the batch's stop event rather
    than left to finish a result no one collects. Always False outside a Dask task."""
    from distributed import get_worker
    from distributed.worker import thread_state

    try:
        worker, key = get_worker(), thread_state.key
    except (ValueError, AttributeError):
        return lambda: False

    def unwanted() -> bool:
        task = worker.state.tasks.get(key)
        return task is None or task.state in ("cancelled", "released", "forgotten")
    return unwanted


def _close_all() -> None:
    """At the Dask worker's exit: every server finishes its file and cleans up."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()


atexit.register(_close_all)
