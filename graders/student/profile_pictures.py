"""``pallas-lab profile --png DIR``: the pictures of an estimate, drawn with matplotlib
(the ``plot`` extra): per pallas_call its first grid steps as a timeline and its roofline
point, and Splash's block map.

Every picture is titled by what was profiled, the function and its configuration (the
run's label, e.g. "matmul(bf16[4096,7168], bf16[7168,18432], block_shape=(1024, 1024,
1024))"), and the call's grid, never by the kernel's own name alone ("<lambda>" for a
lambda kernel); every picture has a legend saying what its colours or marks mean.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import pallas_sim
from graders.student.profile_text import BLOCK_KINDS, block_grid
from pallas_sim.extend import CHIPS, Timeline

#: The timeline's lanes: (label in the legend, colour).
TIMELINE_MARKS = {"dma": ("DMA in (HBM → VMEM)", "tab:blue"),
                  "writeback": ("write-back (VMEM → HBM)", "tab:cyan"),
                  "mxu": ("MXU (matmul)", "tab:red"),
                  "vpu": ("VPU + EUP (vector, exp)", "tab:green")}
#: Splash's tile kinds (``MaskInfo.block_mask``) as grey levels: full black, partial grey,
#: skipped white.
BLOCK_COLOURS = {2: "black", 1: "0.55", 0: "white"}


def call_title(label: str, est: pallas_sim.Estimate, k: int) -> str:
    """The title of call ``k`` of ``est``: the run's ``label`` and the call's grid (with
    the call's number and name when the run made more than one pallas_call)."""
    call = est.calls[k]
    which = f", call {k + 1} of {len(est.calls)} ({call.name})" if len(est.calls) > 1 else ""
    return f"{label}{which}, grid {tuple(call.grid)}"


def draw_timeline(t: Timeline, title: str, path: Path, steps: int = 12) -> Path:
    """The first ``steps`` grid steps of ``t`` as bars on three lanes (DMA, MXU,
    VPU+EUP; time in µs) with a legend of the lanes' colours, saved as the PNG ``path``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n = min(steps, t.num_steps)
    fig, ax = plt.subplots(figsize=(9, 2.8))
    colour = {key: c for key, (_, c) in TIMELINE_MARKS.items()}
    for s in range(n):
        ax.broken_barh([(t.dma_start[s] * 1e6, (t.dma_end[s] - t.dma_start[s]) * 1e6)],
                       (20, 8), color=colour["dma"])
        if np.isfinite(t.writeback_start[s]):
            ax.broken_barh([(t.writeback_start[s] * 1e6,
                             (t.writeback_end[s] - t.writeback_start[s]) * 1e6)],
                           (20, 8), color=colour["writeback"])
        m0 = (t.compute_start[s] + t.overhead[s]) * 1e6
        ax.broken_barh([(m0, t.mxu[s] * 1e6)], (10, 8), color=colour["mxu"])
        ax.broken_barh([(m0 + t.mxu[s] * 1e6, (t.vpu[s] + t.eup[s]) * 1e6)], (0, 8),
                       color=colour["vpu"])
    ax.set_yticks([4, 14, 24], ["VPU+EUP", "MXU", "DMA"])
    ax.set_xlabel("µs")
    ax.set_title(f"{title}\non {t.chip}: first {n} steps of {t.num_steps}, predicted "
                 f"{t.time_s * 1e3:.3f} ms", fontsize=9)
    ax.legend(handles=[Patch(color=c, label=text) for text, c in TIMELINE_MARKS.values()],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path)


def draw_roofline(t: Timeline, title: str, path: Path) -> Path:
    """The chip's roofline (bf16 peak, HBM bandwidth; log-log, TFLOP/s against FLOP/B),
    its ridge point and ``t``'s point, with a legend of the three, saved as ``path``."""
    import matplotlib.pyplot as plt

    chip = CHIPS[t.chip]
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    xs = np.logspace(-1, 4, 100)
    ax.loglog(xs, np.minimum(chip.peak_bf16, xs * chip.hbm_bandwidth) / 1e12, "k-",
              label=f"{chip.name} roof (bf16 peak, HBM bandwidth)")
    ax.axvline(chip.ridge_point, color="gray", ls="--",
               label=f"ridge point {chip.ridge_point:.0f} FLOP/B")
    ax.loglog([t.arithmetic_intensity], [t.mxu_flops / t.time_s / 1e12], "o",
              color="tab:red", label=f"this call: MFU {t.mfu:.1%}")
    ax.set_xlabel("arithmetic intensity (FLOP/B)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"{title}\nroofline on {chip.name}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def draw_block_map(info: Any, title: str, path: Path) -> Path:
    """Splash's tiles of the MaskInfo ``info`` (rows: q blocks, columns: kv blocks) in
    grey levels, with a legend of the kinds and their counts, saved as ``path``."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    grid = block_grid(info)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.imshow(grid, cmap=ListedColormap([BLOCK_COLOURS[k] for k in (0, 1, 2)]),
              vmin=0, vmax=2, interpolation="nearest")
    ax.set_xlabel("kv block")
    ax.set_ylabel("q block")
    ax.set_title(f"{title}\nSplash block map, {grid.shape[0]} × {grid.shape[1]} tiles",
                 fontsize=9)
    ax.legend(handles=[Patch(facecolor=BLOCK_COLOURS[k], edgecolor="black",
                             label=f"{BLOCK_KINDS[k][1]}: {int((grid == k).sum())}")
                       for k in (2, 1, 0)],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_pngs(est: pallas_sim.Estimate, out: Path, stem: str, info: Any,
               label: str) -> list[Path]:
    """Draw ``est``'s pictures into the folder ``out`` (made if missing) as
    ``<stem>_<k>_timeline.png`` and ``<stem>_<k>_roofline.png`` per call k, and
    ``<stem>_blockmap.png`` for a Splash MaskInfo ``info`` (None: none). ``label`` names
    the function profiled and its configuration; each title adds the call's grid.
    Returns the files written.

    Raises:
      ImportError: matplotlib is not installed (the ``plot`` extra).
      OSError: ``out`` cannot be made or written.
    """
    import matplotlib

    matplotlib.use("Agg")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for k, t in enumerate(est.timelines):
        title = call_title(label, est, k)
        written.append(draw_timeline(t, title, out / f"{stem}_{k}_timeline.png"))
        written.append(draw_roofline(t, title, out / f"{stem}_{k}_roofline.png"))
    if info is not None:
        title = call_title(label, est, len(est.calls) - 1) if est.calls else label
        written.append(draw_block_map(info, title, out / f"{stem}_blockmap.png"))
    return written
