"""``jax.Device`` and the device queries (``jax.devices``, ``device_count``,
``default_backend``, ...): one simulated TPU core.
"""

from __future__ import annotations

from .exports import publish


class Device:
    """``jax.Device``: the one simulated TPU core pallas_sim models (``num_cores`` 1: one
    TensorCore, as on a v5e or v6e chip)."""

    __slots__ = ()
    id = 0
    process_index = 0
    platform = "tpu"
    #: as JAX names a v5e chip's device, so code that reads the TPU generation from it
    #: (``re.match(r"TPU v(\d+)", kind)``, JAX's megablox kernels) finds a TPU
    device_kind = "TPU v5 lite"
    num_cores = 1

    def __repr__(self) -> str:
        return "TpuDevice(id=0, simulated by pallas_sim)"


_DEVICE = Device()


def devices(backend: object = None) -> list[Device]:
    """``jax.devices``: ``[the simulated TPU core]`` (platform "tpu", device_kind
    "TPU v5 lite", as JAX names a v5e)."""
    return [_DEVICE]


def local_devices(process_index: int | None = None, backend: object = None) -> list[Device]:
    """``jax.local_devices``: the same single device as :func:`devices`."""
    return [_DEVICE]


def default_backend() -> str:
    """``jax.default_backend``: ``"tpu"``, the platform pallas_sim simulates."""
    return "tpu"


def device_count(backend: object = None) -> int:
    """``jax.device_count``: 1."""
    return 1


def local_device_count(backend: object = None) -> int:
    """``jax.local_device_count``: 1."""
    return 1


def process_index(backend: object = None) -> int:
    """``jax.process_index``: 0."""
    return 0


def process_count(backend: object = None) -> int:
    """``jax.process_count``: 1."""
    return 1


__all__ = ["Device", "default_backend", "device_count", "devices", "local_device_count",
           "local_devices", "process_count", "process_index"]
publish("pallas_sim.jax", globals(), __all__)
