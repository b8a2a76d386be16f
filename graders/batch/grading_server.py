"""``python -m graders.batch.grading_server``: a Dask worker's preloaded grader.

Started by ``graders.batch.dask_worker`` once per Dask worker thread, it grades the files
that worker is given the way the TA's own batch grades them (``graders.batch.run``): each
file by a fresh grader process (``graders.batch.pool.grade_in_child``) forked from a
forkserver that has imported the grader and every lab's checks, whose untrusted worker
forks from this server's worker zygote. So a file on a Dask worker costs its grading, not
a Python start-up, the imports and a zygote of its own.

Protocol (trusted on both ends), one JSON line each way. First the server says which
grading code it runs on which runtime, ``{"grader": IDENTITY}``
(``graders.batch.fingerprint.grading_identity``); then a request ``{"id": N, "spec":
{...}}`` (a spec of ``graders.batch.cluster.submission_spec``) on stdin, its reply
``{"id": N, "result": [student, stem, score, error], "died": false}`` on the stdout the
server was started with (its own descriptor 1 then points at stderr, so nothing a grader
prints can pass for a reply); ``died`` is true when the file's grader died twice.
``{"stop": N}`` stops file N if it is being graded (its grader gets SIGINT and keeps no
result: ``INTERRUPTED``) and is ignored otherwise. End of stdin ends the server: the
forkserver, the zygote and every folder they made are removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from graders.batch.cluster import submission_from_spec
from graders.batch.dask_worker import POLL
from graders.batch.fingerprint import grader_fingerprint, grading_identity, runtime_versions
from graders.batch.pool import (
    INTERRUPTED,
    StopRequests,
    death_of,
    grade_in_child,
    grader_context,
    halt,
    start_child,
    start_forkserver,
    start_zygote,
    stop_forkserver,
)

#: Bytes of one request line read at most (a spec is a few hundred bytes).
MAX_REQUEST_BYTES = 1 << 20


def _grade_once(sub: Any, spec: dict[str, Any], options: dict[str, Any], stop: Any,
                asked: threading.Event) -> tuple[list[Any], str | None]:
    """Grade ``sub`` in a one-process pool of its own: ([student, stem, score, error], None)
    or, when its grader process died (not stopped), (that, how it died)."""
    tasks = tuple(spec["tasks"]) if spec.get("tasks") else None
    with ProcessPoolExecutor(max_workers=1, **options) as pool:
        future = pool.submit(grade_in_child, sub, spec["out"], spec["timeout"],
                             spec["budget"], tasks, spec.get("stamp"))
        workers = list(getattr(pool, "_processes", {}).values())
        halted = False
        while not future.done():
            wait([future], timeout=POLL, return_when=FIRST_COMPLETED)
            if asked.is_set() and not halted:
                halted = True
                halt(stop, [pool])
        try:
            return list(future.result()), None
        except BrokenProcessPool:
            if halted or asked.is_set():
                return [sub.student, sub.stem, None, INTERRUPTED], None
            return [sub.student, sub.stem, None, None], death_of(workers)


def _grade(spec: dict[str, Any], options: dict[str, Any], stop: Any,
           asked: threading.Event) -> dict[str, Any]:
    """Grade the file of ``spec``: {"result": [student, stem, score, error], "died": bool}.
    A grader process that dies (the OOM killer, a crash) is started once more for the
    file, as a local batch grades such a file again alone; ``died`` when it dies again.
    ``asked`` set (a stop line for this file) stops it."""
    sub = submission_from_spec(spec)
    result, how = _grade_once(sub, spec, options, stop, asked)
    if how is not None and not asked.is_set():
        result, how = _grade_once(sub, spec, options, stop, asked)
    if how is None:
        return {"result": result, "died": False}
    name = Path(sub.file).name
    return {"result": [sub.student, sub.stem, None,
                       f"the grader process died while grading {name} ({how}), also when "
                       "graded alone"], "died": True}


def _read_requests(requests: queue.Queue[dict[str, Any] | None],
                   current: list[Any], asked: threading.Event) -> None:
    """The reader thread: requests into ``requests`` (None at the end of stdin); a stop
    line for the file being graded (``current[0]``) sets ``asked``. The batch sends a file
    only after the reply to the one before, so a new request is the current file."""
    try:
        while line := sys.stdin.buffer.readline(MAX_REQUEST_BYTES):
            message = json.loads(line)
            if "stop" in message:
                if message["stop"] == current[0]:
                    asked.set()
                continue
            asked.clear()
            current[0] = message["id"]
            requests.put(message)
    finally:
        requests.put(None)


def main() -> int:
    """Serve until stdin ends; 0."""
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    # The grading code this server runs, read from where this process imports it.
    reply.write(json.dumps(
        {"grader": grading_identity(grader_fingerprint(), runtime_versions())}) + "\n")
    reply.flush()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asked = threading.Event()
    current: list[Any] = [None]
    requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=_read_requests, args=(requests, current, asked), daemon=True,
                     name="pallas-lab-requests").start()
    context = grader_context()
    stop = context.Event()
    with contextlib.ExitStack() as stack:
        options: dict[str, Any] = {
            "mp_context": context, "max_tasks_per_child": 1, "initializer": start_child,
            "initargs": (stop, start_zygote(stack))}
        stack.callback(stop_forkserver, start_forkserver(StopRequests()))
        while (message := requests.get()) is not None:
            stop.clear()
            answer = _grade(message["spec"], options, stop, asked)
            reply.write(json.dumps({"id": message["id"], **answer}) + "\n")
            reply.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
