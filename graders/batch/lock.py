"""One batch at a time per results folder.

Two ``pallas-lab grade`` batches into the same results folder (a TA who started the same
command in a second terminal, a script and a cron job) each graded every file, twice the
CPU, and rewrote the same gradebook and regrade marks in turn. A batch holds an exclusive
``flock`` on ``<results>/.pallas-lab.lock`` while it runs; a second one is refused at once.
The kernel releases the lock when the process ends, however it ends (Ctrl-C, SIGKILL), so
a stopped batch never leaves the folder locked (a killed one leaves the file, unlocked).
On a Dask cluster only the batch's own process takes it: workers write results, never the
gradebook.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

#: The lock file in a results folder while a batch runs.
LOCK_FILE = ".pallas-lab.lock"


class BatchBusy(RuntimeError):
    """Another batch is writing to this results folder (its message says which)."""


@contextlib.contextmanager
def batch_lock(out: Path) -> Iterator[None]:
    """Hold the results folder ``out`` (which exists) for one batch while the block runs;
    the lock file is removed on the way out, so a finished batch leaves none. Raises
    ``BatchBusy`` when another process holds it, naming that process's id."""
    path = out / LOCK_FILE
    fd = _locked(path)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # still ours: a batch waiting on it finds it gone and retries
        os.close(fd)  # releases the lock


def _locked(path: Path) -> int:
    """A descriptor of the lock file at ``path`` with its exclusive lock taken: the file
    the path names when the lock was got (one removed by a batch that just ended is
    opened again)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (process {holder})" if holder.isdigit() else ""
            raise BatchBusy(f"another batch is grading into {path.parent}{who}: wait for it "
                            "to finish, or grade into another --out") from None
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
