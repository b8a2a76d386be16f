"""What runs inside a Dask worker process: hand one file to this worker's preloaded grading
server (``graders.batch.grading_server``) and bring back its (student, stem, score, error).

A Dask worker grades many files of a batch, and more batches after it. Each file is graded
as on the TA's machine, by a fresh trusted grader process whose untrusted worker forks from
a worker zygote, so what a file costs is its grading alone: the imports (the grader, every
lab's checks, numpy and ml_dtypes, ~3.5 s of CPU) and the zygote are paid once per Dask
worker thread, by a server started with the first file and kept until the Dask worker ends
(its stdin, a pipe from this process, then closes and it stops, removing what it made).

This module imports only the standard library (and ``distributed`` when a file is
graded), so the Dask worker process itself makes no temporary folder it could leave behind
when the cluster kills it.

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
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

#: The error text a grader reports for a file whose grading a stop ended (no result kept);
#: ``graders.batch.pool.INTERRUPTED`` is this very string.
INTERRUPTED = "interrupted"
#: Seconds between looks at the batch's stop event while a file is graded.
POLL = 0.5
#: Seconds a stopped grader has to end before its server is killed.
STOP_SECONDS = 30.0
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


def _server() -> _Server:
    """This thread's server, started when it has none (or its last one died)."""
    key = threading.get_ident()
    with _servers_lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            if server is not None:
                server.close()
            server = _servers[key] = _Server()
        return server


def _read_reply(server: _Server, number: int, stopped: Any) -> tuple[bytes | None, bool]:
    """The server's reply line to file ``number`` (None when it ended without one) and
    whether the batch was stopped meanwhile (then the server was told to stop the file, and
    killed when it did not within ``STOP_SECONDS``)."""
    out = server.process.stdout
    assert out is not None
    fd = out.fileno()
    data = b""
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
        readable, _, _ = select.select([fd], [], [], POLL)
        if readable:
            chunk = os.read(fd, MAX_REPLY_BYTES - len(data))
            if not chunk:
                return None, stop_sent is not None
            data += chunk
    return data.split(b"\n", 1)[0], stop_sent is not None


def grade_remote(spec: dict[str, Any], stop_name: str) -> tuple[str, str, float | None,
                                                                 str | None]:
    """Run on a Dask worker: grade one file (``spec``, from
    ``graders.batch.cluster.submission_spec``: JSON-safe) on this worker thread's grading
    server and return its (student, stem, score, error). When the batch sets the Dask
    ``Event`` ``stop_name``, the file's grader is stopped as a local one is (``INTERRUPTED``,
    no result kept). Never raises for the file's own failures; a server that ended without
    a reply is reported in the error text (and replaced for the next file)."""
    from distributed import Event

    stop = Event(stop_name)
    if stop.is_set():
        return spec["student"], spec["stem"], None, INTERRUPTED
    server = _server()
    server.requests += 1
    number = server.requests
    try:
        server.send({"id": number, "spec": spec})
    except OSError:
        server.close(kill=True)
        return spec["student"], spec["stem"], None, (
            "the grading server on the Dask worker ended before it took the file: "
            f"{server.complaint()}")
    reply, stopped = _read_reply(server, number, stop.is_set)
    if reply is None:
        status = server.process.poll()
        complaint = "" if stopped else server.complaint()
        server.close(kill=True)
        if stopped:
            return spec["student"], spec["stem"], None, INTERRUPTED
        return spec["student"], spec["stem"], None, (
            f"the grading server on the Dask worker ended without a result (exit status "
            f"{status}): {complaint}")
    try:
        message = json.loads(reply)
        if message["id"] != number:
            raise ValueError(f"a reply to file {message['id']}, not {number}")
        student, stem, score, error = message["result"]
        return str(student), str(stem), score, error
    except (ValueError, TypeError, KeyError):
        server.close(kill=True)
        return spec["student"], spec["stem"], None, (
            "the grading server on the Dask worker sent back something that is not a "
            "result")


def _close_all() -> None:
    """At the Dask worker's exit: every server finishes its file and cleans up."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()


atexit.register(_close_all)
