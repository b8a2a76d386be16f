"""Each lab's solution and correct corpus variants run at the lecture sizes of its
performance tasks: Task 3.5's matmul, Task 4.8's flash layer and Task
5.7's Splash masks, through ``pallas_sim.estimate`` (abstract runs), at the blocks the
file's own chooser returns, without error and with exactly the FLOPs the problem needs.

The sizes and masks are the reference's ``PERFORMANCE_*`` constants, the calls are those of
the labs' ``choose_*`` harnesses (the student's own wrapper, bf16 shapes). Correct code used
to fail here only when it spelled a product ``jax.lax.dot_general`` (the lecture's §5.2
spelling: an int32 overflow in its op accounting), which the ``dot_general`` variant of
each lab (``tests/corpus/variants/<stem>/dot_general.py``) pins.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import pallas_sim
from pallas_sim import jax, jnp
from pallas_sim._src.config import _override as sim_options
from reference import a3_matmul as ref3
from reference import a4_flash_attention as ref4
from reference import a5_splash_attention as ref5
from tests.corpus.everything import VARIANTS
from tests.helpers.labs import stem_of

ROOT = Path(__file__).resolve().parents[2]
STEMS = (stem_of("a3"), stem_of("a4"), stem_of("a5"))


def _source(stem: str, name: str) -> str:
    """The solution (``name="solution"``) or a correct variant, as the corpus builds it."""
    if name == "solution":
        return (ROOT / "solutions" / f"{stem}.py").read_text(encoding="utf-8")
    variant = next(v for v in VARIANTS if (v.stem, v.name) == (stem, name))
    if not variant.edits:
        return (ROOT / "tests" / "corpus" / "variants" / stem / f"{name}.py").read_text(
            encoding="utf-8")
    source = _source(stem, "solution")
    for old, new in variant.edits:
        assert source.count(old) == 1, (stem, name, old)
        source = source.replace(old, new)
    return source


def _load(stem: str, name: str) -> ModuleType:
    module_name = f"_lecture_size_{stem}_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_loader(module_name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and NamedTuples look their module up
    try:
        exec(compile(_source(stem, name), f"{stem}/{name}.py", "exec"), module.__dict__)
    finally:
        del sys.modules[module_name]
    return module


CASES = [(stem, "solution") for stem in STEMS] + sorted(
    (v.stem, v.name) for v in VARIANTS if v.stem in STEMS)


def test_each_lab_has_a_dot_general_variant():
    assert {stem for stem, name in CASES if name == "dot_general"} == set(STEMS)


def _bf16(shape: tuple[int, ...]) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(tuple(shape), jnp.bfloat16)


def _run_a3(sub: ModuleType) -> None:
    blocks = tuple(sub.choose_matmul_blocks())
    (m, k), n = ref3.PERFORMANCE_X_SHAPE, ref3.PERFORMANCE_Y_SHAPE[1]
    est = pallas_sim.estimate(sub.matmul, _bf16(ref3.PERFORMANCE_X_SHAPE),
                              _bf16(ref3.PERFORMANCE_Y_SHAPE), block_shape=blocks,
                              chip=ref3.PERFORMANCE_CHIP)
    assert sum(line.mxu_flops for line in est.timelines) == 2 * m * n * k


def _run_a4(sub: ModuleType) -> None:
    block_q, block_kv, constant = sub.choose_flash_config()
    heads, length, d = ref4.PERFORMANCE_Q_SHAPE
    dv = ref4.PERFORMANCE_V_SHAPE[-1]
    q = _bf16(ref4.PERFORMANCE_Q_SHAPE)
    est = pallas_sim.estimate(sub.flash_attention, q, q, _bf16(ref4.PERFORMANCE_V_SHAPE),
                              sm_scale=float(1 / np.sqrt(d)), block_q=block_q,
                              block_kv=block_kv, max_logit_const=constant,
                              chip=ref4.PERFORMANCE_CHIP)
    # non-causal: q @ kᵀ and p @ v over every (query, key) pair
    assert sum(line.mxu_flops for line in est.timelines) == 2 * heads * length ** 2 * (d + dv)


def _run_a5(sub: ModuleType) -> None:
    heads, length = ref5.PERFORMANCE_HEADS, ref5.PERFORMANCE_LENGTH
    d, dv = ref5.PERFORMANCE_HEAD_DIM, ref5.PERFORMANCE_VALUE_DIM
    q, v = _bf16((heads, length, d)), _bf16((heads, length, dv))
    for kind in ref5.PERFORMANCE_MASKS:
        block_q, block_kv = sub.choose_splash_blocks(kind)
        ref_info = ref5.performance_mask_info(kind, block_q, block_kv)
        info = sub.MaskInfo(*ref_info)
        est = pallas_sim.estimate(sub.splash_attention, q, q, v, info,
                                  sm_scale=float(1 / np.sqrt(d)), chip=ref5.PERFORMANCE_CHIP)
        tiles = int(np.count_nonzero(np.asarray(ref_info.block_mask)))
        want = 2 * heads * tiles * block_q * block_kv * (d + dv)
        assert sum(line.mxu_flops for line in est.timelines) == want, kind
        assert want > 2 ** 31 and math.isfinite(est.time_s)


RUNS = {stem_of("a3"): _run_a3, stem_of("a4"): _run_a4, stem_of("a5"): _run_a5}


@pytest.mark.parametrize(("stem", "name"), CASES, ids=[f"{s[:2]}-{n}" for s, n in CASES])
def test_correct_code_runs_at_the_lecture_size_of_its_performance_task(stem: str,
                                                                       name: str) -> None:
    sub = _load(stem, name)
    with sim_options(shuffle_parallel=False):  # the harnesses' setting: in grid order
        RUNS[stem](sub)
