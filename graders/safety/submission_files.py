"""How the trusted side reads a student's file: size from ``stat`` first, regular files only,
never past a limit.

A student chooses what sits in their folder under a submission's name: a sparse file of
1 TiB (``truncate -s 1T``: no disk used), a FIFO that blocks whoever opens it, a device,
a socket, a folder. Everything in the grader's own process that reads such a file (the
hash that decides whether a result is current, the static check, the notebook
conversion, the worker's snapshot, the similarity check) goes through this module
(docs/security.md, "Bounded reads"):

* the file is ``lstat``-ed first: anything but a regular file is refused unopened,
  and a file larger than its limit is refused unread;
* it is then opened with ``O_NONBLOCK`` (a FIFO swapped in after the ``lstat`` does not
  block the open) and ``O_NOFOLLOW`` (nor does a link swapped in), and ``fstat``-ed
  again: the checks hold for what was opened, not for what was named;
* it is read in chunks, never past the limit (a file that grows while it is read is
  refused at the limit).

One limit per kind of file, the numbers the grader has always used: a ``.py`` may be
at most ``MAX_SOURCE_BYTES`` (1 MiB: a handout is about 30 KiB, and the compile-time
check's time and memory grow with the source), a notebook at most
``MAX_NOTEBOOK_BYTES`` (16 MiB, outputs and pictures included; the module its code
cells make then meets the 1 MiB limit). ``graders/worker/main.py`` keeps its own copy of
``MAX_SOURCE_BYTES`` (it cannot import the grader); a test holds them equal.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

#: The largest ``.py`` submission the grader reads, in bytes.
MAX_SOURCE_BYTES = 1 << 20
#: The largest ``.ipynb`` submission the grader reads, in bytes.
MAX_NOTEBOOK_BYTES = 16 << 20
#: Bytes read at a time.
CHUNK_BYTES = 1 << 16
_WHITESPACE = b" \t\n\r\x0b\x0c"

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


class RefusedFile(OSError):  # noqa: N818 - a file the grader refuses, not a failure of it
    """A submission file the grader does not read: ``reason`` says why in words
    ("file too large: N bytes, limit M", "not a regular file: it is a FIFO (named pipe)").
    An ``OSError``, so callers that already handle unreadable files handle it too."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def size_limit(path: str | Path) -> int:
    """The most bytes the grader reads of ``path``: ``MAX_NOTEBOOK_BYTES`` for a
    ``.ipynb`` (any letter case), ``MAX_SOURCE_BYTES`` for anything else."""
    return MAX_NOTEBOOK_BYTES if Path(path).suffix.casefold() == ".ipynb" else MAX_SOURCE_BYTES


def too_large(size: int, limit: int) -> str:
    """The reason given for a file of ``size`` bytes over ``limit`` bytes."""
    kind = "a notebook" if limit == MAX_NOTEBOOK_BYTES else "a .py file"
    return (f"file too large: {size} bytes, limit {limit} (a submission may be at most "
            f"{limit >> 20} MiB as {kind})")


def kind_of(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words ("a FIFO (named pipe)", "a folder")."""
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _check(info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise RefusedFile(f"not a regular file: it is {kind_of(info.st_mode)}")
    if info.st_size > limit:
        raise RefusedFile(too_large(info.st_size, limit))


def check_file(path: str | Path, limit: int | None = None) -> os.stat_result:
    """``lstat`` of ``path`` when it is a regular file of at most ``limit`` bytes (default
    ``size_limit(path)``); nothing is opened. Raises ``RefusedFile`` otherwise, and
    ``OSError`` when it cannot be ``lstat``-ed (it does not exist, no permission)."""
    info = os.lstat(path)
    _check(info, size_limit(path) if limit is None else limit)
    return info


def _open(path: str | Path, limit: int) -> int:
    """A read-only descriptor of ``path`` after ``check_file``, opened so that neither a
    FIFO nor a link swapped in meanwhile is followed or blocks, and checked again."""
    check_file(path, limit)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        _check(os.fstat(fd), limit)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _chunks(fd: int, limit: int, name: str):  # noqa: ANN202 - a generator of bytes
    read = 0
    while True:
        chunk = os.read(fd, min(CHUNK_BYTES, limit + 1 - read))
        if not chunk:
            return
        read += len(chunk)
        if read > limit:
            raise RefusedFile(f"file too large: {name} grew past the limit of {limit} bytes "
                              "while it was read")
        yield chunk


def read_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (default
    ``size_limit(path)``). Raises ``RefusedFile`` (not a regular file, larger than the
    limit, a link) and ``OSError`` (cannot be opened or read); never blocks on a FIFO."""
    limit = size_limit(path) if limit is None else limit
    fd = _open(path, limit)
    try:
        return b"".join(_chunks(fd, limit, Path(path).name))
    finally:
        os.close(fd)


def read_json(path: str | Path, limit: int) -> Any:
    """The JSON value in the regular file ``path`` of at most ``limit`` bytes (``read_bytes``:
    no link, no FIFO, never past the limit), or None when it is missing, refused, unreadable
    or not UTF-8 JSON. For the grader's own records in a results folder, which a student's
    name or a hand edit may have turned into anything."""
    try:
        return json.loads(read_bytes(path, limit).decode("utf-8"))
    except (OSError, ValueError):
        return None


def digest(path: str | Path, limit: int | None = None) -> tuple[str, bool]:
    """(SHA-256 hex digest of ``path``'s bytes, whether they are all ASCII whitespace),
    read in ``CHUNK_BYTES`` pieces, never past ``limit`` (default ``size_limit(path)``).
    Raises as ``read_bytes``."""
    limit = size_limit(path) if limit is None else limit
    fd = _open(path, limit)
    sha, blank = hashlib.sha256(), True
    try:
        for chunk in _chunks(fd, limit, Path(path).name):
            sha.update(chunk)
            blank = blank and not chunk.strip(_WHITESPACE)
    finally:
        os.close(fd)
    return sha.hexdigest(), blank
