"""A class's batch on Dask: the same unit of work (one file, one fresh grader process)
handed to the workers of a Dask cluster instead of this machine's process pool.

``pallas-lab grade CLASS --scheduler tcp://HOST:8786`` sends the files to a running Dask
scheduler (dask.distributed); ``--cluster slurm`` starts one with dask-jobqueue's
``SLURMCluster`` (``--jobs N`` Slurm jobs of one worker each). Everything else is the
batch of ``graders.batch.run``: the plan (which files are pending, in which order), the
results folder, resuming, the gradebook rewritten as each student's last file is done,
and Ctrl-C / SIGTERM, are decided here on the TA's machine.

On a Dask worker a file is graded by ``grade_remote``: a fresh Python process
(``python -m graders.batch.cluster``) that rebuilds the submission record, grades it with
``graders.batch.pool.grade_in_child`` (the batch's own code: its sandboxed worker, its
private temp folder) and writes results.json and the feedback files into the results
folder, which the workers must see at the same path (a shared file system, as on a Slurm
cluster). It sends back only (student, stem, score, error) as JSON. Student code runs
nowhere but in that grader's sandboxed worker, so a Dask worker needs what the grading
machine needs: this package installed, and the sandbox (``docs/security.md``) available.
When the batch is stopped, files not started are cancelled and a running grader gets
SIGINT (through a Dask ``Event``), so it stops as a local grader does and keeps no result.

Dask's own traffic (the scheduler, workers and this client) is pickled between trusted
processes; no byte a student's code produced is unpickled. Use ``tls://`` and Dask's
``Security`` (or a private network) so that nobody else can submit work to the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graders.batch.pool import INTERRUPTED, POLL, StopRequests, grade_in_child
from graders.grading.submission import Submission
from graders.reports.progress import GradingProgress

#: ``--cluster`` values: the Dask cluster managers pallas-lab can start.
CLUSTERS = ("slurm",)
#: Seconds to reach a scheduler before saying it cannot be reached.
CONNECT_SECONDS = 10
#: Seconds a stopped grader on a Dask worker has to end before it is killed.
STOP_SECONDS = 30.0
#: Bytes of a remote grader's error output kept (its end) in its error text.
MAX_ERROR_CHARS = 4000
#: Bytes of a remote grader's reply read (one JSON line; an internal error's traceback).
MAX_REPLY_BYTES = 1 << 20


def open_client(stack: contextlib.ExitStack, *, scheduler: str | None, cluster: str | None,
                jobs: int) -> Any:
    """A ``distributed.Client`` of the cluster the TA named: ``scheduler`` (an address,
    ``tcp://host:8786``) or ``cluster`` ("slurm": dask-jobqueue's ``SLURMCluster`` with
    ``jobs`` workers, configured by dask-jobqueue's own config file), closed with
    ``stack``. Raises ``ImportError`` without dask.distributed (or dask-jobqueue for
    slurm), ``ValueError`` for an unknown ``cluster`` and ``OSError`` when the scheduler
    cannot be reached."""
    from distributed import Client

    if scheduler is not None:
        return stack.enter_context(_connect(scheduler))
    if cluster != "slurm":
        raise ValueError(f"--cluster {cluster!r} is not one of {', '.join(CLUSTERS)}")
    from dask_jobqueue import SLURMCluster

    slurm = stack.enter_context(SLURMCluster(processes=1))
    slurm.scale(jobs=jobs)
    return stack.enter_context(Client(slurm))


def _connect(address: str) -> Any:
    """A client of the scheduler at ``address``, or ``OSError`` saying why not within
    ``CONNECT_SECONDS`` (and a little more): an address where no Dask scheduler answers
    (a web server, Dask's dashboard port) can make Dask wait for ever or read a stray
    reply as a frame of exabytes (a ``MemoryError``)."""
    import threading

    from distributed import Client

    got: list[Any] = []

    def connect() -> None:
        """Make the client (or keep why not) in ``got``."""
        try:
            got.append(Client(address, timeout=CONNECT_SECONDS))
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            got.append(exc)

    thread = threading.Thread(target=connect, daemon=True, name="pallas-lab-dask-connect")
    thread.start()
    thread.join(CONNECT_SECONDS + 5)
    if not got:
        raise OSError(f"no Dask scheduler answered within {CONNECT_SECONDS + 5} s "
                      "(is it the scheduler's port, 8786 by default, not the dashboard's?)")
    if isinstance(got[0], BaseException):
        exc = got[0]
        if isinstance(exc, MemoryError):
            raise OSError("what answered there is not a Dask scheduler") from None
        if isinstance(exc, (OSError, TimeoutError, ValueError)):
            raise exc
        raise OSError(f"{type(exc).__name__}: {exc}") from None
    return got[0]


def grade_on_cluster(client: Any, subs: Sequence[Submission], out: Path, timeout: float,
                     budget: float | None, tasks: tuple[str, ...] | None,
                     done: Callable[..., None], progress: GradingProgress,
                     requests: StopRequests) -> bool:
    """Grade ``subs`` on ``client``'s workers, in order (one Dask task per file, no
    retries: a grader that dies is reported as a local one is), calling ``done(sub,
    error)`` for each file as it ends. Returns whether Ctrl-C or SIGTERM (``requests``)
    stopped the batch: then the files not started are cancelled and the running ones
    stopped (``grade_remote``), and no further file is passed to ``done``."""
    from distributed import Event, wait
    from distributed.client import FuturesCancelledError

    name = f"pallas-lab-stop-{uuid.uuid4().hex}"
    stop = Event(name, client=client)
    futures = {client.submit(grade_remote, _spec(sub, out, timeout, budget, tasks), name,
                             key=f"pallas-lab-{uuid.uuid4().hex}", pure=False, retries=0,
                             priority=len(subs) - i): sub
               for i, sub in enumerate(subs)}
    running = set(futures)
    interrupted = False
    stopped_at = 0.0
    try:
        while running:
            try:
                ended = wait(running, timeout=POLL, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                ended = set()
            except FuturesCancelledError:  # after a stop: the cancelled ones have ended
                ended = {f for f in running if f.done()}
            if requests.signum is not None and not interrupted:
                interrupted = True
                stopped_at = time.monotonic()
                # Running graders see the Event and stop without a result; the files not
                # started are cancelled. The running ones are waited for, so nothing is
                # written after this batch has written its gradebook and ended.
                stop.set()
                started = {key for keys in client.processing().values() for key in keys}
                client.cancel([f for f in running if f.key not in started])
                progress.stop()
            if interrupted and time.monotonic() - stopped_at > STOP_SECONDS + 5:
                break  # a worker that does not answer: leave it
            for future in ended:
                running.discard(future)
                sub = futures[future]
                if future.status == "cancelled":
                    continue
                try:
                    error = future.result()[3]
                except Exception as exc:  # noqa: BLE001 - the worker's failure, reported
                    error = f"the Dask worker failed while grading {Path(sub.file).name}: " \
                            f"{type(exc).__name__}: {exc}"
                if error == INTERRUPTED:
                    interrupted = True
                    continue
                done(sub, error)  # finished before the stop reached it: its result stands
    finally:
        client.cancel(list(running))
    return interrupted


def _spec(sub: Submission, out: Path, timeout: float, budget: float | None,
          tasks: tuple[str, ...] | None) -> dict[str, Any]:
    """What a remote grader needs to rebuild ``sub`` and grade it (JSON-safe)."""
    return {"file": str(Path(sub.file).resolve()), "student": sub.student,
            "assignment": sub.assignment.id, "stem": sub.stem,
            "folder": str(sub.folder) if sub.folder is not None else None,
            "note": sub.note, "origin": sub.origin, "out": str(out.resolve()),
            "timeout": timeout, "budget": budget, "tasks": list(tasks) if tasks else None}


def grade_remote(spec: dict[str, Any], stop_name: str) -> tuple[str, str, float | None,
                                                                 str | None]:
    """Run on a Dask worker: grade one file (``spec``, from ``_spec``) in a fresh grader
    process and return its (student, stem, score, error). When the batch sets the Dask
    ``Event`` ``stop_name``, the grader gets SIGINT and stops as a local one does
    (``INTERRUPTED``, no result kept). Never raises for the file's own failures."""
    from distributed import Event

    with tempfile.TemporaryFile() as output, tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(  # noqa: S603 - this package's own module, argv fixed
            [sys.executable, "-m", "graders.batch.cluster"], stdin=subprocess.PIPE,
            stdout=output, stderr=errors, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        assert child.stdin is not None
        child.stdin.write(json.dumps(spec).encode())  # a few hundred bytes: never blocks
        child.stdin.close()
        stop = Event(stop_name)
        while child.poll() is None:
            if stop.is_set():
                child.send_signal(signal.SIGINT)
                try:
                    child.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=POLL * 5)
        output.seek(0)
        errors.seek(0)
        printed = output.read(MAX_REPLY_BYTES).decode("utf-8", "replace")
        errors.seek(0, os.SEEK_END)
        errors.seek(max(0, errors.tell() - MAX_ERROR_CHARS))
        complaint = errors.read(MAX_ERROR_CHARS).decode("utf-8", "replace")
    try:
        student, stem, score, error = json.loads(printed.strip().splitlines()[-1])
        return str(student), str(stem), score, error
    except (ValueError, IndexError, TypeError):
        return (spec["student"], spec["stem"], None,
                f"the grader process on the Dask worker ended without a result "
                f"(exit status {child.returncode}): {complaint}")


def main() -> int:
    """``python -m graders.batch.cluster``: read a spec (JSON, stdin), grade that file
    with ``grade_in_child``, print the (student, stem, score, error) as one JSON line."""
    from graders.course.catalog import get_assignment

    spec = json.loads(sys.stdin.read())
    folder = Path(spec["folder"]) if spec.get("folder") else None
    sub = Submission.of(spec["file"], get_assignment(spec["assignment"]),
                        student=spec["student"], folder=folder, note=spec.get("note", ""),
                        origin=spec.get("origin", ""))
    tasks = tuple(spec["tasks"]) if spec.get("tasks") else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # grade_in_child raises it at most once
    student, stem, score, error = grade_in_child(sub, spec["out"], spec["timeout"],
                                                 spec["budget"], tasks)
    print(json.dumps([student, stem, score, error]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
