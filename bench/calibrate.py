"""Fit the timeline model's free constants to the lecture's measured numbers, and report
leave-one-out errors honestly (issue 15 item 4).

Run from the repository root::

    python bench/calibrate.py            # fit, leave-one-out, print the tables
    python bench/calibrate.py --markdown # the same as the Markdown of docs/performance-model.md

Data: only the lecture's measurements (``lecture_configs.MEASURED``). Each configuration
is run once through ``pallas_sim.estimate`` (the abstract run) to get its trace; the fit
then only re-runs the timeline model. The loss is the sum of squared log errors
(relative errors, symmetric); the optimizer is Nelder-Mead on the logarithms of the six
constants, started from the priors below. A constant that the remaining points do not
constrain (the lone-DMA latency when the serialized-DMA point is left out) stays near
its prior: that point's leave-one-out error shows it.

Priors (the starting point, not data): fixed step cost 1 µs (lecture §4.2's "about
1 µs per step"), DMA efficiency 0.7, lone-DMA latency 1 µs, VPU 2e12 and EUP 1e12
elements/s, 0.1 µs issue cost per pipelined copy.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

import numpy as np
from lecture_configs import MEASURED, Config

import pallas_sim
from pallas_sim._src import timeline
from pallas_sim._src.chips import get_chip

CHIP = get_chip("v7")
NAMES = ("step_overhead_s", "dma_efficiency", "dma_latency_s", "dma_issue_s", "vpu_rate",
         "eup_rate")
PRIOR = timeline.Calibration(step_overhead_s=1e-6, dma_efficiency=0.7, dma_latency_s=1e-6,
                             dma_issue_s=0.1e-6, vpu_rate=2e12, eup_rate=1e12)


#: Upper bounds: efficiency at most 1; rates at most 1e15 elements/s (beyond that a unit
#: costs nothing next to the MXU, and the fit cannot tell larger values apart).
BOUNDS = {"dma_efficiency": 1.0, "vpu_rate": 1e15, "eup_rate": 1e15}


def _from_vector(x: np.ndarray) -> timeline.Calibration:
    values = dict(zip(NAMES, np.exp(np.minimum(x, 50.0)), strict=True))
    for name, top in BOUNDS.items():
        values[name] = min(top, values[name])
    return timeline.Calibration(**values)


def _to_vector(cal: timeline.Calibration) -> np.ndarray:
    return np.log([getattr(cal, n) for n in NAMES])


def traces() -> dict[str, list[timeline.StepFeatures]]:
    """Each measured configuration's per-step features (one abstract run each)."""
    out = {}
    for cfg in MEASURED:
        est = pallas_sim.estimate(cfg.fn, *cfg.args, **cfg.kwargs)
        out[cfg.key] = [timeline.features(c, CHIP) for c in est.calls]
    return out


def predict(feats: list[timeline.StepFeatures], cal: timeline.Calibration) -> float:
    """Predicted seconds of one configuration."""
    return sum(timeline.simulate(f, CHIP, cal)[0] for f in feats)


def _loss(x: np.ndarray, configs: list[Config], feats: dict) -> float:
    cal = _from_vector(x)
    return sum(math.log(predict(feats[c.key], cal) / c.measured_s) ** 2 for c in configs)


def nelder_mead(f, x0: np.ndarray, *, step: float = 0.5, iters: int = 600,
                tol: float = 1e-10) -> np.ndarray:
    """Minimise ``f`` from ``x0`` (the standard simplex method: reflection 1, expansion 2,
    contraction 0.5, shrink 0.5)."""
    n = len(x0)
    simplex = [x0] + [x0 + step * np.eye(n)[i] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        if values[-1] - values[0] < tol:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        reflected = centroid + (centroid - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centroid + 2 * (centroid - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]
                values = [f(x) for x in simplex]
    return simplex[int(np.argmin(values))]


def fit(configs: list[Config], feats: dict) -> timeline.Calibration:
    """The constants minimising the squared log error over ``configs`` (two restarts)."""
    x = _to_vector(PRIOR)
    for _ in range(2):
        x = nelder_mead(lambda v: _loss(v, configs, feats), x)
    return _from_vector(x)


@dataclasses.dataclass
class Row:
    """One configuration: measured, fitted-on-all and leave-one-out predictions."""

    config: Config
    fitted_s: float
    loo_s: float

    @property
    def loo_error(self) -> float:
        """Leave-one-out prediction / measured - 1."""
        return self.loo_s / self.config.measured_s - 1


def run() -> tuple[timeline.Calibration, list[Row]]:
    """Fit on all points, then leave each out in turn."""
    feats = traces()
    full = fit(MEASURED, feats)
    rows = []
    for cfg in MEASURED:
        rest = [c for c in MEASURED if c is not cfg]
        loo = fit(rest, feats)
        rows.append(Row(cfg, predict(feats[cfg.key], full), predict(feats[cfg.key], loo)))
    return full, rows


def _ordering(rows: list[Row], attr: str) -> list[str]:
    return [r.config.key for r in sorted(rows, key=lambda r: getattr(r, attr))]


def report(full: timeline.Calibration, rows: list[Row], markdown: bool) -> str:
    """The calibration table, the constants and the orderings as text."""
    lines = []
    if markdown:
        lines += ["| configuration | measured ms | fitted ms | leave-one-out ms | "
                  "leave-one-out error | source |", "|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r.config.label} | {r.config.measured_s * 1e3:.3f} | "
                         f"{r.fitted_s * 1e3:.3f} | {r.loo_s * 1e3:.3f} | "
                         f"{r.loo_error * 100:+.1f} % | {r.config.source} |")
    else:
        for r in rows:
            lines.append(f"{r.config.label:42s} measured {r.config.measured_s * 1e3:7.3f} ms"
                         f"  fitted {r.fitted_s * 1e3:7.3f}  leave-one-out "
                         f"{r.loo_s * 1e3:7.3f} ({r.loo_error * 100:+6.1f} %)")
    worst = max(abs(r.loo_error) for r in rows)
    mean = float(np.mean([abs(r.loo_error) for r in rows]))
    lines.append("")
    lines.append(f"mean |leave-one-out error| {mean * 100:.1f} %, worst {worst * 100:.1f} %")
    measured = [r.config.key for r in sorted(rows, key=lambda r: r.config.measured_s)]
    for attr, what in (("fitted_s", "fitted"), ("loo_s", "leave-one-out")):
        pred = _ordering(rows, attr)
        pairs = [(a, b) for i, a in enumerate(measured) for b in measured[i + 1:]]
        agree = sum(pred.index(a) < pred.index(b) for a, b in pairs)
        lines.append(f"ordering ({what}): {agree} of {len(pairs)} pairs as measured")
    lines.append("measured order, fastest first: " + ", ".join(measured))
    lines.append("")
    lines.append("constants: " + ", ".join(f"{n}={getattr(full, n):.4g}" for n in NAMES))
    return "\n".join(lines)


def main() -> None:
    """Fit, leave one out, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    full, rows = run()
    print(report(full, rows, args.markdown))


if __name__ == "__main__":
    main()
