"""``pallas_sim.estimate``: run a function's pallas_calls on shapes only and predict their
TPU time.

The abstract run executes the wrapper, the grid loop, the index maps and every kernel
body exactly as a real run does, but on :class:`~pallas_sim._src.abstract.AbstractArray`
values (shape and dtype, no data, no arithmetic), so it records the same trace — grid,
block indices per step, DMAs, HBM bytes, VMEM, op counts — in time proportional to the
number of grid steps and kernel ops, not to the arrays' sizes. The timeline model
(:mod:`pallas_sim._src.timeline`) then turns each call's trace into predicted time on a chip
(:mod:`pallas_sim._src.chips`).

Source: JAX's ``jax.eval_shape`` (abstract evaluation on ``jax.ShapeDtypeStruct``), and
lecture §3-§6 for what the counts mean.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

from . import tracing
from .abstract import AbstractArray, abstract_mode, from_struct
from .chips import Chip, get_chip
from .memory import on_chip
from .pytrees import flatten
from .specs import ShapeDtypeStruct


@dataclasses.dataclass
class Estimate:
    """What :func:`estimate` found.

    Attributes:
      calls: one :class:`~pallas_sim.CallTrace` per pallas_call, in call order (with
        per-step op counts in ``call.ops``).
      outputs: the function's result with every array replaced by a
        ``jax.ShapeDtypeStruct``.
      chip: the :class:`~pallas_sim._src.chips.Chip` predictions are for.
      timelines: one :class:`~pallas_sim._src.timeline.Timeline` per call (predicted time,
        MFU, HBM utilisation, per-step bound, VMEM peak vs limit).
      lowering_problems: one line per operand whose block shape a TPU compile refuses
        (:mod:`pallas_sim._src.mosaic_rules`), naming the call, operand and rule; empty
        when every block would compile.
    """

    calls: list[tracing.CallTrace]
    outputs: Any
    chip: Chip
    timelines: list[Any] = dataclasses.field(default_factory=list)
    lowering_problems: list[str] = dataclasses.field(default_factory=list)

    def __repr__(self) -> str:
        """One line per call instead of every step's op counts: the chip, the predicted
        total, then per call its name, grid, time, grid steps, the bound of most steps, MFU,
        HBM utilisation and VMEM peak (the full records stay in ``calls`` and
        ``timelines``)."""
        lines = [f"Estimate(chip={self.chip.name}, calls={len(self.calls)}, "
                 f"time={self.time_s * 1e3:.4g} ms)"]
        for i, call in enumerate(self.calls):
            line = f"  {call.name} grid={tuple(call.grid)}"
            if i < len(self.timelines):
                t = self.timelines[i]
                line += (f": {t.time_s * 1e3:.4g} ms, {t.num_steps} steps, "
                         f"{t.dominant_bound}-bound, MFU {t.mfu:.1%}, HBM "
                         f"{t.hbm_utilisation:.1%}, VMEM {t.vmem_bytes / 2**20:.3g} of "
                         f"{t.vmem_limit_bytes / 2**20:.3g} MiB")
            lines.append(line)
        lines += [f"  a TPU compile would refuse {p}" for p in self.lowering_problems]
        return "\n".join(lines)

    @property
    def last(self) -> tracing.CallTrace:
        """The last pallas_call's trace.

        Raises:
          IndexError: the function made no pallas_call.
        """
        return self.calls[-1]

    @property
    def time_s(self) -> float:
        """Predicted seconds for all calls, one after another."""
        return sum(t.time_s for t in self.timelines)


def _to_abstract(tree: Any) -> Any:
    leaves, treedef = flatten(tree)
    return treedef.unflatten([from_struct(x) for x in leaves])


def _to_structs(tree: Any) -> Any:
    leaves, treedef = flatten(tree)
    return treedef.unflatten([ShapeDtypeStruct(x.shape, x.dtype)
                              if isinstance(x, AbstractArray) else x for x in leaves])


def estimate(fn: Callable[..., Any], *args: Any, chip: str | Chip | None = "v7",
             cores: int = 1, lowering: str = "record", **kwargs: Any) -> Estimate:
    """Run ``fn(*args, **kwargs)`` on shapes only and predict the time of its
    pallas_calls.

    Args:
      fn: a function that calls ``pl.pallas_call`` (a student's wrapper, say).
      *args, **kwargs: its arguments; every ``jax.ShapeDtypeStruct`` (pallas_sim's or
        JAX's) among their leaves becomes a shape-only array. Pass small integer tables
        that index maps or ``pl.when`` read (scalar prefetch, Splash's MaskInfo) as real
        arrays: the abstract run uses their values as a real run does.
      chip: "v5e", "v6e" or "v7" (Ironwood, one TensorCore; the default) or a
        :class:`~pallas_sim._src.chips.Chip`.
      cores: TensorCores the parallel grid axes are split over (at most the chip's).
      lowering: what to do with a block shape the TPU compiler (Mosaic) refuses though
        interpret mode runs it (:mod:`pallas_sim._src.mosaic_rules`: the (8, 128) tiling
        of the last two block dimensions, 1-D blocks, whole-array ``pl.ANY`` operands):
        "record" (the default: listed in ``Estimate.lowering_problems``), "warn" (also a
        ``UserWarning`` per problem) or "refuse" (raise ``MosaicLoweringError``, a
        ``ValueError`` as JAX's lowering raises, naming the rule).

    Returns:
      An :class:`Estimate`: the calls' traces (the same a real run records) and one
      predicted timeline per call.

    Raises:
      UnknownChipError: an unknown chip (the message lists the known ones).
      MosaicLoweringError: with ``lowering="refuse"``, a block shape a TPU compile refuses.
      AbstractValueError: code that needs a value the abstract run does not have
        (Python control flow on loaded data, ``pl.when`` on it, a data-dependent ref
        index); the message names the file and line.
      VmemOOMError, BlockIndexError, ValueError, ...: what a real run raises for the same
        shapes, with the same messages; the VMEM bound is the chip's (a
        ``vmem_limit_bytes`` above ``chip``'s VMEM raises ``VmemOOMError``, as a compile
        for that chip does, and one up to it is allowed: 128 MiB on v5e and v6e).
    """
    if lowering not in ("record", "warn", "refuse"):
        raise ValueError(f"lowering={lowering!r}: use 'record', 'warn' or 'refuse'")
    the_chip = get_chip(chip)
    if not 1 <= cores <= the_chip.tensorcores:
        raise ValueError(f"cores={cores}: {the_chip.name} has {the_chip.tensorcores} "
                         f"TensorCore(s) per chip")
    a_args = _to_abstract(args)
    a_kwargs = _to_abstract(kwargs)
    outer = tracing._ACTIVE[:]  # an abstract run is not a real call: outer traces skip it
    tracing._ACTIVE.clear()
    try:
        with abstract_mode(), on_chip(the_chip.name, the_chip.vmem_bytes), \
                tracing.trace() as t:
            out = fn(*a_args, **a_kwargs)
    finally:
        tracing._ACTIVE[:] = outer
    result = Estimate(calls=list(t.calls), outputs=_to_structs(out), chip=the_chip)
    from . import mosaic_rules

    result.lowering_problems = [p for c in result.calls for p in mosaic_rules.call_problems(c)]
    if result.lowering_problems and lowering == "refuse":
        raise mosaic_rules.MosaicLoweringError(
            "a TPU compile would refuse this kernel (interpret mode runs it): "
            + "; ".join(result.lowering_problems))
    if lowering == "warn":
        for problem in result.lowering_problems:
            warnings.warn(f"a TPU compile would refuse {problem}", UserWarning, stacklevel=2)
    from . import timeline

    result.timelines = [timeline.predict(c, the_chip, cores=cores) for c in result.calls]
    return result
