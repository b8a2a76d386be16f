"""TPU chips as data, per TensorCore: what the timeline model (:mod:`pallas_sim._src.timeline`)
needs to turn a trace into time.

Every number carries its source. Units: FLOP/s (or int ops/s), bytes/s, bytes.

- v5e: Google Cloud TPU docs, "TPU v5e" (docs.cloud.google.com/tpu/docs/v5e): one
  TensorCore per chip with four MXUs, a vector unit and a scalar unit; 197 TFLOP/s bf16,
  393 TOP/s int8, HBM 16 GiB at 819 GB/s. VMEM 128 MiB, SMEM 1 MiB, MXU 128 wide: JAX's
  ``pltpu.get_tpu_info()`` table (jax/_src/pallas/mosaic/tpu_info.py, JAX 0.10.2).
- v6e (Trillium): Google Cloud TPU docs, "TPU v6e" (docs.cloud.google.com/tpu/docs/v6e):
  one TensorCore per chip with two 256x256 MXUs, a 128-lane x 8-sublane VPU, two XLUs;
  918 TFLOP/s bf16, 1836 TOP/s int8, HBM 32 GB at 1638 GB/s. VMEM 128 MiB, SMEM 1 MiB,
  fp8 at the bf16 rate: JAX's ``pltpu.get_tpu_info()`` table.
- v7 (Ironwood, TPU7x), one TensorCore: the lecture's constants (lecture §4.2, slides
  38-39): 1028.75 TFLOP/s bf16 and 3685.5 GB/s HBM per TensorCore; two TensorCores per
  chip and FP8 at twice the bf16 rate (4614 vs 2307 TFLOP/s per chip): Google Cloud TPU
  docs, "TPU7x (Ironwood)" (docs.cloud.google.com/tpu/docs/tpu7x). VMEM 64 MiB, SMEM
  1 MiB, HBM 206 GB per chip, MXU 256 wide: JAX's ``pltpu.get_tpu_info()`` table.

Model assumptions (not from a datasheet, stated in docs/performance-model.md): float32
matmuls run at the bf16 rate, as JAX's default matmul precision on TPU does
(``jax.lax.Precision.DEFAULT``: one bf16 pass); the VPU/EUP rates and the
DMA constants are fitted to the lecture's measurements (:data:`CALIBRATION`) on v7 and
scaled to other chips by their bf16 peak (VPU/EUP) and HBM bandwidth (DMA).
"""

from __future__ import annotations

import dataclasses
import importlib
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


_CLOUD_V5E = "Google Cloud TPU docs, TPU v5e: docs.cloud.google.com/tpu/docs/v5e"
_CLOUD_V6E = "Google Cloud TPU docs, TPU v6e: docs.cloud.google.com/tpu/docs/v6e"
_CLOUD_V7 = "Google Cloud TPU docs, TPU7x (Ironwood): docs.cloud.google.com/tpu/docs/tpu7x"
_JAX_INFO = "JAX 0.10.2 pltpu.get_tpu_info() (jax/_src/pallas/mosaic/tpu_info.py)"
_LECTURE = "lecture 13 §4.2 (slides 38-39): 1028.75 TFLOP/s, 3685.5 GB/s per TensorCore"

CHIPS: dict[str, Chip] = {
    "v5e": Chip("v5e", {"bf16": 197e12, "int8": 393e12}, 819e9,
                128 * MiB, 1 * MiB, 16 << 30, 128, 4, 1, (_CLOUD_V5E, _JAX_INFO)),
    "v6e": Chip("v6e", {"bf16": 918e12, "int8": 1836e12, "fp8": 918e12},
                1638e9, 128 * MiB, 1 * MiB, 32 * 10 ** 9, 256, 2, 1, (_CLOUD_V6E, _JAX_INFO)),
    "v7": Chip("v7", {"bf16": 1028.75e12, "fp8": 2 * 1028.75e12},
               3685.5e9, 64 * MiB, 1 * MiB, 206 * 10 ** 9 // 2, 256, 2, 2,
               (_LECTURE, _CLOUD_V7, _JAX_INFO)),
}

#: Other spellings accepted for a chip.
ALIASES = {"ironwood": "v7", "tpu7x": "v7", "v7x": "v7", "trillium": "v6e",
           "v5litepod": "v5e", "v5lite": "v5e"}


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
