"""The fidelity corpus's machinery: what a case is, how the corpus is loaded, and how
pallas_sim's result is compared with JAX's.

A corpus module (``tests/fidelity/corpus/*.py``) is the project's own version of the
kernels of one piece of public Pallas material. Each kernel and its wrapper are written
once as ``build(ns)`` against a namespace ``ns`` with ``pl``, ``pltpu``, ``jax`` and
``jnp`` (pallas_sim's or JAX's), exactly as a kernel file would spell them after
``from pallas_sim import jax, jnp, pl, pltpu``; ``@corpus_case(...)`` registers it in
the module's ``CASES`` with the tolerance its comparison uses. Inputs come from NumPy
with fixed seeds, so both backends see the same numbers.

The directory has no ``__init__.py`` on purpose: ``tests/corpus`` is already the
package ``corpus``, so :func:`load_corpus` loads the modules by path.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

import pallas_sim
from pallas_sim.backends import real_jax

#: Tolerances (``rtol`` = ``atol``) a case states. Integers and booleans always compare
#: exactly; these apply to floats.
EXACT = 0.0
F32 = 1e-5  # float32 elementwise work and short reductions
F32_MATMUL = 1e-4  # float32 products summed over 128-256 terms in different orders
BF16 = 2e-2  # bfloat16 results: one bf16 ulp is 2**-8 of the value

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"

SIM = types.SimpleNamespace(pl=pallas_sim.pl, pltpu=pallas_sim.pltpu, jax=pallas_sim.jax,
                            jnp=pallas_sim.jnp)
JAX = types.SimpleNamespace(pl=real_jax.pl, pltpu=real_jax.pltpu, jax=real_jax.jax,
                            jnp=real_jax.jnp)

Build = Callable[[types.SimpleNamespace], Any]


@dataclasses.dataclass(frozen=True)
class Case:
    """One corpus kernel with its wrapper.

    Attributes:
      name: the build function's name, unique in its module.
      build: ``build(ns)`` runs the wrapper on fixed inputs and returns its output(s).
      tolerance: ``rtol`` and ``atol`` for float outputs (integers compare exactly).
      exercises: what the case exercises, one line for docs/fidelity.md.
    """

    name: str
    build: Build
    tolerance: float
    exercises: str


def corpus_case(cases: list[Case], *, tolerance: float, exercises: str
                ) -> Callable[[Build], Build]:
    """A decorator that adds ``build`` to ``cases`` (a module's ``CASES``)."""
    def register(build: Build) -> Build:
        cases.append(Case(build.__name__, build, tolerance, exercises))
        return build
    return register


def load_corpus() -> list[types.ModuleType]:
    """Every module of ``tests/fidelity/corpus``, loaded once, sorted by file name."""
    modules = []
    for path in sorted(CORPUS_DIR.glob("*.py")):
        name = f"fidelity_corpus_{path.stem}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None, path
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        modules.append(module)
    return modules


def short_name(module: types.ModuleType) -> str:
    """``quickstart`` for the module loaded from ``corpus/quickstart.py``."""
    return module.__name__.removeprefix("fidelity_corpus_")


def run_sim(build: Build) -> Any:
    """``build`` on pallas_sim, warnings silenced, outputs as NumPy (None kept)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _as_numpy(build(SIM))


def run_jax(build: Build, mode: real_jax.Mode) -> Any:
    """``build`` on real JAX in interpreter ``mode``, outputs as NumPy (None kept).

    Raises:
      Exception: whatever JAX raised (TPU interpret mode's state is reset first).
    """
    with warnings.catch_warnings(), real_jax.mode(mode):
        warnings.simplefilter("ignore")
        try:
            return _as_numpy(build(JAX))
        except Exception:
            real_jax.reset()
            raise


def outcome(build: Build, mode: real_jax.Mode | None) -> tuple[Any, BaseException | None]:
    """``build`` on pallas_sim (``mode`` None) or on JAX: (result, None) or (None, error)."""
    try:
        return (run_sim(build) if mode is None else run_jax(build, mode)), None
    except Exception as exc:  # noqa: BLE001 - the error is the outcome
        return None, exc


def _as_numpy(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return [_as_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in sorted(value.items())}
    return np.asarray(value)


def _is_float(dtype: np.dtype) -> bool:
    """float16/32/64, complex, and ml_dtypes' floats (bfloat16); not ml_dtypes' int4."""
    if dtype.kind in "fc":
        return True
    try:
        ml_dtypes.finfo(dtype)
    except ValueError:
        return False
    return True


def _leaves(value: Any, path: str = "out") -> list[tuple[str, Any]]:
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}[{k!r}]")]
    return [(path, value)]


def assert_agree(sim: Any, jax_value: Any, tolerance: float, where: str) -> None:
    """pallas_sim's outputs equal JAX's: same structure, shapes and dtypes; floats within
    ``tolerance`` (``rtol`` = ``atol``) with NaN at the same places; the rest exactly."""
    sim_leaves, jax_leaves = _leaves(sim), _leaves(jax_value)
    assert [p for p, _ in sim_leaves] == [p for p, _ in jax_leaves], (
        f"{where}: pallas_sim returned {[p for p, _ in sim_leaves]}, JAX "
        f"{[p for p, _ in jax_leaves]}")
    for (path, got), (_, want) in zip(sim_leaves, jax_leaves, strict=True):
        if want is None or got is None:
            assert got is None and want is None, f"{where} {path}: {got!r} vs JAX {want!r}"
            continue
        assert got.shape == want.shape, f"{where} {path}: shape {got.shape}, JAX {want.shape}"
        assert got.dtype == want.dtype, f"{where} {path}: dtype {got.dtype}, JAX {want.dtype}"
        if not _is_float(want.dtype) or tolerance == EXACT:
            np.testing.assert_array_equal(got, want, err_msg=f"{where} {path}")
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=(
            f"{where} {path}: NaN (poison) at different places"))
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance, equal_nan=True,
                                   err_msg=f"{where} {path} (tolerance {tolerance})")
