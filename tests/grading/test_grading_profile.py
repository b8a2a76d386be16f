"""The grading profile's simulator sanitizers: the worker runs student code
with ``shuffle_parallel`` on (pallas-sim.md item 1), with the same seed as the
grader's own reference runs, so both see the same order."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest

import pallas_sim
from graders.grading import GRADING_SIM_OPTIONS
from graders.worker.client import Worker
from pallas_sim.grid_order import grid_steps

SUBMISSION = textwrap.dedent('''
    import numpy as np
    from pallas_sim import jax, jnp, pl, pltpu

    def visiting_order(grid, semantics):
        seen = []

        def kernel(o_ref):
            seen.append([int(pl.program_id(a)) for a in range(len(grid))])
            o_ref[...] = jnp.zeros_like(o_ref)

        pl.pallas_call(kernel, grid=tuple(grid),
                       out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       compiler_params=pltpu.CompilerParams(
                           dimension_semantics=tuple(semantics)))()
        return np.asarray(seen, np.int64)
''')


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    folder = tmp_path_factory.mktemp("profile")
    (folder / "a1_pallas_basics.py").write_text(SUBMISSION)
    with Worker(folder / "a1_pallas_basics.py", timeout=10.0) as w:
        assert w.load_result is not None and w.load_result.ok, w.load_result
        yield w


def test_the_grading_profile_shuffles_parallel_axes_with_a_fixed_seed():
    assert GRADING_SIM_OPTIONS == {"shuffle_parallel": True, "shuffle_seed": 0}


@pytest.mark.parametrize("grid, semantics", [
    ((16, 2), ("parallel", "arbitrary")),
    ((4, 5, 3), ("parallel", "parallel", "arbitrary")),
])
def test_the_worker_visits_parallel_axes_in_the_grading_profiles_order(worker, grid, semantics):
    got = [tuple(r) for r in worker.call("visiting_order", (list(grid), list(semantics))
                                          ).value.tolist()]
    plain = list(itertools.product(*map(range, grid)))
    assert got != plain, "student code in the worker must not run in plain row-major order"
    assert got == grid_steps(grid, semantics, shuffle=True,
                             seed=GRADING_SIM_OPTIONS["shuffle_seed"])
    with pallas_sim.config(**GRADING_SIM_OPTIONS):
        seen = []

        def kernel(o_ref):
            seen.append(tuple(int(pallas_sim.pl.program_id(a)) for a in range(len(grid))))

        pallas_sim.pl.pallas_call(
            kernel, grid=grid, out_shape=pallas_sim.jax.ShapeDtypeStruct((8, 128), np.float32),
            compiler_params=pallas_sim.pltpu.CompilerParams(dimension_semantics=semantics))()
    assert seen == got, "the grader's reference runs see the same order as the worker"
