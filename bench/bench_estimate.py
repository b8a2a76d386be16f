"""Seconds per ``pallas_sim.estimate`` at the lecture's full sizes.

Run from the repository root::

    python bench/bench_estimate.py [--repeats 3]

Each configuration of ``lecture_configs.full_size_configs()`` (matmul 512³ and 1024³
blocks on (4096, 7168) @ (7168, 18432) bf16; Flash Attention H 128, L 4096, d 192,
dv 128 at the lecture's block sizes, with and without MLE; Splash causal at L 8192 and
32768 with 1024 blocks, 128 heads) is estimated ``--repeats`` times; the best wall time
is printed with the grid steps and the predicted TPU time. Building Splash's MaskInfo
(host-side preprocessing of the mask) is done once, outside the timing. Target: each
at most 5 s on the course's 2-core machine.
"""

from __future__ import annotations

import argparse
import time

from lecture_configs import full_size_configs

import pallas_sim


def main() -> None:
    """Time every full-size configuration and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=None, help="run configurations whose key has this")
    args = parser.parse_args()
    print(f"{'configuration':44s} {'steps':>7s} {'estimate s':>11s} {'predicted ms':>13s}")
    for cfg in full_size_configs():
        if args.only and args.only not in cfg.key:
            continue
        best = float("inf")
        est = None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            est = pallas_sim.estimate(cfg.fn, *cfg.args, **cfg.kwargs)
            best = min(best, time.perf_counter() - t0)
        steps = sum(c.num_steps for c in est.calls)
        print(f"{cfg.label:44s} {steps:7d} {best:11.2f} {est.time_s * 1e3:13.3f}")


if __name__ == "__main__":
    main()
