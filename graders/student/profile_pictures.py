"""``pallas-lab profile --png DIR``: the pictures of an estimate, drawn with matplotlib
(the ``plot`` extra): per pallas_call its first grid steps as a timeline and its roofline
point, and Splash's block map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import pallas_sim
from pallas_sim.extend import CHIPS


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
