"""The speed race: the same kernels on pallas_sim and on JAX's two CPU interpreters.

Run from the repository root (needs the ``pallas-lab[jax]`` extra)::

    python bench/compare_jax.py [--sim-repeats 5] [--jax-repeats 1] [--quick]

Cases (docs/pallas-sim.md, "Speed"):

* add: f32[256, 4096] + f32[256, 4096] with (8, 128) blocks — 1024 grid steps;
* matmul: f32[512, 512] @ f32[512, 512], 3D grid of (128, 128, 128) blocks;
* flash: causal Flash Attention, H 2, L 512, d 64, blocks 64;
* splash: Splash Attention over a causal document mask (4 documents), same sizes.

Each case runs the solution's own wrapper (``solutions/aN_*.py``, loaded
unchanged on each backend through ``pallas_sim.backends.swap``) or, when the
solution does not define it yet, the inline kernel of ``bench/inline_kernels.py``.
pallas_sim: best of ``--sim-repeats`` calls.  JAX: one warm-up call (tracing
and compilation), then the best of ``--jax-repeats`` calls, each ended by
``block_until_ready``; so JAX's compile time is NOT counted.  Times are whole
calls divided by the grid steps (µs per step); the ratios use wall time.
In brackets: pallas_sim's CPU time per step (``time.process_time``), which a
busy machine disturbs less than the wall clock.  OpenBLAS is pinned to one
thread (``OPENBLAS_NUM_THREADS=1`` unless set), see below.  Targets: pallas_sim at least
25× faster than ``interpret=True`` and 500× faster than TPU interpret mode.
The outputs of the three runs are compared too (largest difference shown).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# One BLAS thread: a (128, 128) block product gains nothing from threads and loses
# a lot to contention on a busy 2-core machine (measured: 0.2 ms vs 0.9-3.8 ms).
# XLA, which JAX uses, has its own thread pool and is not affected.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import pallas_sim  # noqa: E402
from graders.course.catalog import get_assignment  # noqa: E402
from pallas_sim.backends import real_jax  # noqa: E402
from pallas_sim.backends.swap import load  # noqa: E402

INLINE = ROOT / "bench" / "inline_kernels.py"
TARGETS = {"hlo": 25.0, "tpu": 500.0}


@dataclasses.dataclass
class Case:
    """One benchmark: which function of which file, on what inputs."""

    name: str
    stem: str
    func: str
    make_args: Callable[[Any], tuple[tuple, dict]]  # module -> (args, kwargs)
    what: str


def _rng_arrays(seed: int, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _document_mask(length: int, documents: int) -> np.ndarray:
    seg = np.repeat(np.arange(documents), length // documents)
    pos = np.arange(length)
    return (seg[:, None] == seg[None, :]) & (pos[:, None] >= pos[None, :])


def cases(quick: bool) -> list[Case]:
    """The four cases (``quick``: a quarter of the steps, for a smoke run)."""
    rows = 64 if quick else 256
    length = 256 if quick else 512
    x, y = _rng_arrays(0, (rows, 4096), (rows, 4096))
    a, b = _rng_arrays(1, (512, 512), (512, 512))
    q, k, v = _rng_arrays(2, (2, length, 64), (2, length, 64), (2, length, 64))
    mask = _document_mask(length, 4)
    return [
        Case("add", get_assignment("a1").stem, "blocked_add",
             lambda m: ((x, y), {"block_shape": (8, 128)}),
             f"f32[{rows},4096] + f32[{rows},4096], blocks (8, 128)"),
        Case("matmul", get_assignment("a3").stem, "matmul",
             lambda m: ((a, b), {"block_shape": (128, 128, 128)}),
             "f32[512,512] @ f32[512,512], blocks (128, 128, 128)"),
        Case("flash", get_assignment("a4").stem, "flash_attention",
             lambda m: ((q, k, v), {"causal": True, "block_q": 64, "block_kv": 64}),
             f"causal, H 2, L {length}, d 64, blocks 64"),
        Case("splash", get_assignment("a5").stem, "splash_attention",
             lambda m: ((q, k, v, m.build_mask_info(mask, 64, 64)), {}),
             f"document mask (4 docs, causal), H 2, L {length}, d 64, blocks 64"),
    ]


def _source(case: Case) -> Path:
    """The solution file if it defines a working ``case.func``, else the inline kernels."""
    path = ROOT / "solutions" / f"{case.stem}.py"
    if path.exists():
        try:
            module = load(path, "sim")
            args, kwargs = case.make_args(module)
            getattr(module, case.func)(*args, **kwargs)
            return path
        except (AttributeError, NotImplementedError):
            pass
    return INLINE


def _time(fn: Callable[[], Any], repeats: int, clock: Callable[[], float] = time.perf_counter
          ) -> tuple[float, Any]:
    """Best wall time of ``repeats`` calls with the garbage collector off (as
    ``timeit`` does: with JAX imported the heap is large and a collection
    landing inside one short call would dominate it)."""
    best, out = float("inf"), None
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            start = clock()
            out = fn()
            best = min(best, clock() - start)
    finally:
        gc.enable()
    return best, out


def run_case(case: Case, sim_repeats: int, jax_repeats: int) -> dict[str, Any]:
    """Time one case on the three backends; µs per grid step and the outputs."""
    path = _source(case)
    sim_mod, jax_mod = load(path, "sim"), load(path, "jax")
    sim_args, sim_kwargs = case.make_args(sim_mod)
    with pallas_sim.trace() as t:
        getattr(sim_mod, case.func)(*sim_args, **sim_kwargs)
    steps = sum(c.num_steps for c in t.calls)
    sim_s, sim_out = _time(lambda: getattr(sim_mod, case.func)(*sim_args, **sim_kwargs),
                           sim_repeats)
    sim_cpu, _ = _time(lambda: getattr(sim_mod, case.func)(*sim_args, **sim_kwargs),
                       sim_repeats, time.process_time)
    row = {"case": case.name, "what": case.what, "steps": steps,
           "source": path.relative_to(ROOT).as_posix(), "sim_us": sim_s / steps * 1e6,
           "sim_cpu_us": sim_cpu / steps * 1e6}
    jax_args, jax_kwargs = case.make_args(jax_mod)
    fn = getattr(jax_mod, case.func)
    for mode in ("hlo", "tpu"):
        with real_jax.mode(mode):
            real_jax.jax.block_until_ready(fn(*jax_args, **jax_kwargs))  # compile
            secs, out = _time(lambda: real_jax.jax.block_until_ready(
                fn(*jax_args, **jax_kwargs)), jax_repeats)
        row[f"{mode}_us"] = secs / steps * 1e6
        row[f"{mode}_ratio"] = secs / sim_s
        row[f"{mode}_diff"] = float(np.max(np.abs(np.asarray(out, np.float64)
                                                  - np.asarray(sim_out, np.float64))))
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the rows (µs per grid step, ratios, targets)."""
    lines = ["| case | grid steps | pallas_sim µs/step (CPU) | interpret=True µs/step "
             "| TPU interpret µs/step | × vs interpret=True (≥ 25) "
             "| × vs TPU interpret (≥ 500) | max abs diff |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        marks = {m: "" if r[f"{m}_ratio"] >= TARGETS[m] else " ✗" for m in TARGETS}
        lines.append(
            f"| {r['case']}: {r['what']} | {r['steps']} | {r['sim_us']:.1f} "
            f"({r['sim_cpu_us']:.1f}) | "
            f"{r['hlo_us']:,.0f} | {r['tpu_us']:,.0f} | {r['hlo_ratio']:,.0f}{marks['hlo']} | "
            f"{r['tpu_ratio']:,.0f}{marks['tpu']} | "
            f"{max(r['hlo_diff'], r['tpu_diff']):.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run every case and print the table; exit 1 if a ratio misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-repeats", type=int, default=5)
    parser.add_argument("--jax-repeats", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="fewer steps (smoke run)")
    parser.add_argument("--case", action="append", choices=["add", "matmul", "flash", "splash"])
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    rows = []
    for case in cases(args.quick):
        if args.case and case.name not in args.case:
            continue
        print(f"timing {case.name} ...", file=sys.stderr, flush=True)
        rows.append(run_case(case, args.sim_repeats, args.jax_repeats))
    import jax  # noqa: PLC0415 - only for the version line
    print(f"JAX {jax.__version__} on CPU; pallas_sim best of {args.sim_repeats}, JAX best of "
          f"{args.jax_repeats} after a warm-up call (compile time not counted)\n")
    print(table(rows))
    for r in rows:
        print(f"  {r['case']}: {r['source']}")
    missed = [r["case"] for r in rows for m in TARGETS if r[f"{m}_ratio"] < TARGETS[m]]
    if missed:
        print(f"\nbelow target: {sorted(set(missed))}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
