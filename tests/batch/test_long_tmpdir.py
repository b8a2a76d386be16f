"""A batch under a long ``TMPDIR`` (a cluster's per-job scratch, a deep home folder).

A TA's walk: with a TMPDIR of about 90 bytes, ``pallas-lab grade CLASS --jobs N`` stopped
with ``OSError: AF_UNIX path too long`` (a traceback) before grading anything, and left the
forkserver's folder behind: the forkserver's and the worker zygote's sockets are made in
folders under the temporary directory, and a socket's path may be at most 107 bytes.
Those folders now go to a short system temporary directory (graders/worker/socket_dir.py);
everything else stays under TMPDIR and is removed as before.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from graders.worker import socket_dir
from tests.batch._batch_class import ROOT, make_class
from tests.helpers.cli import pallas_lab


def test_a_batch_grades_under_a_long_tmpdir_and_leaves_it_empty(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="long-", dir="/tmp"))
    try:
        long_tmp = base / ("t" * 100)
        long_tmp.mkdir()
        assert len(os.fsencode(str(long_tmp))) > 107 - 20
        klass = make_class(tmp_path / "class", {"ada": ("ada_correct", ("a1_pallas_basics",))})
        run = subprocess.run(
            [*pallas_lab(), "grade", str(klass), "--jobs", "1", "--out", str(tmp_path / "r")],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(long_tmp),
                 "COLUMNS": "200"})
        assert run.returncode == 0, run.stderr[-3000:]
        assert "Traceback" not in run.stderr and "100/100" in run.stdout, run.stdout[-2000:]
        assert list(long_tmp.iterdir()) == [], "everything made under TMPDIR is removed"
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def test_the_socket_folder_falls_back_to_a_short_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    long_tmp = tmp_path / ("t" * 90)
    long_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmp))
    assert socket_dir.socket_parent() == "/tmp"
    monkeypatch.setattr(socket_dir, "FALLBACKS", (str(tmp_path / "none"),))
    with pytest.raises(socket_dir.SocketDirError, match="set TMPDIR to a shorter folder"):
        socket_dir.socket_parent()
    short = tmp_path.parent / "s"
    if len(os.fsencode(str(short))) <= socket_dir.MAX_PARENT_BYTES:
        short.mkdir(exist_ok=True)
        monkeypatch.setattr(tempfile, "tempdir", str(short))
        assert socket_dir.socket_parent() == str(short), "a short TMPDIR is used as it is"
