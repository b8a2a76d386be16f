"""The grading profile's simulator sanitizers: the worker runs student code
with ``shuffle_parallel`` on (docs/pallas-sim.md rule 1), with the same seed as the
grader's own reference runs, so both see the same order."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest

import pallas_sim
from graders.grading.grade import GRADING_SIM_OPTIONS
from graders.worker.client import Worker
from pallas_sim._src.grid_order import grid_steps
from pallas_sim._src.values import concrete

SUBMISSION = textwrap.dedent('''
    import numpy as np
    import pallas_sim
    from pallas_sim import jax, jnp, pl, pltpu

    def visiting_order(grid, semantics):
        # Each grid step writes its own output block; the trace lists the blocks in the
        # order the steps ran (a kernel cannot record traced program ids itself).
        strides = [1] * len(grid)
        for a in range(len(grid) - 2, -1, -1):
            strides[a] = strides[a + 1] * grid[a + 1]
        steps = strides[0] * grid[0]

        def kernel(o_ref):
            o_ref[...] = jnp.zeros_like(o_ref)

        spec = pl.BlockSpec((8, 128), lambda *ids: (sum(i * s for i, s in zip(ids, strides)), 0))
        with pallas_sim.trace() as t:
            pl.pallas_call(kernel, grid=tuple(grid), out_specs=spec,
                           out_shape=jax.ShapeDtypeStruct((8 * steps, 128), jnp.float32),
                           compiler_params=pltpu.CompilerParams(
                               dimension_semantics=tuple(semantics)))()
        flat = t.calls[0].operands[0].block_indices[:, 0]
        return np.asarray([[f // s % n for s, n in zip(strides, grid)] for f in flat], np.int64)
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
            seen.append(tuple(int(concrete(pallas_sim.pl.program_id(a))) for a in range(len(grid))))

        pallas_sim.pl.pallas_call(
            kernel, grid=grid, out_shape=pallas_sim.jax.ShapeDtypeStruct((8, 128), np.float32),
            compiler_params=pallas_sim.pltpu.CompilerParams(dimension_semantics=semantics))()
    assert seen == got, "the grader's reference runs see the same order as the worker"
