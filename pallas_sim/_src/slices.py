"""``pl.Slice``, what ``pl.ds`` returns, and :func:`plain_index`, which turns it into the
Python slice NumPy indexes with (imported by refs and kernel values; imports nothing of
pallas_sim)."""

from __future__ import annotations

from typing import Any

from .exports import publish


class Slice:
    """``pl.Slice``: ``size`` elements of one ref dimension from ``start``, ``stride``
    apart, as JAX's ``jax._src.indexing.Slice`` (what ``pl.ds`` returns).

    Indexes refs, ``ref.at[...]`` and kernel values like the Python slice
    :meth:`as_slice`; ``.start``, ``.size`` and ``.stride`` read as in JAX (kernels use
    ``k_slice.size`` for the length of a tile). ``start`` may be traced; it is held as
    the int it is here (pallas_sim runs the kernel step by step).

    Raises:
      ValueError: ``stride`` is negative (JAX: "`stride` must be >= 0.").
    """

    __slots__ = ("start", "size", "stride")

    def __init__(self, start: Any, size: Any, stride: int = 1) -> None:
        if stride < 0:
            raise ValueError("`stride` must be >= 0.")
        self.start, self.size, self.stride = start, size, stride

    @property
    def is_dynamic_start(self) -> bool:
        """False: pallas_sim knows every start (JAX: True for a traced one)."""
        return False

    @property
    def is_dynamic_size(self) -> bool:
        """False: sizes are static ints."""
        return False

    def as_slice(self) -> slice:
        """The Python slice selecting the same elements (``start : start + size`` for a
        stride of 1)."""
        start, size, step = int(self.start), int(self.size), int(self.stride)
        if step == 1 or size == 0:
            return slice(start, start + size)
        return slice(start, start + (size - 1) * step + 1, step)

    @classmethod
    def from_slice(cls, slc: slice, size: int) -> Slice:
        """The Slice of Python slice ``slc`` on a dimension of ``size`` elements (JAX's
        ``Slice.from_slice``).

        Raises:
          ValueError: a step below 1 (JAX: "slice must have a step >= 1").
        """
        start, stop, step = slc.indices(size)
        if step < 1:
            raise ValueError(f"slice must have a step >= 1 (found: {step})")
        return cls(start, max(0, -(-(stop - start) // step)), step)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Slice):
            return NotImplemented
        return (self.start, self.size, self.stride) == (other.start, other.size, other.stride)

    __hash__ = None  # type: ignore[assignment]  # a dataclass, as JAX's: unhashable

    def __repr__(self) -> str:
        return f"Slice(start={self.start!r}, size={self.size!r}, stride={self.stride!r})"


def plain_index(idx: Any) -> Any:
    """``idx`` with every :class:`Slice` entry as its Python slice (other entries as
    they are); refs and kernel values call it before NumPy indexes."""
    if type(idx) is Slice:
        return idx.as_slice()
    if type(idx) is tuple:
        return tuple(e.as_slice() if type(e) is Slice else e for e in idx)
    return idx


publish("pallas_sim.pl", globals(), ["Slice"])
