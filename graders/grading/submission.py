"""The submission record: one file to grade, resolved once and passed on whole.

Discovery (``graders.batch.discovery``), ``pallas-lab grade FILE`` and the batch build a
:class:`Submission` once: the student, the file, its :class:`~graders.course.records.Assignment`
record (never an id to look up again), whether it is a notebook, and the SHA-256 of its
bytes, read once through the bounded reads of ``graders.safety.submission_files`` (with the
reason it cannot be graded, when it cannot be read). Grading, the batch's resume rule and
the results store take the record as it is (docs/architecture.md, "A submission's path").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graders.checking.registry import CheckFailure
from graders.checking.status import Status
from graders.course.records import Assignment
from graders.safety import submission_files

__all__ = ["Submission", "file_digest", "link_failure"]


@dataclass(frozen=True)
class Submission:
    """One file to grade.

    ``student`` (the gradebook row: the student folder's name, or what discovery made of
    it), ``file`` (its path), ``assignment`` (the record it is graded as), ``folder`` (the
    student's folder, telling two students of one name apart), ``note`` (set when the
    file's name maps to the assignment's without being it: "renamed: a1.py"), ``sha256``
    (hex digest of its bytes when the record was made; ``""`` when it could not be read)
    and ``unreadable`` (why it cannot be graded, when it cannot: every check then says so).
    Build one with :meth:`of`.
    """

    student: str
    file: Path
    assignment: Assignment
    folder: Path | None = field(default=None, compare=False)
    note: str = field(default="", compare=False)
    sha256: str = ""
    unreadable: CheckFailure | None = field(default=None, compare=False, repr=False)
    #: The layout it was found in, which decides where its submission time may be read
    #: (``graders.reports.late.submission_time``): ``"nbgrader"`` (a course's
    #: ``submitted/``), ``"gradescope"`` (a ``submission/`` folder given as the PATH),
    #: ``"canvas"`` (a flat LMS download), ``"moodle"`` (a Moodle download folder) or ``""``.
    origin: str = field(default="", compare=False)

    @property
    def stem(self) -> str:
        """The assignment's file stem: the results folder's name."""
        return self.assignment.stem

    @property
    def notebook(self) -> bool:
        """Whether the file is a notebook (``.ipynb``, any case) to convert before it runs."""
        return self.file.suffix.casefold() == ".ipynb"

    @classmethod
    def of(cls, file: str | Path, assignment: Assignment, *, student: str | None = None,
           folder: Path | None = None, note: str = "", origin: str = "") -> Submission:
        """The record of ``file`` graded as ``assignment``, its bytes hashed once
        (:func:`file_digest`; never raises). ``student`` defaults to the name of the
        file's folder; ``origin`` as the field."""
        path = Path(file)
        digest, unreadable = file_digest(path)
        return cls(student=student or path.resolve().parent.name, file=path,
                   assignment=assignment, folder=folder, note=note, sha256=digest,
                   unreadable=unreadable, origin=origin)


def link_failure(path: Path) -> CheckFailure | None:
    """A submission that is a symbolic link, or sits in a linked student folder, is not
    read: it could point at the solutions, the reference or another student's file
    (docs/security.md, "Links and names")."""
    for candidate, what in ((path, path.name), (path.absolute().parent, path.parent.name)):
        if candidate.is_symlink():
            return CheckFailure(
                f"{what} is a symbolic link; only regular files in regular folders are graded",
                status=Status.ERROR, hint="submit the file itself, not a link to it",
            )
    return None


def file_digest(path: str | Path) -> tuple[str, CheckFailure | None]:
    """The SHA-256 (hex) of a submission file's bytes, or ``("", failure)`` saying in words
    why it cannot be graded: it is not a regular file (a FIFO, a device, a socket, a
    folder: never opened), it is larger than its limit (``graders.safety.submission_files``:
    1 MiB for a .py, 16 MiB for a notebook; "file too large: N bytes, limit M", never
    read), it cannot be read (permissions, a vanished file) or it is empty (its digest
    and the failure). The size comes from ``lstat`` before anything is opened, and the
    hash is streamed, never past the limit. A symbolic link is not followed (``""``, no
    failure: ``open_session`` refuses it with its own reason). Never raises."""
    path = Path(path)
    if link_failure(path) is not None:
        return "", None
    try:
        digest, blank = submission_files.digest(path)
    except submission_files.RefusedFile as exc:
        large = exc.reason.startswith("file too large")
        return "", CheckFailure(
            f"{path.name} was not read: {exc.reason}", status="error",
            hint=("submit the handout with your code in it, without large data, outputs or "
                  "pictures" if large else "submit the file itself"),
        )
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return "", CheckFailure(
            f"{path.name} could not be read ({why}), so nothing in it was run",
            status="error",
            hint="ask the student to resubmit, or give the grader read access to the file",
        )
    if blank:
        return digest, CheckFailure(
            f"{path.name} is empty, so there was nothing to run", status="error",
            hint="submit the handout with your code in it",
        )
    return digest, None
