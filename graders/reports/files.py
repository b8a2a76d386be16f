"""Writing report files: atomically (temp file in the same folder + ``os.replace``),
under folder names that no student's name can collide with."""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.parse
from pathlib import Path

from graders.safety.safe_text import UNSAFE_CODEPOINTS

#: Names in a results folder that belong to the grader (the batch's gradebook).
RESERVED_NAMES = frozenset({"gradebook.csv"})
#: The longest student folder name, in bytes (file systems allow 255; percent-encoding can
#: triple a name: a folder of 100 "%" became 300 bytes and could not be written).
MAX_FOLDER_BYTES = 200
#: Marks a folder name cut to ``MAX_FOLDER_BYTES``: a literal "%" never stands in a
#: percent-encoded name except before two hex digits, so no student's name can end up
#: looking like a cut one.
CUT_MARK = "%~"


def _percent(char: str) -> str:
    try:
        data = char.encode("utf-8", "surrogateescape")  # an undecodable byte of a name
    except UnicodeEncodeError:
        data = char.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


def student_folder_name(student: str) -> str:
    """The folder holding ``student``'s results under a results folder
    (``<out>/<this>/<stem>/results.json``).

    The name itself, except that these are percent-encoded (``%XX`` per UTF-8
    byte, as in URLs): ``%`` itself, control characters, bidi controls and
    undecodable bytes anywhere; a leading ``.`` (temp files are hidden files);
    and the first character of a name the grader uses for its own files
    (``gradebook.csv`` -> ``%67radebook.csv``, in any letter case). So no
    student's folder is the gradebook, a temp file or another student's folder:
    the mapping is one-to-one and ``student_of_folder_name`` undoes it.

    A name longer than ``MAX_FOLDER_BYTES`` once encoded is cut there and ends in
    ``CUT_MARK`` and a SHA-256 prefix of the whole name (still one-to-one, to the
    collision of 80-bit digests); such a folder's student is read back from its
    results.json (``graders.batch.store.student_of_result``). Never raises.
    """
    reserved = student.casefold() in RESERVED_NAMES
    pieces = [
        _percent(char) if char == "%" or ord(char) in UNSAFE_CODEPOINTS
        or (i == 0 and (char == "." or reserved)) else char
        for i, char in enumerate(student)]
    name = "".join(pieces)
    if len(name.encode("utf-8", "surrogateescape")) <= MAX_FOLDER_BYTES:
        return name
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    kept, size = [], 0
    for piece in pieces:  # whole characters (or whole %XX groups) only
        size += len(piece.encode("utf-8", "surrogateescape"))
        if size > MAX_FOLDER_BYTES - len(CUT_MARK) - len(digest):
            break
        kept.append(piece)
    return f"{''.join(kept)}{CUT_MARK}{digest}"


def is_cut(name: str) -> bool:
    """Whether the folder name ``name`` is a cut one (``student_folder_name``)."""
    return CUT_MARK in name


def student_of_folder_name(name: str) -> str:
    """The student whose results folder is ``name`` (inverse of ``student_folder_name``;
    for a cut name, the name as written, which ``graders.batch.store.student_of_result``
    replaces by the whole one)."""
    return urllib.parse.unquote(name, errors="surrogateescape")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) in one step; parents are created.

    A reader sees the old file or the new one, never a partial write; on any
    error the temp file is removed and the error propagates (``OSError``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; reports are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
