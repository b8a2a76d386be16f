"""Real JAX Pallas, forced into interpret mode, spelled like ``pallas_sim``.

``from pallas_sim.backends.real_jax import jax, jnp, pl, pltpu`` gives the
real ``jax``, ``jax.numpy``, ``jax.experimental.pallas`` and
``jax.experimental.pallas.tpu``, except that ``pl.pallas_call`` and ``pl.kernel`` always run
in one of JAX's two CPU interpreters, whatever ``interpret=`` the code passes:

* ``"hlo"``: ``interpret=True``, the HLO interpreter (JAX's
  ``pallas_call`` discharged to plain XLA ops);
* ``"tpu"``: ``interpret=pltpu.InterpretParams(...)``, TPU interpret mode,
  which simulates HBM, VMEM, DMAs and semaphores and visits parallel grid axes
  in a random order (JAX 0.10.x, ``jax/_src/pallas/mosaic/interpret``).

Choose with :func:`set_mode` or the :func:`mode` context manager (default
"tpu", the one closer to the hardware).  Needs the ``pallas-lab[jax]`` extra;
importing this module without JAX raises ``ModuleNotFoundError``.

``pltpu.emit_pipeline`` asks ``pltpu.get_tpu_info()`` for the chip's tiling, which
fails on a CPU ("Unsupported TPU device kind: cpu"). Importing this module registers the
CPU device kind in JAX's own registry of chips (``tpu_info.registry``) as a single-core
TPU v5e, the chip pallas_sim's one core stands for, so pipelines run in both
interpreters; nothing else changes.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any, Literal

import jax
import jax.numpy as jnp
from jax.experimental import pallas as _pallas
from jax.experimental.pallas import tpu as pltpu

try:  # JAX 0.10.x keeps its chip table here; see the module docstring
    from jax._src.pallas.mosaic import tpu_info as _tpu_info

    _tpu_info.registry.setdefault(
        "cpu", lambda: _tpu_info.get_tpu_info_for_chip(_tpu_info.ChipVersion.TPU_V5E, 1))
except (ImportError, AttributeError):  # another JAX: pipelines fail as JAX says
    pass

Mode = Literal["hlo", "tpu"]
MODES: tuple[Mode, ...] = ("hlo", "tpu")

_state: dict[str, Any] = {"mode": "tpu", "params": {}}


def set_mode(name: Mode, **interpret_params: Any) -> None:
    """Choose the interpreter for every later ``pl.pallas_call``.

    Args:
      name: "hlo" (``interpret=True``) or "tpu" (``pltpu.InterpretParams``).
      interpret_params: fields of ``pltpu.InterpretParams`` for "tpu" mode,
        e.g. ``random_seed=3`` or ``uninitialized_memory="zero"``.

    Raises:
      ValueError: an unknown mode, or parameters given for "hlo".
    """
    if name not in MODES:
        raise ValueError(f"mode={name!r}: expected one of {MODES}")
    if name == "hlo" and interpret_params:
        raise ValueError("interpret=True takes no parameters; use mode 'tpu' for "
                         f"InterpretParams {sorted(interpret_params)}")
    _state["mode"], _state["params"] = name, dict(interpret_params)


def current_mode() -> Mode:
    """The interpreter ``pl.pallas_call`` uses now ("hlo" or "tpu")."""
    return _state["mode"]


@contextlib.contextmanager
def mode(name: Mode, **interpret_params: Any) -> Iterator[None]:
    """Set the interpreter mode for one block: :func:`set_mode`, then restore.

    Used as ``with mode("hlo"): ...``; ``name`` and ``interpret_params`` as
    :func:`set_mode`.
    """
    previous = (_state["mode"], _state["params"])
    set_mode(name, **interpret_params)
    try:
        yield
    finally:
        _state["mode"], _state["params"] = previous


def interpret_value() -> object:
    """What ``interpret=`` is forced to: ``True`` or ``pltpu.InterpretParams(...)``."""
    if _state["mode"] == "hlo":
        return True
    return pltpu.InterpretParams(**_state["params"])


def pallas_call(kernel: Callable[..., None], out_shape: object, **kwargs: Any
                ) -> Callable[..., Any]:
    """``jax.experimental.pallas.pallas_call`` with ``interpret`` forced.

    Takes and returns exactly what JAX's ``pallas_call`` does; the caller's
    ``interpret=`` is replaced by :func:`interpret_value` (JAX 0.10.x).
    """
    kwargs["interpret"] = interpret_value()
    return _pallas.pallas_call(kernel, out_shape, **kwargs)


_NO_BODY: Any = object()


def kernel(body: Any = _NO_BODY, out_type: object = (), **kwargs: Any) -> Any:
    """``jax.experimental.pallas.kernel`` with ``interpret`` forced, as :func:`pallas_call`
    (the interpreter in force when the kernel is made is the one it runs in)."""
    kwargs["interpret"] = interpret_value()
    if body is _NO_BODY:
        return _pallas.kernel(out_type=out_type, **kwargs)
    return _pallas.kernel(body, out_type, **kwargs)


class _PallasNamespace(types.ModuleType):
    """``jax.experimental.pallas`` with ``pallas_call`` and ``kernel`` replaced."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_pallas, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(_pallas)) | {"pallas_call", "kernel"})


pl = _PallasNamespace("pl", _pallas.__doc__)
pl.pallas_call = pallas_call  # type: ignore[attr-defined]
pl.kernel = kernel  # type: ignore[attr-defined]


def reset() -> None:
    """Clear TPU interpret mode's shared state after a kernel raised.

    JAX asks for ``pltpu.reset_tpu_interpret_mode_state()`` before the next
    call once a TPU-interpreted kernel has raised; harmless otherwise.
    """
    reset_fn = getattr(pltpu, "reset_tpu_interpret_mode_state", None)
    if reset_fn is not None:
        reset_fn()


__all__ = ["MODES", "Mode", "current_mode", "interpret_value", "jax", "jnp", "kernel", "mode",
           "pl", "pallas_call", "pltpu", "reset", "set_mode"]
