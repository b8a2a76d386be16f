"""JAX's own TPU kernels on pallas_sim against JAX's TPU interpret mode, in one run.

Run from the repository root (needs the ``pallas-lab[jax]`` extra)::

    python bench/bench_jax_kernels.py [--repeats 5] [--case NAME ...]

The cases are the fidelity suite's (``tests/fidelity/jax_kernel_cases.py``): each kernel
module under ``jax/experimental/pallas/ops/tpu/`` of the installed jax, loaded unchanged
but for its imports (``pallas_sim/backends/jax_ops.py``), at small sizes that take
several grid steps. For each case and side: one warm-up call (JAX traces and compiles
its interpreter there; where a wrapper is jitted, later calls reuse it), then the best
of ``--repeats`` whole calls (garbage collection off while timing, as ``timeit`` does),
wall clock, outputs brought to NumPy. The ratio is JAX's
time over pallas_sim's; the target is at least 10× on every case. OpenBLAS is pinned
to one thread (``OPENBLAS_NUM_THREADS=1`` unless set): a block product gains nothing
from threads and loses much to contention on a busy 2-core machine; XLA has its own
thread pool. The largest difference between the two sides' outputs is shown too, and the
same call's time on JAX's other interpreter, ``interpret=True`` (or why it fails there),
with its first call: under ``jax.jit`` that interpreter's kernel is compiled by XLA once,
and later calls run compiled CPU code.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from pallas_sim.backends import real_jax  # noqa: E402
from pallas_sim.backends.jax_ops import load_op  # noqa: E402
from tests.fidelity.jax_kernel_cases import CASES, run_case  # noqa: E402

#: pallas_sim at least this many times faster than TPU interpret mode on every case.
TARGET = 10.0


def _best(backend: str, case: str, repeats: int) -> tuple[float, list[np.ndarray], float]:
    """(best seconds of ``repeats`` calls after a warm-up, the outputs, the warm-up call's
    seconds: JAX's tracing and compiling are in it) of ``case``."""
    name = CASES[case][0]
    if backend in ("jax", "hlo"):
        with real_jax.mode("tpu"):
            module = load_op(name, "jax")
        # one module serves both interpreters, and a jitted wrapper's cache does not know
        # which one it was compiled for: compile afresh for this one (in the warm-up)
        import jax

        jax.clear_caches()
    else:
        module = load_op(name, "sim")
    start = time.perf_counter()
    out = run_case(case, backend, module)
    first = time.perf_counter() - start
    best = float("inf")
    gc.collect()
    gc.disable()  # as timeit does (and compare_jax.py): no collection pause inside a call
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            out = run_case(case, backend, module)
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return best, out, first


def main(argv: list[str] | None = None) -> int:
    """Time every case (or ``--case``) on both sides; print a Markdown table. Exit status
    1 when a case is below ``TARGET``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    args = parser.parse_args(argv)
    print(f"load before: {os.getloadavg()[0]:.2f}")
    print("| kernel case | pallas_sim ms | TPU interpret ms | × (≥ 10) | max abs diff | "
          "interpret=True ms (first call, compiling) |")
    print("|---|---:|---:|---:|---:|---:|")
    below = []
    for case in args.case or list(CASES):
        sim, got, _ = _best("sim", case, args.repeats)
        jax, want, _ = _best("jax", case, args.repeats)
        try:  # the HLO interpreter has no TPU semaphores or DMAs: some kernels fail there
            hlo_best, _, hlo_first = _best("hlo", case, args.repeats)
            hlo = f"{hlo_best * 1e3:,.1f} (first {hlo_first * 1e3:,.0f})"
        except Exception as error:  # noqa: BLE001 - reported in the table, not raised
            hlo = f"fails ({type(error).__name__})"
        diff = max(float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                   if a.size else 0.0 for a, b in zip(got, want, strict=True))
        ratio = jax / sim
        mark = "" if ratio >= TARGET else " ✗"
        if mark:
            below.append(case)
        print(f"| {case} | {sim * 1e3:.1f} | {jax * 1e3:,.1f} | {ratio:.0f}{mark} | "
              f"{diff:.1e} | {hlo} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    if below:
        print(f"below target: {below}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
