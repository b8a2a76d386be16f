"""What ``pallas-lab gradescope dry-run`` copies into its ``submission/`` folder.

The dry run lays out a folder like Gradescope's ``/autograder`` on the TA's own machine
(``graders.integrations.gradescope.autograder.dry_run``), so the copy must not give the zip
anything Gradescope
would not: Gradescope receives the files a student uploads, never links to the TA's
files. Following links while copying would grade (and quote in results.json) whatever
the link points at: the solutions, the reference, another student's file, anything the
TA can read. So (docs/security.md, "nbgrader and Gradescope"):

* a SUBMISSION that is itself a symbolic link (a file or a folder) is refused before
  anything is copied (``RefusedUpload``: the CLI exits 2 and grades nothing);
* links inside a submission folder are copied as links, never followed: the zip's own
  ``run_autograder`` then refuses a linked submission file exactly as the real
  Gradescope run does (``graders.grading``: "<stem>.py is a symbolic link;
  only regular files in regular folders are graded", 0 points), and never descends
  into a linked folder;
* a FIFO, device or socket is refused (``RefusedUpload``): an upload holds none, and
  opening one could block the copy for ever;
* a regular file larger than the grader ever reads (``MAX_NOTEBOOK_BYTES``, 16 MiB) is
  recreated as a sparse file of the same size without being read: the grader refuses it
  by its size alone ("file too large: N bytes, limit M"), so the run is the same as with
  its bytes, and a 1 TiB sparse file neither fills the disk nor takes hours.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from graders.safety.submission_files import MAX_NOTEBOOK_BYTES, kind_of


class RefusedUpload(ValueError):  # noqa: N818 - a submission the dry run does not copy
    """A submission ``dry-run`` does not copy: it is a link, or holds a FIFO, a device or
    a socket. The message names the file and says why."""


def _copy_file(source: str, target: str) -> str:
    """``shutil.copytree``'s copy function: a regular file only (``lstat``), its bytes
    copied unless it is larger than the grader reads, when a sparse file of its size
    stands in for it (module docstring). Raises ``RefusedUpload`` for anything else."""
    info = os.lstat(source)
    if not stat.S_ISREG(info.st_mode):
        raise RefusedUpload(f"{source} is {kind_of(info.st_mode)}: a Gradescope upload holds "
                            "only files and folders; remove it and run again")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        with open(target, "wb") as handle:
            handle.truncate(info.st_size)
        shutil.copystat(source, target, follow_symlinks=False)
        return target
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
    fd = os.open(source, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the lstat
            raise RefusedUpload(f"{source} changed while it was copied")
        with os.fdopen(fd, "rb", closefd=False) as reader, open(target, "wb") as writer:
            shutil.copyfileobj(reader, writer)
    finally:
        os.close(fd)
    shutil.copystat(source, target, follow_symlinks=False)
    return target


def refuse_link(submission: str | Path) -> None:
    """Raise ``RefusedUpload`` when ``submission`` is itself a symbolic link (to a file or
    a folder); nothing is read or followed."""
    if Path(submission).is_symlink():
        raise RefusedUpload(
            f"{submission} is a symbolic link: Gradescope receives the files a student "
            "uploads, never links; give the file or folder itself")


def copy_submission(submission: str | Path, folder: str | Path) -> Path:
    """Copy ``submission`` (a file or a folder) into ``folder`` (which must not exist) as
    Gradescope would receive it: a file goes to ``folder/<name>``, a folder's contents to
    ``folder``; links inside are copied as links, files the grader would not read by their
    size are sparse stand-ins (module docstring). Returns ``folder``. Raises
    ``RefusedUpload`` for a ``submission`` that is a symbolic link or a folder holding a
    FIFO, device or socket (nothing is graded then), ``FileNotFoundError`` when it does
    not exist, and ``OSError`` when the copy fails."""
    submission, folder = Path(submission), Path(folder)
    refuse_link(submission)
    if not submission.exists():
        raise FileNotFoundError(f"{submission} does not exist")
    if submission.is_dir():
        # RefusedUpload is no OSError, so copytree lets it through at once.
        shutil.copytree(submission, folder, symlinks=True, copy_function=_copy_file)
        return folder
    folder.mkdir(parents=True)
    _copy_file(str(submission), str(folder / submission.name))
    return folder
