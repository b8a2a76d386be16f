"""Run one kernel, written once against a namespace ``(pl, pltpu, jax, jnp)``, on
pallas_sim and on real JAX in both interpreters, and compare the outcomes.

``outcomes(build)`` gives ``{"sim": ..., "hlo": ..., "tpu": ...}``, each an
:class:`Outcome` (a tree of NumPy arrays, or the exception). ``assert_same_values``
checks that the backends agree on the numbers (NaN at the same places, poison
included); ``assert_refused`` that they refuse, each with the expected kind of error.
"""

from __future__ import annotations

import dataclasses
import types
import warnings
from collections.abc import Callable
from typing import Any

import jax as real_jax_module
import numpy as np

import pallas_sim
from pallas_sim.backends import real_jax

SIM = types.SimpleNamespace(pl=pallas_sim.pl, pltpu=pallas_sim.pltpu, jax=pallas_sim.jax,
                            jnp=pallas_sim.jnp)
JAX = types.SimpleNamespace(pl=real_jax.pl, pltpu=real_jax.pltpu, jax=real_jax.jax,
                            jnp=real_jax.jnp)

Build = Callable[[types.SimpleNamespace], Any]


@dataclasses.dataclass
class Outcome:
    """What one backend did: ``value`` (a tree of NumPy arrays) or ``error``."""

    value: Any = None
    error: BaseException | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {str(self.error)[:300]}"
        return f"returned {_summary(self.value)}"


def _summary(value: Any) -> str:
    leaves = real_jax_module.tree.leaves(value)
    return ", ".join(f"{a.dtype}{list(a.shape)}" for a in leaves) or repr(value)


def _numpy(value: Any) -> Any:
    return real_jax_module.tree.map(lambda a: np.asarray(a), value)


def run(build: Build, backend: str) -> Outcome:
    """``build`` on "sim", or on JAX in interpreter "hlo" or "tpu"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if backend == "sim":
                return Outcome(_numpy(build(SIM)))
            with real_jax.mode(backend):  # type: ignore[arg-type]
                return Outcome(_numpy(build(JAX)))
        except Exception as exc:  # noqa: BLE001 - the error is what we compare
            if backend != "sim":
                real_jax.reset()
            return Outcome(error=exc)


def outcomes(build: Build, backends: tuple[str, ...] = ("sim", *real_jax.MODES)
             ) -> dict[str, Outcome]:
    """``build`` run on each backend."""
    return {backend: run(build, backend) for backend in backends}


def assert_same_values(build: Build, modes: tuple[str, ...] = real_jax.MODES) -> Any:
    """pallas_sim and JAX in ``modes`` return the same tree of values (float32 within
    1e-6 relative, NaN at the same places, integers exactly); returns pallas_sim's."""
    got = outcomes(build, ("sim", *modes))
    for backend, outcome in got.items():
        assert outcome.error is None, f"{backend} {outcome}"
    sim = got["sim"].value
    sim_leaves, sim_def = real_jax_module.tree.flatten(sim)
    for mode in modes:
        leaves, treedef = real_jax_module.tree.flatten(got[mode].value)
        assert str(treedef) == str(sim_def), (
            f"JAX {mode} returned the tree {treedef}, pallas_sim {sim_def}")
        for a, b in zip(sim_leaves, leaves, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype, (
                f"JAX {mode}: {b.dtype}{list(b.shape)}, pallas_sim {a.dtype}{list(a.shape)}")
            np.testing.assert_array_equal(np.isnan(a) if a.dtype.kind == "f" else a == a,
                                          np.isnan(b) if b.dtype.kind == "f" else b == b,
                                          err_msg=f"NaN (poison) places differ from JAX {mode}")
            np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True,
                                       err_msg=f"values differ from JAX {mode}")
    return sim


def assert_refused(build: Build, sim_error: type[BaseException] | tuple[type, ...],
                   jax_errors: dict[str, str], match: str = "") -> dict[str, Outcome]:
    """pallas_sim raises ``sim_error`` (its message containing ``match``), and JAX in each
    mode of ``jax_errors`` raises an error whose ``"Type: message"`` text contains the
    given string (a mode left out is not checked: say why in the test)."""
    got = outcomes(build, ("sim", *jax_errors))
    assert isinstance(got["sim"].error, sim_error), f"pallas_sim {got['sim']}"
    assert match in str(got["sim"].error), f"pallas_sim's message lacks {match!r}: {got['sim']}"
    for mode, expected in jax_errors.items():
        error = got[mode].error
        text = f"{type(error).__name__}: {error}"
        assert error is not None and expected in text, f"JAX {mode} {got[mode]}"
    return got
