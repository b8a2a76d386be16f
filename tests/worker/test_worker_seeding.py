"""Every source of randomness a submission can reach in the worker is seeded per (file,
check, call): an unseeded generator draws the same on every grade."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from graders.worker.client import LOAD_CHECK, Worker, call_seed

DRAWS = """
import numpy as np

AT_IMPORT = float(np.random.default_rng().random())


def draw():
    return [float(np.random.default_rng().random()), float(np.random.default_rng().random()),
            float(np.random.rand()), float(np.random.RandomState().rand()),
            int(np.random.default_rng().integers(1 << 62))]


def at_import():
    return AT_IMPORT
"""


def test_a_seed_names_the_file_the_check_and_the_call() -> None:
    a, b = b"\x01" * 32, b"\x02" * 32
    seeds = {call_seed(digest, check, index) for digest in (a, b)
             for check in ("", LOAD_CHECK, "a1/1.5/values", "a1/1.5/trace")
             for index in (0, 1, 2)}
    assert len(seeds) == 24, "every (file, check, call) has its own seed"
    assert call_seed(a, "a1/1.5/values", 1) == call_seed(a, "a1/1.5/values", 1)
    assert all(0 <= seed < 1 << 64 for seed in seeds)


def test_unseeded_numpy_generators_draw_what_the_seed_says(
        make_submission: Callable[..., Path]) -> None:
    path = make_submission(DRAWS)
    with Worker(path, timeout=20.0) as first:
        one = first.call("draw", seed=1).value
        assert first.call("draw", seed=1).value == one, "the same seed, the same draws"
        other = first.call("draw", seed=2).value
        imported = first.call("at_import").value
    assert len(set(one)) == len(one), "generators made in one call draw different numbers"
    assert all(x != y for x, y in zip(one, other, strict=True)), (one, other)
    with Worker(path, timeout=20.0) as second:
        assert second.call("draw", seed=1).value == one, "another worker, the same draws"
        assert second.call("at_import").value == imported, "the import is seeded too"
