"""Seconds for the README's first command and for a class batch.

* ``samples``: ``pallas-lab grade`` with no PATH, as the README's first command runs it:
  the bundled samples (4 students x 5 assignments, ``dev_broken``'s endless loops
  included), two files at a time, 3 s per call. Target: at most 30 s on the 2-core
  reference machine.
* ``class``: ``pallas-lab grade CLASS --jobs 2 --timeout 3`` on a class of N students
  (default 40) made of copies of the samples, ten of each kind, with the assignments
  chosen by ``--stems`` (default: a1 only, as tests/batch/test_batch.py; ``all`` for
  every assignment, which takes minutes).

Each line: the case, the best and all runs (wall-clock seconds), and the load averages
(``os.getloadavg``) before each run: the machine may be shared, so a figure taken under
load is only comparable with one taken under the same load.
``--zygote both`` runs each case with the batch's worker zygote and without it
(``PALLAS_LAB_ZYGOTE=off``: every worker exec'd), alternating, for a before/after
under the same load.
Run from the repository root:  python bench/bench_batch.py [--repeat N] [--students N]
[--stems a1,a4|all] [--only samples|class] [--zygote on|off|both]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "examples" / "submissions"
KINDS = ("ada_correct", "ben_typical_mistakes", "cleo_untouched", "dev_broken")


def _stems(spec: str) -> list[str]:
    every = sorted(p.stem for p in (SAMPLES / KINDS[0]).glob("*.py"))
    if spec == "all":
        return every
    wanted = spec.split(",")
    return [stem for stem in every if stem.split("_")[0] in wanted or stem in wanted]


def make_class(root: Path, students: int, stems: list[str]) -> Path:
    """``students`` folders under ``root``, each a copy of one sample kind's ``stems``."""
    for i in range(students):
        kind = KINDS[i % len(KINDS)]
        folder = root / f"s{i:02d}_{kind.split('_')[0]}"
        folder.mkdir(parents=True)
        for stem in stems:
            shutil.copyfile(SAMPLES / kind / f"{stem}.py", folder / f"{stem}.py")
    return root


def _timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    load = "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return seconds, load


def main(argv: list[str] | None = None) -> int:
    """Print one line per case: best seconds, every run with the load it started under."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (best is kept)")
    parser.add_argument("--students", type=int, default=40, help="students in the class case")
    parser.add_argument("--stems", default="a1", help="assignments of the class: a1,a4 or all")
    parser.add_argument("--only", choices=("samples", "class"), default=None)
    parser.add_argument("--zygote", choices=("on", "off", "both"), default="on",
                        help="workers forked from the batch's zygote, exec'd "
                             "(PALLAS_LAB_ZYGOTE=off), or both, alternating run by run")
    args = parser.parse_args(argv)
    cli = [sys.executable, "-m", "graders.cli.main", "grade"]
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
        cases = []
        if args.only in (None, "samples"):
            cases.append(("samples (README's first command)", lambda: cli))
        if args.only in (None, "class"):
            stems = _stems(args.stems)
            klass = make_class(Path(folder) / "class", args.students, stems)
            label = f"class of {args.students} x {len(stems)} file(s), --jobs 2"

            serial = itertools.count()

            def class_command() -> list[str]:  # a fresh --out each run: nothing to resume
                return [*cli, str(klass), "--jobs", "2", "--timeout", "3", "--out",
                        str(Path(folder) / f"out{next(serial)}")]

            cases.append((label, class_command))
        modes = ("off", "on") if args.zygote == "both" else (args.zygote,)
        for label, command in cases:
            runs: dict[str, list[tuple[float, str]]] = {mode: [] for mode in modes}
            for _ in range(args.repeat):  # alternating: both modes see the same load
                for mode in modes:
                    runs[mode].append(_timed(command(), {"PALLAS_LAB_ZYGOTE": mode}))
            for mode in modes:
                best = min(seconds for seconds, _ in runs[mode])
                shown = "; ".join(f"{seconds:.1f} s ({load})" for seconds, load in runs[mode])
                name = f"{label}, zygote {mode}"
                print(f"{name:<52} best {best:6.1f} s   {shown}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
