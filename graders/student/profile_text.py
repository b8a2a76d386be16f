"""``pallas-lab profile``'s text: the table per pallas_call, the first grid steps as text
lanes, the roofline point in words and Splash's block map (lecture §6.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import pallas_sim
from pallas_sim.extend import Timeline

#: The letters of Splash's block map: a tile's kind in ``MaskInfo.block_mask``.
BLOCK_KINDS = {0: ("·", "skipped (all masked)"), 1: ("P", "partial (mask applied)"),
               2: ("F", "full (no mask)")}


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def summary_rows(est: pallas_sim.Estimate) -> list[dict[str, str]]:
    """One row per pallas_call: the table's columns (call, grid steps, predicted time,
    MFU, HBM utilisation, dominant bound, VMEM peak / limit in MiB) as text."""
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


def render_table(rows: Sequence[dict[str, str]]) -> str:
    """``rows`` (from :func:`summary_rows`, at least one) as aligned columns under a
    header line."""
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def render_steps(t: Timeline, steps: int = 6, width: int = 60) -> str:
    """The first ``steps`` grid steps as three text lanes (DMA: copies in and
    write-backs; MXU; VPU+EUP) on a common time axis, ``width`` characters wide."""
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


def block_grid(info: Any) -> np.ndarray:
    """Splash's tiles as an int8 array (q blocks, kv blocks) of kinds: 0 skipped, 1
    partial, 2 full (:data:`BLOCK_KINDS`); tiles the MaskInfo does not list are skipped."""
    rows = np.asarray(info.active_rows)
    cols = np.asarray(info.active_cols)
    grid = np.zeros((int(rows.max()) + 1, int(cols.max()) + 1), np.int8)
    grid[rows, cols] = np.asarray(info.block_mask)
    return grid


def render_block_map(info: Any) -> str:
    """Splash's tiles: F full, P partial, · skipped (lecture §6.1); a count of each when
    there are more than 64 kv blocks."""
    grid = block_grid(info)
    if grid.shape[1] > 64:
        return f"block map {grid.shape}: {int((grid == 2).sum())} full, " \
               f"{int((grid == 1).sum())} partial, {int((grid == 0).sum())} skipped"
    return "\n".join(" ".join(BLOCK_KINDS[int(v)][0] for v in row) for row in grid)
