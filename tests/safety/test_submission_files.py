"""``graders.safety.submission_files``: stat first, regular files only, never past the limit."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from graders.safety import submission_files
from graders.safety.submission_files import MAX_NOTEBOOK_BYTES, MAX_SOURCE_BYTES, RefusedFile

WORKER = Path(submission_files.__file__).parents[1] / "worker" / "main.py"


def test_the_worker_compiles_no_more_than_the_grader_reads() -> None:
    found = re.search(r"^MAX_SOURCE_BYTES = (.+)$", WORKER.read_text(encoding="utf-8"), re.M)
    assert found is not None and eval(found.group(1)) == MAX_SOURCE_BYTES  # noqa: S307


def test_limits_are_per_kind_of_file() -> None:
    assert submission_files.size_limit("a.py") == MAX_SOURCE_BYTES == 1 << 20
    assert submission_files.size_limit("a.IPYNB") == MAX_NOTEBOOK_BYTES == 16 << 20


def test_a_file_at_the_limit_is_read_and_hashed_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    data = os.urandom(MAX_SOURCE_BYTES)
    path.write_bytes(data)
    assert submission_files.read_bytes(path) == data
    assert submission_files.digest(path) == (hashlib.sha256(data).hexdigest(), False)
    path.write_bytes(b" \n\t\n")
    assert submission_files.digest(path)[1], "only whitespace: blank"


def test_a_file_over_the_limit_is_refused_by_its_size_alone(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    with open(path, "wb") as handle:
        handle.truncate(MAX_SOURCE_BYTES + 1)  # sparse: reading it would give zeros
    for read in (submission_files.read_bytes, submission_files.digest):
        with pytest.raises(RefusedFile, match=f"^file too large: {MAX_SOURCE_BYTES + 1} bytes, "
                                              f"limit {MAX_SOURCE_BYTES} "):
            read(path)


def test_what_is_not_a_regular_file_is_refused_unopened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "real.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "link.py").symlink_to(tmp_path / "real.py")
    (tmp_path / "folder.py").mkdir()
    for name, kind in (("fifo.py", "a FIFO"), ("link.py", "a symbolic link"),
                       ("folder.py", "a folder")):
        with pytest.raises(RefusedFile, match=f"^not a regular file: it is {kind}"):
            submission_files.read_bytes(tmp_path / name)
