"""Worker side of the performance tasks (3.5, 4.8, 5.7): the kernel's per-step work,
measured in the grader's standard pallas_call on small problems (numpy and pallas_sim
only; docs/performance-model.md, "Performance tasks").

The grader never times a student's wrapper, and never runs a student's kernel at the full
size. It asks for the kernel's op counts per grid step (``CallTrace.ops``) on a small
problem at the chosen block sizes, in which every class of step of the full problem occurs
(first, middle and last step of the reduction axis, ...), run twice: concretely on seeded
data (the output goes back, so the trusted side checks the steps' values) and abstractly
(``pallas_sim.estimate``, shapes only). The trusted side compares the two runs' counts and
maps them onto the full-size call it builds itself (``graders/checking/step_model.py``).

Everything sent back is plain data: ints, lists of ints, strings, and a float32 array
sample of the output chosen by the grader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import pallas_sim
from pallas_sim import jax, jnp
from pallas_sim.extend import sim_options

#: Most characters of an error message sent back.
ERROR_CHARS = 500


def seeded_array(seed: int, shape: Sequence[int], dtype: str, scale: float = 1.0
                 ) -> np.ndarray:
    """A normal array (standard deviation ``scale``) of ``shape`` rounded to ``dtype``
    (e.g. "bfloat16"), the same for the same arguments in the worker and in the grader
    (which regenerates it to check the output)."""
    values = np.random.default_rng(int(seed)).standard_normal(tuple(int(n) for n in shape),
                                                              dtype=np.float32)
    return (values * np.float32(scale)).astype(jnp.dtype(dtype))


def call_record(call: Any) -> dict[str, object]:
    """The plain-data record of one traced call: ``grid`` (list of ints), ``num_steps``,
    ``ops`` (key -> one int per step, ``OpCounts.to_dict`` without its call keys),
    ``largest_intermediate`` (elements), ``vmem_bytes`` and ``scoped_vmem_bytes``
    (bytes)."""
    counts = call.ops.to_dict() if call.ops is not None else {}
    ops = {str(k): [int(x) for x in v] for k, v in counts.items()
           if k not in ("num_steps", "largest_intermediate")}
    return {"grid": [int(g) for g in call.grid], "num_steps": int(call.num_steps),
            "ops": ops, "largest_intermediate": int(call.largest_intermediate),
            "vmem_bytes": int(call.vmem_bytes), "scoped_vmem_bytes": int(call.scoped_vmem_bytes)}


def _error(exc: BaseException) -> dict[str, str]:
    return {"error": f"{type(exc).__name__}: {exc}"[:ERROR_CHARS],
            "error_type": type(exc).__name__}


def _only_call(calls: Sequence[Any], name: str) -> Any:
    mine = [c for c in calls if c.name == name]
    if len(mine) != 1:
        raise RuntimeError(f"expected one pallas_call {name!r}, saw {len(mine)}")
    return mine[0]


def measure(run: Callable[..., Any], shapes: Sequence[Sequence[int]], dtype: str, *,
            name: str, seed: int | None, sample: Mapping[str, Sequence[int]] | None = None,
            scales: Sequence[float] | None = None) -> dict[str, object]:
    """One small run of the standard call ``run(*arrays)`` (the harness's pallas_call named
    ``name`` around the student's kernel), on arrays of ``shapes`` in ``dtype``.

    ``seed=None``: abstract (``pallas_sim.estimate`` on ``jax.ShapeDtypeStruct`` arguments);
    else concrete on ``seeded_array(seed + i, shapes[i], dtype, scales[i])`` (scales 1
    by default). ``sample``: for a
    concrete run, ``{"rows": [...], "cols": [...]}`` of the output's last two axes
    (leading axes at index 0) to send back as ``"sample"``, float32 [rows, cols]. The
    parallel axes of the grid are not shuffled (a TPU visits them in order; the record is
    per step in visiting order).

    Returns ``call_record`` of the call (plus the sample), or ``{"error", "error_type"}``
    when the student's kernel raised (e.g. ``VmemOOMError`` of its ``run_scoped``).
    """
    try:
        with sim_options(shuffle_parallel=False):
            if seed is None:
                structs = [jax.ShapeDtypeStruct(tuple(int(n) for n in s), jnp.dtype(dtype))
                           for s in shapes]
                return call_record(_only_call(pallas_sim.estimate(run, *structs).calls, name))
            factors = [1.0] * len(shapes) if scales is None else [float(f) for f in scales]
            arrays = [seeded_array(int(seed) + i, s, dtype, factors[i])
                      for i, s in enumerate(shapes)]
            with pallas_sim.trace() as recorded:
                out = run(*arrays)
            record: dict[str, object] = call_record(_only_call(recorded.calls, name))
    except Exception as exc:  # noqa: BLE001 - the student's kernel raised: reported as data
        return _error(exc)
    if sample is not None:
        first = out[0] if isinstance(out, tuple) else out
        arr = np.asarray(first, dtype=np.float32)
        lead = (0,) * (arr.ndim - 2)
        rows = np.asarray(sample["rows"], np.int64)
        cols = np.asarray(sample["cols"], np.int64)
        record["sample"] = np.ascontiguousarray(arr[lead][np.ix_(rows, cols)])
    return record


def measure_candidates(run_at: Callable[[tuple[int, ...]], Callable[..., Any]],
                       problems: Mapping[str, Mapping[str, Any]], *, dtype: str, name: str,
                       sweep: Sequence[str], concrete: Sequence[str]) -> dict[str, object]:
    """The per-step records of many candidates: ``problems`` maps a candidate's key to
    ``{"config": [...], "shapes": [[...], ...], "seed": int, "rows": [...], "cols":
    [...]}`` and optionally ``"scales"`` (each input's standard deviation; all chosen by
    the grader); ``run_at(config)`` is the standard call at that
    candidate. Every key of ``sweep`` is run abstractly, every key of ``concrete`` both
    concretely (with its sample) and abstractly. Unknown keys are skipped.

    Returns ``{"abstract": {key: record}, "concrete": {key: record}}`` (``measure``'s
    records).
    """
    abstract: dict[str, object] = {}
    real: dict[str, object] = {}
    for key in list(dict.fromkeys([*sweep, *concrete])):
        problem = problems.get(key)
        if problem is None:
            continue
        config = tuple(problem["config"])
        abstract[key] = measure(run_at(config), problem["shapes"], dtype, name=name,
                                seed=None)
        if key in concrete:
            real[key] = measure(run_at(config), problem["shapes"], dtype, name=name,
                                seed=int(problem["seed"]), scales=problem.get("scales"),
                                sample={"rows": problem["rows"], "cols": problem["cols"]})
    return {"abstract": abstract, "concrete": real}
