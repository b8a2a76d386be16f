"""Where a folder that holds a Unix-domain socket goes.

A socket's path may be at most 107 bytes on Linux (``sun_path``), and the batch's
processes talk over two in folders made under the temporary directory: the forkserver's
(``multiprocessing``'s ``pymp-XXXXXXXX/listener-XXXXXXXX``) and the worker zygote's
(``pallas-lab-zygote-XXXXXXXX/socket``). A long ``TMPDIR`` (a cluster's per-job scratch,
a deep home folder) made both fail with ``OSError: AF_UNIX path too long``. Those folders
hold no data, so they go to a short system temporary directory instead; every other
temporary file still goes under ``TMPDIR``.
"""

from __future__ import annotations

import os
import tempfile

#: The longest temporary directory a socket's folder is made in: 107 bytes less the
#: longest name made inside it (``pallas-lab-zygote-XXXXXXXX/socket``: 34, plus slack).
MAX_PARENT_BYTES = 64

#: Short system temporary directories tried, in order, when ``TMPDIR`` is too long.
FALLBACKS = ("/tmp", "/var/tmp", "/dev/shm")


class SocketDirError(RuntimeError):
    """No temporary directory is short enough and writable for a socket's folder."""


def socket_parent() -> str:
    """The directory to make a socket's folder in: ``tempfile.gettempdir()`` when its path
    is at most ``MAX_PARENT_BYTES`` bytes, else the first of ``FALLBACKS`` that is a
    writable folder. Raises ``SocketDirError`` (one line, naming ``TMPDIR`` and the limit)
    when none is."""
    default = tempfile.gettempdir()
    if len(os.fsencode(default)) <= MAX_PARENT_BYTES:
        return default
    for folder in FALLBACKS:
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return folder
    raise SocketDirError(
        f"the temporary directory {default!r} is {len(os.fsencode(default))} bytes long, too "
        f"long for the sockets the batch's processes talk over (at most {MAX_PARENT_BYTES}), "
        f"and none of {', '.join(FALLBACKS)} is writable: set TMPDIR to a shorter folder")
