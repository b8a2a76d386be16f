"""Seconds to grade one submission per assignment with the deterministic profile.

Grades the bundled correct sample (``examples/submissions/ada_correct``) the way
``pallas-lab grade`` does: static check, a fresh worker subprocess, every
check of the assignment.  Best of N runs (default 3) per file, so the figure
is the grading cost and not the machine's noise.  Target: at most
6 s per assignment on the 2-core reference machine.

Run from the repository root:  python bench/bench_grading.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.course.catalog import ASSIGNMENTS  # noqa: E402
from graders.grading.grade import grade_file  # noqa: E402

#: One row per discovered assignment: ada's correct sample of it.
CASES = [(f"{a.id} (Tasks {a.tasks[0].id}-{a.tasks[-1].id})",
          ROOT / "examples/submissions/ada_correct" / f"{a.stem}.py")
         for a in ASSIGNMENTS.values()]


def main(argv: list[str] | None = None) -> int:
    """Print one row per assignment: checks run, score, best seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per file (best is kept)")
    args = parser.parse_args(argv)
    print(f"{'assignment':<22}{'checks':>8}{'score':>12}{'best s':>10}{'all runs (s)':>28}")
    total = 0.0
    for label, path in CASES:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = grade_file(path)
            times.append(time.perf_counter() - start)
        best = min(times)
        total += best
        score = f"{result.score:g}/{result.max_score:g}"
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"{label:<22}{len(result.checks):>8}{score:>12}{best:>10.2f}{runs:>28}")
    print(f"{'all':<22}{'':>8}{'':>12}{total:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
