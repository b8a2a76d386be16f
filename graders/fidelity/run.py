"""``python -m graders.fidelity.run FILE``: one file on pallas_sim and on real JAX.

The subprocess behind ``pallas-lab check --backend jax FILE``.  It loads FILE
twice (as written, and with its ``from pallas_sim import ...`` line swapped
for real JAX), runs every case of graders/fidelity/cases.py whose function
FILE defines in both of JAX's interpreters, and prints one JSON object per
line (plain data; the parent never unpickles anything)::

    {"func": "blocked_add", "tasks": ["1.1", "1.2"], "mode": "tpu",
     "status": "agrees" | "differs" | "not started" | "error",
     "compared": 3, "detail": "..."}

A first line ``{"load_error": "..."}`` (and exit status 1) means FILE could
not be loaded on one backend.  Exit status 0 otherwise, whatever the outcome.
Student code runs only in this process, never in the caller's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
from pathlib import Path
from typing import Any

_TASK = re.compile(r"^\s*Task\s+(\d+\.\d+)")


def task_of(module: object, func: str) -> str | None:
    """The ``Task N.M`` at the start of ``module.func``'s docstring, if any."""
    doc = getattr(getattr(module, func, None), "__doc__", None) or ""
    match = _TASK.match(doc)
    return match.group(1) if match else None


def run(path: Path, modes: list[str], max_examples: int | None) -> list[dict[str, Any]]:
    """Compare every case of ``path`` on the given JAX modes; JSON-ready rows."""
    from graders.checking.registry import CheckFailure  # noqa: PLC0415
    from graders.fidelity.cases import cases_for  # noqa: PLC0415
    from graders.fidelity.compare import run_case  # noqa: PLC0415
    from pallas_sim.backends.swap import load  # noqa: PLC0415

    stem = path.stem
    sim, jax_module = load(path, "sim"), load(path, "jax")
    rows = []
    for case in cases_for(stem):
        if not callable(getattr(sim, case.func, None)):
            continue
        for mode in modes:
            tasks = {task_of(sim, f) for f in (case.func, *case.covers)} - {None}
            row = {"func": case.func, "tasks": sorted(tasks), "mode": mode,
                   "compared": 0, "detail": ""}
            try:
                stats = run_case(sim, jax_module, case, mode, max_examples=max_examples)
                row["compared"] = stats.compared
                row["status"] = "not started" if stats.not_implemented else "agrees"
            except CheckFailure as exc:
                row["status"], row["detail"] = "differs", _with_input(exc)
            except Exception as exc:  # noqa: BLE001 - reported, the next case goes on
                row["status"] = "error"
                row["detail"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
    return rows


def _with_input(exc: BaseException) -> str:
    notes = [n for n in getattr(exc, "__notes__", []) if "Falsifying" in n or "drawn" in n]
    return "\n".join([str(exc).strip(), *notes])


def main(argv: list[str] | None = None) -> int:
    """Entry point; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m graders.fidelity.run")
    parser.add_argument("file", type=Path)
    parser.add_argument("--modes", default="hlo,tpu", help="comma-separated: hlo, tpu")
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--stem", default=None, help="assignment file stem (a lab record's stem)")
    args = parser.parse_args(argv)
    path = args.file
    if args.stem:
        import shutil  # noqa: PLC0415
        import tempfile  # noqa: PLC0415

        folder = Path(tempfile.mkdtemp(prefix="pallas-lab-jax-"))
        path = Path(shutil.copy(path, folder / f"{args.stem}.py"))
    try:
        rows = run(path, [m for m in args.modes.split(",") if m], args.max_examples)
    except Exception as exc:  # noqa: BLE001 - the file does not load: say so
        tb = traceback.format_exception_only(type(exc), exc)
        print(json.dumps({"load_error": "".join(tb).strip()}), flush=True)
        return 1
    for row in rows:
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
