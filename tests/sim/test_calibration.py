"""Calibration: the fitter finds known constants, and the constants in
pallas_sim._src.timeline.CALIBRATION are the ones docs/performance-model.md reports (its
"fitted" column is what they predict for the lecture's configurations)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import calibrate  # noqa: E402
import lecture_configs  # noqa: E402

from pallas_sim._src import timeline  # noqa: E402


def test_nelder_mead_finds_a_known_minimum():
    target = np.array([1.0, -2.0, 0.5])
    found = calibrate.nelder_mead(lambda x: float(((x - target) ** 2).sum()), np.zeros(3))
    np.testing.assert_allclose(found, target, atol=1e-3)


def test_fit_recovers_constants_that_generated_the_measurements():
    # Synthetic "measurements" from known constants on three cheap configurations; the
    # fit must explain them (relative error well under 1 %).
    truth = timeline.Calibration(step_overhead_s=0.6e-6, dma_efficiency=0.6,
                                 strided_efficiency=0.3, dma_issue_s=0.1e-6,
                                 op_overhead_s=0.04e-6, vpu_rate=4e12, eup_rate=1e15)
    import pallas_sim
    from pallas_sim import jax, jnp
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16)
    configs, feats = [], {}
    for i, b in enumerate((128, 256, 512)):
        est = pallas_sim.estimate(lecture_configs.A3.matmul, x, x, block_shape=(b, b, b))
        f = [timeline.features(c, calibrate.CHIP) for c in est.calls]
        cfg = lecture_configs.Config(f"m{i}", "", None, (), {},
                                     calibrate.predict(f, truth), "synthetic")
        configs.append(cfg)
        feats[cfg.key] = f
    fitted = calibrate.fit(configs, feats)
    for cfg in configs:
        assert calibrate.predict(feats[cfg.key], fitted) == pytest.approx(cfg.measured_s,
                                                                          rel=1e-2)


def test_stored_constants_give_the_documented_fitted_times():
    doc = (ROOT / "docs/performance-model.md").read_text()
    documented = {}
    for line in doc.splitlines():
        m = re.match(r"^\| (.+?) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \| ([+-][0-9.]+) %", line)
        if m:
            documented[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    assert len(documented) == len(lecture_configs.MEASURED)
    import pallas_sim
    for cfg in lecture_configs.MEASURED:
        measured_ms, fitted_ms = documented[cfg.label]
        assert measured_ms == pytest.approx(cfg.measured_s * 1e3, abs=5e-4)
        est = pallas_sim.estimate(cfg.fn, *cfg.args, **cfg.kwargs)
        assert est.time_s * 1e3 == pytest.approx(fitted_ms, abs=2e-3), cfg.label
