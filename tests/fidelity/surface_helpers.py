"""Run one expression on pallas_sim's JAX surface and on real JAX, and compare.

An expression is written once as ``lambda ns: ...`` against a namespace with
``jax``, ``jnp``, ``lax``, ``nn``, ``random``, ``pl`` and ``pltpu``; it runs
with pallas_sim's modules and with JAX's. Both must return the same tree of
values (same structure, shapes, dtypes; values within the dtype's tolerance,
NaN at the same places), or both must raise an exception of the same class
(TypeError and TypeError; the messages may differ).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from typing import Any

import jax as real_jax_module
import numpy as np

import pallas_sim
from pallas_sim import lax as sim_lax
from pallas_sim import nn as sim_nn
from pallas_sim import random as sim_random
from pallas_sim.backends import real_jax

SIM = types.SimpleNamespace(jax=pallas_sim.jax, jnp=pallas_sim.jnp, lax=sim_lax, nn=sim_nn,
                            random=sim_random, pl=pallas_sim.pl, pltpu=pallas_sim.pltpu)
JAX = types.SimpleNamespace(jax=real_jax.jax, jnp=real_jax.jnp, lax=real_jax_module.lax,
                            nn=real_jax_module.nn, random=real_jax_module.random,
                            pl=real_jax.pl, pltpu=real_jax.pltpu)

TOLERANCES = {"float32": 2e-6, "bfloat16": 1e-2, "float16": 1e-3, "complex64": 2e-6}

Expr = Callable[[types.SimpleNamespace], Any]


def run(expr: Expr, ns: types.SimpleNamespace) -> tuple[Any, BaseException | None]:
    """``expr(ns)``: (value, None) or (None, the exception)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return expr(ns), None
        except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
            return None, exc


def _leaves(value: Any, ns: types.SimpleNamespace) -> tuple[list[Any], str]:
    leaves, treedef = ns.jax.tree.flatten(value)
    return leaves, str(treedef)


def _as_numpy(leaf: Any) -> np.ndarray:
    return np.asarray(leaf)


def _error_kind(exc: BaseException) -> str:
    for kind in (IndexError, TypeError, ValueError, AttributeError, OverflowError,
                 ZeroDivisionError):
        if isinstance(exc, kind):
            return kind.__name__
    return type(exc).__name__


def compare(expr: Expr, *, rtol: float | None = None, exact: bool = False,
            check_values: bool = True) -> Any:
    """Run ``expr`` on both backends and assert they agree; returns pallas_sim's value.

    ``exact`` compares floats bit for bit; ``check_values=False`` compares only
    structure, shapes and dtypes (for random numbers, whose bits differ by design).
    """
    sim_value, sim_error = run(expr, SIM)
    jax_value, jax_error = run(expr, JAX)
    if sim_error is not None or jax_error is not None:
        assert sim_error is not None and jax_error is not None, (
            f"only one backend raised: pallas_sim {sim_error!r}, JAX {jax_error!r}")
        assert _error_kind(sim_error) == _error_kind(jax_error), (
            f"pallas_sim raised {type(sim_error).__name__}: {sim_error}\n"
            f"JAX raised {type(jax_error).__name__}: {jax_error}")
        return sim_error
    sim_leaves, sim_tree = _leaves(sim_value, SIM)
    jax_leaves, jax_tree = _leaves(jax_value, JAX)
    assert sim_tree == jax_tree, f"structures differ: pallas_sim {sim_tree}, JAX {jax_tree}"
    for index, (s, j) in enumerate(zip(sim_leaves, jax_leaves, strict=True)):
        if isinstance(j, str | type(None)):
            assert s == j, f"leaf {index}: pallas_sim {s!r}, JAX {j!r}"
            continue
        if str(getattr(j, "dtype", "")).startswith("key<"):  # typed PRNG keys
            assert (s.shape, str(s.dtype)) == (j.shape, str(j.dtype)), (
                f"leaf {index}: key array {s.shape} {s.dtype}, JAX {j.shape} {j.dtype}")
            continue
        got, want = _as_numpy(s), _as_numpy(j)
        assert got.shape == want.shape, f"leaf {index}: shape {got.shape} != JAX {want.shape}"
        assert str(got.dtype) == str(want.dtype), (
            f"leaf {index}: dtype {got.dtype} != JAX {want.dtype}")
        if not check_values:
            continue
        if want.dtype.kind in "biu" or exact:
            assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"), (
                f"leaf {index}: pallas_sim {got} != JAX {want}")
            continue
        tol = rtol if rtol is not None else TOLERANCES.get(str(want.dtype), 2e-6)
        g, w = got.astype(np.complex128 if want.dtype.kind == "c" else np.float64), \
            want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
        assert np.array_equal(np.isnan(g), np.isnan(w)), (
            f"leaf {index}: NaN at different places: pallas_sim {got}, JAX {want}")
        assert np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True), (
            f"leaf {index}: pallas_sim {got} != JAX {want} (tolerance {tol})")
    return sim_value
