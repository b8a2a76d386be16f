"""Seconds that timeouts cost: what tests used to assert as wall-clock bounds.

Tests check the behaviour (a loop times out, the next call works, a timed-out
function is not called again, an import that loops is not retried); how long
that takes depends on the machine's load, so it is measured here instead:

* a call that loops forever, with the worker's 1 s timeout, then a working call;
* the same with a per-call timeout of 0.3 s;
* a file whose import loops, timeout 0.5 s: the worker's start and two calls;
* a Session whose function timed out (0.5 s): three more calls, answered from the memo;
* run_property stopping at its first timeout (1 s) out of 50 examples.

Each line: the case, the bound the old test asserted, the best and all runs.
Run from the repository root:  python bench/bench_timeouts.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import strategies as st  # noqa: E402

from graders.checking.framework import CheckFailure, run_property  # noqa: E402
from graders.course.catalog import get_assignment  # noqa: E402
from graders.grading.session import open_session  # noqa: E402
from graders.worker.client import Worker  # noqa: E402

SOURCE = """
def ok(x):
    return x * 2


def loop():
    while True:
        pass


def spin(n):
    while n > 3:
        pass
    return n
"""


def _file(folder: Path, text: str) -> Path:
    path = folder / get_assignment("a1").file_name
    path.write_text(text, encoding="utf-8")
    return path


def _loop_call(folder: Path, timeout: float | None) -> None:
    with Worker(_file(folder, SOURCE), timeout=1.0) as worker:
        worker.call("ok", (1,))  # started and loaded: only the call is timed
        started = time.monotonic()
        assert worker.call("loop", timeout=timeout).error.kind == "timeout"
        worker.call("ok", (2,))
        _record(time.monotonic() - started)


def _import_loop(folder: Path) -> None:
    started = time.monotonic()
    with Worker(_file(folder, "while True:\n    pass\n"), timeout=0.5) as worker:
        worker.call("f")
        worker.call("g")
    _record(time.monotonic() - started)


def _memo(folder: Path) -> None:
    with open_session(_file(folder, SOURCE), get_assignment("a1"), timeout=0.5) as session:
        session.call("ok", 1)
        started = time.monotonic()
        for n in (10, 10, 10, 1):
            try:
                session.call("spin", n)
            except CheckFailure:
                pass
        _record(time.monotonic() - started)


def _property(folder: Path) -> None:
    with open_session(_file(folder, SOURCE), get_assignment("a1"), timeout=1.0) as session:
        session.call("ok", 1)
        started = time.monotonic()
        try:
            run_property(st.integers(0, 100), lambda n: session.call("spin", n),
                         max_examples=50)
        except CheckFailure:
            pass
        _record(time.monotonic() - started)


_RUNS: list[float] = []


def _record(seconds: float) -> None:
    _RUNS.append(seconds)


CASES: list[tuple[str, float, Callable[[Path], None]]] = [
    ("loop, 1 s timeout, then a call", 1.9, lambda f: _loop_call(f, None)),
    ("loop, per-call timeout 0.3 s", 1.0, lambda f: _loop_call(f, 0.3)),
    ("import loops, 0.5 s, two calls", 1.5, _import_loop),
    ("memoized timeout, 0.5 s, 4 calls", 1.5, _memo),
    ("run_property stops, 1 s timeout", 2.5, _property),
]


def main(argv: list[str] | None = None) -> int:
    """Print one row per case: the old asserted bound, the best and all measured seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (best is kept)")
    args = parser.parse_args(argv)
    print(f"{'case':<36}{'old bound s':>12}{'best s':>9}   all runs (s)")
    for label, bound, case in CASES:
        _RUNS.clear()
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as folder:
                case(Path(folder))
        runs = ", ".join(f"{r:.2f}" for r in _RUNS)
        print(f"{label:<36}{bound:>12.1f}{min(_RUNS):>9.2f}   {runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
