"""The abstract run on the fidelity corpus: every kernel of public
Pallas material that runs on pallas_sim, run again through ``pallas_sim.estimate`` with
its real inputs (so every buffer is shape-only but the index maps and scalar-prefetch
tables see the real values), records the same trace and the same op counts."""

from __future__ import annotations

import warnings

import pytest
from corpus_cases import SIM, load_corpus

import pallas_sim

CASES = [(module, case) for module in load_corpus() for case in module.CASES]


@pytest.mark.parametrize("module,case", CASES,
                         ids=[f"{m.__name__.split('_', 2)[-1]}-{c.name}" for m, c in CASES])
def test_abstract_run_records_the_real_trace(module, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pallas_sim.trace() as real:  # every corpus case runs on pallas_sim
            case.build(SIM)
        est = pallas_sim.estimate(lambda: case.build(SIM))
    assert len(est.calls) == len(real.calls) >= 1
    for abstract, recorded in zip(est.calls, real.calls, strict=True):
        assert abstract == recorded
        assert abstract.ops == recorded.ops
        assert abstract.ops.num_steps == recorded.num_steps
