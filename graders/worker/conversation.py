"""One conversation with a running worker process: its pipes, output file, reply key and
count (``Conversation``), and the checks every reply passes before it is used: a reply that
breaks the protocol is ``Malformed``, one over its budget ``Refused`` (docs/security.md)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.worker import protocol
from graders.worker.libdir import (  # noqa: F401 - re-exported: the worker's files and env
    HARNESS_DIR,
    POLICY_DIR,
    WORKER_DIR,
    build_libdir,
    interpreter,
    site_package_dirs,
    worker_env,
)


class Malformed(Exception):
    """A reply that breaks the protocol."""


class Refused(Malformed):
    """A reply over its budget (``protocol.ReplyRefused``), refused before it is decoded."""


@dataclass
class Conversation:
    """One running worker process: its pipes, its output file, the key that signs its
    replies and the number of replies read so far (each tag covers that number)."""

    process: subprocess.Popen[bytes]
    output_path: Path
    key: bytes
    replies: int = 0
    started: float = field(default_factory=time.monotonic)


def validate_call_reply(
    reply: dict[str, Any], n_args: int, return_args: bool, budget: protocol.ReplyBudget
) -> tuple[Any, tuple[dict[str, Any], ...], tuple[int | None, ...], tuple[int | None, ...],
           tuple[Any, ...] | None]:
    """Check a successful call reply's keys and types; raises ``Malformed``, or
    ``Refused`` for more pallas_call records than ``budget.trace_calls``."""
    expected = {"ok", "value", "traces", "returned_arg", "sources", "args_after"}
    if set(reply) != expected:
        raise Malformed(f"keys {sorted(reply)} instead of {sorted(expected)}")
    traces = reply["traces"]
    if not isinstance(traces, list) or not all(isinstance(t, dict) for t in traces):
        raise Malformed("traces is not a list of dicts")
    if len(traces) > budget.trace_calls:
        raise Refused(f"it records {len(traces)} pallas_calls; at most {budget.trace_calls} "
                       "are expected")
    returned = reply["returned_arg"]
    if not isinstance(returned, list) or not all(
        r is None or (type(r) is int and 0 <= r < n_args) for r in returned
    ):
        raise Malformed("returned_arg is not a list of argument indices")
    value = reply["value"]
    top = len(value) if isinstance(value, list | tuple) else 1
    if len(returned) != top:
        raise Malformed("returned_arg does not match the returned value")
    sources = reply["sources"]
    if not isinstance(sources, list) or len(sources) != top or not all(
        s is None or (type(s) is int and 0 <= s < len(traces)) for s in sources
    ):
        raise Malformed("sources is not a list of pallas_call indices")
    args_after = reply["args_after"]
    if return_args:
        if not isinstance(args_after, tuple) or len(args_after) != n_args:
            raise Malformed("args_after is not the tuple of positional arguments")
    elif args_after is not None:
        raise Malformed("args_after was sent without being asked for")
    return value, tuple(traces), tuple(returned), tuple(sources), args_after
