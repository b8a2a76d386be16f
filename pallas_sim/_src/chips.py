"""TPU chips as data, per TensorCore: what the timeline model (:mod:`pallas_sim._src.timeline`)
needs to turn a trace into time.

The numbers live in ``chips.toml`` beside this module, each with its source line; the
model reads the ones marked ``used`` (:class:`Chip`), the others (clock, VPU shape,
published figures that differ from the model's) are kept as :attr:`Chip.facts` for the
calibration work (bench/notes/v5e.md). Units: Hz, FLOP/s (or int ops/s), bytes/s, bytes.

- v5e: Google Cloud TPU docs, "TPU v5e": one TensorCore per chip with four 128x128 MXUs;
  197 TFLOP/s bf16, HBM 16 GiB at 819 GB/s; VMEM 128 MiB, SMEM 1 MiB: JAX's
  ``pltpu.get_tpu_info()`` table; 1.5 GHz: "How to Scale Your Model".
- v6e (Trillium): Google Cloud TPU docs, "TPU v6e": one TensorCore per chip with two
  256x256 MXUs; 918 TFLOP/s bf16, 1836 TOP/s int8, HBM 32 GB at 1638 GB/s; VMEM 128 MiB,
  SMEM 1 MiB, fp8 at the bf16 rate: JAX's table.
- v7 (Ironwood, TPU7x), one TensorCore: the lecture's 1028.75 TFLOP/s bf16 and
  3685.5 GB/s (lecture §4.2, slides 38-39; published: 2307 TFLOP/s and 7380 GB/s per
  chip of two TensorCores, Cloud TPU7x docs, i.e. about 1154 TFLOP/s and 3690 GB/s per
  core, JAX's table 1155 and 3700); FP8 at twice bf16; VMEM 64 MiB, SMEM 1 MiB: JAX's
  table.

Model assumptions (not from a datasheet, stated in docs/performance-model.md): float32
matmuls run at the bf16 rate, as JAX's default matmul precision on TPU does
(``jax.lax.Precision.DEFAULT``: one bf16 pass); the VPU/EUP rates and the
DMA constants are fitted to the lecture's measurements (:data:`CALIBRATION`) on v7 and
scaled to other chips by their bf16 peak (VPU/EUP) and HBM bandwidth (DMA).
"""

from __future__ import annotations

import dataclasses
import importlib
import tomllib
from pathlib import Path
from typing import Any

MiB = 1 << 20


@dataclasses.dataclass(frozen=True)
class Chip:
    """One TPU TensorCore as the timeline model sees it.

    Attributes:
      name: "v5e", "v6e" or "v7".
      peak_flops: MXU peak by input dtype name ("bf16", "f32", "int8", "fp8"), FLOP/s per
        TensorCore (int ops/s for int8).
      hbm_bandwidth: HBM bytes/s per TensorCore.
      vmem_bytes, smem_bytes, hbm_bytes: capacities per TensorCore.
      mxu_size: the MXU's width (128 or 256); mxus: MXUs per TensorCore.
      tensorcores: TensorCores per chip (parallel grid axes can split over them).
      sources: where the numbers come from.
      facts: every per-TensorCore quantity ``chips.toml`` records for the chip, with its
        source (clock, VPU shape, published figures the model does not use, ...).
    """

    name: str
    peak_flops: dict[str, float]
    hbm_bandwidth: float
    vmem_bytes: int
    smem_bytes: int
    hbm_bytes: int
    mxu_size: int
    mxus: int
    tensorcores: int
    sources: tuple[str, ...]
    facts: dict[str, Fact] = dataclasses.field(default_factory=dict, compare=False,
                                               repr=False)

    @property
    def peak_bf16(self) -> float:
        """bf16 MXU peak, FLOP/s (the MFU denominator)."""
        return self.peak_flops["bf16"]

    @property
    def ridge_point(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the roofline turns: bf16 peak / HBM
        bandwidth (lecture §4.2: 279 on Ironwood)."""
        return self.peak_bf16 / self.hbm_bandwidth

    def flops_rate(self, dtype: str) -> float:
        """MXU FLOP/s for inputs of ``dtype`` ("bf16", "f32", "int8", "fp8", ...); dtypes
        the chip has no rate for run at the bf16 rate (f32: JAX's default precision)."""
        return self.peak_flops.get(dtype) or self.peak_bf16


#: The data file: every value with its source (see its header for the keys).
DATA_FILE = Path(__file__).with_name("chips.toml")


@dataclasses.dataclass(frozen=True)
class Fact:
    """One per-TensorCore quantity of a chip as ``chips.toml`` records it.

    Attributes:
      value: the number the model takes (None when nothing published gives it).
      source: where ``value`` comes from.
      used: whether the timeline model reads it (its predictions depend on it).
      published, published_source: a published figure that differs from ``value``.
      implied, implied_by: a figure derived from other values (an inference, never
        read by the model).
      note: what a reader must know besides.
    """

    value: float | None = None
    source: str = ""
    used: bool = False
    published: float | None = None
    published_source: str = ""
    implied: float | None = None
    implied_by: str = ""
    note: str = ""


def _load(path: Path = DATA_FILE) -> tuple[dict[str, str], dict[str, dict[str, Fact]],
                                           dict[str, str]]:
    """``chips.toml``: the sources by key, each chip's facts by name, and the aliases."""
    with path.open("rb") as f:
        raw = tomllib.load(f)
    sources = dict(raw.pop("sources"))
    facts: dict[str, dict[str, Fact]] = {}
    aliases: dict[str, str] = {}
    for name, table in raw.items():
        aliases.update({alias: name for alias in table.pop("aliases", ())})
        facts[name] = {key: Fact(**entry) for key, entry in table.items()}
    return sources, facts, aliases


def _chip(name: str, facts: dict[str, Fact], sources: dict[str, str]) -> Chip:
    """The :class:`Chip` the model uses, from the facts marked ``used``."""
    def value(key: str) -> float:
        fact = facts[key]
        if fact.value is None or not fact.used:
            raise ValueError(f"chips.toml: {name}.{key} is not a value the model uses")
        return fact.value

    rates = {"bf16": "peak_bf16_flops", "int8": "peak_int8_ops", "fp8": "peak_fp8_flops"}
    peaks = {dtype: value(key) for dtype, key in rates.items()
             if key in facts and facts[key].used}
    cited = [k for k in sources if any(k in f.source for f in facts.values() if f.used)]
    return Chip(name, peaks, value("hbm_bandwidth"), int(value("vmem_bytes")),
                int(value("smem_bytes")), int(value("hbm_bytes")), int(value("mxu_size")),
                int(value("mxus")), int(value("tensorcores_per_chip")),
                tuple(sources[k] for k in cited), facts)


SOURCES, FACTS, ALIASES = _load()
CHIPS: dict[str, Chip] = {name: _chip(name, facts, SOURCES) for name, facts in FACTS.items()}
"""The chips the model knows, built from :data:`DATA_FILE`. Other spellings accepted for a
chip are :data:`ALIASES`."""


class UnknownChipError(ValueError):
    """A chip name the model has no data for; the message lists the known ones."""


def get_chip(chip: str | Chip | None) -> Chip:
    """The :class:`Chip` named ``chip`` (default "v7", the lecture's Ironwood).

    Raises:
      UnknownChipError: an unknown name; the message lists the known chips.
    """
    if isinstance(chip, Chip):
        return chip
    key = "v7" if chip is None else str(chip).strip().lower()
    key = ALIASES.get(key, key)
    if key not in CHIPS:
        raise UnknownChipError(
            f"unknown chip {chip!r}; known chips: {', '.join(sorted(CHIPS))} "
            f"(also {', '.join(sorted(ALIASES))})")
    return CHIPS[key]


def jax_tpu_info(chip: str) -> dict[str, Any] | None:
    """JAX's own table for ``chip`` (``pltpu.get_tpu_info``'s data, per TensorCore) when
    the jax extra is installed, else None; for cross-checking :data:`CHIPS`."""
    try:
        mod = importlib.import_module("jax._src.pallas.mosaic.tpu_info")
    except Exception:  # noqa: BLE001 - no jax, or a jax without the table
        return None
    versions = {"v5e": "TPU_V5E", "v6e": "TPU_V6E", "v7": "TPU_7X"}
    try:
        version = getattr(mod.ChipVersion, versions[get_chip(chip).name])
        info = mod.get_tpu_info_for_chip(version, 1)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the private API moved
        return None
    return dataclasses.asdict(info) if dataclasses.is_dataclass(info) else None
