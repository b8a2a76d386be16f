"""pallas_sim/_src/chips.toml: every value has a source, and the values the timeline model
uses are still the ones its calibration (docs/performance-model.md) was fitted with."""

from __future__ import annotations

import pytest

from pallas_sim._src.chips import ALIASES, CHIPS, FACTS, SOURCES

MiB = 1 << 20

#: What the model used before the data moved to chips.toml (must not change without a
#: recalibration: the graded tasks' thresholds are v7 predictions).
MODEL_VALUES = {
    "v5e": ({"bf16": 197e12, "int8": 393e12}, 819e9, 128 * MiB, 1 * MiB, 16 << 30, 128, 4, 1),
    "v6e": ({"bf16": 918e12, "int8": 1836e12, "fp8": 918e12}, 1638e9, 128 * MiB, 1 * MiB,
            32 * 10 ** 9, 256, 2, 1),
    "v7": ({"bf16": 1028.75e12, "fp8": 2057.5e12}, 3685.5e9, 64 * MiB, 1 * MiB,
           206 * 10 ** 9 // 2, 256, 2, 2),
}


@pytest.mark.parametrize("name", sorted(MODEL_VALUES))
def test_model_values_unchanged(name):
    chip = CHIPS[name]
    assert (chip.peak_flops, chip.hbm_bandwidth, chip.vmem_bytes, chip.smem_bytes,
            chip.hbm_bytes, chip.mxu_size, chip.mxus, chip.tensorcores) == MODEL_VALUES[name]


def test_every_value_has_a_known_source():
    for name, facts in FACTS.items():
        for key, fact in facts.items():
            assert fact.value is not None or fact.implied is not None, (name, key)
            if fact.value is not None:
                assert any(k in fact.source for k in SOURCES), (name, key, fact.source)
            if fact.published is not None:
                assert any(k in fact.published_source for k in SOURCES), (name, key)
            if fact.implied is not None:
                assert fact.implied_by and not fact.used, (name, key)


def test_aliases_and_published_v7_peak():
    assert ALIASES == {"ironwood": "v7", "tpu7x": "v7", "v7x": "v7", "trillium": "v6e",
                       "v5litepod": "v5e", "v5lite": "v5e"}
    bf16 = FACTS["v7"]["peak_bf16_flops"]
    assert bf16.value == 1028.75e12 and bf16.published == pytest.approx(1.155e15)
