"""What every performance task (3.5, 4.8, 5.7) checks of the harness's
reply the same way: one pallas_call at the chosen blocks, a predicted time that is a
prediction of that problem, and a time within the tolerance of the fastest candidate.

Tasks 3.5 and 4.8 are timed from the grader's own call (``graders/checking/step_model.py``);
these helpers serve the per-session reply cache of all three and Task 5.7, whose harness
still runs the student's own wrapper through ``pallas_sim.estimate`` in the worker and
sends back plain numbers; nothing here trusts them beyond what they claim to be: a
reply whose grid or blocks are not the chosen problem's, whose kernel did fewer MXU FLOPs
than the problem needs, or whose time beats the chip's peak on the problem's FLOPs, is
refused (docs/performance-model.md, "Performance tasks").
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from graders.checking.registry import CheckFailure

#: Per grading session: each chooser's reply (or its failure), so that both checks of a
#: task read one worker round trip (the session keys weakly: the replies go with it).
_REPLIES: weakref.WeakKeyDictionary[Any, dict[str, object]] = weakref.WeakKeyDictionary()


#: What a chooser that ran out of time is told (the handouts say the same).
CHOOSER_TIMEOUT_HINT = ("the chooser runs under a time limit: sweep the candidates in a cell "
                        "or a script of your own and return the winner as constants")


def invoke_once(s: Any, name: str, kwargs: Mapping[str, object], *, harness: str,
                timeout: float) -> object:
    """The reply of the harness function ``name`` (``s.invoke(name, (), kwargs, ...)``) for
    grading session ``s``, invoked once per session; later calls return the kept reply.
    A ``CheckFailure`` the call raised is kept and returned, not raised: the caller raises
    it with its own ``input``."""
    kept = _REPLIES.setdefault(s, {})
    if name not in kept:
        try:
            kept[name] = s.invoke(name, (), dict(kwargs), harness=harness,
                                  timeout=timeout).value
        except CheckFailure as failure:
            if failure.status == "timeout" and failure.hint is None:
                failure = failure.copy(hint=CHOOSER_TIMEOUT_HINT)
            kept[name] = failure
    return kept[name]


def require_one_call(calls: Sequence[dict], grid: list[int], blocks: list[list[int | None]],
                     *, message: str, operands: str, input: str, hint: str) -> dict:
    """The single traced call, when its ``grid`` and ``block_shapes`` are the expected
    ones (lists, as the protocol sends them); ``operands`` names the blocks in order
    (e.g. "x, y, z"). Raises ``CheckFailure(message)`` showing every call seen otherwise."""
    if len(calls) != 1 or calls[0].get("grid") != grid or calls[0].get("block_shapes") != blocks:
        got = "; ".join(f"grid {c.get('grid')}, blocks {c.get('block_shapes')}" for c in calls)
        raise CheckFailure(message, input=input, expected=f"grid {grid}, blocks of {operands} "
                                                          f"{blocks}",
                           got=got or "no pallas_call", hint=hint)
    return calls[0]


def require_work(call: dict, flops: int, *, message: str, input: str) -> int:
    """The call's ``mxu_flops`` (the products its kernel ran, as op accounting counted
    them), when it is an int of at least ``flops``, the problem's matrix work (a kernel
    may do more, never less). Raises ``CheckFailure(message)`` otherwise: a call that does
    not compute the problem (an empty kernel next to an answer computed another way) is
    not a run of it, however long its copies take."""
    got = call.get("mxu_flops")
    if type(got) is not int or got < flops:
        raise CheckFailure(message, input=input,
                           expected=f"at least {flops:,} MXU FLOPs (the problem's products)",
                           got=f"{got:,} MXU FLOPs" if type(got) is int else repr(got)[:80],
                           hint="the pallas_call's kernel must compute the result it "
                                "returns")
    return got


def require_time_floor(call: dict, floor_s: float, *, message: str, input: str,
                       floor_text: str = "all FLOPs at peak") -> float:
    """The call's ``time_s`` (seconds), when it is a finite float of at least ``floor_s``
    (the problem's FLOPs at the chip's peak: no prediction can be faster). Raises
    ``CheckFailure(message, status="error")`` otherwise: the reply is not a prediction."""
    time_s = call.get("time_s")
    if not isinstance(time_s, float) or not math.isfinite(time_s) or time_s < floor_s:
        raise CheckFailure(message, input=input,
                           expected=f"at least {floor_s * 1e3:.3f} ms ({floor_text})",
                           got=str(time_s), status="error")
    return time_s


def require_within(got_s: float, best_s: float, rtol: float, *, subject: str, input: str,
                   got: str, diagnosis: str | None = None) -> None:
    """Pass when ``got_s`` is at most ``rtol`` (a fraction, the lab's ``worked.py``) above
    ``best_s`` (both seconds); else
    ``CheckFailure`` saying how much slower ``subject`` (with its verb: "your blocks
    (512, 512, 512) are") is predicted, with ``got`` (the student's figures) and the
    verified ``diagnosis``."""
    if got_s <= best_s * (1 + rtol):
        return
    raise CheckFailure(
        f"{subject} predicted {got_s / best_s - 1:.0%} slower than the fastest legal "
        "candidate", input=input,
        expected=f"at most {best_s * (1 + rtol) * 1e3:.3f} ms ({rtol * 100:g} % above the "
                 f"fastest candidate's {best_s * 1e3:.3f} ms)",
        got=got, diagnosis=diagnosis)
