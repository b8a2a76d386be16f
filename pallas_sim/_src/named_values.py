"""``jax.ad_checkpoint.checkpoint_name`` and ``jax.sharding.PartitionSpec``: names kernels'
wrappers use that change no value on one simulated core."""

from __future__ import annotations

from typing import Any

from .exports import publish


def checkpoint_name(x: Any, name: str) -> Any:
    """``jax.ad_checkpoint.checkpoint_name(x, name)``: ``x`` itself, as in JAX, where the
    name only tells a rematerialization policy (``jax.checkpoint``) which values to save.
    pallas_sim has no autodiff, so the name is unused.

    Args:
      x: any pytree of arrays or kernel values.
      name: the checkpoint's name (a string, as JAX requires).

    Raises:
      TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {name!r}")
    return x


class PartitionSpec(tuple):
    """``jax.sharding.PartitionSpec(*axes)``: which mesh axis shards each dimension of an
    array (``None``: not sharded), a tuple as in JAX. pallas_sim simulates one core, so a
    spec describes only; nothing reads it. Each entry is None, an axis name or a tuple of
    names.

    Raises:
      TypeError: an entry of another kind.
    """

    __slots__ = ()

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        for p in partitions:
            names = p if isinstance(p, tuple) else (p,)
            if p is not None and not all(isinstance(n, str) for n in names) and \
                    p is not Ellipsis:
                raise TypeError(f"PartitionSpec entries are None, a mesh axis name or a "
                                f"tuple of names; got {p!r}")
        return super().__new__(cls, partitions)

    def __repr__(self) -> str:
        return f"PartitionSpec({', '.join(repr(p) for p in self)})"


publish("pallas_sim.ad_checkpoint", globals(), ["checkpoint_name"])
publish("pallas_sim.sharding", globals(), ["PartitionSpec"])
