"""Seconds for a class batch on this machine's pool (``--jobs 2``) and on a Dask
``LocalCluster`` of two single-threaded worker processes (``--scheduler``), in one run.

The class: N students (default 200), each with one a1 file, copies of the samples
``ada_correct``, ``ben_typical_mistakes`` and ``cleo_untouched`` in turn; the two runs
grade the same class into separate results folders, alternating which goes first over
``--repeat`` rounds, and must give the same gradebook. Each line: the case, the wall-clock
seconds of each round, and the load averages before each run (``os.getloadavg``).
Both grade each file in a fresh grader process forked from a preloaded server, whose
sandboxed worker forks from a zygote: the local batch has one of each, each Dask worker
its own (``graders.batch.grading_server``, started with the worker's first file); the
Dask run also pays the scheduler's round trips and the cluster's start.
Run from the repository root:  python bench/bench_dask.py [--students N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from graders.course.catalog import ASSIGNMENTS  # noqa: E402 - after the repository's path

SAMPLES = ROOT / "examples" / "submissions"
KINDS = ("ada_correct", "ben_typical_mistakes", "cleo_untouched")
STEM = ASSIGNMENTS["a1"].stem


def _class(folder: Path, students: int) -> Path:
    for i in range(students):
        kind = KINDS[i % len(KINDS)]
        (folder / f"s{i:03d}").mkdir(parents=True)
        shutil.copy(SAMPLES / kind / f"{STEM}.py", folder / f"s{i:03d}" / f"{STEM}.py")
    return folder


def _run(klass: Path, out: Path, *options: str) -> float:
    command = [str(Path(sys.executable).parent / "pallas-lab"), "grade", str(klass),
               "--out", str(out), *options]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return seconds


def main() -> int:
    """Grade the class both ways ``--repeat`` times; print the seconds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    from distributed import LocalCluster

    times: dict[str, list[tuple[float, tuple[float, ...]]]] = {"jobs 2": [], "dask 2": []}
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp, LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            dashboard_address=None) as cluster:
        klass = _class(Path(tmp) / "class", args.students)
        for round_ in range(args.repeat):
            order = ["jobs 2", "dask 2"] if round_ % 2 == 0 else ["dask 2", "jobs 2"]
            for case in order:
                out = Path(tmp) / f"{case.replace(' ', '')}-{round_}"
                load = os.getloadavg()
                options = ("--jobs", "2") if case == "jobs 2" else (
                    "--scheduler", cluster.scheduler_address)
                times[case].append((_run(klass, out, *options), load))
            books = {(Path(tmp) / f"{c.replace(' ', '')}-{round_}" / "gradebook.csv")
                     .read_text(encoding="utf-8") for c in order}
            if len(books) != 1:
                raise SystemExit("the two runs gave different gradebooks")
    print(f"class of {args.students} a1 files, 2 at a time")
    for case, runs in times.items():
        print(f"  {case}: " + ", ".join(f"{s:.1f} s (load {load[0]:.2f})" for s, load in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
