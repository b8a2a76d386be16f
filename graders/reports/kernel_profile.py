r"""``pallas-lab profile FILE``: predicted TPU time of the kernels in a file, at full size.

Runs one function of FILE through :func:`pallas_sim.estimate` (the abstract run: shapes
only, the same trace as a real run) and prints, per pallas_call, a table (predicted
time, MFU, HBM utilisation, dominant bound, VMEM peak vs limit) and a compact text
rendering: the first grid steps as DMA / MXU / VPU+EUP lanes, the roofline point against
the chip's ridge, and for Splash the block map of full, partial and skipped tiles. With
``--png DIR`` it also draws these as PNG files (needs matplotlib: the ``plot`` extra).

Without ``--function`` a file named after an assignment (``<stem>.py``, the stem of
a lab with lecture configurations: a3, a4, a5) is profiled on the lecture's
configurations (lecture §4.2, §5.3-5.4, §6.5). FILE runs in this process, as
``python FILE`` would: profile your own code.

Usage::

    pallas-lab profile <stem>.py
    pallas-lab profile my.py --function matmul --shapes bf16[4096,7168] bf16[7168,18432] \
        --kw "block_shape=(1024, 1024, 1024)" --chip v6e --png out/
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import pallas_sim
from graders.safety.safe_text import terminal_text
from pallas_sim import jax, jnp
from pallas_sim.extend import CHIPS, Timeline, UnknownChipError, get_chip

_DTYPES = {"bf16": jnp.bfloat16, "f32": jnp.float32, "f16": jnp.float16, "i32": jnp.int32,
           "i8": jnp.int8, "int8": jnp.int8, "int32": jnp.int32, "float32": jnp.float32,
           "bfloat16": jnp.bfloat16, "bool": jnp.bool_}
_SHAPE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[\s*([0-9,\s]*)\]\s*$")


def parse_shape(text: str) -> jax.ShapeDtypeStruct:
    """``bf16[4096,7168]`` as a ``jax.ShapeDtypeStruct``.

    Raises:
      ValueError: not DTYPE[d0,d1,...] with a known dtype.
    """
    m = _SHAPE.match(text)
    if not m or m.group(1) not in _DTYPES:
        raise ValueError(f"shape {text!r}: write DTYPE[d0,d1,...] with DTYPE one of "
                         f"{', '.join(sorted(_DTYPES))}, e.g. bf16[4096,7168]")
    dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    return jax.ShapeDtypeStruct(dims, _DTYPES[m.group(1)])


def parse_kwargs(items: Sequence[str]) -> dict[str, Any]:
    """``name=python-literal`` pairs.

    Raises:
      ValueError: an item without ``=`` or with a value that is not a Python literal.
    """
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ValueError(f"--kw {item!r}: write NAME=VALUE, e.g. block_q=1024")
        try:
            out[name.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"--kw {item!r}: the value must be a Python literal") from None
    return out


def load_module(path: Path) -> ModuleType:
    """FILE as a module (its ``if __name__ == "__main__":`` blocks do not run). A ``.ipynb``
    becomes the module its code cells make, as the grader converts a notebook
    (``graders.student.notebook``: display, plots, magics and ``input()`` set aside).
    Raises ``ValueError`` for a file that is neither (or a notebook that cannot be read),
    ``SyntaxError`` for code that does not compile, and whatever the file's top-level
    code raises."""
    if path.suffix.casefold() == ".ipynb":
        return _notebook_module(path)
    spec = importlib.util.spec_from_file_location(f"profiled_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook_module(path: Path) -> ModuleType:
    """The module of the notebook at ``path``, read and converted as the grader does
    (``graders.grading.notebook.notebook_module``), then run."""
    import types

    from graders.grading.notebook import notebook_module

    with notebook_module(path, path.stem) as (made, failure):
        if failure is not None or made is None:
            raise ValueError(failure.what if failure is not None else f"{path.name}: unread")
        source = made.source
    module = types.ModuleType(f"profiled_{path.stem}")
    module.__file__ = str(path)
    # The user's own file, run in their own process as a .py is (exec_module above).
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102
    return module


def lecture_runs(module: ModuleType, stem: str) -> list[tuple[str, str, tuple, dict]]:
    """The lecture's configurations for an assignment file: (label, function, args,
    kwargs) each."""
    sds = jax.ShapeDtypeStruct
    if stem.startswith("a3"):
        x, y = sds((4096, 7168), jnp.bfloat16), sds((7168, 18432), jnp.bfloat16)
        return [(f"matmul {b}³ blocks (§4.2)", "matmul", (x, y),
                 {"block_shape": (b, b, b)}) for b in (512, 1024)]
    if stem.startswith("a4"):
        q, v = sds((128, 4096, 192), jnp.bfloat16), sds((128, 4096, 128), jnp.bfloat16)
        return [(f"flash bq {bq}, bkv {bkv}{' + MLE' if mle else ''} (§5.3-5.4)",
                 "flash_attention", (q, q, v),
                 {"block_q": bq, "block_kv": bkv, "max_logit_const": mle})
                for bq, bkv, mle in ((1024, 2048, None), (2048, 2048, None),
                                     (2048, 2048, 70.0))]
    if stem.startswith("a5"):
        info = module.build_mask_info(module.causal_mask(8192), 1024, 1024)
        q, v = sds((128, 8192, 192), jnp.bfloat16), sds((128, 8192, 128), jnp.bfloat16)
        return [("splash causal L 8192, block 1024 (§6.5)", "splash_attention",
                 (q, q, v, info), {})]
    return []


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def summary_rows(est: pallas_sim.Estimate) -> list[dict[str, str]]:
    """One row per pallas_call: the table's columns as text."""
    rows = []
    for call, t in zip(est.calls, est.timelines, strict=True):
        counts = t.bound_counts()
        rows.append({
            "call": call.name, "steps": str(call.num_steps), "time": _ms(t.time_s),
            "MFU": f"{t.mfu * 100:.1f} %", "HBM util": f"{t.hbm_utilisation * 100:.1f} %",
            "bound": f"{t.dominant_bound} ({counts[t.dominant_bound]}/{call.num_steps})",
            "VMEM": f"{t.vmem_bytes / 2**20:.1f} / {t.vmem_limit_bytes / 2**20:.0f} MiB",
        })
    return rows


def render_steps(t: Timeline, steps: int = 6, width: int = 60) -> str:
    """The first ``steps`` grid steps as three text lanes (DMA: copies in and
    write-backs; MXU; VPU+EUP) on a common time axis, one character per cell."""
    n = min(steps, t.num_steps)
    if n == 0:
        return "(no steps)"
    end = float(np.nanmax([t.compute_end[n - 1], np.nanmax(t.writeback_end[:n])
                           if np.isfinite(t.writeback_end[:n]).any() else 0.0]))
    scale = width / end if end > 0 else 0.0
    lanes = {"DMA": [" "] * width, "MXU": [" "] * width, "VPU": [" "] * width}

    def paint(lane: str, a: float, b: float, ch: str) -> None:
        lo, hi = int(round(a * scale)), max(int(round(b * scale)), int(round(a * scale)) + 1)
        for i in range(max(lo, 0), min(hi, width)):
            lanes[lane][i] = ch

    for s in range(n):
        ch = str(s % 10)
        paint("DMA", t.dma_start[s], t.dma_end[s], ch)
        if np.isfinite(t.writeback_start[s]):
            paint("DMA", t.writeback_start[s], t.writeback_end[s], "w")
        m0 = t.compute_start[s] + t.overhead[s]
        paint("MXU", m0, m0 + t.mxu[s], ch)
        paint("VPU", m0 + t.mxu[s], m0 + t.mxu[s] + t.vpu[s] + t.eup[s], ch)
    lines = [f"first {n} steps, {end * 1e6:.2f} µs (w = write-back; gaps = fixed "
             "step cost or waiting)"]
    lines += [f"  {name:3s} |{''.join(cells)}|" for name, cells in lanes.items()]
    return "\n".join(lines)


def render_roofline(t: Timeline) -> str:
    """The call's arithmetic intensity against the chip's ridge point, in words."""
    side = "compute" if t.arithmetic_intensity >= t.ridge_point else "memory"
    return (f"roofline: {t.arithmetic_intensity:.1f} FLOP/B vs ridge {t.ridge_point:.1f} "
            f"FLOP/B on {t.chip} ({side} side); MFU {t.mfu * 100:.1f} %, HBM "
            f"{t.hbm_utilisation * 100:.1f} %")


def mask_info_of(args: Sequence[Any]) -> Any:
    """The Splash MaskInfo among ``args`` (anything with block_mask, active_rows and
    active_cols), or None."""
    for a in args:
        if all(hasattr(a, f) for f in ("block_mask", "active_rows", "active_cols")):
            return a
    return None


def render_block_map(info: Any) -> str:
    """Splash's tiles: F full, P partial, · skipped (lecture §6.1)."""
    rows = np.asarray(info.active_rows)
    cols = np.asarray(info.active_cols)
    kinds = np.asarray(info.block_mask)
    grid = np.zeros((int(rows.max()) + 1, int(cols.max()) + 1), np.int8)
    grid[rows, cols] = kinds
    chars = {0: "·", 1: "P", 2: "F"}
    if grid.shape[1] > 64:
        return f"block map {grid.shape}: {int((grid == 2).sum())} full, " \
               f"{int((grid == 1).sum())} partial, {int((grid == 0).sum())} skipped"
    return "\n".join(" ".join(chars[int(v)] for v in row) for row in grid)


def write_pngs(est: pallas_sim.Estimate, out: Path, stem: str, info: Any,
               label: str | None = None) -> list[Path]:
    """PNG pictures per call: the step timeline, the roofline point; and the block map.
    Titles name ``label`` (the profiled function and its configuration, e.g. "matmul
    512³ blocks (§4.2)"; default the call's own name, which is "<lambda>" for a lambda
    kernel); each picture has a legend of its marks.

    Raises:
      ImportError: matplotlib is not installed (``pip install 'pallas-lab[plot]'``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for k, t in enumerate(est.timelines):
        what = label or t.name
        if len(est.timelines) > 1:
            what += f", call {k + 1} ({t.name})"
        n = min(12, t.num_steps)
        fig, ax = plt.subplots(figsize=(9, 2.6))
        for s in range(n):
            ax.broken_barh([(t.dma_start[s] * 1e6, (t.dma_end[s] - t.dma_start[s]) * 1e6)],
                           (20, 8), color="tab:blue")
            if np.isfinite(t.writeback_start[s]):
                ax.broken_barh([(t.writeback_start[s] * 1e6,
                                 (t.writeback_end[s] - t.writeback_start[s]) * 1e6)],
                               (20, 8), color="tab:cyan")
            m0 = (t.compute_start[s] + t.overhead[s]) * 1e6
            ax.broken_barh([(m0, t.mxu[s] * 1e6)], (10, 8), color="tab:red")
            ax.broken_barh([(m0 + t.mxu[s] * 1e6, (t.vpu[s] + t.eup[s]) * 1e6)], (0, 8),
                           color="tab:green")
        ax.set_yticks([4, 14, 24], ["VPU+EUP", "MXU", "DMA"])
        ax.set_xlabel("µs")
        ax.set_title(f"{what} on {t.chip}: first {n} steps of {t.num_steps}, "
                     f"predicted {t.time_s * 1e3:.3f} ms", fontsize=9)
        ax.legend(handles=[Patch(color="tab:blue", label="DMA in (HBM → VMEM)"),
                           Patch(color="tab:cyan", label="write-back (VMEM → HBM)"),
                           Patch(color="tab:red", label="MXU (matmul)"),
                           Patch(color="tab:green", label="VPU + EUP (vector, exp)")],
                  fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        path = out / f"{stem}_{k}_timeline.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

        chip = CHIPS[t.chip]
        fig, ax = plt.subplots(figsize=(5, 4))
        xs = np.logspace(-1, 4, 100)
        ax.loglog(xs, np.minimum(chip.peak_bf16, xs * chip.hbm_bandwidth) / 1e12, "k-",
                  label=f"{chip.name} roof (bf16 peak, HBM bandwidth)")
        ax.axvline(chip.ridge_point, color="gray", ls="--",
                   label=f"ridge point {chip.ridge_point:.0f} FLOP/B")
        ai = t.arithmetic_intensity
        ax.loglog([ai], [t.mxu_flops / t.time_s / 1e12], "o", color="tab:red",
                  label=f"this call: MFU {t.mfu:.1%}")
        ax.set_xlabel("arithmetic intensity (FLOP/B)")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{what}: roofline on {chip.name}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        path = out / f"{stem}_{k}_roofline.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    if info is not None:
        rows, cols = np.asarray(info.active_rows), np.asarray(info.active_cols)
        grid = np.zeros((int(rows.max()) + 1, int(cols.max()) + 1))
        grid[rows, cols] = np.asarray(info.block_mask)
        fig, ax = plt.subplots(figsize=(4, 4))
        ax.imshow(grid, cmap="Greys", vmin=0, vmax=2)
        ax.set_title("Splash tiles: black full, grey partial, white skipped")
        path = out / f"{stem}_blockmap.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def build_parser() -> argparse.ArgumentParser:
    """``pallas-lab profile``'s arguments."""
    p = argparse.ArgumentParser(prog="pallas-lab profile",
                                description="Predicted TPU time of a file's kernels.")
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument("--function", default=None, metavar="NAME",
                   help="the function to run (default: an assignment's lecture configurations)")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pallas-lab profile``; returns the exit status (2: bad input)."""
    args = build_parser().parse_args(argv)
    try:
        get_chip(args.chip)
        shapes = [parse_shape(s) for s in args.shapes]
        kwargs = parse_kwargs(args.kw)
    except (ValueError, UnknownChipError) as exc:
        print(f"pallas-lab profile: {exc}", file=sys.stderr)
        return 2
    if not args.file.is_file():
        print(f"pallas-lab profile: {args.file}: no such file", file=sys.stderr)
        return 2
    try:
        module = load_module(args.file)
    except (SyntaxError, ValueError) as exc:  # not Python source (or not UTF-8): bad input
        print(f"pallas-lab profile: {terminal_text(args.file.name)} does not compile: "
              f"{terminal_text(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the file's own top-level code raised
        print(f"pallas-lab profile: importing {terminal_text(args.file.name)} raised "
              f"{type(exc).__name__}: {terminal_text(str(exc))}", file=sys.stderr)
        return 1
    if args.function:
        runs = [(args.function, args.function, tuple(shapes), kwargs)]
    else:
        runs = lecture_runs(module, args.file.stem)
        if not runs:
            print("pallas-lab profile: give --function NAME (and --shapes) for a file that "
                  "is not a3/a4/a5", file=sys.stderr)
            return 2
    status = 0
    for label, name, fargs, fkwargs in runs:
        fn = getattr(module, name, None)
        if not callable(fn):
            print(f"pallas-lab profile: {args.file.name} has no function {name}",
                  file=sys.stderr)
            return 2
        print(f"== {label} on {args.chip}")
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
        cols = list(rows[0])
        widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
        print("   " + "  ".join(c.ljust(widths[c]) for c in cols))
        for r in rows:
            print("   " + "  ".join(r[c].ljust(widths[c]) for c in cols))
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
            except ImportError:
                print("pallas-lab profile: --png needs matplotlib: pip install "
                      "'pallas-lab[plot]'", file=sys.stderr)
                return 2
    return status
