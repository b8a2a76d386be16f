"""One batch at a time per results folder.

Two ``pallas-lab grade`` batches into the same results folder (a TA who started the same
command in a second terminal, a script and a cron job) each graded every file, twice the
CPU, and rewrote the same gradebook and regrade marks in turn. A batch holds an exclusive
``flock`` on ``<results>/.pallas-lab.lock`` while it runs; a second one is refused at once.
The kernel releases the lock when the process ends, however it ends (Ctrl-C, SIGKILL), so
a stopped batch never leaves the folder locked. On a Dask cluster only the batch's own
process takes it: workers write results, never the gradebook.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

#: The lock file in a results folder (left there: removing it could race a new batch).
LOCK_FILE = ".pallas-lab.lock"


class BatchBusy(RuntimeError):
    """Another batch is writing to this results folder (its message says which)."""


@contextlib.contextmanager
def batch_lock(out: Path) -> Iterator[None]:
    """Hold the results folder ``out`` (which exists) for one batch while the block runs.
    Raises ``BatchBusy`` when another process holds it, naming that process's id."""
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            who = f" (process {holder})" if holder.isdigit() else ""
            raise BatchBusy(f"another batch is grading into {out}{who}: wait for it to "
                            "finish, or grade into another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
