"""pallas_sim's chip data against JAX's own per-TensorCore table
(``pltpu.get_tpu_info``'s data in JAX 0.10.2): VMEM, SMEM, MXU width agree exactly; the
Cloud-docs peaks and bandwidths of v5e/v6e within 1 % of JAX's rounded figures. Ironwood
uses the lecture's constants, which are below JAX's (1028.75 vs 1155 TFLOP/s per core)."""

from __future__ import annotations

import pytest

from pallas_sim._src.chips import CHIPS, jax_tpu_info


@pytest.mark.parametrize("name", sorted(CHIPS))
def test_capacities_match_jax(name):
    info = jax_tpu_info(name)
    assert info is not None, "the jax extra provides the table"
    chip = CHIPS[name]
    assert chip.vmem_bytes == info["vmem_capacity_bytes"]
    assert chip.smem_bytes == info["smem_capacity_bytes"]
    assert chip.mxu_size == info["mxu_column_size"]


@pytest.mark.parametrize("name", ["v5e", "v6e"])
def test_cloud_doc_rates_agree_with_jax(name):
    info = jax_tpu_info(name)
    chip = CHIPS[name]
    assert chip.peak_bf16 == pytest.approx(info["bf16_ops_per_second"], rel=0.01)
    assert chip.hbm_bandwidth == pytest.approx(info["mem_bw_bytes_per_second"], rel=0.01)


def test_ironwood_uses_the_lectures_constants():
    info = jax_tpu_info("v7")
    chip = CHIPS["v7"]
    assert (chip.peak_bf16, chip.hbm_bandwidth) == (1028.75e12, 3685.5e9)
    assert chip.hbm_bandwidth == pytest.approx(info["mem_bw_bytes_per_second"], rel=0.01)
    assert chip.peak_bf16 < info["bf16_ops_per_second"]
