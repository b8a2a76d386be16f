"""Fit the timeline model's free constants to the lecture's measured numbers, and report
leave-one-out errors honestly.

Run from the repository root::

    python bench/calibrate.py            # fit, leave-one-out, print the tables
    python bench/calibrate.py --markdown # the same as the Markdown of docs/performance-model.md

Data: only the lecture's measurements (``lecture_configs.MEASURED``). Each configuration
is run once through ``pallas_sim.estimate`` (the abstract run) to get its trace; the fit
then only re-runs the timeline model. The loss is the sum of squared log errors
(relative errors, symmetric); the optimizer is Nelder-Mead on the logarithms of the six
constants, run from four fixed starting points (``STARTS``: the priors below and three
spreads around them, none taken from a measurement), keeping the lowest loss. A constant
that the remaining points do not constrain stays near where the search left it: the
leave-one-out errors show it.

Priors (the first start, not data): fixed step cost 1 µs (lecture §4.2's "about 1 µs
per step"), copies at 70 % of the bandwidth, a strided copy alone at 50 %, 0.1 µs issue
cost per copy, 0.05 µs per vector op, VPU 2e12 elements/s. The EUP rate is not fitted
(no measurement changes the transcendentals alone): it stays at its bound, 1e15/s.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import multiprocessing

import numpy as np
from lecture_configs import MEASURED, Config

import pallas_sim
from pallas_sim.extend import get_chip, timeline

CHIP = get_chip("v7")
NAMES = ("step_overhead_s", "dma_efficiency", "strided_efficiency", "dma_issue_s",
         "op_overhead_s", "vpu_rate")
PRIOR = timeline.Calibration(step_overhead_s=1e-6, dma_efficiency=0.7, strided_efficiency=0.5,
                             dma_issue_s=0.1e-6, op_overhead_s=0.05e-6, vpu_rate=2e12,
                             eup_rate=1e15)
#: Where each fit starts: the priors, and three fixed spreads around them.
STARTS = (PRIOR,
          dataclasses.replace(PRIOR, vpu_rate=2e13, strided_efficiency=0.8),
          dataclasses.replace(PRIOR, vpu_rate=5e12, strided_efficiency=0.15,
                              dma_issue_s=0.3e-6),
          dataclasses.replace(PRIOR, step_overhead_s=0.5e-6, dma_efficiency=0.9))


#: Upper bounds: efficiencies at most 1; rates at most 1e15 elements/s (beyond that a
#: unit costs nothing next to the MXU, and the fit cannot tell larger values apart).
BOUNDS = {"dma_efficiency": 1.0, "strided_efficiency": 1.0, "vpu_rate": 1e15}


def _from_vector(x: np.ndarray) -> timeline.Calibration:
    values = dict(zip(NAMES, np.exp(np.minimum(x, 50.0)), strict=True))
    for name, top in BOUNDS.items():
        values[name] = min(top, values[name])
    return dataclasses.replace(PRIOR, **values)


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
    """The constants minimising the squared log error over ``configs``: from each of
    ``STARTS``, three Nelder-Mead runs in a row; the lowest loss wins."""
    best: tuple[float, np.ndarray] | None = None
    for start in STARTS:
        x = _to_vector(start)
        for _ in range(3):
            x = nelder_mead(lambda v: _loss(v, configs, feats), x, iters=1500)
        loss = _loss(x, configs, feats)
        if best is None or loss < best[0]:
            best = (loss, x)
    assert best is not None
    return _from_vector(best[1])


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


_FEATS: dict = {}


def _fit_without(left_out: str | None) -> timeline.Calibration:
    """The fit on every measured point but ``left_out`` (None: all), on ``_FEATS``."""
    return fit([c for c in MEASURED if c.key != left_out], _FEATS)


def run(jobs: int = 2) -> tuple[timeline.Calibration, list[Row]]:
    """Fit on all points, then leave each out in turn (``jobs`` fits at a time)."""
    _FEATS.clear()
    _FEATS.update(traces())
    keys = [None, *(c.key for c in MEASURED)]
    if jobs > 1:
        context = multiprocessing.get_context("fork")  # the children inherit _FEATS
        with context.Pool(jobs) as pool:
            fits = pool.map(_fit_without, keys)
    else:
        fits = [_fit_without(k) for k in keys]
    full = fits[0]
    rows = [Row(cfg, predict(_FEATS[cfg.key], full), predict(_FEATS[cfg.key], loo))
            for cfg, loo in zip(MEASURED, fits[1:], strict=True)]
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
    parser.add_argument("--jobs", type=int, default=2, help="fits run at a time")
    args = parser.parse_args()
    full, rows = run(args.jobs)
    print(report(full, rows, args.markdown))


if __name__ == "__main__":
    main()
