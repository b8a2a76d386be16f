r"""``pallas-lab profile FILE``: predicted TPU time of the kernels in a file, at full size.

Runs one function of FILE through :func:`pallas_sim.estimate` (the abstract run: shapes
only, the same trace as a real run) and prints, per pallas_call, a table (predicted
time, MFU, HBM utilisation, dominant bound, VMEM peak vs limit) and a compact text
rendering (``graders.student.profile_text``): the first grid steps as DMA / MXU / VPU+EUP
lanes, the roofline point against the chip's ridge, and for Splash the block map of
full, partial and skipped tiles. With ``--png DIR`` it also draws these as PNG files
(``graders.student.profile_pictures``; needs matplotlib: the ``plot`` extra).

Without ``--function`` a file named after an assignment (``<stem>.py``, the stem of
a lab with lecture configurations: a3, a4, a5) is profiled on the lecture's
configurations (``graders.student.profile_runs``). FILE, a ``.py`` or a notebook, is read
and run in this process as ``pallas-lab check`` reads and runs it
(``graders.student.selfcheck.module_source``: a notebook's code cells become the module
the grader grades): profile your own code. The student bundle ships this command.

Usage::

    pallas-lab profile <stem>.py
    pallas-lab profile my.py --function matmul --shapes bf16[4096,7168] bf16[7168,18432] \
        --kw "block_shape=(1024, 1024, 1024)" --chip v6e --png out/
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pallas_sim
from graders.safety.safe_text import terminal_text
from graders.student.notebook import NotebookError
from graders.student.profile_pictures import write_pngs
from graders.student.profile_runs import given_run, lecture_runs, parse_kwargs
from graders.student.profile_text import (
    mask_info_of,
    render_block_map,
    render_roofline,
    render_steps,
    render_table,
    summary_rows,
)
from graders.student.selfcheck import compile_source, module_source, run_code
from pallas_sim.extend import UnknownChipError, get_chip


def build_parser() -> argparse.ArgumentParser:
    """``pallas-lab profile``'s arguments."""
    p = argparse.ArgumentParser(prog="pallas-lab profile",
                                description="Predicted TPU time of a file's kernels.")
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument("--function", default=None, metavar="NAME",
                   help="the function to run (default: an assignment's lecture configurations)")
    p.add_argument("--assignment", default=None, choices=("a3", "a4", "a5"),
                   help="profile FILE as this assignment's (its lecture configurations), "
                        "whatever its name (default: the one its name starts with)")
    p.add_argument("--chip", default="v7", help="v5e, v6e or v7 (Ironwood; default)")
    p.add_argument("--shapes", nargs="*", default=[], metavar="DTYPE[dims]",
                   help="positional arguments as shapes, e.g. bf16[4096,7168]")
    p.add_argument("--kw", nargs="*", default=[], metavar="NAME=VALUE",
                   help="keyword arguments (Python literals), e.g. block_q=1024")
    p.add_argument("--steps", type=int, default=6, help="steps in the text timeline")
    p.add_argument("--lenient", action="store_true",
                   help="profile block shapes a TPU compile refuses (interpret mode runs "
                        "them); they are listed instead of refused")
    p.add_argument("--png", type=Path, default=None, metavar="DIR",
                   help="also write PNG pictures there (needs matplotlib)")
    return p


class ProfileInputError(Exception):
    """FILE cannot be profiled; the message is the one line to print, ``status`` the exit
    status (2: a file that cannot be read or does not compile; 1: its own code raised)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def load_file(path: Path) -> ModuleType:
    """The module of the ``.py`` or ``.ipynb`` at ``path``, read and run as ``pallas-lab
    check`` does (``graders.student.selfcheck``: a notebook's code cells are converted as
    the grader converts them); its ``if __name__ == "__main__":`` blocks do not run.

    Raises:
      ProfileInputError: the file is missing, a folder, unreadable, not UTF-8, not a
        notebook, does not compile (status 2), or its top-level code raised (status 1).
    """
    name = terminal_text(path.name)
    if not path.is_file():
        why = ("is a folder, not a file" if path.is_dir() else
               "not a regular file" if path.exists() else "no such file")
        raise ProfileInputError(f"cannot read {name}: {why}", 2)
    try:
        source, _ = module_source(path)
    except NotebookError as exc:
        text = terminal_text(str(exc))  # names the file itself, perhaps already "cannot read"
        raise ProfileInputError(text if text.startswith("cannot read ") else
                                f"cannot read {name}: {text}", 2) from None
    except UnicodeDecodeError as exc:
        raise ProfileInputError(
            f"cannot read {name}: not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at "
            f"offset {exc.start}); save it as UTF-8", 2) from None
    except OSError as exc:
        raise ProfileInputError(f"cannot read {name}: {exc.strerror or exc}", 2) from None
    try:
        code = compile_source(source, path)
    except (SyntaxError, ValueError) as exc:  # not Python (a null byte: ValueError)
        raise ProfileInputError(f"{name} does not compile: {terminal_text(str(exc))}",
                                2) from None
    try:
        return run_code(code, path, path.stem)
    except Exception as exc:  # noqa: BLE001 - the file's own top-level code raised
        raise ProfileInputError(f"importing {name} raised {type(exc).__name__}: "
                                f"{terminal_text(str(exc))}", 1) from None


#: What ``--png`` without matplotlib prints (exit status 2).
PNG_NEEDS_MATPLOTLIB = ("pallas-lab profile: --png needs matplotlib, which is not installed "
                        "here; install the plot extra (pip install '.[plot]' in the bundle's "
                        "or repository's folder)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pallas-lab profile`` on ``argv`` (the arguments after the command's name);
    returns the exit status: 0 when every configuration was profiled, 1 when one failed
    (its error is printed in one line) or the file's own code raised, 2 for bad input (an
    unknown chip, a bad shape or keyword, a file that cannot be read or does not compile,
    no such function)."""
    args = build_parser().parse_args(argv)
    if args.png is not None and importlib.util.find_spec("matplotlib") is None:
        print(PNG_NEEDS_MATPLOTLIB, file=sys.stderr)  # before any profile is printed
        return 2
    try:
        get_chip(args.chip)
        kwargs = parse_kwargs(args.kw)
        given = given_run(args.function, args.shapes, kwargs) if args.function else None
    except (ValueError, UnknownChipError) as exc:
        print(f"pallas-lab profile: {exc}", file=sys.stderr)
        return 2
    try:
        module = load_file(args.file)
    except ProfileInputError as exc:
        print(f"pallas-lab profile: {exc}", file=sys.stderr)
        return exc.status
    if given is not None:
        runs = [given]
    else:
        runs = lecture_runs(module, args.assignment or args.file.stem)
        if not runs:
            print("pallas-lab profile: give --assignment a3|a4|a5, or --function NAME (and "
                  "--shapes), for a file whose name is not an a3/a4/a5 one", file=sys.stderr)
            return 2
    status = 0
    for run in runs:
        fn = getattr(module, run.function, None)
        if not callable(fn):
            print(f"pallas-lab profile: {terminal_text(args.file.name)} has no function "
                  f"{run.function}", file=sys.stderr)
            return 2
        label = run.label
        print(f"== {label} on {args.chip}")
        try:
            fargs, fkwargs = run.arguments()
        except Exception as exc:  # noqa: BLE001 - the file's own code, building the inputs
            while_ = f" ({run.building})" if run.building else ""
            print(f"   {type(exc).__name__}: {terminal_text(str(exc))}{while_}")
            status = 1
            continue
        try:
            est = pallas_sim.estimate(fn, *fargs, chip=args.chip,
                                      lowering="record" if args.lenient else "refuse",
                                      **fkwargs)
        except pallas_sim.MosaicLoweringError as exc:
            print(f"   {type(exc).__name__}: {terminal_text(str(exc))}\n"
                  "   (a TPU would not compile it, so no time is predicted; --lenient "
                  "profiles it anyway)")
            status = 1
            continue
        except Exception as exc:  # noqa: BLE001 - the profiled code's own errors are reported
            print(f"   {type(exc).__name__}: {terminal_text(str(exc))}")
            status = 1
            continue
        for problem in est.lowering_problems:  # only with --lenient
            print(f"   warning: a TPU compile would refuse {terminal_text(problem)}")
        rows = summary_rows(est)
        if not rows:
            print("   (no pallas_call)")
            continue
        print("\n".join("   " + line for line in render_table(rows).splitlines()))
        for t in est.timelines:
            print("   " + render_roofline(t))
            print("\n".join("   " + line for line in render_steps(t, args.steps).splitlines()))
        info = mask_info_of(fargs)
        if info is not None:
            print("   block map (F full, P partial, · skipped):")
            print("\n".join("   " + line for line in render_block_map(info).splitlines()))
        if args.png is not None:
            try:
                stem = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")
                for path in write_pngs(est, args.png, stem, info, label):
                    print(f"   wrote {path}")
            except ImportError:  # found above, but it does not load
                print(PNG_NEEDS_MATPLOTLIB, file=sys.stderr)
                return 2
    return status
