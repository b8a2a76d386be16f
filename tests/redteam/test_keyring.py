"""Red-team: the kernel's key retention service is not namespaced, so a worker's keys
would outlive it and be readable by later workers (found against batch grading).

A worker runs as a user id of its own in new mount, PID, network, IPC and UTS namespaces.
``add_key(2)``/``keyctl(2)`` need no privilege, and keys belong to the *user* namespace,
which the sandbox does not change. Without the launcher's seccomp filter
(``sandbox.seccomp_program``), a submission could put a key in its user keyring, make it
readable by everyone (``KEYCTL_SETPERM``) and leave: the key (and the user id's keyrings)
stayed in the kernel after the worker, its cgroup and the whole batch were gone, and the
worker of another student graded later in the same batch listed it in ``/proc/keys`` and
read it with ``KEYCTL_READ``. Both tests failed before the filter.

The submissions reach ``ctypes`` with the smuggling trick of ``_smuggle.txt`` and are graded
with ``PALLAS_LAB_POLICY=off`` (as test_replies_and_limits.py does), so that the sandbox is
tested on its own. A key written here expires after 60 s, so a failing run leaves little.
"""

from __future__ import annotations

import platform
import secrets
from pathlib import Path

import pytest

from graders.worker import sandbox
from tests.redteam.replies import grade_class, solution


def _namespace_available() -> bool:
    try:
        return sandbox.choose_level() == "namespace"
    except (RuntimeError, ValueError):
        return False


pytestmark = [
    pytest.mark.skipif(not _namespace_available(),
                       reason="the namespace sandbox needs root and unshare(2)"),
    pytest.mark.skipif(platform.machine() != "x86_64",
                       reason="the attack calls add_key/keyctl by their x86_64 numbers"),
]

WRITER = '''

# Attack: leave a world-readable key in the kernel's keyrings (add_key(2)), which no
# namespace of the sandbox covers.
honest_vmem_bytes = vmem_bytes


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    ctypes = _import("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    serial = libc.syscall(248, b"user", b"@@MARKER@@", b"left-by-mallory", 15,
                          ctypes.c_int(-4))  # add_key into KEY_SPEC_USER_KEYRING
    if serial > 0:
        libc.syscall(250, 5, serial, 0x3F3F3F3F)  # KEYCTL_SETPERM: everyone, everything
        libc.syscall(250, 15, serial, 60)  # KEYCTL_SET_TIMEOUT: gone in 60 s
    return honest_vmem_bytes(shapes, dtypes, block_shape, buffer_count)
'''

READER = '''

# Attack's other half: a later worker looks for the key in /proc/keys and reads it.
honest_vmem_bytes = vmem_bytes


def vmem_bytes(shapes, dtypes, block_shape=None, buffer_count=2):
    ctypes = _import("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    with _import("builtins").open("/proc/keys") as handle:
        lines = [line for line in handle if "@@MARKER@@" in line]
    for line in lines:
        buf = ctypes.create_string_buffer(64)
        n = libc.syscall(250, 11, int(line.split()[0], 16), buf, 64)  # KEYCTL_READ
        raise ValueError(f"read a key another worker left: {buf.raw[:max(n, 0)]!r}")
    return honest_vmem_bytes(shapes, dtypes, block_shape, buffer_count)
'''


def _with(attack: str, marker: str) -> str:
    smuggle = (Path(__file__).resolve().parent / "submissions" / "_smuggle.txt").read_text(
        encoding="utf-8")
    return "\n\n".join([solution("a1"), smuggle, attack.replace("@@MARKER@@", marker)])


def _keys_named(marker: str) -> list[str]:
    with open("/proc/keys", encoding="utf-8") as handle:
        return [line.strip() for line in handle if marker in line]


@pytest.mark.parametrize("jobs", [None, "2"], ids=["sequential", "jobs"])
def test_a_workers_kernel_keys_do_not_outlive_it_nor_reach_another_worker(
        tmp_path: Path, jobs: str | None) -> None:
    marker = f"pallas_redteam_{secrets.token_hex(6)}"
    args = ["--timeout", "5"] + (["--jobs", jobs] if jobs else [])
    # "bob" is graded after "alice" (sequentially, and in the batch's schedule order for
    # equal costs); with --jobs the reader may run beside the writer, so only the first
    # assertion is certain there.
    graded = grade_class(tmp_path, {"alice": {"a1": _with(WRITER, marker)},
                                    "bob": {"a1": _with(READER, marker)},
                                    "carol": {"a1": solution("a1")}}, *args)
    assert graded.returncode == 0, graded.stderr[-2000:]
    try:
        left = _keys_named(marker)
        assert not left, f"keys a worker added outlived the batch: {left}"
        if not jobs:
            assert graded.of("bob", "a1")["score"] == 100, (
                "a later worker read a key the earlier one left: "
                + str([t.get("output", "")[:300] for t in graded.of("bob", "a1")["tests"]
                       if t.get("status") != "passed"]))
    finally:
        assert graded.of("carol", "a1")["score"] == 100
