"""Errors raised by pallas_sim.

Every error the simulator raises on purpose derives from :class:`PallasSimError`
so a grader can tell "the kernel broke a Pallas rule" from "the kernel has a bug
of its own".  Messages follow JAX Pallas / Mosaic where the real stack has one
(quoted in each class's docstring) and always name the operand, the grid step
and the shapes involved.
"""

from __future__ import annotations


class PallasSimError(Exception):
    """Base class of every rule violation the simulator reports."""


class BlockIndexError(PallasSimError, IndexError):
    """An ``index_map`` returned a block index outside ``[0, cdiv(dim, block))``.

    Mirrors TPU interpret mode's out-of-bounds block check
    (docs/pallas-sim.md rule 6).  Example message::

        Out-of-bounds block index (4, 0) for input 'x_ref' at grid step (3,):
        the array has shape (16, 128) and block shape (4, 128)
    """


class RevisitedOutputBlockError(PallasSimError):
    """An output block was visited again after it had been written back to HBM.

    On a TPU the second visit starts from a fresh (garbage) VMEM buffer and the
    first visit's result is overwritten, so the result is wrong; the reduction
    axis must be the last (innermost) grid axis (docs/pallas-sim.md rule 3).
    """


class VmemOOMError(PallasSimError, MemoryError):
    """The VMEM a pallas_call needs exceeds the scoped limit.

    The first line follows the real Mosaic compiler:
    ``Scoped allocation with size 48.00M and limit 32.00M`` (M = MiB), followed
    by a table of what each operand and scratch buffer takes (lecture §2.1).
    """


class GridSemanticsError(PallasSimError, ValueError):
    """``dimension_semantics`` does not fit the grid.

    JAX: "Dimensions with parallel semantics must form a prefix of the grid."
    """


class KernelSignatureError(PallasSimError, TypeError):
    """The kernel, an index map or a spec does not match the call's operands."""


class UnwaitedDMAError(PallasSimError):
    """A copy started with ``make_async_copy(...).start()`` was never waited.

    On a TPU the data may never arrive, and TPU interpret mode (JAX 0.10.x)
    leaves the destination untouched and prints "Semaphore ... has non-zero
    count ... at kernel exit" (docs/pallas-sim.md rule 7).
    """


class HBMAccessError(PallasSimError, ValueError):
    """A kernel read or wrote a ref in HBM (``pl.ANY``, ``pltpu.HBM``, every operand
    of ``pl.kernel``) directly.

    A kernel computes on VMEM and SMEM only; an operand left in HBM is reached by DMA
    (``pltpu.sync_copy``, ``pltpu.async_copy``, ``pltpu.make_async_copy``). TPU interpret mode
    (JAX 0.10.x) refuses ``x_ref[...]`` with "get_p: Buffers with a memory
    space of HBM or ANY cannot be referenced directly. Instead, use
    `pltpu.sync_copy` or `pltpu.async_copy`." (``swap_p`` for a store); the
    message here adds the ref's name. ``x_ref.shape``, ``x_ref.at[...]`` and
    DMAs are fine.
    """


class CapturedConstantError(PallasSimError, ValueError):
    """A kernel computed with a NumPy array that is not one of its refs.

    JAX traces a kernel into a jaxpr; a non-scalar NumPy array it meets there
    (``np.arange(8)[:, None]``, ``np.zeros(shape)``, an array closed over from
    the wrapper) becomes a captured constant, and ``pallas_call`` refuses it:
    "The kernel function in the pallas_call ... captures constants [f32[8,1]].
    You should pass them as inputs." (JAX 0.10.x). Build such arrays with
    ``jnp`` inside the kernel, or pass them to ``pallas_call`` as inputs.
    Scalars (``np.float32(2)``, ``-np.inf``) are fine.
    """


class TracerConversionError(PallasSimError, TypeError):
    """A value traced inside a kernel was used where Python needs a concrete value.

    Inside a kernel, ``x_ref[...]``, ``pl.program_id(i)`` and the ``jnp``
    results computed from them are what JAX calls tracers: Python ``if``/
    ``while``/``range``, ``bool()``, ``int()``, ``float()`` and ``np.asarray()``
    of them fail on JAX (``TracerBoolConversionError``,
    ``ConcretizationTypeError``, ``TracerIntegerConversionError``,
    ``TracerArrayConversionError``), so they fail here too, pointing to
    ``pl.when``, ``jnp.where``, ``jax.lax.cond`` or ``jax.lax.fori_loop``.
    """


class UnsupportedJaxAPIError(PallasSimError, AttributeError):
    """A name of ``jax``, ``jax.numpy``, ``jax.lax``, ``jax.nn``, ``jax.random``,
    ``jax.tree``, ``pl`` or ``pltpu`` that pallas_sim does not offer.

    Raised by the namespaces' module ``__getattr__`` instead of a bare
    ``AttributeError``; the message says whether JAX 0.10.2 has the name, and
    what to write instead::

        `jax.grad` is not supported by pallas_sim: pallas_sim runs kernels forward
        only, with no automatic differentiation; ...

    It is an ``AttributeError`` too, so ``hasattr`` and ``getattr(ns, name,
    default)`` behave as Python expects.
    """


class UnsupportedJaxUsageError(PallasSimError):
    """A supported JAX function called in a way pallas_sim does not model, e.g.
    ``jax.vmap`` over a batch of size 0 (JAX traces the function abstractly;
    pallas_sim runs it once per batch element). The message says what to do
    instead."""


class NoGridError(PallasSimError, AssertionError):
    """``pl.program_id`` or ``pl.num_programs`` where there is no grid: outside a kernel,
    or in a ``pl.kernel`` body (a mesh kernel has a core index,
    ``jax.lax.axis_index(axis_name)``, not a grid). JAX 0.10.x fails an assertion
    (``AssertionError`` without a message) in both cases."""


class OutsideKernelError(PallasSimError, NotImplementedError):
    """A kernel-only operation (``pl.run_scoped``, ``pltpu.sync_copy``,
    ``pltpu.emit_pipeline``) called outside a running kernel. JAX 0.10.x raises
    ``NotImplementedError: Evaluation rule for 'run_scoped' not implemented``."""


class UnboundAxisError(PallasSimError, NameError):
    """An axis name no enclosing mesh defines.

    Raised by ``jax.lax.axis_index(name)`` / ``axis_size(name)``. JAX 0.10.x: "Found an
    unbound axis name: core. To fix this, please call axis_index under `jax.shard_map`."
    """


class BlockShapeError(KernelSignatureError, ValueError):
    """A ``BlockSpec`` whose block shape has not one entry per dimension of its array
    (``(8,)`` for an ``f32[16, 128]``). JAX 0.10.x raises ``ValueError: Block shape for
    ... must have the same number of dimensions as the array shape``; this is a
    ``ValueError`` too (and a :class:`KernelSignatureError`, as before)."""


class RefIndexError(PallasSimError, IndexError, ValueError):
    """A static index or slice of a ref outside the ref's shape (``x_ref[0:40]`` on a
    16-row ref), naming the ref and the axis. JAX 0.10.x refuses a static slice past the
    end with a ``ValueError`` when it traces the kernel; this is a ``ValueError`` and an
    ``IndexError`` (what pallas_sim raised before)."""


class UnsupportedJaxImportError(PallasSimError, ImportError):
    """``from pallas_sim.jax import <name>`` (or any pallas_sim namespace) of a name
    pallas_sim does not offer: the ``ImportError`` Python expects, with the message of
    :class:`UnsupportedJaxAPIError` (whether JAX has the name, what to write instead)
    rather than Python's bare "cannot import name"."""
