"""A class's batch on Dask: the same unit of work (one file, one fresh grader process)
handed to the workers of a Dask cluster instead of this machine's process pool.

``pallas-lab grade CLASS --scheduler tcp://HOST:8786`` sends the files to a running Dask
scheduler (dask.distributed); ``--cluster slurm`` starts one with dask-jobqueue's
``SLURMCluster`` (``--jobs N`` Slurm jobs of one worker each). Everything else is the
batch of ``graders.batch.run``: the plan (which files are pending, in which order), the
results folder, resuming, the gradebook rewritten as each student's last file is done,
and Ctrl-C / SIGTERM, are decided here on the TA's machine.

On a Dask worker a file is graded by ``graders.batch.dask_worker.grade_remote``, which
hands it to that worker's preloaded grading server (``graders.batch.grading_server``,
started with the worker's first file and kept while the worker lives): the server
rebuilds the submission record and grades it as the local batch does, in a fresh grader
process (``graders.batch.pool.grade_in_child``: its sandboxed worker forked from the
server's zygote, its private temp folder), which writes results.json and the feedback
files into the results folder; the workers must see that folder at the same path (a
shared file system, as on a Slurm cluster). Only (student, stem, score, error) comes back,
as JSON. Student code runs
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
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graders.batch.dask_worker import STOP_SECONDS, grade_remote
from graders.batch.pool import INTERRUPTED, POLL, StopRequests
from graders.grading.submission import Submission
from graders.reports.progress import GradingProgress

#: ``--cluster`` values: the Dask cluster managers pallas-lab can start.
CLUSTERS = ("slurm",)
#: Seconds to reach a scheduler before saying it cannot be reached.
CONNECT_SECONDS = 10


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
                     stamp: dict[str, Any], done: Callable[..., None],
                     notes: dict[str, list[str]], progress: GradingProgress,
                     requests: StopRequests) -> bool:
    """Grade ``subs`` on ``client``'s workers, in order (one Dask task per file; results
    stamped ``stamp``, ``graders.batch.regrade.batch_stamp``, whose grading code each
    worker must have), calling ``done(sub, error)`` for each file as it ends. A file whose
    grader dies is graded once more on its worker; dying again, it is treated as a local
    batch treats it: no result of other content is kept, the note "grader died: FILE" goes
    into ``notes``. Returns whether Ctrl-C or SIGTERM (``requests``) stopped the batch:
    then the files not started are cancelled and the running ones stopped
    (``grade_remote``), and no further file is passed to ``done``."""
    from distributed import Event, wait
    from distributed.client import FuturesCancelledError

    from graders.batch.schedule import drop_stale_result

    name = f"pallas-lab-stop-{uuid.uuid4().hex}"
    stop = Event(name, client=client)
    futures = {client.submit(grade_remote,
                             submission_spec(sub, out, timeout, budget, tasks, stamp), name,
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
                died = False
                try:
                    _, _, _, error, died = future.result()
                except Exception as exc:  # noqa: BLE001 - the worker's failure, reported
                    error = f"the Dask worker failed while grading {Path(sub.file).name}: " \
                            f"{type(exc).__name__}: {exc}"
                if error == INTERRUPTED:
                    interrupted = True
                    continue
                if died:
                    file = Path(sub.file).name
                    notes.setdefault(sub.student, []).append(f"grader died: {file}")
                    kept = ("an earlier result of the same content is kept"
                            if drop_stale_result(out, sub) else "no result was written")
                    done(sub, f"{error}; {kept}", "grader died:")
                    continue
                done(sub, error)  # finished before the stop reached it: its result stands
    finally:
        client.cancel(list(running))
    return interrupted


def submission_spec(sub: Submission, out: Path, timeout: float, budget: float | None,
                    tasks: tuple[str, ...] | None, stamp: dict[str, Any]) -> dict[str, Any]:
    """What a grader on a Dask worker needs to rebuild ``sub`` and grade it (JSON-safe;
    ``submission_from_spec`` reads it back): the file's absolute path as discovery named it
    (a symbolic link stays one, refused as a local batch refuses it), the options and the
    ``stamp`` (its ``grader`` is the grading code the worker must run)."""
    return {"file": str(Path(sub.file).absolute()), "student": sub.student,
            "assignment": sub.assignment.id, "stem": sub.stem,
            "folder": str(sub.folder) if sub.folder is not None else None,
            "note": sub.note, "origin": sub.origin, "out": str(out.resolve()),
            "timeout": timeout, "budget": budget, "tasks": list(tasks) if tasks else None,
            "stamp": stamp}


def submission_from_spec(spec: dict[str, Any]) -> Submission:
    """The submission record of a ``submission_spec`` (its file hashed again, where it is
    graded). Raises ``KeyError`` for an unknown assignment and ``OSError`` for a file that
    cannot be read."""
    from graders.course.catalog import get_assignment

    folder = Path(spec["folder"]) if spec.get("folder") else None
    return Submission.of(spec["file"], get_assignment(spec["assignment"]),
                         student=spec["student"], folder=folder, note=spec.get("note", ""),
                         origin=spec.get("origin", ""))
