"""Today's ``pallas_sim.estimate(chip="v5e")`` against the TPU v5e timings of JAX's Pallas
TPU matmul guide (bench/data/jax_matmul_guide_v5e.toml): the "before" table of
bench/notes/v5e.md.

Run from the repository root::

    python bench/matmul_guide_v5e.py             # plain text
    python bench/matmul_guide_v5e.py --markdown  # the table of bench/notes/v5e.md
    python bench/matmul_guide_v5e.py --breakdown # also each blocking's median step

Every Pallas row is the guide's kernel (described in the data file, written here for
pallas_sim) run through the abstract run at full size on v5e with today's constants;
error = predicted / measured - 1. The XLA rows have no prediction (pallas_sim predicts
pallas_calls only); their column shows the roofline bound instead, max(2 m³ / bf16 peak,
3 m² · 2 B / HBM bandwidth). The guide's times include Python dispatch (its timing
loop), which matters at 1024³. None of these points was used to fit the model.
About 20-40 s on this machine (the 8192³ rows with 128-blocks have 262 144 steps).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pallas_sim  # noqa: E402
from pallas_sim import jax, jnp, lax, pl, pltpu  # noqa: E402
from pallas_sim.extend import get_chip  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "jax_matmul_guide_v5e.toml"


def guide_matmul(x: Any, y: Any, *, bm: int, bk: int, bn: int, transpose_rhs: bool = False,
                 activation: Callable[[Any], Any] | None = None) -> Any:
    """The guide's blocked matmul as pallas_sim runs it: an f32 accumulator in VMEM over
    the k axis (last, "arbitrary"), the bf16 result stored at the last k step.
    ``transpose_rhs``: ``y`` is (n, k) and is contracted on its last axis."""
    m, k = x.shape
    n = y.shape[0] if transpose_rhs else y.shape[1]
    steps = k // bk
    contract = ((1,), (1,)) if transpose_rhs else ((1,), (0,))

    def kernel(x_ref: Any, y_ref: Any, z_ref: Any, acc_ref: Any) -> None:
        @pl.when(pl.program_id(2) == 0)
        def _zero() -> None:
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += lax.dot_general(x_ref[...], y_ref[...], (contract, ((), ())),
                                        preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == steps - 1)
        def _store() -> None:
            acc = acc_ref[...]
            if activation is not None:
                acc = activation(acc)
            z_ref[...] = acc.astype(z_ref.dtype)

    y_spec = (pl.BlockSpec((bn, bk), lambda i, j, kk: (j, kk)) if transpose_rhs
              else pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)))
    return pl.pallas_call(
        kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=0, grid=(m // bm, n // bn, steps),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)), y_spec],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)]),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")))(x, y)


@dataclasses.dataclass
class Row:
    """One measured point and today's prediction (None for XLA rows)."""

    variant: str
    m: int
    blocks: tuple[int, int, int] | None
    measured_s: float
    predicted_s: float | None
    roofline_s: float
    steps: int
    parts: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def error(self) -> float | None:
        """predicted / measured - 1."""
        return None if self.predicted_s is None else self.predicted_s / self.measured_s - 1


def load() -> list[dict[str, Any]]:
    """The transcribed rows of the guide."""
    with DATA.open("rb") as f:
        return tomllib.load(f)["row"]


def predict_rows(chip: str = "v5e") -> list[Row]:
    """Every row of the data file with today's prediction on ``chip``."""
    the_chip = get_chip(chip)
    out = []
    for r in load():
        m = r["m"]
        roofline = max(2 * m ** 3 / the_chip.peak_bf16, 3 * m * m * 2 / the_chip.hbm_bandwidth)
        if r["variant"] == "xla":
            out.append(Row("xla", m, None, r["time_s"], None, roofline, 0))
            continue
        blocks = (r["bm"], r["bk"], r["bn"])
        transpose = r["variant"] == "pallas_transpose"
        x = jax.ShapeDtypeStruct((m, m), jnp.bfloat16)
        y = jax.ShapeDtypeStruct((m, m), jnp.bfloat16)
        act = jax.nn.relu if r["variant"] == "pallas_relu" else None
        est = pallas_sim.estimate(guide_matmul, x, y, bm=blocks[0], bk=blocks[1],
                                  bn=blocks[2], transpose_rhs=transpose, activation=act,
                                  chip=chip)
        t = est.timelines[0]
        out.append(Row(r["variant"], m, blocks, r["time_s"], t.time_s, roofline,
                       t.num_steps, step_parts(t)))
    return out


def step_parts(t: Any) -> dict[str, float]:
    """A timeline's median step, µs: fixed and per-op overhead, MXU, VPU, the step's input
    copies (issue to landing, when nothing waits), and its bound."""
    med = {"overhead": float(np.median(t.overhead)), "mxu": float(np.median(t.mxu)),
           "vpu": float(np.median(t.vpu)),
           "copy_in": float(np.median(t.dma_end - t.dma_start))}
    parts = {k: v * 1e6 for k, v in med.items()}
    parts["bound"] = t.dominant_bound
    return parts


def breakdown(rows: list[Row]) -> str:
    """Each blocking's median step at the largest size (µs), one line per variant."""
    lines = ["", "median step, µs (largest size of each variant and blocking):"]
    seen = set()
    for r in sorted((r for r in rows if r.parts), key=lambda r: -r.m):
        key = (r.variant, r.blocks)
        if key in seen:
            continue
        seen.add(key)
        p = r.parts
        lines.append(f"  {r.variant:17s} {r.m} {r.blocks}: overhead {p['overhead']:.3f} + "
                     f"MXU {p['mxu']:.3f} + VPU {p['vpu']:.3f}; input copies "
                     f"{p['copy_in']:.3f}; bound: {p['bound']}; measured "
                     f"{r.measured_s / r.steps * 1e6:.3f} per step")
    return "\n".join(lines)


def report(rows: list[Row], markdown: bool) -> str:
    """The table and a summary (median and range of the Pallas rows' errors)."""
    lines = []
    if markdown:
        lines += ["| variant | m = k = n | (bm, bk, bn) | steps | measured ms | predicted ms "
                  "| error | measured µs/step | predicted µs/step |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        blocks = "—" if r.blocks is None else str(r.blocks)
        if r.predicted_s is None:
            pred, err, per = f"(roofline {r.roofline_s * 1e3:.3f})", "—", ("—", "—")
        else:
            pred, err = f"{r.predicted_s * 1e3:.3f}", f"{r.error * 100:+.0f} %"
            per = (f"{r.measured_s / r.steps * 1e6:.3f}", f"{r.predicted_s / r.steps * 1e6:.3f}")
        if markdown:
            lines.append(f"| {r.variant} | {r.m} | {blocks} | {r.steps or '—'} | "
                         f"{r.measured_s * 1e3:.3f} | {pred} | {err} | {per[0]} | {per[1]} |")
        else:
            lines.append(f"{r.variant:17s} {r.m:5d} {blocks:18s} steps {r.steps:7d}  "
                         f"measured {r.measured_s * 1e3:9.3f} ms  predicted {pred:>20s}  "
                         f"{err:>7s}  µs/step {per[0]:>7s} vs {per[1]:>7s}")
    errors = [r.error for r in rows if r.error is not None]
    big = [r.error for r in rows if r.error is not None and r.m >= 4096]
    lines.append("")
    median = statistics.median(errors)
    lines.append(f"Pallas rows: {len(errors)}; error median {median * 100:+.0f} %,"
                 f" range {min(errors) * 100:+.0f} % to {max(errors) * 100:+.0f} %; "
                 f"m >= 4096 only: median {statistics.median(big) * 100:+.0f} %, range "
                 f"{min(big) * 100:+.0f} % to {max(big) * 100:+.0f} %")
    pallas = [r for r in rows if r.predicted_s is not None]
    pairs = [(a, b) for i, a in enumerate(pallas) for b in pallas[i + 1:]
             if a.measured_s != b.measured_s]
    agree = sum((a.measured_s < b.measured_s) == (a.predicted_s < b.predicted_s)
                for a, b in pairs)
    close = [(a, b) for a, b in pairs if max(a.measured_s, b.measured_s)
             / min(a.measured_s, b.measured_s) < 1.05]
    lines.append(f"ordering: {agree} of {len(pairs)} pairs of Pallas rows as measured "
                 f"({len(close)} pairs are within 5 % of each other in the measurements)")
    return "\n".join(lines)


def main() -> None:
    """Predict every row and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--chip", default="v5e", help="the chip to predict on (default v5e)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also print each blocking's median step")
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = predict_rows(args.chip)
    print(report(rows, args.markdown))
    if args.breakdown:
        print(breakdown(rows))
    print(f"\n({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
