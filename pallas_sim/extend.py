"""pallas_sim's trusted surface: internal, for the grader, the labs' harnesses, the hidden
reference and the benchmarks, never for submissions.

As ``jax.extend`` is to JAX, this module is the one named place where trusted code reaches
what the simulator keeps under ``pallas_sim._src``. Graders, harnesses, ``reference/`` and
``bench/`` import from here, never from ``pallas_sim._src`` or an underscored name; the
submission policy refuses ``pallas_sim.extend`` (as it refuses ``pallas_sim._src``) both
when it checks a file and when the worker runs one. Each name is the object of the
internal module, re-exported unchanged:

Options and their lock (``pallas_sim._src.config``)
    ``Options`` -- the simulator's options (sanitizers, memory, chip).
    ``GRADING_SANITIZERS`` -- the sanitizer settings the grader and the self-check grade
    under (one record for both).
    ``sim_options`` -- a context manager that overrides options for its block and
    yields the :class:`Options` in force (``_override``).
    ``lock_sim_options`` -- freezes the options for the rest of the process, as the
    worker does before it runs a submission (``_lock``).

Tracing (``pallas_sim._src.tracing``, ``pallas_sim._src.values``)
    ``CallTrace`` -- the record of one ``pallas_call`` (grid steps, DMAs, op counts).
    ``untraced`` -- a context manager under which calls are not recorded (the
    harnesses' own set-up work, ``_untraced``).
    ``traced`` -- wraps an array as a kernel value whose ops are counted.
    ``concrete`` -- the plain NumPy array (or pytree of them) behind kernel values.

Cost model and chips (``pallas_sim._src.timeline``, ``chips``, ``op_accounting``)
    ``timeline`` -- the step-cost model module (``Calibration``, ``CALIBRATION``,
    ``StepFeatures``, ``features``, ``simulate``, ``step_work``, ``predict``).
    ``Timeline`` and ``CALIBRATION`` -- its timeline and the fitted calibration.
    ``Chip``, ``CHIPS``, ``get_chip``, ``UnknownChipError`` -- the TPU generations the
    simulator models and their lookup.
    ``OpCounts`` -- the per-kind operation counts of a trace.

Values, refs and errors (``pallas_sim._src.dtypes``, ``refs``, ``errors``)
    ``is_floating`` -- whether a dtype is a floating-point one.
    ``Ref`` -- the class of a kernel's refs (the one thing a kernel writes).
    ``PallasSimError``, ``RevisitedOutputBlockError`` -- the simulator's error base
    class and the error for an output block revisited out of order.
"""

from __future__ import annotations

from pallas_sim._src import timeline
from pallas_sim._src.chips import CHIPS, Chip, UnknownChipError, get_chip
from pallas_sim._src.config import GRADING_SANITIZERS, Options
from pallas_sim._src.config import _lock as lock_sim_options
from pallas_sim._src.config import _override as sim_options
from pallas_sim._src.dtypes import is_floating
from pallas_sim._src.errors import PallasSimError, RevisitedOutputBlockError
from pallas_sim._src.op_accounting import OpCounts
from pallas_sim._src.refs import Ref
from pallas_sim._src.timeline import CALIBRATION, Timeline
from pallas_sim._src.tracing import CallTrace
from pallas_sim._src.tracing import _untraced as untraced
from pallas_sim._src.values import concrete, traced

__all__ = [
    "CALIBRATION", "CHIPS", "GRADING_SANITIZERS", "CallTrace", "Chip", "OpCounts", "Options",
    "PallasSimError", "Ref", "RevisitedOutputBlockError", "Timeline", "UnknownChipError",
    "concrete", "get_chip", "is_floating", "lock_sim_options", "sim_options", "timeline",
    "traced", "untraced",
]
